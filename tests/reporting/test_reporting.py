"""The reporter toolkit: the view's fold and continuity rules, the aggregate's decision table, and
the convenience runner against a real hub (issue 5; SPEC §3 P1-P5, O1-O4, O9 and §5)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import workflow_hub.reporting as reporting
from tests.support.builders import root, stage_lifecycle
from workflow_hub import (
    Availability,
    ChangedFrame,
    ContractError,
    Cursor,
    Frame,
    Reason,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    WorkflowActivityHub,
)
from workflow_hub.reporting import (
    ActivityView,
    AggregateState,
    AggregateStatus,
    ChangeKind,
    Rejection,
    ViewChange,
    aggregate,
    run_reporter,
)

EPOCH = "e1"


def snap(
    revision: int,
    roots: list[RootActivity] | None = None,
    *,
    availability: str = "ready",
    epoch: str = EPOCH,
) -> SnapshotFrame:
    if availability == "ready" and roots is None:
        roots = []
    return SnapshotFrame(
        cursor=Cursor(epoch=epoch, revision=revision),
        availability=availability,
        roots=None if roots is None else tuple(roots),
    )


def changed(revision: int, value: RootActivity, *, epoch: str = EPOCH) -> ChangedFrame:
    return ChangedFrame(cursor=Cursor(epoch=epoch, revision=revision), root=value)


def removed(revision: int, root_run_id: str, *, epoch: str = EPOCH) -> RemovedFrame:
    return RemovedFrame(cursor=Cursor(epoch=epoch, revision=revision), root_run_id=root_run_id)


def view_of(*frames: Frame) -> ActivityView:
    view = ActivityView()
    for frame in frames:
        view.apply(frame)
    return view


def ids(view: ActivityView) -> list[str]:
    return [r.root_run_id for r in view.roots]


# Roots in each (state, reason) of the projection table (SPEC §5).
def working(name: str, reason: str = "executing", *, attention: bool = False) -> RootActivity:
    return root(name, state="working", reason=reason, attention=attention)


def blocked(name: str, reason: str = "awaiting_input", *, attention: bool = True) -> RootActivity:
    return root(name, state="blocked", reason=reason, active=0, blocks=1, attention=attention)


def idle(name: str, reason: str = "quiescent", *, attention: bool = False) -> RootActivity:
    return root(name, state="idle", reason=reason, active=0, attention=attention)


def status_of(*roots: RootActivity) -> AggregateStatus:
    return aggregate(view_of(snap(1, list(roots))))


# --- the public surface ------------------------------------------------------------------------


def test_every_reporting_name_is_exported_once_and_claims_its_module() -> None:
    """Issue 5: workflow_hub.reporting exports its names once, under the public module name."""
    assert len(reporting.__all__) == len(set(reporting.__all__))
    for name in reporting.__all__:
        value = getattr(reporting, name)
        if isinstance(value, type):
            assert value.__module__ in {"workflow_hub.reporting", "workflow_hub"}, name


# --- the view: before anything -----------------------------------------------------------------


def test_a_new_view_knows_nothing() -> None:
    """Before the first snapshot: no availability, no cursor, no roots, not known, not in sync."""
    view = ActivityView()
    assert view.availability is None
    assert view.cursor is None
    assert view.roots == ()
    assert view.get("a") is None
    assert not view.known
    assert not view.in_sync
    assert view.rejected == 0
    assert view.snapshot_frame() is None


# --- the view: snapshots -----------------------------------------------------------------------


def test_ready_snapshot_sets_availability_cursor_and_roots_in_order() -> None:
    """P3: a ready snapshot gives the roots in the source's order; the view is known and in sync."""
    view = ActivityView()
    change = view.apply(snap(3, [root("b"), root("a"), root("c")]))
    assert view.availability is Availability.READY
    assert view.cursor == Cursor(epoch=EPOCH, revision=3)
    assert ids(view) == ["b", "a", "c"]
    assert view.known
    assert view.in_sync
    assert change == ViewChange(
        kind=ChangeKind.RESET,
        frame=snap(3, [root("b"), root("a"), root("c")]),
        root_ids=("b", "a", "c"),
    )


def test_snapshot_replaces_everything_known_before() -> None:
    """P3: a snapshot replaces all prior knowledge: roots, order, availability, cursor."""
    view = view_of(snap(1, [root("a"), root("b")]), changed(2, root("c")))
    view.apply(snap(5, [root("c"), root("z")]))
    assert ids(view) == ["c", "z"]
    assert view.get("a") is None
    assert view.cursor == Cursor(epoch=EPOCH, revision=5)


def test_ready_snapshot_with_no_roots_is_known_and_empty() -> None:
    """P3: ready with an empty tuple is known-empty, unlike a non-ready snapshot."""
    view = view_of(snap(1, []))
    assert view.known
    assert view.roots == ()


@pytest.mark.parametrize("availability", ["recovering", "unavailable"])
def test_non_ready_snapshot_clears_roots_and_is_not_known(availability: str) -> None:
    """P3/O3: a recovering or unavailable snapshot clears the roots; the view is not known."""
    view = view_of(snap(1, [root("a")]))
    change = view.apply(snap(2, availability=availability))
    assert view.availability == availability
    assert view.roots == ()
    assert not view.known
    assert view.in_sync
    assert change.kind is ChangeKind.RESET
    assert change.root_ids == ()


def test_duplicate_ids_in_a_snapshot_keep_the_last_value_at_the_first_position() -> None:
    """P3: roots are keyed like the hub keys them."""
    late_a = working("a", "retrying")
    view = view_of(snap(1, [root("a"), root("b"), late_a]))
    assert view.roots == (late_a, root("b"))


def test_snapshot_of_a_new_epoch_is_applied_whatever_its_revision() -> None:
    """P1: epochs never compare: a new epoch's snapshot at revision 0 replaces a later revision."""
    view = view_of(snap(9, [root("a")]))
    change = view.apply(snap(0, availability="unavailable", epoch="e2"))
    assert change.kind is ChangeKind.RESET
    assert view.cursor == Cursor(epoch="e2", revision=0)
    assert view.roots == ()


def test_snapshot_at_the_views_own_cursor_is_applied() -> None:
    """A view seeded from hub.snapshot_frame() accepts the same snapshot when it starts observing."""
    view = view_of(snap(4, [root("a")]))
    change = view.apply(snap(4, [root("a")]))
    assert change.kind is ChangeKind.RESET
    assert view.in_sync
    assert view.rejected == 0


# --- the view: changes and removals ------------------------------------------------------------


def test_changed_frame_appends_a_new_root_at_the_end() -> None:
    """P4: a new root goes at the end; the change says added."""
    view = view_of(snap(1, [root("a"), root("b")]))
    change = view.apply(changed(2, root("c")))
    assert ids(view) == ["a", "b", "c"]
    assert change.kind is ChangeKind.ADDED
    assert change.root_ids == ("c",)
    assert view.cursor == Cursor(epoch=EPOCH, revision=2)


def test_changed_frame_replaces_a_known_root_whole_in_place() -> None:
    """P4: a change is a full replacement and keeps the root's position."""
    view = view_of(snap(1, [root("a"), root("b"), root("c")]))
    new_b = blocked("b")
    change = view.apply(changed(2, new_b))
    assert ids(view) == ["a", "b", "c"]
    assert view.get("b") == new_b
    assert change.kind is ChangeKind.REPLACED
    assert change.root_ids == ("b",)


def test_removed_frame_deletes_one_root() -> None:
    """P5: a removal deletes the root and keeps the others in order."""
    view = view_of(snap(1, [root("a"), root("b"), root("c")]))
    change = view.apply(removed(2, "b"))
    assert ids(view) == ["a", "c"]
    assert change.kind is ChangeKind.REMOVED
    assert change.root_ids == ("b",)


def test_removing_an_unknown_root_only_advances_the_cursor() -> None:
    """P5: an absent id is allowed; nothing to redraw, the cursor moves."""
    view = view_of(snap(1, [root("a")]))
    change = view.apply(removed(2, "zz"))
    assert change.kind is ChangeKind.ADVANCED
    assert change.root_ids == ()
    assert ids(view) == ["a"]
    assert view.cursor == Cursor(epoch=EPOCH, revision=2)


@pytest.mark.parametrize("availability", ["recovering", "unavailable"])
def test_changes_while_not_ready_only_advance_the_cursor(availability: str) -> None:
    """P4: a change never makes a non-ready source ready; the view keeps no roots."""
    view = view_of(snap(1, availability=availability))
    first = view.apply(changed(2, root("a")))
    second = view.apply(removed(3, "a"))
    assert [first.kind, second.kind] == [ChangeKind.ADVANCED, ChangeKind.ADVANCED]
    assert view.roots == ()
    assert view.availability == availability
    assert not view.known
    assert view.in_sync
    assert view.cursor == Cursor(epoch=EPOCH, revision=3)


def test_the_next_ready_snapshot_after_non_ready_changes_replaces_everything() -> None:
    """P3/P4: readiness comes only from a ready snapshot, which carries the whole picture."""
    view = view_of(snap(1, availability="recovering"), changed(2, root("a")))
    view.apply(snap(3, [root("b")]))
    assert view.known
    assert ids(view) == ["b"]


def test_revision_gaps_are_accepted() -> None:
    """Lifecycle events advance the revision without a frame: gaps are normal, not a loss."""
    view = view_of(snap(1, []), changed(4, root("a")), removed(10, "a"))
    assert view.in_sync
    assert view.rejected == 0
    assert view.cursor == Cursor(epoch=EPOCH, revision=10)


def test_get_returns_the_root_or_none() -> None:
    view = view_of(snap(1, [root("a")]))
    assert view.get("a") == root("a")
    assert view.get("b") is None


def test_roots_is_an_immutable_snapshot_of_the_moment() -> None:
    """roots is a tuple: it cannot be altered, and later frames do not change one already read."""
    view = view_of(snap(1, [root("a")]))
    before = view.roots
    view.apply(changed(2, root("b")))
    assert isinstance(before, tuple)
    assert before == (root("a"),)
    assert view.roots == (root("a"), root("b"))


def test_snapshot_frame_reproduces_what_the_view_holds() -> None:
    """The view as one frame: equal to the frame a hub would build for the same state."""
    view = view_of(snap(1, [root("a"), root("b")]), changed(3, working("a", "retrying")))
    assert view.snapshot_frame() == snap(3, [working("a", "retrying"), root("b")])
    view.apply(snap(4, availability="recovering"))
    assert view.snapshot_frame() == snap(4, availability="recovering")


def test_apply_refuses_something_that_is_not_a_frame() -> None:
    """C1: a wrong argument raises ContractError naming it and changes nothing."""
    view = view_of(snap(1, [root("a")]))
    with pytest.raises(ContractError, match="frame"):
        view.apply(root("b"))  # type: ignore[arg-type]
    assert ids(view) == ["a"]
    assert view.rejected == 0


# --- the view: continuity ----------------------------------------------------------------------


def test_stale_revision_is_rejected_and_marks_the_view_out_of_sync() -> None:
    """A frame older than the view's cursor is not applied; the view counts it."""
    view = view_of(snap(1, []), changed(5, root("a")))
    change = view.apply(changed(3, root("b")))
    assert change == ViewChange(
        kind=ChangeKind.REJECTED, frame=changed(3, root("b")), rejection=Rejection.STALE_REVISION
    )
    assert not change.applied
    assert ids(view) == ["a"]
    assert view.cursor == Cursor(epoch=EPOCH, revision=5)
    assert not view.in_sync
    assert view.rejected == 1


def test_equal_revision_is_rejected() -> None:
    """A revision must strictly increase: a repeated frame is not applied twice."""
    view = view_of(snap(1, []), changed(2, root("a")))
    change = view.apply(removed(2, "a"))
    assert change.rejection is Rejection.STALE_REVISION
    assert ids(view) == ["a"]
    assert not view.in_sync


def test_change_of_a_foreign_epoch_without_its_snapshot_is_rejected() -> None:
    """P1: a new epoch starts with a snapshot; a change of another epoch means one was missed."""
    view = view_of(snap(1, [root("a")]))
    first = view.apply(changed(7, root("b"), epoch="e2"))
    second = view.apply(removed(8, "a", epoch="e2"))
    assert first.rejection is Rejection.FOREIGN_EPOCH
    assert second.rejection is Rejection.FOREIGN_EPOCH
    assert view.cursor == Cursor(epoch=EPOCH, revision=1)
    assert view.rejected == 2


def test_a_foreign_epoch_supersedes_what_the_view_held() -> None:
    """P1: a new epoch means a new publisher; the old roots are nobody's until a snapshot."""
    view = view_of(snap(1, [root("a")]))
    assert aggregate(view).state is AggregateState.WORKING
    view.apply(changed(7, root("b"), epoch="e2"))
    assert view.superseded
    assert not view.known
    assert view.roots == ()
    assert view.get("a") is None
    status = aggregate(view)
    assert status.state is AggregateState.UNKNOWN
    assert "source replaced" in status.message
    view.apply(snap(9, [root("b")], epoch="e2"))
    assert not view.superseded
    assert view.known
    assert ids(view) == ["b"]


def test_change_before_any_snapshot_is_rejected() -> None:
    """O2: an observer's first frame is a snapshot; anything else first is refused."""
    view = ActivityView()
    change = view.apply(changed(1, root("a")))
    assert change.rejection is Rejection.NO_SNAPSHOT
    assert view.roots == ()
    assert view.cursor is None
    assert view.rejected == 1


def test_older_snapshot_of_the_same_epoch_is_rejected() -> None:
    """A snapshot never takes the view back in time within an epoch."""
    view = view_of(snap(5, [root("a")]))
    change = view.apply(snap(4, [root("b")]))
    assert change.rejection is Rejection.STALE_REVISION
    assert ids(view) == ["a"]
    assert not view.in_sync


def test_in_sequence_frames_still_apply_while_out_of_sync() -> None:
    """A refused duplicate does not freeze the view: newer frames of its epoch still apply."""
    view = view_of(snap(1, []), changed(2, root("a")), changed(2, root("a")))
    change = view.apply(changed(3, root("b")))
    assert change.kind is ChangeKind.ADDED
    assert ids(view) == ["a", "b"]
    assert not view.in_sync


def test_the_next_snapshot_restores_sync() -> None:
    """O4: a snapshot (an overflow resnapshot, a new epoch) replaces everything and resyncs."""
    view = view_of(snap(1, []), changed(5, root("a")), changed(4, root("b")))
    assert not view.in_sync
    view.apply(snap(6, [root("c")]))
    assert view.in_sync
    assert ids(view) == ["c"]
    assert view.rejected == 1


def test_a_new_epochs_snapshot_restores_sync_after_foreign_changes() -> None:
    """P1: the missing snapshot of the new epoch, once it arrives, is applied."""
    view = view_of(snap(1, [root("a")]), changed(1, root("b"), epoch="e2"))
    view.apply(snap(2, [root("b")], epoch="e2"))
    assert view.in_sync
    assert ids(view) == ["b"]


# --- the view against a real hub ---------------------------------------------------------------


async def test_view_follows_a_real_hub_across_publisher_replacement(
    hub: WorkflowActivityHub,
) -> None:
    """P1-P5/O1-O2: a view fed by hub.observe equals the hub's snapshot at quiescence."""
    view = ActivityView()
    hub.observe(view.apply)
    old = hub.register_publisher()
    old.publish_snapshot("ready", [root("a"), root("b")])
    old.publish_lifecycle(stage_lifecycle())
    old.publish_changed(working("c"))
    old.publish_removed("a")
    new = hub.register_publisher()
    new.publish_snapshot("recovering")
    new.publish_changed(root("x"))
    new.publish_snapshot("ready", [blocked("y")])
    await trio.testing.wait_all_tasks_blocked()
    assert view.snapshot_frame() == hub.snapshot_frame()
    assert view.in_sync
    assert view.rejected == 0


async def test_view_seeded_from_the_hub_snapshot_can_then_observe(
    hub: WorkflowActivityHub,
) -> None:
    """O1: seeding with hub.snapshot_frame() then observing repeats that snapshot harmlessly."""
    hub.register_publisher().publish_snapshot("ready", [root("a")])
    view = ActivityView()
    view.apply(hub.snapshot_frame())
    hub.observe(view.apply)
    await trio.testing.wait_all_tasks_blocked()
    assert view.in_sync
    assert view.snapshot_frame() == hub.snapshot_frame()


# --- the aggregate: the decision table, row by row ---------------------------------------------


def test_no_snapshot_yet_is_unknown() -> None:
    """Row 3: nothing known yet is unknown, never idle."""
    status = aggregate(ActivityView())
    assert status.state is AggregateState.UNKNOWN
    assert status.reason is None
    assert not status.attention


@pytest.mark.parametrize("availability", ["recovering", "unavailable"])
def test_non_ready_source_is_unknown_never_idle(availability: str) -> None:
    """Row 3 / O3: a recovering or unavailable source is unknown, not 'idle with no roots'."""
    status = aggregate(view_of(snap(1, availability=availability)))
    assert status.state is AggregateState.UNKNOWN
    assert status.reason is None
    assert status.roots == 0


def test_any_working_root_makes_the_aggregate_working() -> None:
    """Row 1: working wins over blocked and idle roots."""
    status = status_of(idle("a"), blocked("b"), working("c"))
    assert status.state is AggregateState.WORKING
    assert status.reason is Reason.EXECUTING


def test_working_reason_retrying_beats_executing() -> None:
    """Row 1 / §5 priority: a retry is the most informative working reason."""
    status = status_of(working("a", "executing"), working("b", "retrying"))
    assert status.reason is Reason.RETRYING


def test_working_reason_executing_beats_automatic_continuation() -> None:
    """Row 1 / §5 priority: real execution wins over a continuation that has not started."""
    status = status_of(working("a", "automatic_continuation"), working("b", "executing"))
    assert status.reason is Reason.EXECUTING


def test_working_reason_is_stopping_when_every_working_root_is_stopping() -> None:
    """Row 1 / §5: stopping is reported when all working roots are draining."""
    status = status_of(working("a", "stopping"), working("b", "stopping"), idle("c"))
    assert status.state is AggregateState.WORKING
    assert status.reason is Reason.STOPPING


def test_independent_work_keeps_its_own_reason_beside_a_stopping_root() -> None:
    """Row 1 / §5: stopping does not hide another root's independent work."""
    status = status_of(working("a", "stopping"), working("b", "automatic_continuation"))
    assert status.reason is Reason.AUTOMATIC_CONTINUATION


def test_blocked_when_nothing_works_and_some_root_is_blocked() -> None:
    """Row 2: blocked when no root works; awaiting_input before manual_intervention."""
    status = status_of(idle("a"), blocked("b", "manual_intervention"), blocked("c"))
    assert status.state is AggregateState.BLOCKED
    assert status.reason is Reason.AWAITING_INPUT


def test_blocked_by_manual_intervention_alone() -> None:
    """Row 2: an active failure or a budget stop waits for a human too."""
    status = status_of(blocked("a", "manual_intervention"), idle("b", "paused"))
    assert status.state is AggregateState.BLOCKED
    assert status.reason is Reason.MANUAL_INTERVENTION


def test_idle_paused_when_any_root_is_paused() -> None:
    """Row 4: a ready source with nothing working or blocked is idle; paused if any is paused."""
    status = status_of(idle("a"), idle("b", "paused"))
    assert status.state is AggregateState.IDLE
    assert status.reason is Reason.PAUSED


def test_idle_quiescent_otherwise() -> None:
    """Row 4: completed or intentionally stopped roots are quiescent."""
    status = status_of(idle("a"), idle("b"))
    assert status.state is AggregateState.IDLE
    assert status.reason is Reason.QUIESCENT


def test_ready_with_no_roots_is_idle_quiescent() -> None:
    """Row 4: known-empty is idle (this is the difference between ready and unknown)."""
    status = status_of()
    assert status.state is AggregateState.IDLE
    assert status.reason is Reason.QUIESCENT
    assert status.roots == 0


def test_out_of_sync_view_is_unknown_rather_than_idle() -> None:
    """Row 3: idle claims nothing runs; a view that refused a frame cannot back that claim."""
    view = view_of(snap(1, [idle("a")]), changed(1, working("a")))
    status = aggregate(view)
    assert status.state is AggregateState.UNKNOWN
    assert status.message == "activity unknown: view out of sync"


def test_out_of_sync_view_still_reports_the_work_it_holds() -> None:
    """Rows 1-2 come first: a working root in hand is reported even when out of sync."""
    view = view_of(snap(1, [working("a")]), changed(1, idle("a")))
    assert aggregate(view).state is AggregateState.WORKING


def test_attention_when_a_root_needs_attention() -> None:
    """Attention: a working root with a branch waiting for a human (§5) raises it."""
    status = status_of(working("a", attention=True), idle("b"))
    assert status.state is AggregateState.WORKING
    assert status.attention


def test_attention_when_a_root_is_blocked_even_without_the_flag() -> None:
    """Attention: a blocked root always needs someone, whatever its flag says."""
    status = status_of(blocked("a", attention=False))
    assert status.attention


def test_attention_for_an_ended_failure_while_idle() -> None:
    """Attention: an ended failure is idle / quiescent with needs_attention (§5)."""
    status = status_of(idle("a", attention=True))
    assert status.state is AggregateState.IDLE
    assert status.attention


def test_no_attention_when_nothing_needs_it() -> None:
    status = status_of(working("a"), idle("b", "paused"))
    assert not status.attention


def test_counts_roots_working_blocked_and_awaiting_input() -> None:
    status = status_of(
        working("a"), working("b"), blocked("c"), blocked("d", "manual_intervention"), idle("e")
    )
    assert (status.roots, status.working, status.blocked, status.awaiting_input) == (5, 2, 2, 1)


def test_aggregate_of_a_snapshot_frame() -> None:
    """aggregate() also takes one snapshot, e.g. hub.snapshot_frame() for a one-shot status."""
    assert aggregate(snap(1, [blocked("a")])).state is AggregateState.BLOCKED
    assert aggregate(snap(1, availability="recovering")).state is AggregateState.UNKNOWN


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (snap(1, [working("a"), working("b"), blocked("c")]), "2 working · 1 waiting for input"),
        (snap(1, [blocked("a"), blocked("b")]), "2 waiting for input"),
        (
            snap(1, [blocked("a"), blocked("b", "manual_intervention")]),
            "1 waiting for input · 1 needs intervention",
        ),
        (
            snap(1, [blocked("a", "manual_intervention"), blocked("b", "manual_intervention")]),
            "2 need intervention",
        ),
        (snap(1, [working("a", attention=True)]), "1 working · 1 needs attention"),
        (snap(1, [idle("a"), idle("b", "paused")]), "1 paused"),
        (snap(1, [idle("a"), idle("b")]), "idle"),
        (snap(1, []), "idle"),
        (
            snap(1, [idle("a", attention=True), idle("b", attention=True)]),
            "idle · 2 need attention",
        ),
        (snap(1, availability="recovering"), "activity unknown: source recovering"),
        (snap(1, availability="unavailable"), "activity unknown: source unavailable"),
    ],
)
def test_message_summarises_the_status(frame: SnapshotFrame, message: str) -> None:
    """The message is short and human-readable; str(status) is the message."""
    status = aggregate(frame)
    assert status.message == message
    assert str(status) == message


def test_message_before_any_snapshot() -> None:
    assert aggregate(ActivityView()).message == "activity unknown: no snapshot yet"


# --- run_reporter against a real hub -----------------------------------------------------------


async def test_run_reporter_renders_every_frame_with_a_sync_callback(
    hub: WorkflowActivityHub,
) -> None:
    """O1/O2/O9: the view is up to date at each render; every frame is rendered, in order."""
    rendered: list[tuple[ChangeKind, AggregateState]] = []

    def render(view: ActivityView, change: ViewChange) -> None:
        rendered.append((change.kind, aggregate(view).state))

    async with trio.open_nursery() as nursery:
        view = await nursery.start(run_reporter, hub, render)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [idle("a")])
        publisher.publish_changed(working("b"))
        publisher.publish_removed("b")
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert rendered == [
        (ChangeKind.RESET, AggregateState.UNKNOWN),
        (ChangeKind.RESET, AggregateState.UNKNOWN),
        (ChangeKind.RESET, AggregateState.IDLE),
        (ChangeKind.ADDED, AggregateState.WORKING),
        (ChangeKind.REMOVED, AggregateState.IDLE),
    ]
    assert view.snapshot_frame() == hub.snapshot_frame()


async def test_run_reporter_awaits_an_async_render_before_the_next_frame(
    hub: WorkflowActivityHub,
) -> None:
    """O2/O9: an async render is awaited; the next frame is folded only after it finishes."""
    gate = trio.Event()
    seen: list[int | None] = []

    async def render(view: ActivityView, change: ViewChange) -> None:
        seen.append(None if view.cursor is None else view.cursor.revision)
        if len(seen) == 2:
            await gate.wait()

    async with trio.open_nursery() as nursery:
        view = await nursery.start(run_reporter, hub, render)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        publisher.publish_changed(root("a"))
        await trio.testing.wait_all_tasks_blocked()
        assert seen == [0, 0]
        assert view.cursor is not None
        assert view.cursor.revision == 0
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert seen == [0, 0, 1, 2]
    assert ids(view) == ["a"]


async def test_run_reporter_misses_nothing_published_after_start(
    hub: WorkflowActivityHub,
) -> None:
    """O1: once nursery.start returns, the subscription is attached."""
    kinds: list[ChangeKind] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(run_reporter, hub, lambda view, change: kinds.append(change.kind))
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        publisher.publish_changed(root("a"))
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert kinds == [ChangeKind.RESET, ChangeKind.RESET, ChangeKind.RESET, ChangeKind.ADDED]


async def test_run_reporter_returns_when_the_hub_is_disposed(hub: WorkflowActivityHub) -> None:
    """L2/O9: the subscription ends with the hub, and so does the reporter."""
    finished = trio.Event()

    async def reporter() -> None:
        await run_reporter(hub, lambda view, change: None)
        finished.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reporter)
        await trio.testing.wait_all_tasks_blocked()
        hub.dispose()
    assert finished.is_set()


async def test_run_reporter_lets_a_render_error_propagate(hub: WorkflowActivityHub) -> None:
    """A broken reporter is loud: render's exception ends it and reaches the caller."""

    def render(view: ActivityView, change: ViewChange) -> None:
        raise KeyError("render failed")

    # Bounded: a reporter that swallowed the error would wait for frames forever.
    with trio.fail_after(5), pytest.raises(KeyError, match="render failed"):
        await run_reporter(hub, render)
    assert hub.statistics().observers == 0


async def test_run_reporter_refuses_a_render_that_is_not_callable(
    hub: WorkflowActivityHub,
) -> None:
    with pytest.raises(ContractError, match="render"):
        await run_reporter(hub, "render")  # type: ignore[arg-type]


async def test_run_reporter_needs_a_running_hub() -> None:
    """L1: like subscribe(), it needs a hub inside its async with block."""
    with pytest.raises(RuntimeError, match="open_hub"):
        await run_reporter(WorkflowActivityHub(), lambda view, change: None)
