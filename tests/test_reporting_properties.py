"""Properties of the reporter toolkit (issue 5).

The main one drives a REAL running hub with random publication sequences (publisher registration
and replacement, ready/recovering/unavailable snapshots, changes, removals, lifecycle events,
heartbeats, publisher disposal, fenced publications) while several observers fold what they
receive into :class:`ActivityView` objects: a sync callback, callbacks attached midway, an async
callback that is stalled for a while, and a :func:`run_reporter` stream. With small queue limits,
overflow resnapshots happen often. At quiescence every view reproduces ``hub.snapshot_frame()`` and
none ever refused a frame (SPEC P1-P8, O1-O4, O9): availability and roots in order are the hub's,
and the cursor is that of the hub's last frame (lifecycle events advance the hub's revision
without a frame, so a view cannot know those; P6).

Hypothesis' state machines do not run async rules, so each example draws a list of operations and
plays it inside one ``trio.run``. The example count comes from the profile in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import trio
import trio.testing
from hypothesis import event, given, settings
from hypothesis import strategies as st

from workflow_hub import (
    Availability,
    ChangedFrame,
    Cursor,
    Frame,
    HeartbeatEvent,
    LifecycleInput,
    Reason,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    State,
    open_hub,
)
from workflow_hub.reporting import (
    ActivityView,
    AggregateState,
    ChangeKind,
    Rejection,
    ViewChange,
    aggregate,
    run_reporter,
)
from workflow_hub.testing.strategies import heartbeat_events, lifecycle_inputs, root_activities

ROOT_IDS = ["a", "b", "c", "", " root "]
roots = root_activities(root_run_ids=st.sampled_from(ROOT_IDS), graphs=st.none())

# --- operations --------------------------------------------------------------------------------


@attrs.frozen
class Register:
    """Register a new publisher; the current one is fenced (P1)."""


@attrs.frozen
class Snapshot:
    availability: Availability
    roots: tuple[RootActivity, ...] | None


@attrs.frozen
class Changed:
    root: RootActivity


@attrs.frozen
class Removed:
    root_run_id: str


@attrs.frozen
class Lifecycle:
    event: LifecycleInput


@attrs.frozen
class Heartbeat:
    event: HeartbeatEvent


@attrs.frozen
class DisposePublisher:
    """Dispose the current publisher (P8); later calls on it are fenced."""


@attrs.frozen
class FencedChange:
    """Publish through the first publisher ever registered: fenced once it was replaced (P2)."""

    root: RootActivity


@attrs.frozen
class Attach:
    """Attach one more callback observer folding into its own view (O1)."""


@attrs.frozen
class Settle:
    """Let every observer catch up (wait_all_tasks_blocked)."""


@attrs.frozen
class Stall:
    """The stalled observer blocks inside every frame it starts, until released."""


@attrs.frozen
class Release:
    pass


Operation = (
    Register
    | Snapshot
    | Changed
    | Removed
    | Lifecycle
    | Heartbeat
    | DisposePublisher
    | FencedChange
    | Attach
    | Settle
    | Stall
    | Release
)

snapshots = st.one_of(
    st.builds(Snapshot, st.just(Availability.READY), st.lists(roots, max_size=4).map(tuple)),
    st.builds(
        Snapshot, st.sampled_from([Availability.RECOVERING, Availability.UNAVAILABLE]), st.none()
    ),
)
operations: st.SearchStrategy[Operation] = st.one_of(
    st.builds(Register),
    snapshots,
    st.builds(Changed, roots),
    st.builds(Removed, st.sampled_from(ROOT_IDS)),
    st.builds(Lifecycle, lifecycle_inputs()),
    st.builds(Heartbeat, heartbeat_events()),
    st.builds(DisposePublisher),
    st.builds(FencedChange, roots),
    st.builds(Attach),
    st.builds(Settle),
    st.builds(Stall),
    st.builds(Release),
)


class StalledView:
    """An async callback observer that folds, then blocks inside the frame while stalled."""

    def __init__(self) -> None:
        self.view = ActivityView()
        self.gate: trio.Event | None = None

    def stall(self) -> None:
        if self.gate is None:
            self.gate = trio.Event()

    def release(self) -> None:
        if self.gate is not None:
            self.gate.set()
            self.gate = None

    async def __call__(self, frame: Frame) -> None:
        self.view.apply(frame)
        if self.gate is not None:
            await self.gate.wait()


async def play(queue_limit: int, script: Sequence[Operation]) -> None:
    async with open_hub(queue_limit=queue_limit) as hub, trio.open_nursery() as nursery:
        views: list[ActivityView] = []
        # The hub's cursor when each view attached: its first snapshot carries it, including
        # any revisions lifecycle events used up before it.
        attached_at: list[Cursor] = []

        def attach() -> None:
            view = ActivityView()
            hub.observe(view.apply)
            views.append(view)
            attached_at.append(hub.cursor)

        def render(view: ActivityView, change: ViewChange) -> None:
            # The stream observer checks continuity at every frame, not only at the end.
            assert change.applied, change

        attach()
        stalled = StalledView()
        hub.observe(stalled)
        views.append(stalled.view)
        attached_at.append(hub.cursor)
        views.append(await nursery.start(run_reporter, hub, render))
        attached_at.append(hub.cursor)

        first = publisher = hub.register_publisher()
        # The cursor of the last publication that made a frame. Lifecycle events advance the
        # hub's cursor without a frame, so an observer's view can only know this one.
        framed = hub.cursor
        for operation in script:
            cursor: Cursor | None = None
            match operation:
                case Register():
                    publisher = hub.register_publisher()
                    cursor = hub.cursor
                case Snapshot(availability, snapshot_roots):
                    cursor = publisher.publish_snapshot(availability, snapshot_roots)
                case Changed(root):
                    cursor = publisher.publish_changed(root)
                case Removed(root_run_id):
                    cursor = publisher.publish_removed(root_run_id)
                case Lifecycle(lifecycle):
                    publisher.publish_lifecycle(lifecycle)
                case Heartbeat(heartbeat):
                    publisher.publish_heartbeat(heartbeat)
                case DisposePublisher():
                    was_current = publisher.current
                    publisher.dispose()
                    cursor = hub.cursor if was_current else None
                case FencedChange(root):
                    cursor = first.publish_changed(root)
                case Attach():
                    if len(views) < 6:
                        attach()
                case Settle():
                    await trio.testing.wait_all_tasks_blocked()
                case Stall():
                    stalled.stall()
                case Release():
                    stalled.release()
            if cursor is not None:
                framed = cursor

        stalled.release()
        await trio.testing.wait_all_tasks_blocked()
        if any(d.kind == "ObserverOverflow" for d in hub.diagnostics()):
            event("an observer overflowed")
        for view, attach_cursor in zip(views, attached_at, strict=True):
            later = attach_cursor.epoch == framed.epoch and attach_cursor.revision > framed.revision
            expected = attrs.evolve(hub.snapshot_frame(), cursor=attach_cursor if later else framed)
            assert view.snapshot_frame() == expected
            assert view.in_sync
            assert view.rejected == 0
            assert aggregate(view) == aggregate(expected)
        nursery.cancel_scope.cancel()


@settings(deadline=None)
@given(
    queue_limit=st.sampled_from([1, 2, 4, 256]),
    script=st.lists(operations, max_size=40),
)
def test_views_fed_by_a_real_hub_reproduce_its_snapshot(
    queue_limit: int, script: list[Operation]
) -> None:
    """P1-P8/O1-O4/O9: at quiescence every view equals hub.snapshot_frame() and stayed in sync."""
    trio.run(play, queue_limit, script)


# --- the view on arbitrary frame sequences -----------------------------------------------------

small_cursors = st.builds(
    Cursor, epoch=st.sampled_from(["e1", "e2"]), revision=st.integers(min_value=0, max_value=6)
)
any_frames: st.SearchStrategy[Frame] = st.one_of(
    st.builds(
        SnapshotFrame,
        cursor=small_cursors,
        availability=st.just(Availability.READY),
        roots=st.lists(roots, max_size=3).map(tuple),
    ),
    st.builds(
        SnapshotFrame,
        cursor=small_cursors,
        availability=st.sampled_from([Availability.RECOVERING, Availability.UNAVAILABLE]),
        roots=st.none(),
    ),
    st.builds(ChangedFrame, cursor=small_cursors, root=roots),
    st.builds(RemovedFrame, cursor=small_cursors, root_run_id=st.sampled_from(ROOT_IDS)),
)


@settings(deadline=None)
@given(st.lists(any_frames, max_size=30))
def test_view_invariants_hold_for_any_frame_sequence(frames: list[Frame]) -> None:
    """Whatever arrives, in whatever order: a refused frame changes nothing but the sync state,
    an applied one moves the cursor to its own, and an unknown view holds no roots."""
    view = ActivityView()
    for frame in frames:
        before = view.snapshot_frame()
        rejected = view.rejected
        change = view.apply(frame)
        if change.applied:
            assert view.cursor == frame.cursor
            assert view.rejected == rejected
            if change.kind is ChangeKind.RESET:
                assert view.in_sync
        else:
            assert view.rejected == rejected + 1
            assert not view.in_sync
            after = view.snapshot_frame()
            if change.rejection is Rejection.FOREIGN_EPOCH:
                # The source was replaced: nothing held is anyone's any more.
                assert view.superseded
                assert after is not None
                assert before is not None
                assert after.cursor == before.cursor
                assert after.roots in (None, ())
            else:
                assert after == before
        assert view.known == (view.availability is Availability.READY and not view.superseded)
        if not view.known:
            assert view.roots == ()
        assert len({r.root_run_id for r in view.roots}) == len(view.roots)


# --- the aggregate over any snapshot -----------------------------------------------------------


@settings(deadline=None)
@given(availability=st.sampled_from(Availability), snapshot_roots=st.lists(roots, max_size=5))
def test_aggregate_is_never_idle_unless_ready_and_follows_the_table(
    availability: Availability, snapshot_roots: list[RootActivity]
) -> None:
    """The decision table as invariants: unknown iff not ready and nothing working or blocked;
    working iff some root works; attention iff some root needs it or is blocked."""
    ready = availability is Availability.READY
    frame = SnapshotFrame(
        cursor=Cursor(epoch="e", revision=1),
        availability=availability,
        roots=tuple(snapshot_roots) if ready else None,
    )
    status = aggregate(frame)
    held = frame.roots or ()
    states = [r.state for r in held]
    assert status.roots == len(held)
    assert status.working == states.count(State.WORKING)
    assert status.blocked == states.count(State.BLOCKED)
    if not ready:
        assert status.state is AggregateState.UNKNOWN
        assert status.reason is None
    elif status.working:
        assert status.state is AggregateState.WORKING
        assert status.reason in {r.reason for r in held if r.state is State.WORKING}
    elif status.blocked:
        assert status.state is AggregateState.BLOCKED
        assert status.reason in {r.reason for r in held if r.state is State.BLOCKED}
    else:
        assert status.state is AggregateState.IDLE
        assert status.reason in {Reason.PAUSED, Reason.QUIESCENT}
    assert status.attention == any(r.needs_attention or r.state is State.BLOCKED for r in held)
