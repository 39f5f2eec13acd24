"""Publishing and driving a tracker from real threads (SPEC P9, §5)."""

from __future__ import annotations

import threading

import pytest
import trio
import trio.testing

from tests.support.builders import root
from tests.support.consumers import RecordingDispatcher
from workflow_hub import (
    ContractError,
    Cursor,
    LifecycleEvent,
    LifecycleInput,
    RunTarget,
    WorkflowActivityHub,
)
from workflow_hub.tracker import RunTracker, ThreadPublisher

THREADS = 4
PER_THREAD = 150


def event(thread: int, n: int) -> LifecycleInput:
    return LifecycleInput(
        event_id=f"t{thread}-{n}",
        run_id=f"run-{thread}",
        root_run_id=f"run-{thread}",
        owner_session_id="session-1",
        occurred_at=n,
        observed_at=n,
        delivery="live",
        target=RunTarget(run_id=f"run-{thread}", status="running"),
    )


async def test_concurrent_threads_lose_nothing_and_keep_their_order(
    hub: WorkflowActivityHub,
) -> None:
    """P9: calls from many threads all arrive; each thread's calls arrive in its order."""
    hooks = RecordingDispatcher()
    hub.bind_dispatcher(hooks)
    portal = ThreadPublisher(hub.register_publisher())
    start = threading.Barrier(THREADS)
    cursors: dict[int, list[Cursor | None]] = {}

    def publish(thread: int) -> None:
        start.wait()
        mine: list[Cursor | None] = []
        for n in range(PER_THREAD):
            if n % 10 == 9:
                mine.append(portal.publish_lifecycle_blocking(event(thread, n)))
            else:
                portal.publish_lifecycle(event(thread, n))
        cursors[thread] = mine

    async with trio.open_nursery() as nursery:
        for thread in range(THREADS):
            nursery.start_soon(trio.to_thread.run_sync, publish, thread)
    await trio.testing.wait_all_tasks_blocked()

    ids = [e.event_id for e in hooks.events if isinstance(e, LifecycleEvent)]
    assert len(ids) == len(set(ids)) == THREADS * PER_THREAD
    for thread in range(THREADS):
        mine = [int(i.split("-")[1]) for i in ids if i.startswith(f"t{thread}-")]
        assert mine == list(range(PER_THREAD))
        revisions = [cursor.revision for cursor in cursors[thread] if cursor is not None]
        assert len(revisions) == PER_THREAD // 10
        assert revisions == sorted(revisions)
    assert hub.cursor.revision == THREADS * PER_THREAD


async def test_the_blocking_variant_returns_the_assigned_cursor(hub: WorkflowActivityHub) -> None:
    """P9: a blocking publish returns the cursor the hub assigned, after earlier queued calls."""
    portal = ThreadPublisher(hub.register_publisher())

    def publish() -> Cursor | None:
        portal.publish_snapshot("ready", iter([root("a")]))
        portal.publish_changed(root("b"))
        return portal.publish_removed_blocking("a")

    cursor = await trio.to_thread.run_sync(publish)
    assert cursor == hub.cursor
    assert cursor is not None
    assert cursor.revision == 3
    assert hub.snapshot_frame().roots == (root("b"),)


async def test_a_thread_drives_a_tracker_in_call_order(hub: WorkflowActivityHub) -> None:
    """§5: tracker calls handed over with call_soon run in order; call_blocking sees them all."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="session-1")
    tracker.start()
    portal = ThreadPublisher(tracker.publisher)

    def schedule() -> str:
        portal.call_soon(tracker.add_run, "root", status="running")
        portal.call_soon(tracker.add_stage, "root", "ask", "Ask", status="running")
        portal.call_soon(tracker.open_prompt, "root", "p", "confirm", "Ship it?", stage_id="ask")
        return portal.call_blocking(lambda: tracker.activity("root").reason)

    assert await trio.to_thread.run_sync(schedule) == "awaiting_input"
    assert hub.snapshot_frame().roots == (tracker.activity("root"),)


async def test_a_failing_queued_call_goes_to_on_error_and_later_calls_still_run(
    hub: WorkflowActivityHub,
) -> None:
    """P9: the caller has moved on, so a failure in the trio thread is reported, not raised."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="session-1")
    tracker.start()
    errors: list[Exception] = []
    portal = ThreadPublisher(tracker.publisher, on_error=errors.append)

    def schedule() -> None:
        portal.call_soon(tracker.set_run_status, "nope", "running")
        portal.call_soon(tracker.add_run, "root")

    await trio.to_thread.run_sync(schedule)
    assert [type(error) for error in errors] == [KeyError]
    assert "root" in tracker


async def test_call_blocking_raises_the_calls_error_in_the_calling_thread(
    hub: WorkflowActivityHub,
) -> None:
    """A blocking call's exception is the caller's to handle."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="session-1")
    tracker.start()
    portal = ThreadPublisher(tracker.publisher)
    with pytest.raises(KeyError, match="nope"):
        await trio.to_thread.run_sync(portal.call_blocking, tracker.run_status, "nope")


async def test_bad_arguments_raise_in_the_calling_thread(hub: WorkflowActivityHub) -> None:
    """C1: arguments are validated before anything is queued."""
    portal = ThreadPublisher(hub.register_publisher())
    cursor = hub.cursor
    with pytest.raises(ContractError) as caught:
        await trio.to_thread.run_sync(portal.publish_snapshot, "ready", [root(), "nope"])
    assert caught.value.path == "roots[1]"
    await trio.testing.wait_all_tasks_blocked()
    assert hub.cursor == cursor


async def test_a_blocking_call_from_the_trio_thread_is_refused(hub: WorkflowActivityHub) -> None:
    """Waiting in the trio thread for the trio thread would never end: it raises instead."""
    portal = ThreadPublisher(hub.register_publisher())
    with pytest.raises(RuntimeError, match="wait forever"):
        portal.publish_changed_blocking(root())


def test_a_thread_publisher_needs_a_trio_token_outside_trio() -> None:
    """Outside trio there is no loop to capture: pass ``trio_token`` or create it inside trio."""
    with pytest.raises(RuntimeError):
        ThreadPublisher(WorkflowActivityHub().register_publisher())
