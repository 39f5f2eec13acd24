"""Hypothesis strategies for every contract value and union (§2 of docs/contract.md).

Their promises (every drawn value constructs, optional fields present and absent, identifiers as
real hosts send them, small sizes, keyword parameters that steer a field) are written once, in
the public module ``workflow_hub.testing.strategies``, which re-exports them.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
from hypothesis import strategies as st

from .._contract import (
    DETAIL_MAX,
    FAILURE_MESSAGE_MAX,
    FAILURE_TYPE_MAX,
    LABEL_KEY_MAX,
    LABEL_VALUE_MAX,
    LABELS_MAX,
    ActivityChangedEvent,
    Attribution,
    Availability,
    ChangedFrame,
    ControlAction,
    Cursor,
    Delivery,
    Diagnostic,
    DiagnosticKind,
    FailureDetail,
    Frame,
    GraphNode,
    HeartbeatEvent,
    Labels,
    LifecycleEvent,
    LifecycleInput,
    LifecycleTarget,
    NodePrompt,
    PromptKind,
    PromptStatus,
    PromptTarget,
    Reason,
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
    Timestamp,
    ToolNode,
    ToolNodeStatus,
    ToolTarget,
    WorkflowEvent,
)

# No __all__: every public name here is listed once, by workflow_hub.testing.strategies's __all__.

_T = TypeVar("_T")

# Ids hosts really send, and the ones that break code that trims, normalises or assumes ASCII.
_NASTY_IDS = (
    "",
    " ",
    " root ",
    "root-1",
    "child-run:tool-1",
    "\t\n",
    "ルート",
    "naïve",
    "e\u0301",  # a combining accent: not the same string as "é", and must not become it
    "\u200b",
    "🚀 run",
    "nul\x00byte",
)

# Ints beyond 2**53 are legal in Python but lose precision in JavaScript hosts; stay portable.
_MAX_SAFE_INT = 2**53 - 1


def _optional(strategy: st.SearchStrategy[_T]) -> st.SearchStrategy[_T | None]:
    return st.none() | strategy


def _tuples(strategy: st.SearchStrategy[_T], max_size: int) -> st.SearchStrategy[tuple[_T, ...]]:
    return st.lists(strategy, max_size=max_size).map(tuple)


def _counts() -> st.SearchStrategy[int]:
    return st.integers(min_value=0, max_value=_MAX_SAFE_INT)


def _positive_numbers() -> st.SearchStrategy[int | float]:
    return st.integers(min_value=1, max_value=_MAX_SAFE_INT) | st.floats(
        min_value=0, exclude_min=True, allow_nan=False, allow_infinity=False
    )


def _texts() -> st.SearchStrategy[str]:
    return st.text(st.characters(codec="utf-8"), max_size=24)


def ids() -> st.SearchStrategy[str]:
    """Identifiers and names: ordinary text plus empty, whitespace-padded and unicode ones.

    They must all survive the contract byte-identical, so every strategy uses them for ids and names.
    Only UTF-8-encodable text is drawn (no lone surrogates): wire text is exchanged as UTF-8.
    """
    return st.sampled_from(_NASTY_IDS) | st.text(st.characters(codec="utf-8"), max_size=12)


def timestamps() -> st.SearchStrategy[Timestamp]:
    """Epoch milliseconds as ints or finite floats; the contract keeps each as given."""
    return st.integers(min_value=-_MAX_SAFE_INT, max_value=_MAX_SAFE_INT) | st.floats(
        allow_nan=False, allow_infinity=False
    )


def cursors(*, epochs: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Cursor]:
    """Cursors of any epoch text and any revision; pass ``epochs`` to draw the epochs from it (``st.just("e")`` for the cursors of one publisher)."""
    return st.builds(Cursor, epoch=epochs if epochs is not None else ids(), revision=_counts())


# --- roots and graphs --------------------------------------------------------------------------


def node_prompts() -> st.SearchStrategy[NodePrompt]:
    """Prompts waiting on a stage, of every :class:`~workflow_hub.PromptKind`, with and without ``choices``."""
    return st.builds(
        NodePrompt,
        id=ids(),
        kind=st.sampled_from(PromptKind),
        message=_texts(),
        choices=_optional(_tuples(_texts(), 3)),
        created_at=timestamps(),
    )


def run_prompts(*, run_ids: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[RunPrompt]:
    """Prompts waiting on a run; pass ``run_ids`` to draw their ``run_id`` from it."""
    return st.builds(
        RunPrompt,
        id=ids(),
        kind=st.sampled_from(PromptKind),
        message=_texts(),
        choices=_optional(_tuples(_texts(), 3)),
        created_at=timestamps(),
        run_id=run_ids if run_ids is not None else ids(),
    )


def failure_details() -> st.SearchStrategy[FailureDetail]:
    """Why something failed (C3): messages of 1 to 500 characters (any text, newlines too), with
    and without a type name."""
    return st.builds(
        FailureDetail,
        message=st.text(st.characters(codec="utf-8"), min_size=1, max_size=FAILURE_MESSAGE_MAX),
        type=_optional(
            st.text(st.characters(codec="utf-8"), min_size=1, max_size=FAILURE_TYPE_MAX)
        ),
    )


def labels() -> st.SearchStrategy[Labels]:
    """A root's labels (C3): up to 16 keys of the allowed shape, printable values of 1 to 256
    characters."""
    keys = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_./-]*\Z").filter(lambda k: len(k) <= LABEL_KEY_MAX)
    values = st.text(
        st.characters(codec="utf-8", categories=["L", "M", "N", "P", "S"], include_characters=" "),
        min_size=1,
        max_size=LABEL_VALUE_MAX,
    )
    return st.dictionaries(keys, values, max_size=LABELS_MAX).map(Labels)


_V = TypeVar("_V")


def _with_errors(values: st.SearchStrategy[_V]) -> st.SearchStrategy[_V]:
    """``values``, each failed one with or without an ``error`` (only a failed one has one)."""

    def add_error(value: Any) -> st.SearchStrategy[Any]:
        if value.status != "failed":
            return st.just(value)
        return _optional(failure_details()).map(lambda error: attrs.evolve(value, error=error))

    return values.flatmap(add_error)


def _node_fields() -> dict[str, st.SearchStrategy[Any]]:
    return {
        "id": ids(),
        "run_id": ids(),
        "node_id": ids(),
        "name": ids(),
        "parent_ids": _tuples(ids(), 3),
        "execution_order": _optional(_counts()),
        "depth": _counts(),
    }


def stage_nodes(
    *, statuses: st.SearchStrategy[StageStatus] | None = None
) -> st.SearchStrategy[StageNode]:
    """Graph stage nodes, with and without a pending prompt (and a failed one with and without
    its ``error``); pass ``statuses`` to draw their status from it."""
    return _with_errors(
        st.builds(
            StageNode,
            **_node_fields(),
            status=statuses if statuses is not None else st.sampled_from(StageStatus),
            pending_prompt=_optional(node_prompts()),
        )
    )


def tool_nodes(
    *, statuses: st.SearchStrategy[ToolNodeStatus] | None = None
) -> st.SearchStrategy[ToolNode]:
    """Graph tool nodes (a failed one with and without its ``error``); pass ``statuses`` to
    draw their status from it."""
    return _with_errors(
        st.builds(
            ToolNode,
            **_node_fields(),
            status=statuses if statuses is not None else st.sampled_from(ToolNodeStatus),
            ordinal=_counts(),
        )
    )


def graph_nodes() -> st.SearchStrategy[GraphNode]:
    """The ``GraphNode`` union: stage and tool nodes."""
    return st.one_of(stage_nodes(), tool_nodes())


def root_graphs(*, max_nodes: int = 4) -> st.SearchStrategy[RootGraph]:
    """Graphs of at most ``max_nodes`` stage and tool nodes, with and without run prompts.

    Ids, parents and depths are drawn independently, as construction allows (an id may repeat, a
    parent may be missing), and consumers must cope with such graphs too."""
    return st.builds(
        RootGraph,
        nodes=_tuples(graph_nodes(), max_nodes),
        run_prompts=_optional(_tuples(run_prompts(), 2)),
    )


def root_activities(
    *,
    root_run_ids: st.SearchStrategy[str] | None = None,
    graphs: st.SearchStrategy[RootGraph | None] | None = None,
) -> st.SearchStrategy[RootActivity]:
    """Any valid root summary; pass ``graphs=st.none()`` for roots without a graph.

    State, reason, counts and ``needs_attention`` are drawn independently: the contract accepts
    every combination, and consumers must too. (The projection's own rules are tested elsewhere.)
    """
    return st.builds(
        RootActivity,
        root_run_id=root_run_ids if root_run_ids is not None else ids(),
        owner_session_id=ids(),
        state=st.sampled_from(State),
        reason=st.sampled_from(Reason),
        active_execution_count=_counts(),
        actionable_block_count=_counts(),
        needs_attention=st.booleans(),
        graph=graphs if graphs is not None else _optional(root_graphs()),
        labels=_optional(labels()),
    )


def unknown_details() -> st.SearchStrategy[str]:
    """Why a source is unknown (C3's ``detail`` of a non-ready snapshot): one printable line of
    1 to 200 characters, such as ``"broker unreachable: ConnectionError: …"``."""
    return st.text(
        st.characters(codec="utf-8", categories=["L", "M", "N", "P", "S"], include_characters=" "),
        min_size=1,
        max_size=DETAIL_MAX,
    ) | st.sampled_from(
        ["broker unreachable: ConnectionError: [Errno 111] Connection refused", "…", " x "]
    )


# --- frames ------------------------------------------------------------------------------------


def snapshot_frames(
    *,
    availabilities: st.SearchStrategy[Availability] | None = None,
    roots: st.SearchStrategy[RootActivity] | None = None,
    max_roots: int = 5,
) -> st.SearchStrategy[SnapshotFrame]:
    """Snapshots whose ``roots`` is a tuple exactly when availability is ``ready``; a non-ready
    one has a ``detail`` (C3) or not.

    Root ids may repeat, as the type allows; a hub's own snapshots never repeat one.
    """
    root_strategy = roots if roots is not None else root_activities()

    def with_availability(availability: Availability) -> st.SearchStrategy[SnapshotFrame]:
        ready = availability is Availability.READY
        return st.builds(
            SnapshotFrame,
            cursor=cursors(),
            availability=st.just(availability),
            roots=_tuples(root_strategy, max_roots) if ready else st.none(),
            detail=st.none() if ready else _optional(unknown_details()),
        )

    chosen = availabilities if availabilities is not None else st.sampled_from(Availability)
    return chosen.flatmap(with_availability)


def changed_frames(
    *, roots: st.SearchStrategy[RootActivity] | None = None
) -> st.SearchStrategy[ChangedFrame]:
    """Frames that replace one root (P4); pass ``roots`` to draw the root from it."""
    return st.builds(
        ChangedFrame, cursor=cursors(), root=roots if roots is not None else root_activities()
    )


def removed_frames(
    *, root_run_ids: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[RemovedFrame]:
    """Frames that remove one root (P5); pass ``root_run_ids`` to draw its id from it."""
    return st.builds(
        RemovedFrame,
        cursor=cursors(),
        root_run_id=root_run_ids if root_run_ids is not None else ids(),
    )


def frames() -> st.SearchStrategy[Frame]:
    """The ``Frame`` union: snapshot, changed and removed frames."""
    return st.one_of(snapshot_frames(), changed_frames(), removed_frames())


# --- lifecycle targets -------------------------------------------------------------------------


def run_targets(
    *, statuses: st.SearchStrategy[RunStatus] | None = None
) -> st.SearchStrategy[RunTarget]:
    """Run targets, with and without a previous status and a control ``action``; pass ``statuses``
    to draw the status from it."""
    return _with_errors(
        st.builds(
            RunTarget,
            run_id=ids(),
            previous_status=_optional(st.sampled_from(RunStatus)),
            status=statuses if statuses is not None else st.sampled_from(RunStatus),
            action=_optional(st.sampled_from(ControlAction)),
        )
    )


def stage_targets(
    *, statuses: st.SearchStrategy[StageStatus] | None = None
) -> st.SearchStrategy[StageTarget]:
    """Stage targets, with and without a previous status; pass ``statuses`` to draw the status
    from it."""
    return _with_errors(
        st.builds(
            StageTarget,
            run_id=ids(),
            stage_id=ids(),
            stage_name=ids(),
            previous_status=_optional(st.sampled_from(StageStatus)),
            status=statuses if statuses is not None else st.sampled_from(StageStatus),
        )
    )


def tool_targets(
    *, statuses: st.SearchStrategy[ToolNodeStatus] | None = None
) -> st.SearchStrategy[ToolTarget]:
    """Tool targets, with and without a previous status; pass ``statuses`` to draw the status from
    it."""
    return _with_errors(
        st.builds(
            ToolTarget,
            run_id=ids(),
            tool_node_id=ids(),
            tool_name=ids(),
            previous_status=_optional(st.sampled_from(ToolNodeStatus)),
            status=statuses if statuses is not None else st.sampled_from(ToolNodeStatus),
        )
    )


def prompt_targets(
    *, statuses: st.SearchStrategy[PromptStatus] | None = None
) -> st.SearchStrategy[PromptTarget]:
    """Prompt targets, on a run or on a stage; pass ``statuses`` to draw the status from it."""
    return st.builds(
        PromptTarget,
        run_id=ids(),
        stage_id=_optional(ids()),
        prompt_id=ids(),
        status=statuses if statuses is not None else st.sampled_from(PromptStatus),
    )


def lifecycle_targets() -> st.SearchStrategy[LifecycleTarget]:
    """The ``LifecycleTarget`` union: run, stage, tool and prompt targets."""
    return st.one_of(run_targets(), stage_targets(), tool_targets(), prompt_targets())


# --- events ------------------------------------------------------------------------------------


def _envelope_fields() -> dict[str, st.SearchStrategy[Any]]:
    return {
        "event_id": ids(),
        "run_id": ids(),
        "root_run_id": ids(),
        "owner_session_id": ids(),
        "occurred_at": timestamps(),
        "observed_at": timestamps(),
        "delivery": st.sampled_from(Delivery),
        "attribution": _optional(st.sampled_from(Attribution)),
    }


def lifecycle_inputs(
    *, targets: st.SearchStrategy[LifecycleTarget] | None = None
) -> st.SearchStrategy[LifecycleInput]:
    """What a publisher passes to ``publish_lifecycle`` (the envelope without a cursor)."""
    return st.builds(
        LifecycleInput,
        **_envelope_fields(),
        target=targets if targets is not None else lifecycle_targets(),
    )


def lifecycle_events(
    *, targets: st.SearchStrategy[LifecycleTarget] | None = None
) -> st.SearchStrategy[LifecycleEvent]:
    """Lifecycle events as handlers receive them (P6), with a cursor, of either ``delivery`` and with
    and without ``attribution``; pass ``targets`` to draw the target from it."""
    return st.builds(
        LifecycleEvent,
        **_envelope_fields(),
        cursor=cursors(),
        target=targets if targets is not None else lifecycle_targets(),
    )


def stage_completed_events() -> st.SearchStrategy[StageCompletedEvent]:
    """Completion events; their target is always a stage whose status is ``completed``."""
    return st.builds(
        StageCompletedEvent,
        **_envelope_fields(),
        cursor=cursors(),
        target=stage_targets(statuses=st.just(StageStatus.COMPLETED)),
    )


def activity_changed_events(
    *, roots: st.SearchStrategy[RootActivity] | None = None
) -> st.SearchStrategy[ActivityChangedEvent]:
    """The hook twin of a changed frame (P4); pass ``roots`` to draw the root from it."""
    return st.builds(
        ActivityChangedEvent,
        cursor=cursors(),
        root=roots if roots is not None else root_activities(),
    )


def heartbeat_events() -> st.SearchStrategy[HeartbeatEvent]:
    """Heartbeats (P7): any ``scheduled_at``, and an ``interval_minutes`` above zero."""
    return st.builds(
        HeartbeatEvent,
        run_id=ids(),
        root_run_id=ids(),
        owner_session_id=ids(),
        scheduled_at=timestamps(),
        interval_minutes=_positive_numbers(),
    )


def workflow_events() -> st.SearchStrategy[WorkflowEvent]:
    """The ``WorkflowEvent`` union: every event a hook handler can receive."""
    return st.one_of(
        lifecycle_events(), stage_completed_events(), activity_changed_events(), heartbeat_events()
    )


def diagnostics(
    *, kinds: st.SearchStrategy[DiagnosticKind] | None = None
) -> st.SearchStrategy[Diagnostic]:
    """Diagnostic records of every kind, each with a cursor; pass ``kinds`` to draw the kind from
    it."""
    return st.builds(
        Diagnostic,
        kind=kinds if kinds is not None else st.sampled_from(DiagnosticKind),
        cursor=cursors(),
    )
