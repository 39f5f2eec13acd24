"""Random operation sequences on a real hub, checked against the reference model at every settle.

SPEC §3 as a whole (P1-P9, O1-O9, L2, L3) and the hub's hook queue (K1, K2): besides exact
agreement with :class:`workflow_hub.testing.model.HubModel`, each settle checks the invariants
the issue names: (1) folding an observer's frames reproduces the snapshot, (2) the first frame,
and the first of every new epoch, is a snapshot, (3) revisions strictly increase within an epoch,
(4) nothing from a fenced publisher reaches anyone, (5) pending frames never exceed the queue
limit, (6) diagnostics never exceed their limit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from workflow_hub import (
    Availability,
    Cursor,
    Frame,
    FrameStream,
    HeartbeatEvent,
    LifecycleInput,
    ObserverLease,
    RootActivity,
    RunTarget,
    SnapshotFrame,
    StageTarget,
    WorkflowActivityHub,
    WorkflowActivityPublisher,
    WorkflowEvent,
)
from workflow_hub.testing.model import HubModel

from .builders import fold

ROOT_IDS = ["a", "b", "c", "", " root "]

roots = st.builds(
    RootActivity,
    root_run_id=st.sampled_from(ROOT_IDS),
    owner_session_id=st.just("s"),
    state=st.sampled_from(["working", "idle", "blocked"]),
    reason=st.sampled_from(["executing", "paused", "quiescent", "awaiting_input"]),
    active_execution_count=st.integers(0, 3),
    actionable_block_count=st.integers(0, 2),
    needs_attention=st.booleans(),
)

lifecycle_inputs = st.builds(
    LifecycleInput,
    event_id=st.sampled_from(["e1", "e2", ""]),
    run_id=st.just("r"),
    root_run_id=st.sampled_from(ROOT_IDS),
    owner_session_id=st.just("s"),
    occurred_at=st.integers(0, 10),
    observed_at=st.floats(0, 10),
    delivery=st.sampled_from(["live", "replay"]),
    target=st.one_of(
        st.builds(
            StageTarget,
            run_id=st.just("r"),
            stage_id=st.just("r:s"),
            stage_name=st.just("s"),
            status=st.sampled_from(["completed", "failed", "running"]),
        ),
        st.builds(RunTarget, run_id=st.just("r"), status=st.sampled_from(["running", "killed"])),
    ),
)

heartbeats = st.builds(
    HeartbeatEvent,
    run_id=st.just("r"),
    root_run_id=st.just("a"),
    owner_session_id=st.just("s"),
    scheduled_at=st.integers(0, 10**6),
    interval_minutes=st.just(1),
)

pick = st.integers(0, 7)
operations = st.one_of(
    st.tuples(st.just("register")),
    st.tuples(
        st.just("snapshot"),
        pick,
        st.sampled_from(list(Availability)),
        st.lists(roots, max_size=4),
    ),
    st.tuples(st.just("changed"), pick, roots),
    st.tuples(st.just("changed"), pick, roots),
    st.tuples(st.just("removed"), pick, st.sampled_from(ROOT_IDS)),
    st.tuples(st.just("lifecycle"), pick, lifecycle_inputs),
    st.tuples(st.just("heartbeat"), pick, heartbeats),
    st.tuples(st.just("dispose_publisher"), pick),
    st.tuples(st.just("observe"), st.sampled_from(["callback", "stream", "failing"])),
    st.tuples(st.just("stall"), pick),
    st.tuples(st.just("release"), pick),
    st.tuples(st.just("dispose_lease"), pick),
    st.tuples(st.just("bind")),
    st.tuples(st.just("settle")),
    st.tuples(st.just("dispose_hub")),
)


class Consumer:
    """Processes frames like the model's consumer: records on start, may stall, may fail."""

    def __init__(self, *, failing: bool = False) -> None:
        self.received: list[Frame] = []
        self.failing = failing
        self.gate: trio.Event | None = None

    def stall(self) -> None:
        if self.gate is None:
            self.gate = trio.Event()

    def release(self) -> None:
        if self.gate is not None:
            self.gate.set()
            self.gate = None

    async def __call__(self, frame: Frame) -> None:
        self.received.append(frame)
        if self.failing:
            raise RuntimeError("consumer failure")
        if self.gate is not None:
            await self.gate.wait()


async def consume_stream(stream: FrameStream, consumer: Consumer) -> None:
    async for frame in stream:
        await consumer(frame)


def check_invariants(
    hub: WorkflowActivityHub,
    consumers: list[Consumer],
    leases: list[ObserverLease],
    assigned: set[Cursor],
    queue_limit: int,
    diagnostics_limit: int,
) -> None:
    snapshot = hub.snapshot_frame()
    for consumer, lease in zip(consumers, leases, strict=True):
        frames = consumer.received
        assert lease.pending <= queue_limit  # (5)
        if not frames:
            continue
        assert isinstance(frames[0], SnapshotFrame)  # (2)
        for before, after in itertools.pairwise(frames):
            if after.cursor.epoch != before.cursor.epoch:
                assert isinstance(after, SnapshotFrame)  # (2)
            else:
                assert after.cursor.revision > before.cursor.revision  # (3)
        for frame in frames:
            if not isinstance(frame, SnapshotFrame):
                assert frame.cursor in assigned  # (4)
        settled = lease.pending == 0 and consumer.gate is None and not lease.disposed
        if settled and frames[-1].cursor.epoch == snapshot.cursor.epoch:
            expected = (
                None if snapshot.roots is None else {r.root_run_id: r for r in snapshot.roots}
            )
            assert fold(frames) == expected  # (1)
    assert len(hub.diagnostics()) <= diagnostics_limit  # (6)


def run_sequence(ops: list[tuple[Any, ...]], queue_limit: int, diagnostics_limit: int) -> None:
    epochs = [f"epoch-{index}" for index in range(len(ops) + 2)]
    hub = WorkflowActivityHub(
        queue_limit=queue_limit,
        diagnostics_limit=diagnostics_limit,
        epoch_factory=iter(epochs).__next__,
    )
    model = HubModel(epochs, queue_limit=queue_limit, diagnostics_limit=diagnostics_limit)
    publishers: list[WorkflowActivityPublisher] = []
    consumers: list[Consumer] = []
    leases: list[ObserverLease] = []
    events: list[WorkflowEvent] = []
    assigned: set[Cursor] = set()

    async def dispatch(event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        events.append(event)

    def publish(real: Cursor | None, expected: Cursor | None) -> None:
        assert real == expected
        if real is not None:
            assigned.add(real)

    async def settle() -> None:
        await trio.testing.wait_all_tasks_blocked()
        model.settle()
        assert hub.snapshot_frame() == model.snapshot()
        assert hub.diagnostics() == tuple(model.diagnostics)
        assert events == model.hook_events
        for index, (consumer, lease) in enumerate(zip(consumers, leases, strict=True)):
            assert consumer.received == model.observers[index].received, index
            assert lease.pending == len(model.observers[index].pending), index
        check_invariants(hub, consumers, leases, assigned, queue_limit, diagnostics_limit)

    async def main() -> None:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(hub)
            nursery = await stack.enter_async_context(trio.open_nursery())
            for op in ops:
                name = op[0]
                if name in {"snapshot", "changed", "removed", "lifecycle", "heartbeat"} or (
                    name == "dispose_publisher"
                ):
                    if not publishers:
                        publishers.append(hub.register_publisher())
                        model.register()
                    index = op[1] % len(publishers)
                    publisher = publishers[index]
                if name == "register":
                    publishers.append(hub.register_publisher())
                    model.register()
                elif name == "snapshot":
                    ready = op[2] is Availability.READY
                    publish(
                        publisher.publish_snapshot(op[2], op[3] if ready else None),
                        model.publish_snapshot(index, op[2], op[3] if ready else None),
                    )
                elif name == "changed":
                    publish(publisher.publish_changed(op[2]), model.publish_changed(index, op[2]))
                elif name == "removed":
                    publish(publisher.publish_removed(op[2]), model.publish_removed(index, op[2]))
                elif name == "lifecycle":
                    publish(
                        publisher.publish_lifecycle(op[2]), model.publish_lifecycle(index, op[2])
                    )
                elif name == "heartbeat":
                    publisher.publish_heartbeat(op[2])
                    model.publish_heartbeat(index, op[2])
                elif name == "dispose_publisher":
                    publisher.dispose()
                    model.dispose_publisher(index)
                elif name == "observe":
                    consumer = Consumer(failing=op[1] == "failing")
                    if op[1] == "stream":
                        stream = await stack.enter_async_context(hub.subscribe())
                        nursery.start_soon(consume_stream, stream, consumer)
                        lease = stream.lease
                    else:
                        lease = hub.observe(consumer)
                    consumers.append(consumer)
                    leases.append(lease)
                    model.observe(failing=consumer.failing)
                elif name in {"stall", "release", "dispose_lease"} and consumers:
                    index = op[1] % len(consumers)
                    if name == "stall" and not consumers[index].failing:
                        consumers[index].stall()
                        model.stall(index)
                    elif name == "release":
                        consumers[index].release()
                        model.release(index)
                    elif name == "dispose_lease":
                        leases[index].dispose()
                        model.dispose_observer(index)
                elif name == "bind":
                    hub.bind_dispatcher(dispatch)
                    model.bind()
                elif name == "settle":
                    await settle()
                elif name == "dispose_hub":
                    hub.dispose()
                    model.dispose()
            for index, consumer in enumerate(consumers):
                consumer.release()
                model.release(index)
            await settle()
            nursery.cancel_scope.cancel()

    trio.run(main)


@settings(deadline=None)
@given(ops=st.lists(operations, max_size=40), queue_limit=st.sampled_from([1, 2, 4, 256]))
def test_hub_agrees_with_the_model_and_keeps_its_invariants(
    ops: list[tuple[Any, ...]], queue_limit: int
) -> None:
    """P1-P9, O1-O9, L2, L3, K1, K2: exact agreement with the reference model at every settle."""
    run_sequence(ops, queue_limit=queue_limit, diagnostics_limit=8)


@settings(deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("changed"), st.just(0), roots),
            st.tuples(st.just("observe"), st.sampled_from(["callback", "stream"])),
            st.tuples(st.just("stall"), pick),
            st.tuples(st.just("release"), pick),
            st.tuples(st.just("settle")),
            st.tuples(st.just("register")),
        ),
        max_size=60,
    )
)
def test_overflow_under_stalls_agrees_with_the_model(ops: list[tuple[Any, ...]]) -> None:
    """O4: overflow resnapshots with stalled callback and stream observers and a tiny bound."""
    run_sequence(
        [("snapshot", 0, Availability.READY, []), *ops], queue_limit=3, diagnostics_limit=256
    )
