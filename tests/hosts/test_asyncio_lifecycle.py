"""``workflow_hub.asyncio``: trackers, hooks, and how a host ends (SPEC H1, K3-K6, §5).

Real asyncio programs: the scheduler, its hook handlers and its observers are asyncio code.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
import trio

from tests.support.builders import root, run_lifecycle, stage_lifecycle
from workflow_hub import (
    ChangedFrame,
    Frame,
    HandlerFailure,
    HeartbeatEvent,
    LifecycleEvent,
    StageCompletedEvent,
)
from workflow_hub.asyncio import open_hub

from .support import Recorder, is_unavailable, run


def test_a_tracker_driven_from_asyncio_publishes_and_beats() -> None:
    """H1, P7, §5: facts called directly from asyncio; heartbeats run in the host."""

    async def main() -> None:
        async with open_hub() as hub:
            beats: list[HeartbeatEvent] = []
            three = asyncio.Event()
            runner = hub.hook_runner()

            async def on_heartbeat(event: HeartbeatEvent) -> None:
                await asyncio.sleep(0)
                beats.append(event)
                if len(beats) == 3:
                    three.set()

            runner.extension("beats").on("workflow_heartbeat", on_heartbeat)
            runner.bind()
            tracker = hub.tracker(owner_session_id="session-1")
            tracker.start()
            # One beat every 20 ms of wall-clock time, the tracker's default clock.
            tracker.add_run("run-1", heartbeat_interval_minutes=20 / 60_000)
            tracker.set_run_status("run-1", "running")
            await three.wait()
            assert [beat.run_id for beat in beats] == ["run-1"] * 3
            scheduled = [beat.scheduled_at for beat in beats]
            assert scheduled == sorted(scheduled)
            assert len(set(scheduled)) == 3
            assert hub.snapshot_frame().roots is not None
            assert [r.state for r in hub.snapshot_frame().roots] == ["working"]

    run(main)


def test_a_batch_from_asyncio_publishes_each_root_once() -> None:
    """H1, §5: ``with tracker.batch():`` in asyncio code; observers never see half-way states."""

    async def main() -> None:
        async with open_hub() as hub:
            tracker = hub.tracker(owner_session_id="session-1")
            tracker.start()
            recorder = Recorder()
            hub.observe(recorder)
            await recorder.wait_count(1)
            with tracker.batch():
                tracker.add_run("run-1")
                tracker.set_run_status("run-1", "running")
                tracker.add_stage("run-1", "plan", "plan")
                tracker.set_stage_status("run-1", "plan", "running")
                await asyncio.sleep(0.01)  # the batch may span awaits: nothing is published
                assert len(recorder.frames) == 1
            frames = await recorder.wait_count(2)
            assert len(frames) == 2
            changed = frames[1]
            assert isinstance(changed, ChangedFrame)
            assert (changed.root.state, changed.root.active_execution_count) == ("working", 1)

    run(main)


def test_hook_handlers_are_asyncio_coroutines_run_in_order_one_at_a_time() -> None:
    """H1, K3, K6: extensions in load order, each handler awaited before the next starts."""

    async def main() -> None:
        async with open_hub() as hub:
            runner = hub.hook_runner()
            log: list[str] = []
            running = 0
            done = asyncio.Event()

            async def record(name: str, event: LifecycleEvent | StageCompletedEvent) -> None:
                nonlocal running
                running += 1
                assert running == 1
                await asyncio.sleep(0.001)
                log.append(f"{name}:{event.type}:{event.event_id}")
                running -= 1
                if len(log) == 5:
                    done.set()

            first = runner.extension("first")

            async def first_lifecycle(event: LifecycleEvent) -> None:
                await record("first", event)

            first.on("workflow_lifecycle", first_lifecycle)
            second = runner.extension("second")

            @second.on("workflow_lifecycle")
            async def second_lifecycle(event: LifecycleEvent) -> None:
                await record("second", event)

            async def first_completed(event: StageCompletedEvent) -> None:
                await record("first", event)

            first.on("workflow_stage_completed", first_completed)
            publisher = hub.register_publisher()
            # Published before binding: buffered, then delivered first (K1).
            publisher.publish_lifecycle(run_lifecycle("running", event_id="e1"))
            runner.bind()
            publisher.publish_lifecycle(stage_lifecycle("completed", event_id="e2"))
            await done.wait()
            assert log == [
                "first:workflow_lifecycle:e1",
                "second:workflow_lifecycle:e1",
                "first:workflow_lifecycle:e2",
                "second:workflow_lifecycle:e2",
                "first:workflow_stage_completed:e2",
            ]

    run(main)


def test_a_publisher_replaced_while_a_handler_awaits_skips_the_rest_of_the_chain() -> None:
    """H1, K4: the fencing check runs before every asyncio handler."""

    async def main() -> None:
        async with open_hub() as hub:
            runner = hub.hook_runner()
            gate = asyncio.Event()
            inside = asyncio.Event()
            calls: list[str] = []

            @runner.extension("first").on("workflow_lifecycle")
            async def first(event: LifecycleEvent) -> None:
                calls.append(f"first:{event.event_id}")
                inside.set()
                await gate.wait()

            @runner.extension("second").on("workflow_lifecycle")
            def second(event: LifecycleEvent) -> None:
                calls.append(f"second:{event.event_id}")

            runner.bind()
            old = hub.register_publisher()
            old.publish_lifecycle(run_lifecycle("running", event_id="old"))
            await inside.wait()
            new = hub.register_publisher()  # fences the old one while its handler awaits
            gate.set()
            inside.clear()
            new.publish_lifecycle(run_lifecycle("running", event_id="new"))
            await inside.wait()
            assert calls == ["first:old", "first:new"]
            gate.set()

    run(main)


def test_a_failing_handler_is_reported_and_the_chain_goes_on() -> None:
    """H1, K5: ``on_error`` gets the failure; later handlers still run."""

    async def main() -> None:
        async with open_hub() as hub:
            failures: list[HandlerFailure] = []
            runner = hub.hook_runner(on_error=failures.append)
            reached = asyncio.Event()

            @runner.extension("broken").on("workflow_lifecycle")
            async def broken(event: LifecycleEvent) -> None:
                await asyncio.sleep(0)
                raise ValueError("broken handler")

            @runner.extension("fine").on("workflow_lifecycle")
            async def fine(event: LifecycleEvent) -> None:
                reached.set()

            runner.bind()
            hub.register_publisher().publish_lifecycle(run_lifecycle("running"))
            await reached.wait()
            assert [(f.extension, type(f.exception)) for f in failures] == [("broken", ValueError)]

    run(main)


def test_leaving_the_host_delivers_the_final_unavailable_frame_to_every_observer() -> None:
    """H1, P8: publishers are disposed on exit, and asyncio observers see it before the end."""

    async def main() -> tuple[list[Frame], list[Frame]]:
        streamed: list[Frame] = []
        recorder = Recorder()
        async with open_hub() as hub:
            tracker = hub.tracker(owner_session_id="session-1")
            tracker.start()
            tracker.add_run("run-1", status="running")
            hub.observe(recorder)

            async def consume() -> None:
                async with hub.subscribe() as frames:
                    async for frame in frames:
                        streamed.append(frame)

            consumer = asyncio.create_task(consume())
            await recorder.wait_count(1)
            await asyncio.sleep(0.01)
        # The stream ended by itself once the host closed: nothing to cancel.
        await asyncio.wait_for(consumer, 5)
        return recorder.frames, streamed

    called, streamed = run(main)
    for frames in (called, streamed):
        assert frames[0].availability == "ready"  # type: ignore[union-attr]
        assert is_unavailable(frames[-1])
        assert frames[-1].cursor.revision == frames[0].cursor.revision + 1


def test_an_exception_in_the_block_propagates_after_a_clean_end() -> None:
    """H1: asyncio's exception leaves the block; observers still got the final frame."""
    recorder = Recorder()

    async def main() -> None:
        async with open_hub() as hub:
            hub.register_publisher().publish_snapshot("ready", [root()])
            hub.observe(recorder)
            await recorder.wait_count(1)
            raise KeyError("the scheduler failed")

    with pytest.raises(KeyError, match="the scheduler failed"):
        run(main)
    assert is_unavailable(recorder.frames[-1])


def test_an_exception_in_the_hub_cancels_the_block_and_is_raised_from_it() -> None:
    """H1: a host task that fails (here a heartbeat clock) ends the asyncio block with it."""

    class ClockBroke(Exception):
        pass

    broken = False

    def clock() -> float:
        # Broken only for the heartbeat task (a trio task); the facts' own readings work.
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            return 1_000.0
        if broken:
            raise ClockBroke("the clock broke")
        return 1_000.0

    reached_end = False

    async def main() -> None:
        nonlocal broken, reached_end
        async with open_hub() as hub:
            tracker = hub.tracker(owner_session_id="session-1", clock=clock)
            tracker.start()
            await asyncio.sleep(0.01)  # the heartbeat task runs and waits
            broken = True
            tracker.add_run("run-1", status="running", heartbeat_interval_minutes=1)
            await asyncio.sleep(10)  # cancelled by the failure
            reached_end = True

    with pytest.raises(BaseExceptionGroup) as failure:
        run(main)
    assert failure.group_contains(ClockBroke)
    assert not reached_end


def test_a_cancelled_block_still_ends_the_trio_run() -> None:
    """H1: cancelling the asyncio task that hosts the hub ends trio too, never leaving it behind."""

    async def main() -> None:
        async def host() -> None:
            async with open_hub() as hub:
                hub.register_publisher()
                await asyncio.sleep(10)

        task = asyncio.create_task(host())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not trio.lowlevel.in_trio_run()
        # A new host can start in the same thread: the first run is over.
        async with open_hub() as hub:
            hub.register_publisher()

    run(main)


def test_hook_events_published_just_before_the_exit_are_still_dispatched() -> None:
    """H1, K1, K2: leaving the host dispatches what was queued, then fences the publishers."""
    handled: list[str] = []

    async def main() -> None:
        async with open_hub() as hub:
            runner = hub.hook_runner()

            @runner.extension("notify").on("workflow_lifecycle")
            async def notify(event: LifecycleEvent) -> None:
                await asyncio.sleep(0.01)
                handled.append(event.event_id)

            runner.bind()
            publisher = hub.register_publisher()
            publisher.publish_lifecycle(run_lifecycle("running", event_id="first"))
            publisher.publish_lifecycle(run_lifecycle("completed", event_id="last"))
            # Leave at once: nothing has been dispatched yet.

    run(main)
    assert handled == ["first", "last"]


def test_close_from_another_thread_ends_the_host_before_the_block_is_left() -> None:
    """H1: ``hub.close()`` (from any thread: here a plain one, as a signal handler or an ASGI
    server's shutdown would) starts the host's clean end at once: every observer gets the final
    ``unavailable`` frame, ``wait_closed()`` returns, and leaving the block later waits for
    nothing more. A second ``close()``, and one after the end, change nothing."""

    async def main() -> None:
        recorder = Recorder()
        async with open_hub() as hub:
            hub.observe(recorder)
            hub.register_publisher().publish_snapshot("ready", [root("a")])
            await recorder.wait_count(2)  # the attach snapshot, then the source's
            closer = threading.Thread(target=hub.close)
            closer.start()
            closer.join()
            hub.close()
            await hub.wait_closed()
            assert hub.disposed
            assert is_unavailable(recorder.frames[-1])
        hub.close()
        await hub.wait_closed()

    run(main)


def test_a_cancellation_during_the_exit_is_the_callers_own() -> None:
    """H1: a task cancelled while it leaves the host (asyncio.run's Ctrl-C comes that way under
    uvicorn) gets its own cancellation back, message and all, once trio has ended: not a new
    one raised by the host."""

    async def main() -> None:
        leaving = asyncio.Event()

        async def host() -> None:
            async with open_hub() as hub:
                hub.register_publisher()
                leaving.set()

        task = asyncio.create_task(host())
        await leaving.wait()
        task.cancel("Ctrl-C")
        with pytest.raises(asyncio.CancelledError) as cancelled:
            await task
        assert cancelled.value.args == ("Ctrl-C",)
        assert not trio.lowlevel.in_trio_run()

    run(main)
