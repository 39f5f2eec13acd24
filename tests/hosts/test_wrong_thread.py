"""A call from the wrong thread is refused before it changes anything, on every host (SPEC H1).

The hub and its publishers are not thread-safe. Before issue 37, ``publish_changed`` from a plain
thread on the asyncio host advanced the hub and then failed to wake the observers parked in trio,
which never saw a frame again; ``observe()`` failed deep in trio. Now every entry point compares
the calling thread with the hub's and refuses a foreign one, naming the host and the way there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
import trio

from tests.support.builders import heartbeat, root, run_lifecycle
from workflow_hub import (
    ChangedFrame,
    Frame,
    HookRunner,
    ThreadPublisher,
    WorkflowActivityHub,
    open_hub,
)
from workflow_hub import asyncio as hub_asyncio
from workflow_hub import sync as hub_sync

from .support import Recorder, continuous, run

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")


def in_thread(call: Callable[[], object]) -> BaseException | None:
    """Run ``call`` in a new plain thread; what it raised (None if nothing)."""
    raised: list[BaseException] = []

    def body() -> None:
        try:
            call()
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=body, name="the-wrong-thread")
    thread.start()
    thread.join()
    return raised[0] if raised else None


def assert_refused(error: BaseException | None, host: str) -> None:
    assert isinstance(error, RuntimeError), error
    message = str(error)
    assert "the-wrong-thread" in message
    assert "nothing was changed" in message
    assert host in message


def test_a_publish_from_a_plain_thread_on_the_asyncio_host_is_refused_and_harms_no_observer() -> (
    None
):
    """H1, O1, O2: ``publish_changed`` from a thread raises before the hub advances; the
    observer, parked in trio, still gets every frame later published from the loop."""

    async def main() -> None:
        async with hub_asyncio.open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            recorder = Recorder()
            hub.observe(recorder)
            await recorder.wait_count(1)
            await asyncio.sleep(0.01)  # the observer's trio task parks, waiting for a frame
            before = hub.cursor

            error = await asyncio.to_thread(
                in_thread, lambda: publisher.publish_changed(root("r-1"))
            )
            assert_refused(error, "workflow_hub.asyncio")
            assert "call_soon_threadsafe" in str(error)
            assert hub.cursor == before
            assert hub.statistics().pending_frames == 0

            for n in range(3):
                publisher.publish_changed(root("r-1", active=n))
            frames = await recorder.wait_count(4)
            assert [frame.cursor.revision for frame in frames] == [1, 2, 3, 4]
            assert continuous(frames)

    run(main)


def test_every_entry_point_of_the_asyncio_host_refuses_a_foreign_thread() -> None:
    """H1, C1: the publisher's every call, registering, observing, subscribing, hooks, the
    lease, the hub's own calls and a tracker's facts: each refused from a plain thread, and
    the hub is as it was (same cursor, observers, dispatcher)."""

    async def main() -> None:
        async with hub_asyncio.open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [root("r-1")])
            recorder = Recorder()
            lease = hub.observe(recorder)
            await recorder.wait_count(1)
            runner = hub.hook_runner()
            before = hub.statistics()

            async def subscribe_in_a_loop_of_its_own() -> None:
                async with hub.subscribe():
                    pass  # pragma: no cover - refused on entering

            calls: dict[str, Callable[[], object]] = {
                "publish_snapshot": lambda: publisher.publish_snapshot("ready", []),
                "publish_changed": lambda: publisher.publish_changed(root("r-2")),
                "publish_removed": lambda: publisher.publish_removed("r-1"),
                "publish_lifecycle": lambda: publisher.publish_lifecycle(run_lifecycle()),
                "publish_heartbeat": lambda: publisher.publish_heartbeat(heartbeat()),
                "publisher.dispose": publisher.dispose,
                "register_publisher": hub.register_publisher,
                "observe": lambda: hub.observe(lambda frame: None),
                "subscribe": lambda: asyncio.run(subscribe_in_a_loop_of_its_own()),
                "lease.dispose": lease.dispose,
                "bind_dispatcher": lambda: hub.bind_dispatcher(lambda event, current: None),
                "runner.bind": runner.bind,
                "snapshot_frame": hub.snapshot_frame,
                "hub.dispose": hub.dispose,
            }
            for name, call in calls.items():
                error = await asyncio.to_thread(in_thread, call)
                assert_refused(error, "workflow_hub.asyncio")
                assert hub.statistics() == before, name
            assert not lease.disposed
            assert publisher.current

            publisher.publish_changed(root("r-3"))
            frames = await recorder.wait_for(lambda frames: frames[-1].cursor == hub.cursor)
            assert isinstance(frames[-1], ChangedFrame)
            assert continuous(frames)

    run(main)


def test_a_tracker_fact_from_a_plain_thread_is_refused_and_the_hub_does_not_move() -> None:
    """H1: the asyncio host's tracker is the hub's own (its thread's); a fact from another
    thread is refused before the tracker folds it (its record never holds it), the hub does not
    move and its observers keep getting what the loop publishes."""

    async def main() -> None:
        async with hub_asyncio.open_hub() as hub:
            tracker = hub.tracker(owner_session_id="session")
            tracker.start()
            recorder = Recorder()
            hub.observe(recorder)
            await recorder.wait_count(1)
            await asyncio.sleep(0.01)
            before = hub.cursor
            error = await asyncio.to_thread(
                in_thread, lambda: tracker.add_run("run-1", status="running")
            )
            assert_refused(error, "workflow_hub.asyncio")
            assert hub.cursor == before
            tracker.add_run("run-2", status="running")
            frames = await recorder.wait_for(lambda frames: frames[-1].cursor == hub.cursor)
            assert isinstance(frames[-1], ChangedFrame)
            assert frames[-1].root.root_run_id == "run-2"
            tracker.add_run("run-1", status="running")  # the refused fact left no trace
            await recorder.wait_for(lambda frames: frames[-1].cursor == hub.cursor)
            roots = hub.snapshot_frame().roots
            assert sorted(activity.root_run_id for activity in roots) == ["run-1", "run-2"]

    run(main)


def test_the_thread_hosts_trio_hub_refuses_other_threads_and_points_to_the_handles() -> None:
    """H1: ``hub.trio_hub`` belongs to the host's thread; touched from the caller's thread it
    refuses and names the sync host's handles and ``hub.call``."""
    with hub_sync.open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot_blocking("ready", [])
        before = hub.statistics()
        with pytest.raises(RuntimeError, match=r"workflow_hub\.sync.*hub\.call") as refused:
            hub.trio_hub.register_publisher()
        assert threading.current_thread().name in str(refused.value)
        with pytest.raises(RuntimeError, match="nothing was changed"):
            hub.trio_hub.observe(lambda frame: None)
        assert hub.statistics() == before
        # The same call, in the hub's thread, is fine.
        lease = hub.call(hub.trio_hub.observe, lambda frame: None)
        hub.call(lease.dispose)


async def test_the_trio_hub_refuses_a_worker_thread_and_names_threadpublisher() -> None:
    """H1: a hub run by trio refuses a publish from ``trio.to_thread``; ThreadPublisher, which
    hands the call to the hub's thread, is the way, and delivers it."""
    async with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        frames: list[Frame] = []
        hub.observe(frames.append)
        await trio.testing.wait_all_tasks_blocked()
        before = hub.cursor

        def publish() -> BaseException | None:
            try:
                publisher.publish_changed(root("r-1"))
            except RuntimeError as error:
                return error
            return None

        error = await trio.to_thread.run_sync(publish)
        assert isinstance(error, RuntimeError)
        assert "ThreadPublisher" in str(error)
        assert hub.cursor == before

        front = ThreadPublisher(publisher)
        await trio.to_thread.run_sync(front.publish_changed_blocking, root("r-1"))
        await trio.testing.wait_all_tasks_blocked()
        assert [frame.cursor.revision for frame in frames] == [1, 2]


def test_a_hub_that_is_not_running_is_anyones() -> None:
    """H1: the check binds a hub to the thread that runs it, from entering it: before it runs
    (set up, published to, read), any thread may use it, as before."""
    hub = WorkflowActivityHub()
    results: list[Any] = []

    def set_up() -> None:
        publisher = hub.register_publisher()
        results.append(publisher.publish_snapshot("ready", [root("r-1")]))
        results.append(hub.snapshot_frame())
        HookRunner(hub)

    assert in_thread(set_up) is None
    assert hub.cursor.revision == 1


def test_an_asyncio_subscription_is_received_in_its_loop_s_thread_only() -> None:
    """H1, O9: receiving from another thread (which would wake the trio pump from there) is
    refused; the stream then goes on in its own loop, in order."""

    async def main() -> None:
        async with hub_asyncio.open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            async with hub.subscribe() as frames:
                first = await anext(frames)
                assert first.cursor.revision == 1

                async def receive_in_a_loop_of_its_own() -> None:
                    await frames.receive_all()

                for call in (
                    frames.receive_all_nowait,
                    lambda: asyncio.run(receive_in_a_loop_of_its_own()),
                ):
                    error = await asyncio.to_thread(in_thread, call)
                    assert isinstance(error, RuntimeError), error
                    assert "loop's thread" in str(error)
                publisher.publish_changed(root("r-1"))
                frame = await anext(frames)
                assert frame.cursor.revision == 2

    run(main)
