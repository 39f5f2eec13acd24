"""Observers: snapshot first, FIFO, bounded queues, overflow, isolation, leases (SPEC O1-O9, L1-L2)."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from tests.support.builders import describe, fold, root, stage_lifecycle
from workflow_hub import (
    ChangedFrame,
    Frame,
    FrameStream,
    SnapshotFrame,
    WorkflowActivityHub,
    open_hub,
)


class Recorder:
    """A callback observer that records frames, and can be stalled on demand."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.gate: trio.Event | None = None
        self.active = 0
        self.max_active = 0

    def stall(self) -> None:
        self.gate = trio.Event()

    def release(self) -> None:
        if self.gate is not None:
            self.gate.set()
            self.gate = None

    async def __call__(self, frame: Frame) -> None:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            self.frames.append(frame)
            if self.gate is not None:
                await self.gate.wait()
        finally:
            self.active -= 1


async def test_observe_delivers_asynchronously_snapshot_first(hub: WorkflowActivityHub) -> None:
    """O1/O2: nothing is delivered inside observe(); the first frame is the current snapshot."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a")])
    seen: list[Frame] = []
    hub.observe(seen.append)
    assert seen == []
    await trio.testing.wait_all_tasks_blocked()
    assert seen == [hub.snapshot_frame()]


async def test_capture_is_atomic_with_attaching(hub: WorkflowActivityHub) -> None:
    """O1: frames published after observe() follow the snapshot; none before it is repeated."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a")])
    publisher.publish_changed(root("b"))
    seen: list[Frame] = []
    hub.observe(seen.append)
    publisher.publish_changed(root("c"))
    publisher.publish_removed("a")
    await trio.testing.wait_all_tasks_blocked()
    assert describe(seen) == [("snapshot", 2), ("changed", 3), ("removed", 4)]
    assert fold(seen) == {"b": root("b"), "c": root("c")}


async def test_publish_never_delivers_synchronously(hub: WorkflowActivityHub) -> None:
    """O2: publish_* only enqueue; callbacks run later in the hub's tasks."""
    seen: list[Frame] = []
    hub.observe(seen.append)
    await trio.testing.wait_all_tasks_blocked()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    assert len(seen) == 1
    await trio.testing.wait_all_tasks_blocked()
    assert len(seen) == 3


async def test_one_callback_at_a_time_per_observer(hub: WorkflowActivityHub) -> None:
    """O2: for one observer, a callback finishes before the next starts; order is FIFO."""
    recorder = Recorder()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    recorder.stall()
    hub.observe(recorder)
    for name in "abc":
        publisher.publish_changed(root(name))
    await trio.testing.wait_all_tasks_blocked()
    assert len(recorder.frames) == 1
    for _ in range(3):
        recorder.release()
        recorder.stall()
        await trio.testing.wait_all_tasks_blocked()
    recorder.release()
    await trio.testing.wait_all_tasks_blocked()
    assert recorder.max_active == 1
    assert describe(recorder.frames) == [
        ("snapshot", 1),
        ("changed", 2),
        ("changed", 3),
        ("changed", 4),
    ]


async def test_sync_and_async_callbacks_both_work(hub: WorkflowActivityHub) -> None:
    """O2: a callback may be sync or async (awaited)."""
    sync_seen: list[Frame] = []
    async_seen: list[Frame] = []

    async def async_callback(frame: Frame) -> None:
        await trio.lowlevel.checkpoint()
        async_seen.append(frame)

    hub.observe(sync_seen.append)
    hub.observe(async_callback)
    hub.register_publisher().publish_snapshot("ready", [root()])
    await trio.testing.wait_all_tasks_blocked()
    assert sync_seen == async_seen
    assert len(sync_seen) == 3


async def test_blocked_observer_delays_nobody(hub: WorkflowActivityHub) -> None:
    """O2: one blocked callback delays neither the publisher nor another observer."""
    blocked = Recorder()
    blocked.stall()
    free: list[Frame] = []
    hub.observe(blocked)
    hub.observe(free.append)
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    for index in range(50):
        publisher.publish_changed(root(str(index)))
    await trio.testing.wait_all_tasks_blocked()
    assert len(blocked.frames) == 1
    assert len(free) == 1 + 1 + 1 + 50
    assert fold(free) == {r.root_run_id: r for r in hub.snapshot_frame().roots or ()}


async def test_non_ready_attach_records_and_delivers_non_ready(hub: WorkflowActivityHub) -> None:
    """O3: attaching to a recovering source records SourceRecovering; the snapshot has no roots."""
    hub.register_publisher().publish_snapshot("recovering")
    seen: list[Frame] = []
    hub.observe(seen.append)
    assert hub.diagnostics()[-1].kind == "SourceRecovering"
    await trio.testing.wait_all_tasks_blocked()
    assert isinstance(seen[0], SnapshotFrame)
    assert seen[0].availability == "recovering"
    assert seen[0].roots is None


async def test_attach_to_a_new_hub_reports_unavailable(hub: WorkflowActivityHub) -> None:
    """O3: a hub without a publisher is unavailable, never 'ready with no roots'."""
    seen: list[Frame] = []
    hub.observe(seen.append)
    assert hub.diagnostics()[-1].kind == "SourceUnavailable"
    await trio.testing.wait_all_tasks_blocked()
    assert describe(seen) == [("snapshot", 0)]
    assert seen[0] == hub.snapshot_frame()


async def test_exactly_the_limit_pending_is_fine(hub: WorkflowActivityHub) -> None:
    """O4: 256 pending frames are kept as they are (the frame in flight does not count)."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    recorder = Recorder()
    recorder.stall()
    lease = hub.observe(recorder)
    await trio.testing.wait_all_tasks_blocked()  # the snapshot is in flight
    for index in range(256):
        publisher.publish_changed(root(str(index)))
    assert lease.pending == 256
    assert "ObserverOverflow" not in [d.kind for d in hub.diagnostics()]
    recorder.release()
    await trio.testing.wait_all_tasks_blocked()
    assert len(recorder.frames) == 257


async def test_overflow_clears_and_enqueues_one_current_snapshot(hub: WorkflowActivityHub) -> None:
    """O4: the 257th pending frame clears the queue and enqueues a snapshot that includes it."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    recorder = Recorder()
    recorder.stall()
    lease = hub.observe(recorder)
    await trio.testing.wait_all_tasks_blocked()
    for index in range(257):
        publisher.publish_changed(root(str(index)))
    assert lease.pending == 1
    overflow = hub.diagnostics()[-1]
    assert overflow.kind == "ObserverOverflow"
    assert overflow.cursor == hub.cursor
    recorder.release()
    await trio.testing.wait_all_tasks_blocked()
    assert describe(recorder.frames) == [("snapshot", 1), ("snapshot", 258)]
    last = recorder.frames[-1]
    assert last == hub.snapshot_frame()
    assert isinstance(last, SnapshotFrame)
    assert last.roots is not None
    assert last.roots[-1] == root("256")


async def test_queue_limit_is_configurable() -> None:
    """O4: queue_limit bounds the pending frames."""
    async with open_hub(queue_limit=2) as hub:
        publisher = hub.register_publisher()
        recorder = Recorder()
        recorder.stall()
        lease = hub.observe(recorder)
        await trio.testing.wait_all_tasks_blocked()
        publisher.publish_snapshot("ready", [])
        publisher.publish_changed(root("a"))
        assert lease.pending == 2
        publisher.publish_changed(root("b"))
        assert lease.pending == 1
        assert hub.statistics().deepest_queue == 1


async def test_failing_callback_is_recorded_and_isolated(hub: WorkflowActivityHub) -> None:
    """O5: a raising callback records ObserverDeliveryFailed; it and others keep receiving."""
    calls: list[Frame] = []
    others: list[Frame] = []

    def broken(frame: Frame) -> None:
        calls.append(frame)
        raise RuntimeError("boom")

    hub.observe(broken)
    hub.observe(others.append)
    publisher = hub.register_publisher()
    assert publisher.publish_snapshot("ready", [root("a")]) is not None
    await trio.testing.wait_all_tasks_blocked()
    assert len(calls) == len(others) == 3
    failures = [d for d in hub.diagnostics() if d.kind == "ObserverDeliveryFailed"]
    assert len(failures) == 3


@pytest.mark.parametrize("with_metrics", [False, True])
async def test_a_callback_failing_on_every_frame_logs_one_traceback_per_kind(
    with_metrics: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """O5: 2 000 failures of one observer are 2 000 diagnostics but a handful of log records:
    the first failure of each kind with its traceback, then counts (1, 10, 100, 1 000 repeats
    and the total when the observer ends). Issue 37 saw 2 210 records, each a traceback."""
    from prometheus_client import CollectorRegistry

    from workflow_hub.metrics import HubMetrics

    caplog.set_level(logging.WARNING, logger="workflow_hub")
    failed = 0

    def broken(frame: Frame) -> None:
        nonlocal failed
        failed += 1
        raise (ValueError if failed == 500 else RuntimeError)(f"boom {failed}")

    metrics = HubMetrics(CollectorRegistry()) if with_metrics else None
    async with open_hub(diagnostics_limit=4096, metrics=metrics) as hub:
        lease = hub.observe(broken)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        for _ in range(1999):
            publisher.publish_changed(root("a"))
            await trio.testing.wait_all_tasks_blocked()
        assert failed > 2000  # the attach snapshot, the publisher's, the changes
        lease.dispose()
        await trio.testing.wait_all_tasks_blocked()
        kinds = [d for d in hub.diagnostics() if d.kind == "ObserverDeliveryFailed"]
        assert len(kinds) == failed
    records = [r for r in caplog.records if "observer" in r.getMessage()]
    tracebacks = [r for r in records if r.exc_info]
    assert [type(r.exc_info[1]) for r in tracebacks if r.exc_info] == [RuntimeError, ValueError]
    counts = [r.getMessage() for r in records if not r.exc_info]
    assert [line.split(": ")[1].split()[0] for line in counts] == [
        "1",
        "10",
        "100",
        "1000",
        str(failed - 2),
    ]
    assert "keeps failing" in counts[0]
    assert "ended" in counts[-1]


async def test_lease_dispose_is_idempotent_and_drops_pending(hub: WorkflowActivityHub) -> None:
    """O6: dispose records ObserverDisposed once and drops pending frames."""
    recorder = Recorder()
    recorder.stall()
    lease = hub.observe(recorder)
    await trio.testing.wait_all_tasks_blocked()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    lease.dispose()
    lease.dispose()
    assert lease.disposed
    assert lease.pending == 0
    assert [d.kind for d in hub.diagnostics()].count("ObserverDisposed") == 1
    recorder.release()
    await trio.testing.wait_all_tasks_blocked()
    assert len(recorder.frames) == 1
    assert hub.statistics().observers == 0


async def test_dispose_never_cancels_the_running_callback(hub: WorkflowActivityHub) -> None:
    """O6: a callback already running finishes; nothing queued runs after disposal."""
    finished: list[Frame] = []
    gate = trio.Event()

    async def slow(frame: Frame) -> None:
        await gate.wait()
        finished.append(frame)

    lease = hub.observe(slow)
    await trio.testing.wait_all_tasks_blocked()
    hub.register_publisher()
    lease.dispose()
    gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert describe(finished) == [("snapshot", 0)]


async def test_observe_on_disposed_hub_is_inert(hub: WorkflowActivityHub) -> None:
    """O7: observe() on a disposed hub records ObserverDisposed and delivers nothing."""
    hub.dispose()
    seen: list[Frame] = []
    lease = hub.observe(seen.append)
    assert lease.disposed
    assert hub.diagnostics()[-1].kind == "ObserverDisposed"
    await trio.testing.wait_all_tasks_blocked()
    assert seen == []
    lease.dispose()
    assert [d.kind for d in hub.diagnostics()].count("ObserverDisposed") == 1


async def test_frames_are_shared_and_immutable(hub: WorkflowActivityHub) -> None:
    """O8: all observers receive the same frame objects, which cannot be altered."""
    first: list[Frame] = []
    second: list[Frame] = []
    hub.observe(first.append)
    hub.observe(second.append)
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a")])
    publisher.publish_changed(root("b"))
    await trio.testing.wait_all_tasks_blocked()
    assert all(a is b for a, b in zip(first, second, strict=True))
    frame = first[-1]
    assert isinstance(frame, ChangedFrame)
    with pytest.raises(AttributeError):
        frame.root = root("z")  # type: ignore[misc]


async def test_new_publishers_snapshot_is_queued_after_earlier_frames(
    hub: WorkflowActivityHub,
) -> None:
    """P1: the unavailable snapshot of a new publisher follows frames already queued."""
    recorder = Recorder()
    recorder.stall()
    hub.observe(recorder)
    await trio.testing.wait_all_tasks_blocked()
    old = hub.register_publisher()
    old.publish_snapshot("ready", [root("a")])
    old.publish_changed(root("b"))
    hub.register_publisher()
    recorder.release()
    await trio.testing.wait_all_tasks_blocked()
    kinds = [(f.kind, f.cursor.revision, getattr(f, "availability", None)) for f in recorder.frames]
    assert kinds[1:] == [
        ("snapshot", 0, "unavailable"),
        ("snapshot", 1, "ready"),
        ("changed", 2, None),
        ("snapshot", 0, "unavailable"),
    ]
    assert recorder.frames[-1].cursor.epoch != recorder.frames[-2].cursor.epoch


async def test_lifecycle_and_heartbeat_make_no_frames(hub: WorkflowActivityHub) -> None:
    """P6/P7: lifecycle leaves a revision gap and no frame; heartbeat leaves nothing."""
    seen: list[Frame] = []
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    hub.observe(seen.append)
    publisher.publish_lifecycle(stage_lifecycle())
    publisher.publish_changed(root("a"))
    await trio.testing.wait_all_tasks_blocked()
    assert describe(seen) == [("snapshot", 1), ("changed", 3)]


async def test_stream_has_the_same_guarantees(hub: WorkflowActivityHub) -> None:
    """O9: snapshot first, FIFO; the frame being processed is the one last yielded."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a")])
    received: list[Frame] = []
    async with hub.subscribe() as stream:
        publisher.publish_changed(root("b"))
        publisher.publish_removed("a")
        assert stream.lease.pending == 3
        async for frame in stream:
            received.append(frame)
            if len(received) == 1:
                assert stream.lease.pending == 2
            if len(received) == 3:
                break
    assert describe(received) == [("snapshot", 1), ("changed", 2), ("removed", 3)]
    assert hub.statistics().observers == 0


async def test_stream_overflow_resnapshots(hub: WorkflowActivityHub) -> None:
    """O9/O4: a stream that falls behind gets one fresh snapshot instead of the backlog."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    async with hub.subscribe() as stream:
        first = await stream.receive()
        for index in range(300):
            publisher.publish_changed(root(str(index)))
        assert stream.lease.pending == 300 - 256
        frames = [await stream.receive() for _ in range(300 - 256)]
    assert first.kind == "snapshot"
    assert frames[0].kind == "snapshot"
    assert fold([first, *frames]) == {r.root_run_id: r for r in hub.snapshot_frame().roots or ()}


async def test_stream_ends_when_the_hub_is_disposed(hub: WorkflowActivityHub) -> None:
    """O9/L2: iteration ends once the hub (and so the subscription) is disposed."""
    received: list[Frame] = []

    async def consume(stream: FrameStream) -> None:
        async for frame in stream:
            received.append(frame)

    async with hub.subscribe() as stream, trio.open_nursery() as nursery:
        nursery.start_soon(consume, stream)
        await trio.testing.wait_all_tasks_blocked()
        hub.dispose()
    assert describe(received) == [("snapshot", 0)]
    with pytest.raises(trio.EndOfChannel):
        await stream.receive()


async def test_observe_and_subscribe_need_a_running_hub() -> None:
    """L1: observe() and subscribe() on a hub that is not running raise RuntimeError."""
    hub = WorkflowActivityHub()
    with pytest.raises(RuntimeError, match="open_hub"):
        hub.observe(lambda frame: None)
    with pytest.raises(RuntimeError, match="open_hub"):
        async with hub.subscribe():
            pass  # pragma: no cover


async def test_leaving_the_block_disposes_and_keeps_the_last_state() -> None:
    """L1/L2: leaving async with disposes every lease and fences publishers; state stays."""
    async with WorkflowActivityHub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        lease = hub.observe(lambda frame: None)
        last = hub.snapshot_frame()
        assert hub.running
    assert hub.disposed
    assert not hub.running
    assert lease.disposed
    assert not publisher.current
    assert hub.snapshot_frame() == last


async def test_hub_dispose_publishes_no_final_frame(hub: WorkflowActivityHub) -> None:
    """L2: dispose() is idempotent, disposes every lease, and sends nothing more."""
    seen: list[Frame] = []
    leases = [hub.observe(seen.append) for _ in range(2)]
    await trio.testing.wait_all_tasks_blocked()
    hub.dispose()
    hub.dispose()
    await trio.testing.wait_all_tasks_blocked()
    assert len(seen) == 2
    assert all(lease.disposed for lease in leases)
    assert [d.kind for d in hub.diagnostics()].count("ObserverDisposed") == 2


async def test_leaving_the_block_ends_a_callback_still_running() -> None:
    """L1: the hub's tasks end with the block, even a callback that never returns."""

    async def never_returns(frame: Frame) -> None:
        await trio.sleep_forever()

    with trio.fail_after(5):
        async with open_hub() as hub:
            hub.observe(never_returns)
            await trio.testing.wait_all_tasks_blocked()
    assert hub.disposed


async def test_body_exceptions_propagate_unwrapped() -> None:
    """L1: an exception in the body of the block is not wrapped in an ExceptionGroup."""
    with pytest.raises(KeyError):
        async with open_hub():
            raise KeyError("mine")


async def test_a_hub_runs_once() -> None:
    hub = WorkflowActivityHub()
    async with hub:
        pass
    with pytest.raises(RuntimeError, match="only once"):
        async with hub:
            pass  # pragma: no cover


async def test_a_stream_drains_pending_frames_without_a_checkpoint() -> None:
    """O9: a backlog is drained without a scheduler round trip or cancellation point per frame."""
    async with WorkflowActivityHub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        async with hub.subscribe() as stream:
            for index in range(3):
                publisher.publish_changed(root(f"root-{index}"))
            with trio.testing.assert_no_checkpoints():
                frames = [await stream.receive() for _ in range(4)]
    assert describe(frames) == [("snapshot", 1), ("changed", 2), ("changed", 3), ("changed", 4)]


async def test_a_stream_waits_at_a_checkpoint_when_nothing_is_pending(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """O9: a stream with nothing pending parks (and so is cancellable) until a frame arrives.

    The mock clock jumps the second as soon as every task is blocked: no real time passes."""
    async with WorkflowActivityHub() as hub, hub.subscribe() as stream:
        await stream.receive()
        with trio.move_on_after(1) as waited:
            await stream.receive()
        assert waited.cancelled_caught


async def test_a_callback_that_publishes_into_its_hub_does_not_starve_others(
    hub: WorkflowActivityHub,
) -> None:
    """O2: a consumer whose backlog never empties (it publishes as it consumes) still lets every
    other task run: draining yields to the scheduler every so often."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    echoes = 0

    def echo(frame: Frame) -> None:
        nonlocal echoes
        if echoes < 5_000:
            echoes += 1
            publisher.publish_changed(root(str(echoes % 3)))

    others: list[Frame] = []
    hub.observe(echo)
    hub.observe(others.append)
    while echoes == 0:
        await trio.lowlevel.checkpoint()
    # This task ran again while the echo was still far from done.
    assert echoes < 5_000
    await trio.testing.wait_all_tasks_blocked()
    assert echoes == 5_000
    assert fold(others) == {r.root_run_id: r for r in hub.snapshot_frame().roots or ()}


async def test_a_stream_drained_for_long_is_still_a_cancellation_point() -> None:
    """O9: a stream whose backlog keeps refilling is cancellable: it checkpoints now and then."""
    async with open_hub() as hub, hub.subscribe() as stream:
        publisher = hub.register_publisher()
        received = 0
        with trio.CancelScope() as scope:
            scope.cancel()
            async for _ in stream:
                received += 1
                if received == 10_000:  # a stream that never checkpoints would get here
                    break
                publisher.publish_removed("x")  # the backlog never empties
        assert scope.cancelled_caught
        assert received < 1_000


async def test_a_stream_has_one_receiver_at_a_time() -> None:
    """O9: a second task receiving from the same stream is refused, and a cancelled receiver
    does not unregister the one that is waiting."""
    async with open_hub() as hub, hub.subscribe() as stream:
        await stream.receive()  # the attach snapshot
        got: list[Frame] = []

        async def receive_one() -> None:
            got.append(await stream.receive())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive_one)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(trio.BusyResourceError):
                await stream.receive()
            hub.register_publisher()
        assert [frame.kind for frame in got] == ["snapshot"]
