"""The contract's value types: immutable, validated on construction, shared freely.

Every class is a frozen, slotted attrs class with keyword-only arguments. Sequences are tuples.
Frames, targets and nodes carry a class-level ``kind`` and events a class-level ``type``: they are
the wire discriminators, and they make ``frame.kind == "snapshot"`` and ``match`` both work.
Construction validates every field (SPEC C1) so that a value that exists is a value the hub can
trust; building one from bad input raises :class:`ContractError` naming the field.

Each class's ``if TYPE_CHECKING: def __init__`` block is generated from its attrs fields: never
edit it by hand, run ``python tools/contract_inits.py`` (``make lint`` fails when it drifts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, TypeVar, final

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
    DETAIL_MAX,
    FAILURE_MESSAGE_MAX,
    FAILURE_TYPE_MAX,
    bool_field,
    check_detail,
    check_labels,
    check_str,
    count_field,
    detail_field,
    enum_check,
    enum_field,
    instance_check,
    instance_field,
    labels_field,
    number_field,
    str_field,
    text_field,
    tuple_check,
    tuple_field,
)

__all__ = [
    "ActivityChangedEvent",
    "ChangedFrame",
    "Cursor",
    "Diagnostic",
    "FailureDetail",
    "Frame",
    "GraphNode",
    "HeartbeatEvent",
    "Labels",
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

_C = TypeVar("_C")

# What type checkers see differs from what runs, on purpose. At run time every class is a frozen,
# keyword-only attrs class whose converters accept more than the attribute types say (a wire
# string for an enum member, any iterable for a tuple). Type checkers would build ``__init__``
# from the annotations alone (mypy's attrs plugin cannot read a converter that receives the
# field, and ``dataclass_transform`` has no converters), so each class declares the ``__init__``
# it really has under ``TYPE_CHECKING``, and the decorator they see is a ``dataclass_transform``
# that keeps a declared ``__init__`` (frozen and keyword-only all the same). The declarations are
# written by tools/contract_inits.py from the attrs fields (the field helpers record the type each
# converter accepts); tests/contract/test_typing.py holds the file to it and runs mypy on user programs.
if TYPE_CHECKING:
    from typing import dataclass_transform

    @dataclass_transform(frozen_default=True, kw_only_default=True)
    def _value_class(cls: type[_C]) -> type[_C]:
        return cls

    class _Value:
        """Makes every class an ``attrs.AttrsInstance`` for ``attrs.fields``, ``asdict``…"""

        __attrs_attrs__: ClassVar[Any]

else:
    _value_class = attrs.frozen(kw_only=True)

    class _Value:
        __slots__ = ()


@_value_class
class Cursor(_Value):
    """Where a publication stands: revisions increase within an epoch; epochs never compare."""

    epoch: str = str_field()
    revision: int = count_field()

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            epoch: str,
            revision: int,
        ) -> None: ...


# --- roots and their graphs -------------------------------------------------------------------


@_value_class
class FailureDetail(_Value):
    """Why something failed (C3): a short message and, optionally, the error's type name.

    On a failed stage or tool node and on a lifecycle target whose status is ``failed``. Short
    and bounded (a message of at most 500 characters, a type of at most 200), never a traceback:
    it is what a view shows whole next to the failed name.
    """

    message: str = text_field(FAILURE_MESSAGE_MAX)
    type: str | None = text_field(FAILURE_TYPE_MAX, optional=True)

    @classmethod
    def of(cls, error: BaseException | str) -> FailureDetail:
        """The detail of an exception (its message and class name) or of a message: the text's
        first line, its whitespace collapsed, cut to the bounds with "…" (an empty message is
        the type's name). What the tracker and the bridges use, so that any exception a
        scheduler meets becomes a valid detail."""
        if isinstance(error, BaseException):
            kind: str | None = _bounded(type(error).__qualname__, FAILURE_TYPE_MAX)
            try:
                text = str(error)
            except Exception:  # a broken __str__ must not hide the failure it describes
                text = ""
        elif isinstance(error, str):
            kind = None
            text = error
        else:
            raise ContractError(
                "error", f"expected an exception or a message, got {type(error).__name__}"
            )
        first = next((line for line in text.splitlines() if line.strip()), "")
        message = _bounded(" ".join(first.split()), FAILURE_MESSAGE_MAX) or kind or "failed"
        return cls(message=message, type=kind)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            message: str,
            type: str | None = None,
        ) -> None: ...


def check_error(error: object, status: str, path: str = "error") -> FailureDetail:
    """A fact's ``error`` argument (C3) as a detail: a :class:`FailureDetail` as given, an
    exception or a message through :meth:`FailureDetail.of`. Only a failed status takes one."""
    if status != "failed":
        raise ContractError(path, f"only a failed status carries an error, got {status}")
    if type(error) is FailureDetail:
        return error
    return FailureDetail.of(error)  # type: ignore[arg-type]  # it refuses other types


def _bounded(text: str, longest: int) -> str:
    """``text`` with its lone surrogates replaced, cut to ``longest`` characters with "…"."""
    text = text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text
    return text if len(text) <= longest else text[: longest - 1] + "…"


def _check_failure(value: Any) -> None:
    """An ``error`` belongs to a failed node or target only (C3)."""
    if value.error is not None and value.status != "failed":
        raise ContractError("error", f"only a failed status carries an error, got {value.status}")


@_value_class
class NodePrompt(_Value):
    """A question waiting for a human on a stage."""

    id: str = str_field()
    kind: PromptKind = enum_field(PromptKind)
    message: str = str_field()
    choices: tuple[str, ...] | None = tuple_field(check_str, optional=True)
    created_at: Timestamp = number_field()

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            id: str,
            kind: PromptKind | str,
            message: str,
            choices: Iterable[str] | None = None,
            created_at: int | float,
        ) -> None: ...


@_value_class
class RunPrompt(_Value):
    """A question waiting for a human on a run (not tied to one stage)."""

    id: str = str_field()
    kind: PromptKind = enum_field(PromptKind)
    message: str = str_field()
    choices: tuple[str, ...] | None = tuple_field(check_str, optional=True)
    created_at: Timestamp = number_field()
    run_id: str = str_field()

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            id: str,
            kind: PromptKind | str,
            message: str,
            choices: Iterable[str] | None = None,
            created_at: int | float,
            run_id: str,
        ) -> None: ...


@_value_class
class StageNode(_Value):
    """A stage of a run in a root's graph, with its status and the prompt it waits on, if any.

    ``id`` is unique in the graph (``RunTracker`` writes ``"{run_id}:{node_id}"``, as §5 names a
    nested node); ``depth`` is the nesting depth of the node's run, 0 for the root run.
    """

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
    error: FailureDetail | None = instance_field(FailureDetail, optional=True)

    def __attrs_post_init__(self) -> None:
        _check_failure(self)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            id: str,
            run_id: str,
            node_id: str,
            name: str,
            parent_ids: Iterable[str],
            execution_order: int | None = None,
            depth: int,
            status: StageStatus | str,
            pending_prompt: NodePrompt | None = None,
            error: FailureDetail | None = None,
        ) -> None: ...


@_value_class
class ToolNode(_Value):
    """A tool of a run in a root's graph: the fields of a :class:`StageNode`, with an ordinal
    (which orders the tools that share a parent) where a stage has its pending prompt."""

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
    error: FailureDetail | None = instance_field(FailureDetail, optional=True)

    def __attrs_post_init__(self) -> None:
        _check_failure(self)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            id: str,
            run_id: str,
            node_id: str,
            name: str,
            parent_ids: Iterable[str],
            execution_order: int | None = None,
            depth: int,
            status: ToolNodeStatus | str,
            ordinal: int,
            error: FailureDetail | None = None,
        ) -> None: ...


GraphNode: TypeAlias = StageNode | ToolNode
"""A node of a :class:`RootGraph`; the nodes' class-level ``kind`` (``"stage"``, ``"tool"``)
tells them apart."""


@_value_class
class RootGraph(_Value):
    """A root's stages and tools, with the prompts that wait on its runs.

    ``RunTracker`` (with ``include_graph=True``) lists every declared node of every run of the
    root, parents before children; ``run_prompts`` is absent when no run has an open prompt.
    """

    nodes: tuple[GraphNode, ...] = tuple_field(instance_check((StageNode, ToolNode)))
    run_prompts: tuple[RunPrompt, ...] | None = tuple_field(
        instance_check(RunPrompt), optional=True
    )

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            nodes: Iterable[StageNode | ToolNode],
            run_prompts: Iterable[RunPrompt] | None = None,
        ) -> None: ...


@final
class Labels(Mapping[str, str]):
    """A root's labels (C3): a small, immutable, hashable map of str to str set by the scheduler
    (team, env, deployment, queue …), checked when made.

    At most 16 labels; a key is a letter, then letters, digits, ``_ . - /`` (at most 63
    characters); a value is 1 to 256 printable characters. A bad one is a
    :class:`ContractError` on ``labels`` that names the key. Equal to any mapping with the same
    items; its order is the order given (the wire keeps it).
    """

    __slots__ = ("_hash", "_items")

    def __init__(self, labels: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, str] = {} if labels is None else check_labels(labels, "labels")
        self._hash: int | None = None

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Labels):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"Labels({self._items!r})"


@_value_class
class RootActivity(_Value):
    """The summary of one workflow root. A change always replaces the whole root."""

    root_run_id: str = str_field()
    owner_session_id: str = str_field()
    state: State = enum_field(State)
    reason: Reason = enum_field(Reason)
    active_execution_count: int = count_field()
    actionable_block_count: int = count_field()
    needs_attention: bool = bool_field()
    graph: RootGraph | None = instance_field(RootGraph, optional=True)
    labels: Labels | None = labels_field(Labels)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            root_run_id: str,
            owner_session_id: str,
            state: State | str,
            reason: Reason | str,
            active_execution_count: int,
            actionable_block_count: int,
            needs_attention: bool,
            graph: RootGraph | None = None,
            labels: Mapping[str, str] | None = None,
        ) -> None: ...


# --- frames ------------------------------------------------------------------------------------


@_value_class
class SnapshotFrame(_Value):
    """Everything known at ``cursor``; it replaces all prior knowledge.

    ``roots`` is a tuple (possibly empty) exactly when ``availability`` is ``ready``, and ``None``
    otherwise: an unknown source is never reported as "ready with no roots". A non-ready
    snapshot may say why the source is unknown in ``detail`` (C3: one printable line of at most
    200 characters, e.g. ``broker unreachable: ConnectionError: …``); a ready one has none.
    """

    kind: ClassVar[Literal["snapshot"]] = "snapshot"

    cursor: Cursor = instance_field(Cursor)
    availability: Availability = enum_field(Availability)
    roots: tuple[RootActivity, ...] | None = tuple_field(
        instance_check(RootActivity), optional=True
    )
    detail: str | None = detail_field()

    def __attrs_post_init__(self) -> None:
        if self.availability is Availability.READY:
            if self.roots is None:
                raise ContractError(
                    "roots", "a ready snapshot needs roots (an empty tuple if none)"
                )
            if self.detail is not None:
                raise ContractError("detail", "a ready snapshot carries no detail")
        elif self.roots is not None:
            raise ContractError("roots", f"a {self.availability} snapshot carries no roots")

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            cursor: Cursor,
            availability: Availability | str,
            roots: Iterable[RootActivity] | None = None,
            detail: str | None = None,
        ) -> None: ...


@_value_class
class ChangedFrame(_Value):
    """One root, replaced whole."""

    kind: ClassVar[Literal["changed"]] = "changed"

    cursor: Cursor = instance_field(Cursor)
    root: RootActivity = instance_field(RootActivity)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            cursor: Cursor,
            root: RootActivity,
        ) -> None: ...


@_value_class
class RemovedFrame(_Value):
    """One root is gone: the publisher removed it (P5), and observers drop it."""

    kind: ClassVar[Literal["removed"]] = "removed"

    cursor: Cursor = instance_field(Cursor)
    root_run_id: str = str_field()

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            cursor: Cursor,
            root_run_id: str,
        ) -> None: ...


Frame: TypeAlias = SnapshotFrame | ChangedFrame | RemovedFrame
"""What an observer receives (O1, O2): a snapshot, or one root changed or removed, told apart
by their ``kind``."""

_check_availability = enum_check(Availability)
_check_roots = tuple_check(instance_check(RootActivity))


def snapshot_arguments(
    availability: object, roots: object, detail: object = None
) -> tuple[Availability, tuple[RootActivity, ...] | None, str | None]:
    """Check ``publish_snapshot``'s arguments: the one copy for every publishing front.

    ``ready`` needs roots (a sequence, possibly empty) and takes no detail; the other states
    take no roots and an optional detail (C3). ``roots`` is read once, into a tuple, so an
    iterator or a list the caller goes on mutating cannot change what is published.
    """
    state = _check_availability(availability, "availability")
    if state is Availability.READY:
        if roots is None:
            raise ContractError("roots", "a ready snapshot needs roots (an empty list if none)")
        if detail is not None:
            raise ContractError("detail", "a ready snapshot takes no detail")
        return state, _check_roots(roots, "roots"), None
    if roots is not None:
        raise ContractError("roots", f"a {state} snapshot takes no roots")
    return state, None, None if detail is None else check_detail(detail, "detail")


def unknown_detail(text: str) -> str | None:
    """``text`` made a valid ``detail`` (C3): one line (whitespace collapsed, other characters
    that do not print replaced), cut to 200 characters with "…"; None if nothing is left. What
    the integrations use for a reason they did not write themselves (an exception's text)."""
    line = " ".join(text.split())
    if not line.isprintable():
        line = "".join(char if char.isprintable() else "\ufffd" for char in line)
    return _bounded(line, DETAIL_MAX) or None


# --- lifecycle targets -------------------------------------------------------------------------


@_value_class
class RunTarget(_Value):
    """A run's status, and the control request (``action``) behind it if any."""

    kind: ClassVar[Literal["run"]] = "run"

    run_id: str = str_field()
    previous_status: RunStatus | None = enum_field(RunStatus, optional=True)
    status: RunStatus = enum_field(RunStatus)
    action: ControlAction | None = enum_field(ControlAction, optional=True)
    error: FailureDetail | None = instance_field(FailureDetail, optional=True)

    def __attrs_post_init__(self) -> None:
        _check_failure(self)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            run_id: str,
            previous_status: RunStatus | str | None = None,
            status: RunStatus | str,
            action: ControlAction | str | None = None,
            error: FailureDetail | None = None,
        ) -> None: ...


@_value_class
class StageTarget(_Value):
    """A stage's status change, the subject of a lifecycle event (P6).

    When it reaches ``completed``, a :class:`StageCompletedEvent` follows with the same id and
    cursor.
    """

    kind: ClassVar[Literal["stage"]] = "stage"

    run_id: str = str_field()
    stage_id: str = str_field()
    stage_name: str = str_field()
    previous_status: StageStatus | None = enum_field(StageStatus, optional=True)
    status: StageStatus = enum_field(StageStatus)
    error: FailureDetail | None = instance_field(FailureDetail, optional=True)

    def __attrs_post_init__(self) -> None:
        _check_failure(self)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            run_id: str,
            stage_id: str,
            stage_name: str,
            previous_status: StageStatus | str | None = None,
            status: StageStatus | str,
            error: FailureDetail | None = None,
        ) -> None: ...


@_value_class
class ToolTarget(_Value):
    """A tool's status change, the subject of a lifecycle event (P6)."""

    kind: ClassVar[Literal["tool"]] = "tool"

    run_id: str = str_field()
    tool_node_id: str = str_field()
    tool_name: str = str_field()
    previous_status: ToolNodeStatus | None = enum_field(ToolNodeStatus, optional=True)
    status: ToolNodeStatus = enum_field(ToolNodeStatus)
    error: FailureDetail | None = instance_field(FailureDetail, optional=True)

    def __attrs_post_init__(self) -> None:
        _check_failure(self)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            run_id: str,
            tool_node_id: str,
            tool_name: str,
            previous_status: ToolNodeStatus | str | None = None,
            status: ToolNodeStatus | str,
            error: FailureDetail | None = None,
        ) -> None: ...


@_value_class
class PromptTarget(_Value):
    """A prompt opened, answered or cancelled, on a run or on one of its stages: the subject of a
    lifecycle event (P6)."""

    kind: ClassVar[Literal["prompt"]] = "prompt"

    run_id: str = str_field()
    stage_id: str | None = str_field(optional=True)
    prompt_id: str = str_field()
    status: PromptStatus = enum_field(PromptStatus)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            run_id: str,
            stage_id: str | None = None,
            prompt_id: str,
            status: PromptStatus | str,
        ) -> None: ...


LifecycleTarget: TypeAlias = RunTarget | StageTarget | ToolTarget | PromptTarget
"""What a lifecycle event is about: a run, stage, tool or prompt, told apart by their ``kind``."""

_TARGET_CLASSES = (RunTarget, StageTarget, ToolTarget, PromptTarget)

# --- events ------------------------------------------------------------------------------------


@_value_class
class LifecycleInput(_Value):
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

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            event_id: str,
            run_id: str,
            root_run_id: str,
            owner_session_id: str,
            occurred_at: int | float,
            observed_at: int | float,
            delivery: Delivery | str,
            target: RunTarget | StageTarget | ToolTarget | PromptTarget,
            attribution: Attribution | str | None = None,
        ) -> None: ...


@_value_class
class LifecycleEvent(_Value):
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

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            event_id: str,
            cursor: Cursor,
            run_id: str,
            root_run_id: str,
            owner_session_id: str,
            occurred_at: int | float,
            observed_at: int | float,
            delivery: Delivery | str,
            target: RunTarget | StageTarget | ToolTarget | PromptTarget,
            attribution: Attribution | str | None = None,
        ) -> None: ...


@_value_class
class StageCompletedEvent(_Value):
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

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            event_id: str,
            cursor: Cursor,
            run_id: str,
            root_run_id: str,
            owner_session_id: str,
            occurred_at: int | float,
            observed_at: int | float,
            delivery: Delivery | str,
            target: StageTarget,
            attribution: Attribution | str | None = None,
        ) -> None: ...


@_value_class
class ActivityChangedEvent(_Value):
    """Hook twin of a :class:`ChangedFrame`: the same root and the same cursor."""

    type: ClassVar[Literal["workflow_activity_changed"]] = "workflow_activity_changed"

    cursor: Cursor = instance_field(Cursor)
    root: RootActivity = instance_field(RootActivity)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            cursor: Cursor,
            root: RootActivity,
        ) -> None: ...


@_value_class
class HeartbeatEvent(_Value):
    """A running top-level run reached ``scheduled_at``. Observation only: it starts no work."""

    type: ClassVar[Literal["workflow_heartbeat"]] = "workflow_heartbeat"

    run_id: str = str_field()
    root_run_id: str = str_field()
    owner_session_id: str = str_field()
    scheduled_at: Timestamp = number_field()
    interval_minutes: int | float = number_field(positive=True)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            run_id: str,
            root_run_id: str,
            owner_session_id: str,
            scheduled_at: int | float,
            interval_minutes: int | float,
        ) -> None: ...


WorkflowEvent: TypeAlias = (
    LifecycleEvent | StageCompletedEvent | ActivityChangedEvent | HeartbeatEvent
)
"""What a hook handler receives (§4): the four events, told apart by their class-level ``type``."""


@_value_class
class Diagnostic(_Value):
    """A record of something a consumer or publisher did wrong or should know; never raised."""

    kind: DiagnosticKind = enum_field(DiagnosticKind)
    cursor: Cursor = instance_field(Cursor)

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            kind: DiagnosticKind | str,
            cursor: Cursor,
        ) -> None: ...


VALUE_CLASSES: tuple[type[Any], ...] = tuple(
    value for name in __all__ if attrs.has(value := globals()[name])
)
"""Every contract value class (in ``__all__`` order): the wire format's table is this list, and the
tests hold ``workflow_hub.contract``'s written-out names to it (a class added to ``__all__`` is
wired at once, and a test fails until it is exported and drawn by the strategies)."""
