"""The contract's value types (SPEC §2): validation on construction (C1), exact preservation, shape."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from workflow_hub import (
    ActivityChangedEvent,
    Availability,
    ChangedFrame,
    ContractError,
    Cursor,
    Diagnostic,
    DiagnosticKind,
    Frame,
    HeartbeatEvent,
    LifecycleEvent,
    LifecycleInput,
    NodePrompt,
    PromptKind,
    PromptTarget,
    RemovedFrame,
    RootActivity,
    RootGraph,
    RunPrompt,
    RunStatus,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageNode,
    StageStatus,
    StageTarget,
    State,
    ToolNode,
    ToolTarget,
)

# --- valid arguments, one builder per class ----------------------------------------------------
# Each rejection case below changes exactly one argument of these, so the error can only be about
# that field.


def cursor_args() -> dict[str, Any]:
    return {"epoch": "e", "revision": 1}


def node_prompt_args() -> dict[str, Any]:
    return {"id": "p", "kind": "input", "message": "m", "created_at": 1}


def run_prompt_args() -> dict[str, Any]:
    return {**node_prompt_args(), "run_id": "r"}


def node_args() -> dict[str, Any]:
    return {"id": "n", "run_id": "r", "node_id": "n", "name": "n", "parent_ids": (), "depth": 0}


def stage_node_args() -> dict[str, Any]:
    return {**node_args(), "status": "running"}


def tool_node_args() -> dict[str, Any]:
    return {**node_args(), "status": "running", "ordinal": 0}


def root_args() -> dict[str, Any]:
    return {
        "root_run_id": "r",
        "owner_session_id": "s",
        "state": "working",
        "reason": "executing",
        "active_execution_count": 1,
        "actionable_block_count": 0,
        "needs_attention": False,
    }


def a_root() -> RootActivity:
    return RootActivity(**root_args())


def stage_target_args() -> dict[str, Any]:
    return {"run_id": "r", "stage_id": "s", "stage_name": "n", "status": "completed"}


def envelope_args() -> dict[str, Any]:
    return {
        "event_id": "ev",
        "run_id": "r",
        "root_run_id": "r",
        "owner_session_id": "s",
        "occurred_at": 1,
        "observed_at": 2,
        "delivery": "live",
        "target": StageTarget(**stage_target_args()),
    }


def event_args() -> dict[str, Any]:
    return {**envelope_args(), "cursor": Cursor(**cursor_args())}


def heartbeat_args() -> dict[str, Any]:
    return {
        "run_id": "r",
        "root_run_id": "r",
        "owner_session_id": "s",
        "scheduled_at": 1,
        "interval_minutes": 5,
    }


VALID: dict[type[Any], Callable[[], dict[str, Any]]] = {
    Cursor: cursor_args,
    NodePrompt: node_prompt_args,
    RunPrompt: run_prompt_args,
    StageNode: stage_node_args,
    ToolNode: tool_node_args,
    RootGraph: lambda: {"nodes": ()},
    RootActivity: root_args,
    SnapshotFrame: lambda: {
        "cursor": Cursor(**cursor_args()),
        "availability": "ready",
        "roots": (),
    },
    ChangedFrame: lambda: {"cursor": Cursor(**cursor_args()), "root": a_root()},
    RemovedFrame: lambda: {"cursor": Cursor(**cursor_args()), "root_run_id": "r"},
    RunTarget: lambda: {"run_id": "r", "status": "running"},
    StageTarget: stage_target_args,
    ToolTarget: lambda: {"run_id": "r", "tool_node_id": "t", "tool_name": "n", "status": "running"},
    PromptTarget: lambda: {"run_id": "r", "prompt_id": "p", "status": "opened"},
    LifecycleInput: envelope_args,
    LifecycleEvent: event_args,
    StageCompletedEvent: event_args,
    ActivityChangedEvent: lambda: {"cursor": Cursor(**cursor_args()), "root": a_root()},
    HeartbeatEvent: heartbeat_args,
    Diagnostic: lambda: {"kind": "ObserverOverflow", "cursor": Cursor(**cursor_args())},
}


def test_every_valid_builder_constructs() -> None:
    """The baseline of every rejection case is itself valid (so a rejection is about one field)."""
    for cls, args in VALID.items():
        given = args()
        built = cls(**given)
        assert {name: getattr(built, name) for name in given} == given, cls.__name__


# --- rejections (C1) ---------------------------------------------------------------------------

NOT_STRINGS = [1, None, b"bytes", ["a"]]
NOT_COUNTS = [-1, True, False, 1.0, "1", None]
NOT_NUMBERS = [math.nan, math.inf, -math.inf, True, "1", None]
NOT_STR_SEQUENCES = ["ab", b"ab", {"a": "b"}, 5, None]

CASES: list[tuple[type[Any], str, object, str]] = []


def reject(cls: type[Any], field: str, values: list[object], path: str | None = None) -> None:
    CASES.extend((cls, field, value, path or field) for value in values)


# Every required id, name and text field of every class.
STRING_FIELDS = {"id", "epoch", "message", "name", "node_id", "stage_name", "tool_name"}
for _cls in VALID:
    for _field in attrs.fields(_cls):
        required = _field.default is attrs.NOTHING
        if _field.name in STRING_FIELDS or (_field.name.endswith("_id") and required):
            reject(_cls, _field.name, NOT_STRINGS)

reject(PromptTarget, "stage_id", [1, b"x"])
reject(Cursor, "revision", NOT_COUNTS)
for _cls in (StageNode, ToolNode):
    reject(_cls, "depth", NOT_COUNTS)
    reject(_cls, "execution_order", [-1, True, 1.0, "0"])
    reject(_cls, "parent_ids", NOT_STR_SEQUENCES)
    reject(_cls, "parent_ids", [["ok", 7]], "parent_ids[1]")
reject(ToolNode, "ordinal", NOT_COUNTS)
reject(RootActivity, "active_execution_count", NOT_COUNTS)
reject(RootActivity, "actionable_block_count", NOT_COUNTS)
reject(RootActivity, "needs_attention", [1, 0, "true", None])
for _cls in (NodePrompt, RunPrompt):
    reject(_cls, "created_at", NOT_NUMBERS)
    reject(_cls, "kind", ["bogus", "INPUT", 1, None])
    reject(_cls, "choices", ["yes", 5])
    reject(_cls, "choices", [["yes", None]], "choices[1]")
for _cls in (LifecycleInput, LifecycleEvent, StageCompletedEvent):
    reject(_cls, "occurred_at", NOT_NUMBERS)
    reject(_cls, "observed_at", NOT_NUMBERS)
    reject(_cls, "delivery", ["later", "LIVE", None])
    reject(_cls, "attribution", ["robot", 3])
reject(HeartbeatEvent, "scheduled_at", NOT_NUMBERS)
reject(HeartbeatEvent, "interval_minutes", [0, 0.0, -5, -0.5, *NOT_NUMBERS])
# Unknown enumeration values, including a value that belongs to a *different* status enum.
reject(RootActivity, "state", ["busy", "Working", 0, None])
reject(RootActivity, "reason", ["thinking", None])
reject(StageNode, "status", ["cancelled", "cached", None])
reject(ToolNode, "status", ["awaiting_input", "killed"])
reject(RunTarget, "status", ["awaiting_input", "cached", None])
reject(RunTarget, "previous_status", ["cached"])
reject(RunTarget, "action", ["stop", "cancel"])
reject(StageTarget, "status", ["cancelled"])
reject(StageTarget, "previous_status", ["killed"])
reject(ToolTarget, "status", ["paused"])
reject(ToolTarget, "previous_status", ["awaiting_input"])
reject(PromptTarget, "status", ["closed", "completed"])
reject(SnapshotFrame, "availability", ["offline", None])
reject(Diagnostic, "kind", ["observer_overflow", "Overflow", None])
# Nested values must already be contract values of the right class (wire dicts go through `wire`).
for _cls in (SnapshotFrame, ChangedFrame, RemovedFrame, LifecycleEvent, ActivityChangedEvent):
    reject(_cls, "cursor", [{"epoch": "e", "revision": 1}, None, "e:1"])
reject(Diagnostic, "cursor", [{"epoch": "e", "revision": 1}])
reject(ChangedFrame, "root", [root_args(), None])
reject(ActivityChangedEvent, "root", [root_args()])
reject(RootActivity, "graph", [{"nodes": []}])
reject(RootGraph, "nodes", ["stage", None])
reject(RootGraph, "nodes", [[Cursor(epoch="e", revision=0)]], "nodes[0]")
reject(RootGraph, "run_prompts", [[NodePrompt(**node_prompt_args())]], "run_prompts[0]")
reject(StageNode, "pending_prompt", [RunPrompt(**run_prompt_args()), {"id": "p"}])
reject(SnapshotFrame, "roots", [[root_args()]], "roots[0]")
reject(SnapshotFrame, "roots", [None, "roots"])
reject(LifecycleEvent, "target", [Cursor(epoch="e", revision=0), {"kind": "run"}, None])
reject(LifecycleInput, "target", [a_root()])
reject(StageCompletedEvent, "target", [RunTarget(run_id="r", status="completed")])


def _case_id(case: tuple[type[Any], str, object, str]) -> str:
    cls, field, value, _ = case
    return f"{cls.__name__}.{field}={value!r}"


@pytest.mark.parametrize(("cls", "field", "value", "path"), CASES, ids=map(_case_id, CASES))
def test_construction_rejects_a_bad_field_and_names_it(
    cls: type[Any], field: str, value: object, path: str
) -> None:
    """C1: a wrong type, unknown enum value, negative count, bool count or non-finite number is a
    ContractError whose path names the field."""
    with pytest.raises(ContractError) as caught:
        cls(**{**VALID[cls](), field: value})
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")


def test_contract_error_is_a_value_error() -> None:
    """C1: ContractError is a ValueError, so generic input-validation handlers catch it."""
    with pytest.raises(ValueError, match="revision"):
        Cursor(epoch="e", revision=-1)


@pytest.mark.parametrize("availability", ["recovering", "unavailable"])
def test_a_non_ready_snapshot_carries_no_roots_not_even_empty(availability: str) -> None:
    """§2: roots are present iff availability is ready; an empty tuple is still "present"."""
    with pytest.raises(ContractError) as caught:
        SnapshotFrame(cursor=Cursor(epoch="e", revision=0), availability=availability, roots=())
    assert caught.value.path == "roots"


def test_a_ready_snapshot_needs_roots() -> None:
    """§2: a ready snapshot without roots would claim "ready with nothing known"; rejected."""
    with pytest.raises(ContractError) as caught:
        SnapshotFrame(cursor=Cursor(epoch="e", revision=0), availability="ready")
    assert caught.value.path == "roots"


@pytest.mark.parametrize("status", [s for s in StageStatus if s is not StageStatus.COMPLETED])
def test_a_stage_completed_event_needs_a_completed_stage(status: StageStatus) -> None:
    """§2/P6: only a completed stage target makes a completion event; every other status fails."""
    target = StageTarget(**{**stage_target_args(), "status": status})
    with pytest.raises(ContractError) as caught:
        StageCompletedEvent(**{**event_args(), "target": target})
    assert caught.value.path == "target.status"


# --- acceptance: values kept exactly -----------------------------------------------------------

RAW_IDS = ["", " ", " root ", "\t\n", "ルート", "e\u0301", "🚀", "child-run:tool-1", "nul\x00"]


@pytest.mark.parametrize("raw", RAW_IDS)
def test_ids_and_names_are_kept_byte_identical(raw: str) -> None:
    """§2: ids and names are never trimmed or normalised: "", " root " and unicode come back as is."""
    node = StageNode(**{**stage_node_args(), "id": raw, "name": raw, "parent_ids": [raw]})
    assert node.id == raw
    assert node.name.encode("utf-8") == raw.encode("utf-8")
    assert node.parent_ids == (raw,)
    assert RemovedFrame(cursor=Cursor(epoch=raw, revision=0), root_run_id=raw).root_run_id == raw


@pytest.mark.parametrize("stamp", [0, 1_700_000_000_000, -5, 2**60, 1.0, 1.5, -0.0, 1e300])
def test_timestamps_keep_their_exact_value_and_type(stamp: float) -> None:
    """§2: epoch milliseconds are kept exactly; an int stays an int and a float stays a float."""
    prompt = NodePrompt(**{**node_prompt_args(), "created_at": stamp})
    beat = HeartbeatEvent(**{**heartbeat_args(), "scheduled_at": stamp})
    for kept in (prompt.created_at, beat.scheduled_at):
        assert type(kept) is type(stamp)
        assert repr(kept) == repr(stamp)


def test_interval_minutes_keeps_int_or_float() -> None:
    """§2: interval_minutes is a finite positive number, int or float, kept as given."""
    assert type(HeartbeatEvent(**heartbeat_args()).interval_minutes) is int
    beat = HeartbeatEvent(**{**heartbeat_args(), "interval_minutes": 0.5})
    assert beat.interval_minutes == 0.5


def test_sequences_become_tuples() -> None:
    """§2: sequences are tuples, so a value shared between consumers cannot be mutated."""
    parents = ["a", "b"]
    node = StageNode(**{**stage_node_args(), "parent_ids": parents})
    parents.append("c")
    assert node.parent_ids == ("a", "b")
    roots = (r for r in [a_root()])
    frame = SnapshotFrame(cursor=Cursor(epoch="e", revision=0), availability="ready", roots=roots)
    assert type(frame.roots) is tuple
    graph = RootGraph(nodes=[StageNode(**stage_node_args())], run_prompts=[])
    assert type(graph.nodes) is tuple
    assert graph.run_prompts == ()


def test_enum_fields_hold_members_and_accept_wire_strings() -> None:
    """§2: a wire string becomes its StrEnum member, which still compares equal to the string."""
    root = a_root()
    assert root.state is State.WORKING
    assert root.state == "working"
    target = RunTarget(run_id="r", status=RunStatus.KILLED, previous_status="running")
    assert target.status is RunStatus.KILLED
    assert target.previous_status is RunStatus.RUNNING
    assert Diagnostic(**VALID[Diagnostic]()).kind is DiagnosticKind.OBSERVER_OVERFLOW


def test_optional_fields_default_to_absent() -> None:
    """§2: optional fields default to None (absent), never to an empty value."""
    target = RunTarget(run_id="r", status="running")
    assert target.previous_status is None
    assert target.action is None
    assert NodePrompt(**node_prompt_args()).choices is None
    assert RootActivity(**root_args()).graph is None
    assert StageNode(**stage_node_args()).pending_prompt is None


def test_arguments_are_keyword_only() -> None:
    """§2: constructor arguments are keywords, so adding a field never shifts a caller's meaning."""
    with pytest.raises(TypeError):
        Cursor("e", 1)  # type: ignore[misc]


# --- discriminators, immutability, matching ----------------------------------------------------

KINDS: list[tuple[type[Any], str]] = [
    (SnapshotFrame, "snapshot"),
    (ChangedFrame, "changed"),
    (RemovedFrame, "removed"),
    (RunTarget, "run"),
    (StageTarget, "stage"),
    (ToolTarget, "tool"),
    (PromptTarget, "prompt"),
    (StageNode, "stage"),
    (ToolNode, "tool"),
]
TYPES: list[tuple[type[Any], str]] = [
    (LifecycleInput, "workflow_lifecycle"),
    (LifecycleEvent, "workflow_lifecycle"),
    (StageCompletedEvent, "workflow_stage_completed"),
    (ActivityChangedEvent, "workflow_activity_changed"),
    (HeartbeatEvent, "workflow_heartbeat"),
]


@pytest.mark.parametrize(("cls", "kind"), KINDS)
def test_frames_targets_and_nodes_have_a_class_level_kind(cls: type[Any], kind: str) -> None:
    """§2: ``kind`` is a class constant, readable on the class and the instance, never a field."""
    assert cls.kind == kind
    assert cls(**VALID[cls]()).kind == kind
    assert "kind" not in attrs.fields_dict(cls)


@pytest.mark.parametrize(("cls", "type_"), TYPES)
def test_events_have_a_class_level_type(cls: type[Any], type_: str) -> None:
    """§2: ``type`` is a class constant of every event class, never a field."""
    assert cls.type == type_
    assert cls(**VALID[cls]()).type == type_
    assert "type" not in attrs.fields_dict(cls)


def test_prompt_and_diagnostic_kind_is_data() -> None:
    """§2: NodePrompt/RunPrompt/Diagnostic ``kind`` is a real field (what kind), not a discriminator."""
    assert NodePrompt(**{**node_prompt_args(), "kind": "editor"}).kind is PromptKind.EDITOR
    assert "kind" in attrs.fields_dict(RunPrompt)
    assert "kind" in attrs.fields_dict(Diagnostic)


@pytest.mark.parametrize("cls", list(VALID))
def test_values_are_immutable(cls: type[Any]) -> None:
    """O8/§2: values are frozen and slotted: no field can be reassigned, no attribute added."""
    value = cls(**VALID[cls]())
    first = attrs.fields(cls)[0].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(value, first, getattr(value, first))
    with pytest.raises((AttributeError, TypeError)):
        value.extra = 1
    assert hash(value) == hash(cls(**VALID[cls]()))


def describe(frame: Frame) -> str:
    match frame:
        case SnapshotFrame(availability=Availability.READY, roots=roots):
            return f"ready with {len(roots or ())}"
        case SnapshotFrame(availability=availability):
            return str(availability)
        case ChangedFrame(root=RootActivity(root_run_id=root_run_id)):
            return f"changed {root_run_id}"
        case RemovedFrame(root_run_id=root_run_id):
            return f"removed {root_run_id}"


def test_frames_support_pattern_matching() -> None:
    """§2: ``match frame: case SnapshotFrame(): ...`` works, with keyword sub-patterns."""
    cursor = Cursor(epoch="e", revision=0)
    assert describe(SnapshotFrame(cursor=cursor, availability="ready", roots=[a_root()])) == (
        "ready with 1"
    )
    assert describe(SnapshotFrame(cursor=cursor, availability="recovering")) == "recovering"
    assert describe(ChangedFrame(cursor=cursor, root=a_root())) == "changed r"
    assert describe(RemovedFrame(cursor=cursor, root_run_id=" x ")) == "removed  x "
