"""The JSON wire format (SPEC §2): round trips (C2), exact shape, golden fixtures, decoding errors (C1)."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import hypothesis
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from workflow_hub import (
    ActivityChangedEvent,
    ChangedFrame,
    ContractError,
    Cursor,
    Diagnostic,
    FailureDetail,
    Frame,
    GraphNode,
    HeartbeatEvent,
    Labels,
    LifecycleEvent,
    LifecycleInput,
    LifecycleTarget,
    NodePrompt,
    PromptTarget,
    RemovedFrame,
    RootActivity,
    RootGraph,
    RunPrompt,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageNode,
    StageTarget,
    ToolNode,
    ToolTarget,
    WorkflowEvent,
)
from workflow_hub.testing import strategies as ws
from workflow_hub.wire import dumps, from_wire, loads, to_wire

FIXTURES = Path(__file__).parents[1] / "fixtures"

# Every contract class and every union, with the strategy that draws it.
_T = TypeVar("_T")
# The first example that satisfies the condition, not shrunk: these tests ask whether a
# strategy can draw something, not for the smallest such thing, and shrinking the contract's
# nested values took most of this file's minute and a half under a loaded CI run.
_FIRST = settings(max_examples=2000, phases=[Phase.generate], database=None)  # find()'s budget


def find(strategy: st.SearchStrategy[_T], condition: Callable[[_T], object]) -> _T:
    return hypothesis.find(strategy, condition, settings=_FIRST)


TYPES: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (Cursor, ws.cursors()),
    (FailureDetail, ws.failure_details()),
    (NodePrompt, ws.node_prompts()),
    (RunPrompt, ws.run_prompts()),
    (StageNode, ws.stage_nodes()),
    (ToolNode, ws.tool_nodes()),
    (GraphNode, ws.graph_nodes()),
    (RootGraph, ws.root_graphs()),
    (RootActivity, ws.root_activities()),
    (SnapshotFrame, ws.snapshot_frames()),
    (ChangedFrame, ws.changed_frames()),
    (RemovedFrame, ws.removed_frames()),
    (Frame, ws.frames()),
    (RunTarget, ws.run_targets()),
    (StageTarget, ws.stage_targets()),
    (ToolTarget, ws.tool_targets()),
    (PromptTarget, ws.prompt_targets()),
    (LifecycleTarget, ws.lifecycle_targets()),
    (LifecycleInput, ws.lifecycle_inputs()),
    (LifecycleEvent, ws.lifecycle_events()),
    (StageCompletedEvent, ws.stage_completed_events()),
    (ActivityChangedEvent, ws.activity_changed_events()),
    (HeartbeatEvent, ws.heartbeat_events()),
    (WorkflowEvent, ws.workflow_events()),
    (Diagnostic, ws.diagnostics()),
]
TYPE_IDS = [getattr(t, "__name__", None) or str(t) for t, _ in TYPES]
TYPE_IDS[[t for t, _ in TYPES].index(GraphNode)] = "GraphNode"
TYPE_IDS[[t for t, _ in TYPES].index(Frame)] = "Frame"
TYPE_IDS[[t for t, _ in TYPES].index(LifecycleTarget)] = "LifecycleTarget"
TYPE_IDS[[t for t, _ in TYPES].index(WorkflowEvent)] = "WorkflowEvent"


def exact(value: object) -> object:
    """A structure that compares equal only if every leaf has the same type and the same repr.

    ``==`` alone would let ``1 == 1.0`` and ``State.IDLE == "idle"`` through.
    """
    if attrs.has(type(value)):
        return (
            type(value),
            tuple((f.name, exact(getattr(value, f.name))) for f in attrs.fields(type(value))),
        )
    if isinstance(value, tuple | list):
        return (type(value), tuple(exact(item) for item in value))
    if isinstance(value, dict):
        return (dict, tuple((key, exact(item)) for key, item in value.items()))
    return (type(value), repr(value))


def camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def assert_wire_shape(value: object, wire: object) -> None:
    """``wire`` is exactly SPEC §2's shape for ``value``: camelCase keys of the present fields plus
    the discriminator, nothing else, no nulls, plain JSON types all the way down."""
    cls = type(value)
    assert type(wire) is dict
    present = {f.name: getattr(value, f.name) for f in attrs.fields(cls)}
    expected = {camel(name) for name, item in present.items() if item is not None}
    for key in ("kind", "type"):
        if key not in attrs.fields_dict(cls) and isinstance(getattr(cls, key, None), str):
            expected.add(key)
            assert wire[key] == getattr(cls, key)
    assert set(wire) == expected
    for name, item in present.items():
        if item is None:
            continue
        sent = wire[camel(name)]
        if attrs.has(type(item)):
            assert_wire_shape(item, sent)
        elif isinstance(item, tuple):
            assert type(sent) is list
            assert len(sent) == len(item)
            for element, sent_element in zip(item, sent, strict=True):
                if attrs.has(type(element)):
                    assert_wire_shape(element, sent_element)
                else:
                    assert type(sent_element) is str
                    assert sent_element == element
        elif isinstance(item, Labels):
            # C3: a JSON object of strings, in the labels' order.
            assert type(sent) is dict
            assert list(sent.items()) == list(item.items())
        else:
            # Enum members go out as plain strings; everything else exactly as held.
            assert type(sent) in (str, int, float, bool)
            assert sent == item
            assert type(sent) is type(item) or type(sent) is str


# --- properties (C2) ---------------------------------------------------------------------------


@pytest.mark.parametrize(("type_", "strategy"), TYPES, ids=TYPE_IDS)
@given(data=st.data())
def test_from_wire_inverts_to_wire_exactly(
    type_: Any, strategy: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    """C2: from_wire(T, to_wire(x)) == x for every type and union, with every leaf's type kept
    (an int timestamp comes back an int, a float a float)."""
    value = data.draw(strategy)
    decoded = from_wire(type_, to_wire(value))
    assert decoded == value
    assert exact(decoded) == exact(value)


@pytest.mark.parametrize(("type_", "strategy"), TYPES, ids=TYPE_IDS)
@given(data=st.data())
def test_loads_inverts_dumps_exactly(
    type_: Any, strategy: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    """C2: loads(T, dumps(x)) == x through real JSON text, types of every leaf included."""
    value = data.draw(strategy)
    text = dumps(value)
    decoded = loads(type_, text)
    assert decoded == value
    assert exact(decoded) == exact(value)
    assert loads(type_, text.encode("utf-8")) == value


@given(value=st.one_of(ws.frames(), ws.workflow_events(), ws.lifecycle_inputs(), ws.diagnostics()))
def test_to_wire_emits_exactly_the_spec_shape(value: object) -> None:
    """C2: camelCase keys, absent optionals omitted (never null), discriminators always present,
    enum members as plain strings, sequences as lists."""
    assert_wire_shape(value, to_wire(value))


# --- exact shape, by hand ----------------------------------------------------------------------


def test_absent_optionals_are_omitted_and_present_ones_emitted() -> None:
    """§2: an absent optional is no key at all, not ``null``; a present one is its camelCase key."""
    bare = RunTarget(run_id="r", status="running")
    assert to_wire(bare) == {"kind": "run", "runId": "r", "status": "running"}
    full = RunTarget(run_id="r", status="killed", previous_status="running", action="kill")
    assert to_wire(full) == {
        "kind": "run",
        "runId": "r",
        "previousStatus": "running",
        "status": "killed",
        "action": "kill",
    }
    assert "null" not in dumps(bare)


def test_discriminators_are_emitted_even_on_nested_values() -> None:
    """§2: nested targets and graph nodes carry their own ``kind`` too."""
    node = ToolNode(
        id="child-run:tool-1",
        run_id="child-run",
        node_id="tool-1",
        name="t",
        parent_ids=[],
        depth=1,
        status="cached",
        ordinal=0,
    )
    graph = to_wire(RootGraph(nodes=[node]))
    assert graph["nodes"][0]["kind"] == "tool"
    event = to_wire(
        LifecycleInput(
            event_id="e",
            run_id="r",
            root_run_id="r",
            owner_session_id="s",
            occurred_at=1,
            observed_at=1,
            delivery="replay",
            target=PromptTarget(run_id="r", prompt_id="p", status="opened"),
        )
    )
    assert event["type"] == "workflow_lifecycle"
    assert event["target"] == {"kind": "prompt", "runId": "r", "promptId": "p", "status": "opened"}


def test_dumps_is_compact_and_keeps_unicode_readable() -> None:
    """dumps: one compact line per value (JSON lines), non-ASCII ids not escaped."""
    text = dumps(RemovedFrame(cursor=Cursor(epoch="e", revision=1), root_run_id="ルート"))
    assert text == '{"kind":"removed","cursor":{"epoch":"e","revision":1},"rootRunId":"ルート"}'


# --- golden fixtures ---------------------------------------------------------------------------

GOLDEN: list[tuple[str, Any]] = [
    ("root_with_graph.json", RootActivity),
    ("snapshot_ready.json", SnapshotFrame),
    ("snapshot_ready.json", Frame),
    ("snapshot_ready_empty.json", Frame),
    ("snapshot_recovering.json", Frame),
    ("changed.json", Frame),
    ("changed.json", ChangedFrame),
    ("removed.json", Frame),
    ("target_run.json", LifecycleTarget),
    ("target_stage.json", LifecycleTarget),
    ("target_tool.json", LifecycleTarget),
    ("target_prompt.json", PromptTarget),
    ("event_lifecycle.json", WorkflowEvent),
    ("event_lifecycle.json", LifecycleEvent),
    ("event_stage_completed.json", WorkflowEvent),
    ("event_activity_changed.json", WorkflowEvent),
    ("event_heartbeat.json", WorkflowEvent),
    ("lifecycle_input.json", LifecycleInput),
    ("diagnostic.json", Diagnostic),
]


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "type_"), GOLDEN, ids=[f"{n}-{i}" for i, (n, _) in enumerate(GOLDEN)]
)
def test_golden_fixture_decodes_and_reencodes_identically(name: str, type_: Any) -> None:
    """C2: a hand-written document of another host decodes and re-encodes to the same JSON."""
    document = fixture(name)
    value = from_wire(type_, document)
    assert to_wire(value) == document
    assert json.loads(dumps(value)) == document
    assert loads(type_, (FIXTURES / name).read_text(encoding="utf-8")) == value


def test_golden_fixtures_decode_to_the_expected_classes() -> None:
    """§2: unions resolve by their discriminator to the class the document names."""
    assert type(from_wire(Frame, fixture("snapshot_recovering.json"))) is SnapshotFrame
    assert type(from_wire(Frame, fixture("changed.json"))) is ChangedFrame
    assert type(from_wire(Frame, fixture("removed.json"))) is RemovedFrame
    assert type(from_wire(LifecycleTarget, fixture("target_run.json"))) is RunTarget
    assert type(from_wire(LifecycleTarget, fixture("target_stage.json"))) is StageTarget
    assert type(from_wire(LifecycleTarget, fixture("target_tool.json"))) is ToolTarget
    assert type(from_wire(LifecycleTarget, fixture("target_prompt.json"))) is PromptTarget
    assert type(from_wire(WorkflowEvent, fixture("event_lifecycle.json"))) is LifecycleEvent
    completed = fixture("event_stage_completed.json")
    assert type(from_wire(WorkflowEvent, completed)) is StageCompletedEvent
    changed = fixture("event_activity_changed.json")
    assert type(from_wire(WorkflowEvent, changed)) is ActivityChangedEvent
    assert type(from_wire(WorkflowEvent, fixture("event_heartbeat.json"))) is HeartbeatEvent


def test_golden_root_with_graph_decodes_to_the_expected_value() -> None:
    """§2: every wire name maps to its field: the fixture equals the value built by hand."""
    expected = RootActivity(
        root_run_id="run-1",
        owner_session_id="session-7",
        state="working",
        reason="executing",
        active_execution_count=1,
        actionable_block_count=1,
        needs_attention=True,
        graph=RootGraph(
            nodes=[
                StageNode(
                    id="review",
                    run_id="run-1",
                    node_id="review",
                    name="Überprüfung",
                    parent_ids=[],
                    execution_order=0,
                    depth=0,
                    status="awaiting_input",
                    pending_prompt=NodePrompt(
                        id="prompt-1",
                        kind="select",
                        message="Ship it?",
                        choices=["yes", "no", " maybe "],
                        created_at=1700000000000,
                    ),
                ),
                StageNode(
                    id="build",
                    run_id="run-1",
                    node_id="build",
                    name="build",
                    parent_ids=["review"],
                    depth=0,
                    status="running",
                ),
                ToolNode(
                    id="child-run:tool-1",
                    run_id="child-run",
                    node_id="tool-1",
                    name="compile",
                    parent_ids=["build"],
                    execution_order=2,
                    depth=1,
                    status="running",
                    ordinal=0,
                ),
            ],
            run_prompts=[
                RunPrompt(
                    id="prompt-2",
                    kind="confirm",
                    message="Budget exceeded; continue?",
                    created_at=1700000000123.5,
                    run_id="child-run",
                )
            ],
        ),
    )
    decoded = from_wire(RootActivity, fixture("root_with_graph.json"))
    assert exact(decoded) == exact(expected)


def test_golden_ids_and_timestamps_are_kept_exactly() -> None:
    """§2: " root ", "" and unicode ids survive; 1700000000000 stays int, …001.25 stays float."""
    frame = from_wire(SnapshotFrame, fixture("snapshot_ready.json"))
    assert frame.roots is not None
    assert [r.root_run_id for r in frame.roots] == [" root ", "ルート"]
    assert frame.roots[0].owner_session_id == ""
    event = from_wire(LifecycleEvent, fixture("event_lifecycle.json"))
    assert type(event.occurred_at) is int
    assert type(event.observed_at) is float


def test_a_json_float_stays_a_float_even_when_whole() -> None:
    """§2: JSON ``1.0`` is a float and comes back as ``1.0``, JSON ``1`` as ``1``."""
    text = '{"type":"workflow_heartbeat","runId":"r","rootRunId":"r","ownerSessionId":"s",'
    whole_float = loads(HeartbeatEvent, text + '"scheduledAt":1.0,"intervalMinutes":5.0}')
    assert type(whole_float.scheduled_at) is float
    assert type(whole_float.interval_minutes) is float
    assert dumps(whole_float).endswith('"scheduledAt":1.0,"intervalMinutes":5.0}')
    integer = loads(HeartbeatEvent, text + '"scheduledAt":1,"intervalMinutes":5}')
    assert type(integer.scheduled_at) is int


# --- decoding errors (C1) ----------------------------------------------------------------------


def _set(path: list[Any], value: object) -> Any:
    def change(document: Any) -> None:
        for step in path[:-1]:
            document = document[step]
        document[path[-1]] = value

    return change


def _delete(path: list[Any]) -> Any:
    def change(document: Any) -> None:
        for step in path[:-1]:
            document = document[step]
        del document[path[-1]]

    return change


GRAPH = ["root", "graph"]
NODE0 = [*GRAPH, "nodes", 0]


def changed_with_graph() -> dict[str, Any]:
    return {
        "kind": "changed",
        "cursor": {"epoch": "e", "revision": 1},
        "root": fixture("root_with_graph.json"),
    }


def snapshot_of_three() -> dict[str, Any]:
    root = fixture("changed.json")["root"]
    return {
        "kind": "snapshot",
        "cursor": {"epoch": "e", "revision": 1},
        "availability": "ready",
        "roots": [copy.deepcopy(root) for _ in range(3)],
    }


REJECTIONS: list[tuple[str, Any, Any, Any, str]] = [
    # (case id, type, document builder, change, expected wire path)
    ("count-negative", Frame, snapshot_of_three, _set(["roots", 2, "activeExecutionCount"], -1), "roots[2].activeExecutionCount"),
    ("count-float", Frame, snapshot_of_three, _set(["roots", 2, "activeExecutionCount"], 1.0), "roots[2].activeExecutionCount"),
    ("count-bool", Frame, snapshot_of_three, _set(["roots", 2, "activeExecutionCount"], True), "roots[2].activeExecutionCount"),
    ("count-string", Frame, snapshot_of_three, _set(["roots", 1, "actionableBlockCount"], "1"), "roots[1].actionableBlockCount"),
    ("missing-key", Frame, snapshot_of_three, _delete(["roots", 0, "needsAttention"]), "roots[0].needsAttention"),
    ("bool-as-string", Frame, snapshot_of_three, _set(["roots", 0, "needsAttention"], "true"), "roots[0].needsAttention"),
    ("unknown-state", Frame, snapshot_of_three, _set(["roots", 1, "state"], "busy"), "roots[1].state"),
    ("root-not-object", Frame, snapshot_of_three, _set(["roots", 1], "run-1"), "roots[1]"),
    ("roots-not-array", Frame, snapshot_of_three, _set(["roots"], {"0": {}}), "roots"),
    ("ready-without-roots", Frame, snapshot_of_three, _delete(["roots"]), "roots"),
    ("recovering-with-roots", Frame, snapshot_of_three, _set(["availability"], "recovering"), "roots"),
    ("unknown-availability", Frame, snapshot_of_three, _set(["availability"], "offline"), "availability"),
    ("revision-negative", Frame, snapshot_of_three, _set(["cursor", "revision"], -1), "cursor.revision"),
    ("cursor-not-object", Frame, snapshot_of_three, _set(["cursor"], "e:1"), "cursor"),
    ("cursor-missing", Frame, snapshot_of_three, _delete(["cursor"]), "cursor"),
    ("unknown-frame-kind", Frame, snapshot_of_three, _set(["kind"], "snap"), "kind"),
    ("frame-kind-missing", Frame, snapshot_of_three, _delete(["kind"]), "kind"),
    ("frame-kind-not-string", Frame, snapshot_of_three, _set(["kind"], ["snapshot"]), "kind"),
    ("concrete-kind-mismatch", ChangedFrame, snapshot_of_three, lambda d: None, "kind"),
    ("concrete-kind-missing", SnapshotFrame, snapshot_of_three, _delete(["kind"]), "kind"),
    ("unknown-node-kind", Frame, changed_with_graph, _set([*NODE0, "kind"], "task"), "root.graph.nodes[0].kind"),
    ("node-kind-missing", Frame, changed_with_graph, _delete([*NODE0, "kind"]), "root.graph.nodes[0].kind"),
    ("stage-status-of-tool", Frame, changed_with_graph, _set([*GRAPH, "nodes", 0, "status"], "cached"), "root.graph.nodes[0].status"),
    ("tool-ordinal-missing", Frame, changed_with_graph, _delete([*GRAPH, "nodes", 2, "ordinal"]), "root.graph.nodes[2].ordinal"),
    ("parent-ids-string", Frame, changed_with_graph, _set([*GRAPH, "nodes", 1, "parentIds"], "review"), "root.graph.nodes[1].parentIds"),
    ("parent-id-number", Frame, changed_with_graph, _set([*GRAPH, "nodes", 1, "parentIds"], ["a", 1]), "root.graph.nodes[1].parentIds[1]"),
    ("execution-order-null", Frame, changed_with_graph, _set([*NODE0, "executionOrder"], None), "root.graph.nodes[0].executionOrder"),
    ("prompt-created-at-string", Frame, changed_with_graph, _set([*NODE0, "pendingPrompt", "createdAt"], "1700"), "root.graph.nodes[0].pendingPrompt.createdAt"),
    ("prompt-created-at-nan", Frame, changed_with_graph, _set([*NODE0, "pendingPrompt", "createdAt"], math.nan), "root.graph.nodes[0].pendingPrompt.createdAt"),
    ("prompt-choice-number", Frame, changed_with_graph, _set([*NODE0, "pendingPrompt", "choices"], ["yes", 2]), "root.graph.nodes[0].pendingPrompt.choices[1]"),
    ("prompt-kind-unknown", Frame, changed_with_graph, _set([*NODE0, "pendingPrompt", "kind"], "choice"), "root.graph.nodes[0].pendingPrompt.kind"),
    ("run-prompt-run-id-missing", Frame, changed_with_graph, _delete([*GRAPH, "runPrompts", 0, "runId"]), "root.graph.runPrompts[0].runId"),
    ("run-prompts-null", Frame, changed_with_graph, _set([*GRAPH, "runPrompts"], None), "root.graph.runPrompts"),
    ("nodes-missing", Frame, changed_with_graph, _delete([*GRAPH, "nodes"]), "root.graph.nodes"),
    ("graph-null", Frame, changed_with_graph, _set(GRAPH, None), "root.graph"),
    ("required-id-null", Frame, changed_with_graph, _set(["root", "rootRunId"], None), "root.rootRunId"),
    ("id-number", Frame, changed_with_graph, _set(["root", "ownerSessionId"], 7), "root.ownerSessionId"),
    ("event-type-unknown", WorkflowEvent, lambda: fixture("event_heartbeat.json"), _set(["type"], "workflow_pulse"), "type"),
    ("event-type-missing", WorkflowEvent, lambda: fixture("event_heartbeat.json"), _delete(["type"]), "type"),
    ("interval-zero", WorkflowEvent, lambda: fixture("event_heartbeat.json"), _set(["intervalMinutes"], 0), "intervalMinutes"),
    ("scheduled-at-infinite", HeartbeatEvent, lambda: fixture("event_heartbeat.json"), _set(["scheduledAt"], math.inf), "scheduledAt"),
    ("scheduled-at-bool", HeartbeatEvent, lambda: fixture("event_heartbeat.json"), _set(["scheduledAt"], False), "scheduledAt"),
    ("target-status-unknown", WorkflowEvent, lambda: fixture("event_lifecycle.json"), _set(["target", "status"], "awaiting_input"), "target.status"),
    ("target-kind-unknown", WorkflowEvent, lambda: fixture("event_lifecycle.json"), _set(["target", "kind"], "node"), "target.kind"),
    ("delivery-unknown", WorkflowEvent, lambda: fixture("event_lifecycle.json"), _set(["delivery"], "later"), "delivery"),
    ("attribution-unknown", WorkflowEvent, lambda: fixture("event_lifecycle.json"), _set(["attribution"], "robot"), "attribution"),
    ("attribution-null", WorkflowEvent, lambda: fixture("event_lifecycle.json"), _set(["attribution"], None), "attribution"),
    ("completed-not-completed", WorkflowEvent, lambda: fixture("event_stage_completed.json"), _set(["target", "status"], "failed"), "target.status"),
    ("completed-run-target", WorkflowEvent, lambda: fixture("event_stage_completed.json"), _set(["target", "kind"], "run"), "target.kind"),
    ("input-type-mismatch", LifecycleInput, lambda: fixture("lifecycle_input.json"), _set(["type"], "workflow_heartbeat"), "type"),
    ("input-target-action-unknown", LifecycleInput, lambda: fixture("lifecycle_input.json"), _set(["target", "action"], "stop"), "target.action"),
    ("run-target-previous-unknown", LifecycleTarget, lambda: fixture("target_run.json"), _set(["previousStatus"], "awaiting_input"), "previousStatus"),
    ("tool-target-id-missing", LifecycleTarget, lambda: fixture("target_tool.json"), _delete(["toolNodeId"]), "toolNodeId"),
    ("prompt-target-stage-null", LifecycleTarget, lambda: fixture("target_prompt.json"), _set(["stageId"], None), "stageId"),
    ("diagnostic-kind-unknown", Diagnostic, lambda: fixture("diagnostic.json"), _set(["kind"], "Overflow"), "kind"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("type_", "build", "change", "path"),
    [case[1:] for case in REJECTIONS],
    ids=[case[0] for case in REJECTIONS],
)
def test_decoding_rejects_bad_data_with_the_wire_path(
    type_: Any, build: Any, change: Any, path: str
) -> None:
    """C1: every decoding error is a ContractError whose path is the JSON path in wire names."""
    document = build()
    change(document)
    with pytest.raises(ContractError) as caught:
        from_wire(type_, document)
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.parametrize("data", [[], "snapshot", 3, None, True])
def test_decoding_rejects_data_that_is_not_an_object(data: object) -> None:
    """C1: the top-level value must be a JSON object; the path is empty."""
    for type_ in (Frame, SnapshotFrame, Cursor):
        with pytest.raises(ContractError) as caught:
            from_wire(type_, data)
        assert caught.value.path == ""


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        '{"kind": "removed",}',
        "{'kind': 'removed'}",
        '{"epoch": "e", "revision": NaN}',
        '{"epoch": "e", "revision": Infinity}',
        b"\xff\xfe{",
        "[" * 100_000,
    ],
    ids=[
        "empty",
        "truncated",
        "trailing-comma",
        "single-quotes",
        "nan",
        "infinity",
        "bad-utf8",
        "deep",
    ],
)
def test_loads_rejects_malformed_json_text(text: str | bytes) -> None:
    """C1: text that is not JSON (RFC 8259: no NaN or Infinity) is a ContractError, empty path."""
    with pytest.raises(ContractError, match="malformed JSON") as caught:
        loads(Cursor, text)
    assert caught.value.path == ""


def test_loads_rejects_a_count_written_as_a_whole_float() -> None:
    """§2: counts are ints; ``1.0`` is not silently truncated to ``1``."""
    with pytest.raises(ContractError) as caught:
        loads(Cursor, '{"epoch": "e", "revision": 1.0}')
    assert caught.value.path == "revision"


def test_a_number_too_large_for_a_float_is_rejected_by_its_field() -> None:
    """C1: JSON ``1e400`` parses to infinity, which no timestamp accepts."""
    text = json.dumps(fixture("event_heartbeat.json")).replace("1700000300000", "1e400")
    with pytest.raises(ContractError) as caught:
        loads(WorkflowEvent, text)
    assert caught.value.path == "scheduledAt"


def test_unknown_keys_are_ignored_at_every_level() -> None:
    """Decision (docs/wire-format.md): keys a newer host adds are ignored, for forward
    compatibility; they do not survive a round trip."""
    document = changed_with_graph()
    extended = copy.deepcopy(document)
    extended["sequence"] = 99
    extended["cursor"]["shard"] = "a"
    extended["root"]["colour"] = None
    extended["root"]["graph"]["nodes"][2]["retries"] = [1, 2]
    extended["root"]["graph"]["nodes"][0]["pendingPrompt"]["default"] = "yes"
    value = from_wire(Frame, extended)
    assert value == from_wire(Frame, document)
    assert to_wire(value) == document


def test_snake_case_keys_are_not_wire_names() -> None:
    """§2: only the camelCase names are the format; a snake_case key is an unknown key, so the
    camelCase one is reported missing."""
    with pytest.raises(ContractError) as caught:
        from_wire(
            RemovedFrame,
            {"kind": "removed", "cursor": {"epoch": "e", "revision": 0}, "root_run_id": "r"},
        )
    assert caught.value.path == "rootRunId"


def test_to_wire_of_a_non_contract_value_is_a_type_error() -> None:
    """Decision: encoding something that is not a contract value is a TypeError, as in json.dumps."""
    for value in ({"kind": "removed"}, "frame", None, object()):
        with pytest.raises(TypeError):
            to_wire(value)
        with pytest.raises(TypeError):
            dumps(value)


def test_from_wire_of_a_non_contract_type_is_a_type_error() -> None:
    """Decision: only contract classes and unions of them can be decoded; anything else is a
    programming error (TypeError), not bad data."""
    for type_ in (int, dict, str | int, Cursor | int):
        with pytest.raises(TypeError):
            from_wire(type_, {})
        with pytest.raises(TypeError):
            loads(type_, "{}")


def test_every_example_in_the_wire_format_doc_is_a_valid_document() -> None:
    """C2: the JSON examples in docs/wire-format.md decode and re-encode to themselves, so the
    documentation cannot drift from the format."""
    text = (Path(__file__).parents[2] / "docs" / "wire-format.md").read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    candidates = (Frame, WorkflowEvent, LifecycleTarget, GraphNode, LifecycleInput, RootActivity)
    candidates += (Cursor, NodePrompt, Diagnostic)
    seen = 0
    for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL):
        position = 0
        while block[position:].strip():
            position += len(block[position:]) - len(block[position:].lstrip())
            document, position = decoder.raw_decode(block, position)
            decoded = []
            for type_ in candidates:
                try:
                    decoded.append(from_wire(type_, document))
                except ContractError:
                    continue
            assert decoded, document
            assert to_wire(decoded[0]) == document
            seen += 1
    assert seen >= 19


# --- the strategies themselves -----------------------------------------------------------------
# Round trips prove little if the strategies never draw the hard cases; these prove they do.


@pytest.mark.parametrize("raw", ["", " root ", "ルート"])
def test_ids_draws_the_nasty_ids(raw: str) -> None:
    """§2: empty, whitespace-padded and unicode ids are among what every strategy draws."""
    assert find(ws.ids(), lambda drawn: drawn == raw) == raw


def test_timestamps_draws_ints_and_floats() -> None:
    """§2: both int and float timestamps are drawn, so the type-exact round trip is exercised."""
    assert type(find(ws.timestamps(), lambda t: type(t) is int and t > 0)) is int
    assert type(find(ws.timestamps(), lambda t: isinstance(t, float) and t.is_integer())) is float


def test_optional_fields_are_drawn_present_and_absent() -> None:
    """§2: every optional field is drawn both absent and present."""
    assert find(ws.root_activities(), lambda r: r.graph is None).graph is None
    assert find(ws.root_activities(), lambda r: r.graph is not None).graph is not None
    with_prompt = find(ws.stage_nodes(), lambda n: n.pending_prompt is not None)
    assert with_prompt.pending_prompt is not None
    full = find(ws.run_targets(), lambda t: t.previous_status is not None and t.action is not None)
    assert full.action is not None
    assert find(ws.prompt_targets(), lambda t: t.stage_id is None).stage_id is None
    ready = find(ws.snapshot_frames(), lambda f: f.roots is not None and len(f.roots) > 1)
    assert ready.availability == "ready"
    assert find(ws.snapshot_frames(), lambda f: f.roots is None).availability != "ready"


def test_strategy_parameters_steer_their_field() -> None:
    """The keyword parameters constrain what is drawn (e.g. colliding root ids)."""
    frame = find(
        ws.snapshot_frames(roots=ws.root_activities(root_run_ids=st.just("same"))),
        lambda f: f.roots is not None and len(f.roots) >= 2,
    )
    assert frame.roots is not None
    assert {root.root_run_id for root in frame.roots} == {"same"}
    completed = find(ws.stage_completed_events(), lambda e: True)
    assert completed.target.status == "completed"


# --- issue 12 / 13: mixed streams, bad inputs, one list of classes --------------------------


def test_every_contract_class_is_exported_and_wired() -> None:
    """Issue 13: the wire table is the contract's own list. Every attrs class ``_contract``
    defines is public (``workflow_hub`` and ``workflow_hub.contract``), drawn by this file's
    round trips, and survives ``loads(cls, dumps(value))``."""
    import workflow_hub
    import workflow_hub.contract as contract
    from workflow_hub._contract import _enums as _enums
    from workflow_hub._contract import _values as _contract

    # Written out for type checkers, so checked here: exactly the private modules' exports.
    assert set(contract.__all__) == {*_contract.__all__, *_enums.__all__, "ContractError"}
    defined = {value for value in vars(_contract).values() if attrs.has(value)}
    assert defined == set(_contract.VALUE_CLASSES)
    tested = {t for t, _ in TYPES}
    for cls in defined:
        assert getattr(workflow_hub, cls.__name__) is cls
        assert cls.__name__ in workflow_hub.__all__
        assert cls.__name__ in contract.__all__
        assert cls in tested, f"{cls.__name__} has no round trip in TYPES"
        strategy = dict(TYPES)[cls]
        value = find(strategy, lambda _: True)
        assert exact(loads(cls, dumps(value))) == exact(value)


def test_a_mixed_stream_of_frames_and_hook_events_decodes() -> None:
    """Issue 12: ``Frame | WorkflowEvent`` decodes what ``workflow-hub demo --json`` prints."""
    frame = find(ws.changed_frames(), lambda _: True)
    event = find(ws.heartbeat_events(), lambda _: True)
    lifecycle = find(ws.lifecycle_events(), lambda _: True)
    stream = [dumps(value) for value in (frame, event, lifecycle)]
    decoded = [loads(Frame | WorkflowEvent, line) for line in stream]
    assert [exact(value) for value in decoded] == [exact(frame), exact(event), exact(lifecycle)]
    assert exact(from_wire(Frame | WorkflowEvent, to_wire(event))) == exact(event)


@pytest.mark.parametrize(
    ("document", "path", "message"),
    [
        ({}, "", "missing discriminator kind or type; expected one of kind 'snapshot'"),
        ({"kind": "stage"}, "kind", "unknown kind 'stage'; expected one of 'snapshot', 'changed'"),
        ({"type": "nope"}, "type", "unknown type 'nope'; expected one of 'workflow_lifecycle'"),
        ({"kind": "removed", "type": "workflow_heartbeat"}, "", "ambiguous discriminators"),
    ],
)
def test_a_mixed_union_names_its_discriminators_when_it_cannot_decide(
    document: dict[str, Any], path: str, message: str
) -> None:
    with pytest.raises(ContractError) as caught:
        from_wire(Frame | WorkflowEvent, document)
    assert caught.value.path == path
    assert caught.value.problem.startswith(message)


def test_a_union_with_a_tag_twice_is_not_decodable() -> None:
    """Two members with the same ``(key, tag)`` cannot be told apart: refused as a type."""
    with pytest.raises(TypeError, match="not a contract class or a union"):
        from_wire(StageNode | StageTarget, {"kind": "stage"})


@pytest.mark.parametrize("text", [None, 5, {"kind": "removed"}])
def test_loads_of_something_that_is_not_text_says_what_it_expected(text: Any) -> None:
    """Issue 12: ``loads(Frame, None)`` is a ContractError naming what it takes."""
    with pytest.raises(ContractError, match=r"expected JSON text \(str, bytes or bytearray\)"):
        loads(Frame, text)


LONE_SURROGATE_FRAME = (
    '{"kind":"removed","cursor":{"epoch":"e","revision":1},"rootRunId":"root-\\ud800"}'
)


def test_a_lone_surrogate_on_the_wire_is_refused_with_its_path() -> None:
    """Issue 12: the wire format is UTF-8; ``\\ud800`` alone has no UTF-8 form."""
    with pytest.raises(ContractError, match="lone surrogate") as caught:
        loads(Frame, LONE_SURROGATE_FRAME)
    assert caught.value.path == "rootRunId"


@pytest.mark.parametrize("bad", ["\ud800", "root-\udfff", "a\ud83d"])
def test_a_constructor_refuses_a_lone_surrogate(bad: str) -> None:
    """Every value that exists can be sent: ``dumps(value).encode()`` never fails."""
    with pytest.raises(ContractError, match="lone surrogate") as caught:
        RemovedFrame(cursor=Cursor(epoch="e", revision=1), root_run_id=bad)
    assert caught.value.path == "root_run_id"
    with pytest.raises(ContractError):
        Cursor(epoch=bad, revision=0)


def test_paired_surrogates_and_other_non_ascii_text_are_kept() -> None:
    text = "déjà-vu-\U0001f600-中"
    frame = RemovedFrame(cursor=Cursor(epoch="e", revision=1), root_run_id=text)
    assert loads(RemovedFrame, dumps(frame).encode()).root_run_id == text
    # JSON's escaped surrogate pair is one character, not a lone surrogate.
    escaped = LONE_SURROGATE_FRAME.replace("\\ud800", "\\ud83d\\ude00")
    assert loads(RemovedFrame, escaped).root_run_id == "root-\U0001f600"
