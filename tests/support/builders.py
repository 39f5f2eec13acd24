"""Small builders for readable scenario tests (property tests use workflow_hub.testing.strategies)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from workflow_hub import (
    Availability,
    ChangedFrame,
    Cursor,
    Frame,
    HeartbeatEvent,
    Labels,
    LifecycleInput,
    RemovedFrame,
    RootActivity,
    RootGraph,
    RunTarget,
    SnapshotFrame,
    StageNode,
    StageTarget,
)


def root(
    root_run_id: str = "root-1",
    *,
    state: str = "working",
    reason: str = "executing",
    active: int = 1,
    blocks: int = 0,
    attention: bool = False,
) -> RootActivity:
    return RootActivity(
        root_run_id=root_run_id,
        owner_session_id="session-1",
        state=state,
        reason=reason,
        active_execution_count=active,
        actionable_block_count=blocks,
        needs_attention=attention,
    )


def root_in(
    root_run_id: str,
    state: str,
    reason: str,
    *,
    attention: bool = False,
    nodes: Sequence[StageNode] | None = None,
    labels: Mapping[str, str] | None = None,
    owner: str = "session",
) -> RootActivity:
    """A root in ``state`` for ``reason``, its counts as a scheduler would report them (one
    execution when working, one block when blocked); a graph of ``nodes`` when given."""
    return RootActivity(
        root_run_id=root_run_id,
        owner_session_id=owner,
        state=state,
        reason=reason,
        active_execution_count=1 if state == "working" else 0,
        actionable_block_count=1 if state == "blocked" else 0,
        needs_attention=attention,
        graph=None if nodes is None else RootGraph(nodes=tuple(nodes)),
        labels=Labels(labels) if labels else None,
    )


def stage_node(run: str, name: str, status: str, **extra: Any) -> StageNode:
    """A top-level stage ``name`` of ``run`` (id ``run:name``); ``extra`` adds ``error`` etc."""
    return StageNode(
        id=f"{run}:{name}",
        run_id=run,
        node_id=name,
        name=name,
        parent_ids=(),
        depth=0,
        status=status,
        **extra,
    )


def stage_lifecycle(
    status: str = "completed", *, event_id: str = "evt-1", delivery: str = "live"
) -> LifecycleInput:
    return LifecycleInput(
        event_id=event_id,
        run_id="run-1",
        root_run_id="root-1",
        owner_session_id="session-1",
        occurred_at=1_000,
        observed_at=1_000.5,
        delivery=delivery,
        target=StageTarget(run_id="run-1", stage_id="run-1:plan", stage_name="plan", status=status),
    )


def run_lifecycle(status: str = "running", *, event_id: str = "evt-run") -> LifecycleInput:
    return LifecycleInput(
        event_id=event_id,
        run_id="run-1",
        root_run_id="root-1",
        owner_session_id="session-1",
        occurred_at=1_000,
        observed_at=1_001,
        delivery="live",
        target=RunTarget(run_id="run-1", status=status),
    )


def heartbeat(scheduled_at: int = 61_000) -> HeartbeatEvent:
    return HeartbeatEvent(
        run_id="run-1",
        root_run_id="root-1",
        owner_session_id="session-1",
        scheduled_at=scheduled_at,
        interval_minutes=1,
    )


def counting_epochs(prefix: str = "epoch") -> Callable[[], str]:
    counter: Iterator[int] = itertools.count()
    return lambda: f"{prefix}-{next(counter)}"


def fold(frames: list[Frame]) -> dict[str, RootActivity] | None:
    """What a reporter knows after these frames: roots by id, or None while not ready."""
    roots: dict[str, RootActivity] | None = None
    for frame in frames:
        if isinstance(frame, SnapshotFrame):
            roots = None if frame.roots is None else {r.root_run_id: r for r in frame.roots}
        elif isinstance(frame, ChangedFrame):
            if roots is not None:
                roots[frame.root.root_run_id] = frame.root
        elif isinstance(frame, RemovedFrame) and roots is not None:
            roots.pop(frame.root_run_id, None)
    return roots


def describe(frames: list[Frame]) -> list[tuple[str, int]]:
    """Frames as (kind, revision) pairs, for compact assertions."""
    return [(frame.kind, frame.cursor.revision) for frame in frames]


def held_at(broadcast: list[Frame], cursor: Cursor) -> SnapshotFrame:
    """What a client that folded every broadcast frame up to ``cursor`` holds, as a snapshot: the
    state a resumed observer continues from (R2), with the last snapshot's C3 ``detail``.
    ``broadcast`` is every frame a hub (or the reference model) broadcast, oldest first."""
    frames = [
        frame
        for frame in broadcast
        if frame.cursor.epoch == cursor.epoch and frame.cursor.revision <= cursor.revision
    ]
    last = next((f for f in reversed(frames) if isinstance(f, SnapshotFrame)), None)
    roots = fold(frames)
    return SnapshotFrame(
        cursor=cursor,
        availability=Availability.UNAVAILABLE if last is None else last.availability,
        roots=None if roots is None else tuple(roots.values()),
        detail=None if last is None else last.detail,
    )
