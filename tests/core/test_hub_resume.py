"""Resuming observation from a cursor: history, replay or resnapshot, leases (SPEC R1-R4)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tests.support.builders import describe, fold, root, stage_lifecycle
from workflow_hub import (
    ContractError,
    Cursor,
    Frame,
    WorkflowActivityHub,
    WorkflowActivityPublisher,
    open_hub,
)
from workflow_hub.wire import format_cursor, parse_cursor

# A short history, so that resuming past its start is easy to reach (R3).
pytestmark = pytest.mark.hub_options(history_limit=8)


def ready(hub: WorkflowActivityHub, *names: str) -> WorkflowActivityPublisher:
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root(name) for name in names])
    return publisher


async def observe_from(hub: WorkflowActivityHub, since: Cursor | None) -> tuple[list[Frame], bool]:
    """Attach from ``since``, let delivery settle, and return what arrived and ``lease.resumed``."""
    seen: list[Frame] = []
    lease = hub.observe(seen.append, since=since)
    await trio.testing.wait_all_tasks_blocked()
    return seen, lease.resumed


def kinds(hub: WorkflowActivityHub) -> list[str]:
    return [diagnostic.kind for diagnostic in hub.diagnostics()]


# --- R2: replay -------------------------------------------------------------------------------


async def test_resume_replays_exactly_the_missed_frames_without_a_snapshot(
    hub: WorkflowActivityHub,
) -> None:
    """R2: the frames after ``since``, in order, then live frames; no snapshot first."""
    publisher = ready(hub, "a")
    since = hub.cursor
    publisher.publish_changed(root("b"))
    publisher.publish_removed("a")
    seen, resumed = await observe_from(hub, since)
    publisher.publish_changed(root("c"))
    await trio.testing.wait_all_tasks_blocked()
    assert resumed is True
    assert describe(seen) == [("changed", 2), ("removed", 3), ("changed", 4)]


async def test_replayed_frames_are_the_broadcast_objects(hub: WorkflowActivityHub) -> None:
    """R1/O8: history holds references to the frames observers got, not copies."""
    publisher = ready(hub, "a")
    live: list[Frame] = []
    hub.observe(live.append)
    since = hub.cursor
    publisher.publish_changed(root("b"))
    seen, _ = await observe_from(hub, since)
    assert seen[0] is live[-1]


async def test_resume_at_the_current_cursor_replays_nothing(hub: WorkflowActivityHub) -> None:
    """R2: nothing missed is still a resume: no frame until the next publish."""
    publisher = ready(hub, "a")
    seen, resumed = await observe_from(hub, hub.cursor)
    assert (seen, resumed) == ([], True)
    publisher.publish_changed(root("b"))
    await trio.testing.wait_all_tasks_blocked()
    assert describe(seen) == [("changed", 2)]


async def test_lifecycle_revisions_advance_without_frames(hub: WorkflowActivityHub) -> None:
    """R2: revisions skip where lifecycle events advanced the cursor; the replay is still exact."""
    publisher = ready(hub, "a")
    since = hub.cursor
    publisher.publish_lifecycle(stage_lifecycle())
    publisher.publish_changed(root("b"))
    publisher.publish_lifecycle(stage_lifecycle(event_id="evt-2"))
    seen, resumed = await observe_from(hub, since)
    assert resumed is True
    assert describe(seen) == [("changed", 3)]
    # A cursor a lifecycle event produced is a valid resume point too.
    seen, resumed = await observe_from(hub, Cursor(epoch=hub.cursor.epoch, revision=2))
    assert (describe(seen), resumed) == ([("changed", 3)], True)


async def test_a_broadcast_snapshot_after_since_starts_the_replay(
    hub: WorkflowActivityHub,
) -> None:
    """R2: a snapshot replaces everything before it: the replay starts at the latest one."""
    publisher = ready(hub, "a")
    since = hub.cursor
    publisher.publish_changed(root("b"))
    publisher.publish_snapshot("ready", [root("c")])
    publisher.publish_changed(root("d"))
    publisher.publish_snapshot("ready", [root("e")])
    publisher.publish_changed(root("f"))
    seen, resumed = await observe_from(hub, since)
    assert resumed is True
    assert describe(seen) == [("snapshot", 5), ("changed", 6)]
    assert seen[0] is not hub.snapshot_frame()  # the broadcast snapshot, not a fresh one
    assert fold(seen) == {"e": root("e"), "f": root("f")}


async def test_history_keeps_nothing_before_the_latest_snapshot(
    hub: WorkflowActivityHub,
) -> None:
    """R1/R2: memory is O(roots + history_limit): repeated snapshots keep one of them."""
    publisher = ready(hub, "a")
    for n in range(5):
        publisher.publish_snapshot("ready", [root(f"r{n}")])
    publisher.publish_changed(root("b"))
    statistics = hub.statistics()
    assert statistics.history_frames == 2
    assert statistics.history_oldest_revision == 0


async def test_publisher_dispose_snapshot_is_replayed(hub: WorkflowActivityHub) -> None:
    """P8/R2: the unavailable snapshot of a disposed publisher is a broadcast frame like any."""
    publisher = ready(hub, "a")
    since = hub.cursor
    publisher.dispose()
    seen, resumed = await observe_from(hub, since)
    assert resumed is True
    assert describe(seen) == [("snapshot", 2)]
    assert fold(seen) is None


# --- R1: history boundaries -------------------------------------------------------------------


async def test_exactly_history_limit_missed_frames_replays() -> None:
    """R1/R2: a history of N frames resumes an observer that missed N."""
    async with open_hub(history_limit=4) as hub:
        publisher = ready(hub, "a")
        since = hub.cursor
        for n in range(4):
            publisher.publish_changed(root(f"r{n}"))
        seen, resumed = await observe_from(hub, since)
        assert resumed is True
        assert describe(seen) == [("changed", r) for r in (2, 3, 4, 5)]


async def test_one_more_than_history_limit_resnapshots() -> None:
    """R1/R2: one frame more than the history holds: a snapshot, as without ``since``."""
    async with open_hub(history_limit=4) as hub:
        publisher = ready(hub, "a")
        since = hub.cursor
        for n in range(5):
            publisher.publish_changed(root(f"r{n}"))
        seen, resumed = await observe_from(hub, since)
        assert resumed is False
        assert seen == [hub.snapshot_frame()]
        assert hub.statistics().history_frames == 4
        assert hub.statistics().history_oldest_revision == 2


async def test_history_limit_zero_always_resnapshots() -> None:
    """R1: ``history_limit=0`` turns history off: every resume starts with a snapshot."""
    async with open_hub(history_limit=0) as hub:
        publisher = ready(hub, "a")
        since = hub.cursor
        publisher.publish_changed(root("b"))
        for cursor in (since, hub.cursor):
            seen, resumed = await observe_from(hub, cursor)
            assert (seen, resumed) == ([hub.snapshot_frame()], False)
        statistics = hub.statistics()
        assert (statistics.history_frames, statistics.history_oldest_revision) == (0, None)


async def test_a_new_epoch_starts_an_empty_history(hub: WorkflowActivityHub) -> None:
    """R1/P1: register_publisher() empties the history; the old epoch's cursors resnapshot."""
    publisher = ready(hub, "a")
    old = hub.cursor
    publisher.publish_changed(root("b"))
    hub.register_publisher()
    assert hub.statistics().history_frames == 0
    seen, resumed = await observe_from(hub, old)
    assert (seen, resumed) == ([hub.snapshot_frame()], False)
    # The new epoch's revision 0 resumes with nothing missed.
    seen, resumed = await observe_from(hub, hub.cursor)
    assert (seen, resumed) == ([], True)


async def test_overflow_snapshots_are_not_history() -> None:
    """R1: a per-observer overflow snapshot is never recorded as broadcast."""
    async with open_hub(queue_limit=2, history_limit=8) as hub:
        publisher = ready(hub, "a")
        gate = trio.Event()

        async def stalled(frame: Frame) -> None:
            await gate.wait()

        hub.observe(stalled)
        await trio.testing.wait_all_tasks_blocked()
        publisher.publish_changed(root("b"))
        since = hub.cursor
        publisher.publish_changed(root("c"))
        publisher.publish_changed(root("d"))  # overflows the stalled observer
        assert kinds(hub)[-1] == "ObserverOverflow"
        seen, resumed = await observe_from(hub, since)
        assert resumed is True
        assert describe(seen) == [("changed", 3), ("changed", 4)]
        gate.set()


# --- R2: resnapshot ---------------------------------------------------------------------------


async def test_a_future_revision_resnapshots(hub: WorkflowActivityHub) -> None:
    """R2: a cursor this hub has not reached yet is not trusted: snapshot, nothing else changes."""
    ready(hub, "a")
    future = Cursor(epoch=hub.cursor.epoch, revision=hub.cursor.revision + 1)
    cursor, history = hub.cursor, hub.statistics().history_frames
    seen, resumed = await observe_from(hub, future)
    assert (seen, resumed) == ([hub.snapshot_frame()], False)
    assert (hub.cursor, hub.statistics().history_frames) == (cursor, history)


async def test_a_foreign_epoch_resnapshots(hub: WorkflowActivityHub) -> None:
    """R2: a cursor of another epoch (another hub, an earlier source) starts with a snapshot."""
    ready(hub, "a")
    seen, resumed = await observe_from(hub, Cursor(epoch="somewhere-else", revision=1))
    assert (seen, resumed) == ([hub.snapshot_frame()], False)


async def test_without_since_nothing_changes(hub: WorkflowActivityHub) -> None:
    """R2/O1: no ``since`` is today's behaviour: the snapshot first, ``resumed`` false."""
    ready(hub, "a")
    seen, resumed = await observe_from(hub, None)
    assert (seen, resumed) == ([hub.snapshot_frame()], False)


async def test_a_resume_larger_than_queue_limit_is_an_overflow() -> None:
    """R3/O4: more replayed frames than the queue holds: a fresh snapshot and ObserverOverflow."""
    async with open_hub(queue_limit=3, history_limit=16) as hub:
        publisher = ready(hub, "a")
        since = hub.cursor
        for n in range(3):
            publisher.publish_changed(root(f"r{n}"))
        seen, resumed = await observe_from(hub, since)
        assert resumed is True  # exactly queue_limit frames fit
        assert len(seen) == 3
        since = hub.cursor
        for n in range(4):
            publisher.publish_changed(root(f"s{n}"))
        seen, resumed = await observe_from(hub, since)
        assert (seen, resumed) == ([hub.snapshot_frame()], False)
        assert kinds(hub)[-1] == "ObserverOverflow"
        assert hub.diagnostics()[-1].cursor == hub.cursor


async def test_attach_diagnostics_are_recorded_resumed_or_not(hub: WorkflowActivityHub) -> None:
    """R2/O3: attaching to a non-ready source records its diagnostic even when resuming."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("recovering")
    since = hub.cursor
    publisher.publish_removed("a")
    count = kinds(hub).count("SourceRecovering")
    seen, resumed = await observe_from(hub, since)
    assert resumed is True
    assert describe(seen) == [("removed", 2)]
    assert kinds(hub).count("SourceRecovering") == count + 1


async def test_since_must_be_a_cursor(hub: WorkflowActivityHub) -> None:
    """C1: a bad ``since`` is a ContractError naming it, and attaches nothing."""
    with pytest.raises(ContractError) as raised:
        hub.observe(print, since="epoch-0:1")  # type: ignore[arg-type]
    assert raised.value.path == "since"
    assert hub.statistics().observers == 0


async def test_history_limit_is_checked() -> None:
    """C1: ``history_limit`` is an int >= 0."""
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(ContractError) as raised:
            WorkflowActivityHub(history_limit=bad)  # type: ignore[arg-type]
        assert raised.value.path == "history_limit"


async def test_a_disposed_hub_gives_an_inert_unresumed_lease(hub: WorkflowActivityHub) -> None:
    """O7/R2: ``since`` changes nothing about a disposed hub."""
    ready(hub, "a")
    since = hub.cursor
    hub.dispose()
    lease = hub.observe(print, since=since)
    assert lease.disposed
    assert lease.resumed is False


# --- streams ----------------------------------------------------------------------------------


async def test_stream_resumes_and_says_so(hub: WorkflowActivityHub) -> None:
    """R2/O9: ``subscribe(since=...)`` replays like ``observe``; ``stream.lease.resumed``."""
    publisher = ready(hub, "a")
    since = hub.cursor
    publisher.publish_changed(root("b"))
    async with hub.subscribe(since=since) as stream:
        assert stream.lease.resumed is True
        publisher.publish_removed("a")
        with trio.fail_after(1):
            frames = [await stream.receive(), await stream.receive()]
    assert describe(frames) == [("changed", 2), ("removed", 3)]
    async with hub.subscribe(since=Cursor(epoch="other", revision=0)) as stream:
        assert stream.lease.resumed is False
        with trio.fail_after(1):
            assert await stream.receive() is hub.snapshot_frame()


# --- R4: the text form ------------------------------------------------------------------------


def test_cursor_text_round_trips_and_splits_at_the_last_colon() -> None:
    """R4: ``"<epoch>:<revision>"``; an epoch may contain colons."""
    for cursor in (
        Cursor(epoch="e", revision=0),
        Cursor(epoch="a:b:c", revision=12),
        Cursor(epoch="in side", revision=3),
        Cursor(epoch="ünï", revision=10**12),
    ):
        assert parse_cursor(format_cursor(cursor)) == cursor
    assert format_cursor(Cursor(epoch="a:b", revision=7)) == "a:b:7"
    assert parse_cursor("a:b:7") == Cursor(epoch="a:b", revision=7)


@pytest.mark.parametrize(
    ("text", "path", "problem"),
    [
        ("epoch7", "cursor", "no ':'"),
        (":7", "cursor.epoch", "is empty"),
        ("e :7", "cursor.epoch", "surrounding whitespace"),
        ("a\nb:7", "cursor.epoch", "line break"),
        ("a\rb:7", "cursor.epoch", "line break"),
        ("e:", "cursor.revision", "non-negative decimal"),
        ("e:-1", "cursor.revision", "non-negative decimal"),
        ("e:+1", "cursor.revision", "non-negative decimal"),
        ("e:1.0", "cursor.revision", "non-negative decimal"),
        ("e:1_000", "cursor.revision", "non-negative decimal"),
        ("e:٣", "cursor.revision", "non-negative decimal"),
        ("e:x", "cursor.revision", "non-negative decimal"),
        (" e:1", "cursor", "whitespace"),
        ("e:1\n", "cursor", "whitespace"),
    ],
)
def test_bad_cursor_text_names_what_is_wrong(text: str, path: str, problem: str) -> None:
    """R4/C1: anything but ``<epoch>:<decimal>`` is a ContractError naming the part."""
    with pytest.raises(ContractError) as raised:
        parse_cursor(text)
    assert raised.value.path == path
    assert problem in raised.value.problem


def test_cursor_text_rejects_what_is_not_text_or_a_cursor() -> None:
    """C1: the wrong type is named too."""
    with pytest.raises(ContractError):
        parse_cursor(7)  # type: ignore[arg-type]
    with pytest.raises(ContractError):
        format_cursor("e:1")  # type: ignore[arg-type]


@pytest.mark.parametrize("epoch", ["", " e", "e\t", "a\nb", "a\rb"])
def test_an_epoch_without_a_text_form_is_refused(epoch: str) -> None:
    """R4/C1: format_cursor never writes text that parse_cursor would refuse."""
    with pytest.raises(ContractError) as raised:
        format_cursor(Cursor(epoch=epoch, revision=1))
    assert raised.value.path == "cursor.epoch"


@pytest.mark.parametrize("epoch", ["", " e", "a\nb", "a\rb"])
def test_the_hub_refuses_an_epoch_without_a_text_form(epoch: str) -> None:
    """R4/P1/C1: an epoch that would break an SSE id line is refused before anything changes."""
    epochs = iter(["first", epoch])
    hub = WorkflowActivityHub(epoch_factory=lambda: next(epochs))
    before = hub.snapshot_frame()
    with pytest.raises(ContractError) as raised:
        hub.register_publisher()
    assert raised.value.path == "epoch_factory"
    assert hub.snapshot_frame() == before
    assert hub.cursor == Cursor(epoch="first", revision=0)
