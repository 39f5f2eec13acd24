"""``workflow_hub.asyncio``: the hub from asyncio code, with the hub's guarantees (SPEC H1).

Every test is a real asyncio program (``asyncio.run``; no trio test runner around it): the
publisher and the observers are asyncio code, and trio runs as a guest on asyncio's loop.
"""

from __future__ import annotations

import asyncio

import pytest
import trio

from tests.support.builders import counting_epochs, root
from workflow_hub import (
    ChangedFrame,
    ContractError,
    DiagnosticKind,
    Frame,
    SnapshotFrame,
    ThreadPublisher,
)
from workflow_hub.asyncio import open_hub

from .support import Recorder, continuous, is_unavailable, run


def test_callbacks_get_the_snapshot_first_then_every_frame_in_order() -> None:
    """H1, O1, O2: an asyncio callback sees the snapshot, then FIFO, one call at a time."""

    async def main() -> None:
        async with open_hub(epoch_factory=counting_epochs()) as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            recorder = Recorder()
            running = 0
            overlapped = False

            async def callback(frame: Frame) -> None:
                nonlocal running, overlapped
                running += 1
                overlapped = overlapped or running > 1
                await asyncio.sleep(0)
                running -= 1
                await recorder(frame)

            hub.observe(callback)
            for n in range(200):
                publisher.publish_changed(root(f"root-{n % 3}", active=n))
            frames = await recorder.wait_count(201)
            assert isinstance(frames[0], SnapshotFrame)
            assert frames[0].cursor.revision == 1
            assert all(isinstance(frame, ChangedFrame) for frame in frames[1:])
            assert continuous(frames)
            assert not overlapped

    run(main)


def test_a_stream_iterated_by_asyncio_starts_with_the_snapshot_and_keeps_order() -> None:
    """H1, O9: ``async with hub.subscribe() as frames: async for frame in frames``."""

    async def main() -> None:
        # A queue that holds everything: this test is about order, not the bound.
        async with open_hub(queue_limit=1024) as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [root("a")])
            received: list[Frame] = []
            async with hub.subscribe() as frames:
                assert not frames.lease.resumed

                async def publish() -> None:
                    for n in range(500):
                        publisher.publish_changed(root("a", active=n))
                        if n % 50 == 0:
                            await asyncio.sleep(0)

                producer = asyncio.create_task(publish())
                async for frame in frames:
                    received.append(frame)
                    if len(received) == 501:
                        break
                await producer
            assert isinstance(received[0], SnapshotFrame)
            assert received[0].roots == (root("a"),)
            assert continuous(received)
            assert received[-1].cursor == hub.cursor

    run(main)


def test_an_asyncio_subscriber_that_falls_behind_gets_a_fresh_snapshot() -> None:
    """H1, O4: past ``queue_limit`` pending frames the queue becomes one snapshot, recorded."""

    async def main() -> None:
        async with open_hub(queue_limit=16) as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            async with hub.subscribe() as frames:
                first = await frames.receive()
                assert isinstance(first, SnapshotFrame)
                for n in range(40):  # never yields: nothing is taken meanwhile
                    publisher.publish_changed(root(active=n))
                assert frames.lease.pending <= 16
                rest = await frames.receive_all()
            assert isinstance(rest[0], SnapshotFrame)
            assert rest[0].roots is not None
            assert continuous(rest)
            assert rest[-1].cursor == hub.cursor
            kinds = [diagnostic.kind for diagnostic in hub.diagnostics()]
            assert DiagnosticKind.OBSERVER_OVERFLOW in kinds

    run(main)


def test_an_asyncio_stream_takes_its_backlog_without_waiting() -> None:
    """H1, O9: receive_all_nowait gives what receive_all would (snapshot first, then FIFO);
    nothing pending is WouldBlock, an ended subscription EndOfChannel."""

    async def main() -> None:
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            async with hub.subscribe() as frames:
                for n in range(3):
                    publisher.publish_changed(root(active=n))
                taken = frames.receive_all_nowait()
                with pytest.raises(trio.WouldBlock):
                    frames.receive_all_nowait()
                frames.lease.dispose()
                with pytest.raises(trio.EndOfChannel):
                    frames.receive_all_nowait()
            assert isinstance(taken[0], SnapshotFrame)
            assert continuous(taken)
            assert taken[-1].cursor == hub.cursor

    run(main)


def test_a_slow_asyncio_callback_overflows_without_slowing_the_publisher() -> None:
    """H1, O2, O4, P9: a blocked asyncio callback holds one frame; the rest overflow."""

    async def main() -> None:
        async with open_hub(queue_limit=8) as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            gate = asyncio.Event()
            started = asyncio.Event()
            second = asyncio.Event()
            seen: list[Frame] = []

            async def slow(frame: Frame) -> None:
                seen.append(frame)
                started.set()
                if len(seen) == 2:
                    second.set()
                await gate.wait()

            lease = hub.observe(slow)
            await started.wait()  # the snapshot is in flight, and the callback blocks in it
            for n in range(9):  # the ninth arrives with eight pending: they become one snapshot
                publisher.publish_changed(root(active=n))
            assert lease.pending == 1
            recorder = Recorder()
            hub.observe(recorder)
            assert len(await recorder.wait_count(1)) == 1  # another observer is not delayed
            gate.set()
            await second.wait()
            assert isinstance(seen[1], SnapshotFrame)
            assert seen[1].cursor == hub.cursor

    run(main)


def test_a_new_publisher_fences_the_old_one() -> None:
    """H1, P1, P2: the old publisher changes nothing; observers see the new unavailable epoch."""

    async def main() -> None:
        async with open_hub(epoch_factory=counting_epochs()) as hub:
            old = hub.register_publisher()
            old.publish_snapshot("ready", [root("a")])
            recorder = Recorder()
            hub.observe(recorder)
            new = hub.register_publisher()
            assert old.publish_changed(root("b")) is None
            assert new.publish_snapshot("ready", [root("c")]) is not None
            frames = await recorder.wait_count(3)
            assert [frame.cursor.epoch for frame in frames] == ["epoch-1", "epoch-2", "epoch-2"]
            assert is_unavailable(frames[1])
            assert DiagnosticKind.PUBLISHER_FENCED in [d.kind for d in hub.diagnostics()]

    run(main)


def test_a_subscriber_resumes_from_a_cursor() -> None:
    """H1, R2: ``subscribe(since=cursor)`` replays the frames missed, no snapshot first."""

    async def main() -> None:
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            seen = publisher.publish_changed(root(active=1))
            publisher.publish_changed(root(active=2))
            publisher.publish_changed(root(active=3))
            async with hub.subscribe(since=seen) as frames:
                assert frames.lease.resumed
                replayed = await frames.receive_all()
            assert [frame.cursor.revision for frame in replayed] == [3, 4]

    run(main)


def test_a_failing_asyncio_callback_is_recorded_and_delivery_goes_on() -> None:
    """H1, O5: the exception is recorded, never raised to the publisher; frames keep coming."""

    async def main() -> None:
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            calls: list[Frame] = []
            third = asyncio.Event()

            async def failing(frame: Frame) -> None:
                calls.append(frame)
                await asyncio.sleep(0)
                if len(calls) == 3:
                    third.set()
                raise ValueError("a broken reporter")

            hub.observe(failing)
            recorder = Recorder()
            hub.observe(recorder)
            publisher.publish_snapshot("ready", [])
            publisher.publish_changed(root())
            await recorder.wait_count(3)
            await third.wait()
            failures = [d for d in hub.diagnostics() if d.kind == "ObserverDeliveryFailed"]
            assert len(failures) >= 2

    run(main)


def test_plain_function_callbacks_run_too() -> None:
    """H1, O2: a synchronous callback is called as it is, in order."""

    async def main() -> None:
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            seen: list[Frame] = []
            done = asyncio.Event()

            def callback(frame: Frame) -> None:
                seen.append(frame)
                if len(seen) == 11:
                    done.set()

            hub.observe(callback)
            for n in range(10):
                publisher.publish_changed(root(active=n))
            await done.wait()
            assert continuous(seen)

    run(main)


def test_bad_options_raise_before_anything_starts() -> None:
    """C1: a bad hub option is a ContractError naming it, raised by open_hub() itself."""
    with pytest.raises(ContractError) as queue:
        open_hub(queue_limit=0)
    assert queue.value.path == "queue_limit"
    with pytest.raises(ContractError) as grace:
        open_hub(shutdown_grace=-1)
    assert grace.value.path == "shutdown_grace"


def test_bad_arguments_raise_and_change_nothing() -> None:
    """C1: a bad callback or tracker option raises ContractError; no epoch is started."""

    async def main() -> None:
        async with open_hub() as hub:
            before = hub.statistics()
            with pytest.raises(ContractError) as callback:
                hub.observe("not a callable")  # type: ignore[arg-type]
            assert callback.value.path == "callback"
            with pytest.raises(ContractError) as owner:
                hub.tracker(owner_session_id=42)  # type: ignore[arg-type]
            assert owner.value.path == "owner_session_id"
            after = hub.statistics()
            assert (after.epoch, after.epochs_started) == (before.epoch, before.epochs_started)

    run(main)


def test_one_hub_per_thread() -> None:
    """H1: trio allows one run per thread; a second asyncio host says so."""

    async def main() -> None:
        async with open_hub():
            with pytest.raises(RuntimeError, match="one hub per thread"):
                async with open_hub():
                    pass

    run(main)


def test_hub_options_reach_the_hub_metrics_included() -> None:
    """H1, L1: ``open_hub(**options)`` takes workflow_hub.open_hub's options."""
    from prometheus_client import CollectorRegistry

    from workflow_hub.metrics import HubMetrics

    registry = CollectorRegistry()

    async def main() -> None:
        async with open_hub(metrics=HubMetrics(registry), history_limit=0) as hub:
            hub.register_publisher().publish_snapshot("ready", [root()])
            stats = hub.statistics()
            assert stats.history_oldest_revision is None  # history off
            assert stats.running

    run(main)
    # The hosted hub reported to the metrics: its first epoch and the publisher's.
    assert registry.get_sample_value("workflow_hub_epochs_started_total") == 2


def test_after_the_host_closed_subscriptions_are_inert() -> None:
    """O7, H1: a hub handle used after its host closed hands out inert leases and streams."""

    async def main() -> None:
        async with open_hub() as hub:
            pass
        lease = hub.observe(Recorder())
        assert lease.disposed
        async with hub.subscribe() as frames:
            assert [frame async for frame in frames] == []

    run(main)


def test_worker_threads_of_an_asyncio_scheduler_publish_through_a_thread_publisher() -> None:
    """H1, P9: ``ThreadPublisher`` made in the loop's thread hands worker threads' calls over."""

    async def main() -> None:
        async with open_hub() as hub:
            portal = ThreadPublisher(hub.register_publisher())
            async with hub.subscribe() as frames:
                assert is_unavailable(await frames.receive())

                def worker() -> None:
                    portal.publish_snapshot("ready", [])
                    portal.publish_changed(root("from-a-thread"))

                await asyncio.to_thread(worker)
                ready, changed = await frames.receive(), await frames.receive()
            assert isinstance(ready, SnapshotFrame)
            assert isinstance(changed, ChangedFrame)
            assert changed.root.root_run_id == "from-a-thread"

    run(main)
