"""Properties of the reporter toolkit (issue 5).

The main one drives a REAL running hub with the conformance kit's random scenarios (one
vocabulary of operations: publisher registration and replacement, ready/recovering/unavailable
snapshots, changes, removals, lifecycle events, heartbeats, publisher disposal, fenced
publications, callback and stream observers attached midway, stalled, disposed, and resumed from
a cursor), played by the kit's harness against the reference model. A settle hook folds every
observer's frames into an :class:`ActivityView`, as a reporter does: a resumed observer continues
the view it held at its cursor. Every view must accept every frame (no rejection: continuity holds
through overflow resnapshots and resumes alike), and at quiescence every caught-up view
reproduces ``hub.snapshot_frame()``'s availability and roots, in order, and its aggregate
(SPEC P1-P8, O1-O4, O9, R2, R3).

Hypothesis' state machines do not run async rules, so each example is one scenario played inside
one ``trio.run``. The example count comes from the profile in ``conftest.py``.
"""

from __future__ import annotations

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from tests.support.builders import held_at
from workflow_hub import (
    Availability,
    ChangedFrame,
    Cursor,
    Frame,
    Reason,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    State,
)
from workflow_hub.reporting import (
    ActivityView,
    AggregateState,
    ChangeKind,
    Rejection,
    aggregate,
)
from workflow_hub.testing.conformance import (
    Behind,
    Checkpoint,
    HubAdapter,
    Observe,
    PublishRemoved,
    PublishSnapshot,
    RegisterPublisher,
    Scenario,
    play_scenario,
)
from workflow_hub.testing.strategies import root_activities, scenarios

ROOT_IDS = ["a", "b", "c", "", " root "]
roots = root_activities(root_run_ids=st.sampled_from(ROOT_IDS), graphs=st.none())


async def views_follow_the_hub(checkpoint: Checkpoint) -> None:
    adapter = checkpoint.adapter
    assert isinstance(adapter, HubAdapter)
    model = checkpoint.model
    hub_snapshot = adapter.hub.snapshot_frame()
    for index, observer in enumerate(model.observers):
        view = ActivityView()
        if observer.resumed and observer.since is not None:
            event("a view resumed from a cursor")
            view.apply(held_at(model.broadcast[: observer.attached_after], observer.since))
        for frame in observer.received:
            change = view.apply(frame)
            assert change.applied, (index, change)
        assert view.rejected == 0
        caught_up = not observer.pending and not observer.in_flight and not observer.disposed
        if not (checkpoint.final and caught_up and observer.received):
            continue
        if observer.received[-1].cursor.epoch != model.epoch:
            continue
        held = view.snapshot_frame()
        assert held is not None
        assert view.in_sync
        assert (held.availability, held.roots) == (hub_snapshot.availability, hub_snapshot.roots)
        assert aggregate(view) == aggregate(hub_snapshot)
    if any(d.kind == "ObserverOverflow" for d in model.diagnostics):
        event("an observer overflowed")


# A view resumed inside a recovering stretch continues the snapshot it held there, C3 detail and
# all: the helper that rebuilds that snapshot once dropped the detail (found by `make test`).
RESUMED_WHILE_RECOVERING = Scenario(
    operations=(
        RegisterPublisher(),
        PublishSnapshot(0, Availability.RECOVERING, None, "0"),
        PublishRemoved(0, "a"),
        Observe("callback", True, Behind(1)),
    )
)


@settings(deadline=None)
@given(scenarios(queue_limits=(256, 1, 2, 4), roots=roots))
@example(RESUMED_WHILE_RECOVERING)
def test_views_fed_by_a_real_hub_reproduce_its_snapshot(scenario: Scenario) -> None:
    """P1-P8/O1-O4/O9/R2/R3: at quiescence every view equals the hub's snapshot, never refusing."""
    play_scenario(HubAdapter, scenario, on_settle=views_follow_the_hub)


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
