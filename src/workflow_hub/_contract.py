"""The contract's value types: immutable, validated on construction, shared freely.

Every class is a frozen, slotted attrs class with keyword-only arguments. Sequences are tuples.
Frames, targets and nodes carry a class-level ``kind`` and events a class-level ``type``: they are
the wire discriminators, and they make ``frame.kind == "snapshot"`` and ``match`` both work.
Construction validates every field (SPEC C1) so that a value that exists is a value the hub can
trust; building one from bad input raises :class:`ContractError` naming the field.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias, TypeVar

import attrs

from ._enums import (
    Attribution,
    Availability,
    ControlAction,
    Delivery,
    DiagnosticKind,
    PromptKind,
    PromptStatus,
    Reason,
    RunStatus,
    StageStatus,
    State,
    ToolNodeStatus,
)
from ._errors import ContractError
from ._validate import (
    bool_field,
    check_str,
    count_field,
    enum_check,
    enum_field,
    instance_check,
    instance_field,
    number_field,
    str_field,
    tuple_check,
    tuple_field,
)

__all__ = [
    "ActivityChangedEvent",
    "ChangedFrame",
    "Cursor",
    "Diagnostic",
    "Frame",
    "GraphNode",
    "HeartbeatEvent",
    "LifecycleEvent",
    "LifecycleInput",
    "LifecycleTarget",
    "NodePrompt",
    "PromptTarget",
    "RemovedFrame",
    "RootActivity",
    "RootGraph",
    "RunPrompt",
    "RunTarget",
    "SnapshotFrame",
    "StageCompletedEvent",
    "StageNode",
    "StageTarget",
    "Timestamp",
    "ToolNode",
    "ToolTarget",
    "WorkflowEvent",
]

Timestamp: TypeAlias = int | float
"""Epoch milliseconds, kept exactly as given (an int stays an int)."""


@attrs.frozen(kw_only=True)
class Cursor:
    """Where a publication stands: revisions increase within an epoch; epochs never compare."""

    epoch: str = str_field()
    revision: int = count_field()


# --- roots and their graphs -------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class NodePrompt:
    """A question waiting for a human on a stage."""

    id: str = str_field()
    kind: PromptKind = enum_field(PromptKind)
    message: str = str_field()
    choices: tuple[str, ...] | None = tuple_field(check_str, optional=True)
    created_at: Timestamp = number_field()


@attrs.frozen(kw_only=True)
class RunPrompt:
    """A question waiting for a human on a run (not tied to one stage)."""

    id: str = str_field()
    kind: PromptKind = enum_field(PromptKind)
    message: str = str_field()
    choices: tuple[str, ...] | None = tuple_field(check_str, optional=True)
    created_at: Timestamp = number_field()
    run_id: str = str_field()


@attrs.frozen(kw_only=True)
class StageNode:
    kind: ClassVar[Literal["stage"]] = "stage"

    id: str = str_field()
    run_id: str = str_field()
    node_id: str = str_field()
    name: str = str_field()
    parent_ids: tuple[str, ...] = tuple_field(check_str)
    execution_order: int | None = count_field(optional=True)
    depth: int = count_field()
    status: StageStatus = enum_field(StageStatus)
    pending_prompt: NodePrompt | None = instance_field(NodePrompt, optional=True)


@attrs.frozen(kw_only=True)
class ToolNode:
    kind: ClassVar[Literal["tool"]] = "tool"

    id: str = str_field()
    run_id: str = str_field()
    node_id: str = str_field()
    name: str = str_field()
    parent_ids: tuple[str, ...] = tuple_field(check_str)
    execution_order: int | None = count_field(optional=True)
    depth: int = count_field()
    status: ToolNodeStatus = enum_field(ToolNodeStatus)
    ordinal: int = count_field()


GraphNode: TypeAlias = StageNode | ToolNode


@attrs.frozen(kw_only=True)
class RootGraph:
    nodes: tuple[GraphNode, ...] = tuple_field(instance_check((StageNode, ToolNode)))
    run_prompts: tuple[RunPrompt, ...] | None = tuple_field(
        instance_check(RunPrompt), optional=True
    )


@attrs.frozen(kw_only=True)
class RootActivity:
    """The summary of one workflow root. A change always replaces the whole root."""

    root_run_id: str = str_field()
    owner_session_id: str = str_field()
    state: State = enum_field(State)
    reason: Reason = enum_field(Reason)
    active_execution_count: int = count_field()
    actionable_block_count: int = count_field()
    needs_attention: bool = bool_field()
    graph: RootGraph | None = instance_field(RootGraph, optional=True)


# --- frames ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SnapshotFrame:
    """Everything known at ``cursor``; it replaces all prior knowledge.

    ``roots`` is a tuple (possibly empty) exactly when ``availability`` is ``ready``, and ``None``
    otherwise: an unknown source is never reported as "ready with no roots".
    """

    kind: ClassVar[Literal["snapshot"]] = "snapshot"

    cursor: Cursor = instance_field(Cursor)
    availability: Availability = enum_field(Availability)
    roots: tuple[RootActivity, ...] | None = tuple_field(
        instance_check(RootActivity), optional=True
    )

    def __attrs_post_init__(self) -> None:
        if self.availability is Availability.READY and self.roots is None:
            raise ContractError("roots", "a ready snapshot needs roots (an empty tuple if none)")
        if self.availability is not Availability.READY and self.roots is not None:
            raise ContractError("roots", f"a {self.availability} snapshot carries no roots")


@attrs.frozen(kw_only=True)
class ChangedFrame:
    """One root, replaced whole."""

    kind: ClassVar[Literal["changed"]] = "changed"

    cursor: Cursor = instance_field(Cursor)
    root: RootActivity = instance_field(RootActivity)


@attrs.frozen(kw_only=True)
class RemovedFrame:
    kind: ClassVar[Literal["removed"]] = "removed"

    cursor: Cursor = instance_field(Cursor)
    root_run_id: str = str_field()


Frame: TypeAlias = SnapshotFrame | ChangedFrame | RemovedFrame

_check_availability = enum_check(Availability)
_check_roots = tuple_check(instance_check(RootActivity))


def snapshot_arguments(
    availability: object, roots: object
) -> tuple[Availability, tuple[RootActivity, ...] | None]:
    """Check ``publish_snapshot``'s arguments: the one copy for every publishing front.

    ``ready`` needs roots (a sequence, possibly empty); the other states take none. ``roots`` is
    read once, into a tuple, so an iterator or a list the caller goes on mutating cannot change
    what is published.
    """
    state = _check_availability(availability, "availability")
    if state is Availability.READY:
        if roots is None:
            raise ContractError("roots", "a ready snapshot needs roots (an empty list if none)")
        return state, _check_roots(roots, "roots")
    if roots is not None:
        raise ContractError("roots", f"a {state} snapshot takes no roots")
    return state, None


# --- lifecycle targets -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RunTarget:
    """A run's status, and the control request (``action``) behind it if any."""

    kind: ClassVar[Literal["run"]] = "run"

    run_id: str = str_field()
    previous_status: RunStatus | None = enum_field(RunStatus, optional=True)
    status: RunStatus = enum_field(RunStatus)
    action: ControlAction | None = enum_field(ControlAction, optional=True)


@attrs.frozen(kw_only=True)
class StageTarget:
    kind: ClassVar[Literal["stage"]] = "stage"

    run_id: str = str_field()
    stage_id: str = str_field()
    stage_name: str = str_field()
    previous_status: StageStatus | None = enum_field(StageStatus, optional=True)
    status: StageStatus = enum_field(StageStatus)


@attrs.frozen(kw_only=True)
class ToolTarget:
    kind: ClassVar[Literal["tool"]] = "tool"

    run_id: str = str_field()
    tool_node_id: str = str_field()
    tool_name: str = str_field()
    previous_status: ToolNodeStatus | None = enum_field(ToolNodeStatus, optional=True)
    status: ToolNodeStatus = enum_field(ToolNodeStatus)


@attrs.frozen(kw_only=True)
class PromptTarget:
    kind: ClassVar[Literal["prompt"]] = "prompt"

    run_id: str = str_field()
    stage_id: str | None = str_field(optional=True)
    prompt_id: str = str_field()
    status: PromptStatus = enum_field(PromptStatus)


LifecycleTarget: TypeAlias = RunTarget | StageTarget | ToolTarget | PromptTarget
_TARGET_CLASSES = (RunTarget, StageTarget, ToolTarget, PromptTarget)

# --- events ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class LifecycleInput:
    """What a publisher passes to ``publish_lifecycle``: the envelope without a cursor.

    The hub assigns the cursor. ``event_id`` and ``delivery`` are kept exactly as given.
    """

    type: ClassVar[Literal["workflow_lifecycle"]] = "workflow_lifecycle"

    event_id: str = str_field()
    run_id: str = str_field()
    root_run_id: str = str_field()
    owner_session_id: str = str_field()
    occurred_at: Timestamp = number_field()
    observed_at: Timestamp = number_field()
    delivery: Delivery = enum_field(Delivery)
    target: LifecycleTarget = instance_field(_TARGET_CLASSES)
    attribution: Attribution | None = enum_field(Attribution, optional=True)


@attrs.frozen(kw_only=True)
class LifecycleEvent:
    """A run, stage, tool or prompt status change, as handlers receive it."""

    type: ClassVar[Literal["workflow_lifecycle"]] = "workflow_lifecycle"

    event_id: str = str_field()
    cursor: Cursor = instance_field(Cursor)
    run_id: str = str_field()
    root_run_id: str = str_field()
    owner_session_id: str = str_field()
    occurred_at: Timestamp = number_field()
    observed_at: Timestamp = number_field()
    delivery: Delivery = enum_field(Delivery)
    target: LifecycleTarget = instance_field(_TARGET_CLASSES)
    attribution: Attribution | None = enum_field(Attribution, optional=True)


@attrs.frozen(kw_only=True)
class StageCompletedEvent:
    """The lifecycle envelope of a stage that completed; shares the lifecycle event's id and cursor.

    Failed, skipped, cancelled and killed outcomes never produce one.
    """

    type: ClassVar[Literal["workflow_stage_completed"]] = "workflow_stage_completed"

    event_id: str = str_field()
    cursor: Cursor = instance_field(Cursor)
    run_id: str = str_field()
    root_run_id: str = str_field()
    owner_session_id: str = str_field()
    occurred_at: Timestamp = number_field()
    observed_at: Timestamp = number_field()
    delivery: Delivery = enum_field(Delivery)
    target: StageTarget = instance_field(StageTarget)
    attribution: Attribution | None = enum_field(Attribution, optional=True)

    def __attrs_post_init__(self) -> None:
        if self.target.status is not StageStatus.COMPLETED:
            raise ContractError(
                "target.status",
                f"a stage-completed event needs completed, got {self.target.status}",
            )


@attrs.frozen(kw_only=True)
class ActivityChangedEvent:
    """Hook twin of a :class:`ChangedFrame`: the same root and the same cursor."""

    type: ClassVar[Literal["workflow_activity_changed"]] = "workflow_activity_changed"

    cursor: Cursor = instance_field(Cursor)
    root: RootActivity = instance_field(RootActivity)


@attrs.frozen(kw_only=True)
class HeartbeatEvent:
    """A running top-level run reached ``scheduled_at``. Observation only: it starts no work."""

    type: ClassVar[Literal["workflow_heartbeat"]] = "workflow_heartbeat"

    run_id: str = str_field()
    root_run_id: str = str_field()
    owner_session_id: str = str_field()
    scheduled_at: Timestamp = number_field()
    interval_minutes: int | float = number_field(positive=True)


WorkflowEvent: TypeAlias = (
    LifecycleEvent | StageCompletedEvent | ActivityChangedEvent | HeartbeatEvent
)


@attrs.frozen(kw_only=True)
class Diagnostic:
    """A record of something a consumer or publisher did wrong or should know; never raised."""

    kind: DiagnosticKind = enum_field(DiagnosticKind)
    cursor: Cursor = instance_field(Cursor)


VALUE_CLASSES: tuple[type[Any], ...] = tuple(
    value for name in __all__ if attrs.has(value := globals()[name])
)
"""Every contract value class (in ``__all__`` order): the one list the wire format and the public
modules derive theirs from (a new class is exported and wired by adding it to ``__all__``)."""

_V = TypeVar("_V")


def trusted(cls: type[_V], **fields: object) -> _V:
    """Build ``cls`` from values already checked, without running its converters (C1 holds).

    For the hub's hot paths only, where every value comes from a checked contract object or the
    hub's own state: every field must be given, already of its declared type.
    """
    instance = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(instance, name, value)
    return instance
