"""``FrameStream.receive_all()``: a backlog taken as one unit keeps every guarantee of O9."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from tests.support.builders import describe, fold, root
from workflow_hub import open_hub
from workflow_hub.metrics import LAG_SAMPLE_EVERY, HubMetrics


async def test_receive_all_takes_the_whole_backlog_in_order() -> None:
    """O9: the attach snapshot first, then everything pending, oldest first, in one call."""
    async with open_hub() as hub, hub.subscribe() as stream:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        publisher.publish_changed(root("a"))
        publisher.publish_removed("a")
        first = await stream.receive_all()
        assert describe(first) == [
            ("snapshot", 0),  # attached: the first epoch, unavailable
            ("snapshot", 0),  # the publisher's new epoch, unavailable (P1)
            ("snapshot", 1),
            ("changed", 2),
            ("removed", 3),
        ]
        assert stream.lease.pending == 0


async def test_receive_all_waits_for_a_frame_and_ends_with_the_hub() -> None:
    """O9/L2: with nothing pending it waits; once the hub is disposed it raises EndOfChannel."""
    batches: list[int] = []
    async with open_hub() as hub, hub.subscribe() as stream:
        await stream.receive_all()  # the attach snapshot

        async def consume() -> None:
            while True:
                try:
                    batches.append(len(await stream.receive_all()))
                except trio.EndOfChannel:
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            assert batches == []
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            publisher.publish_changed(root("a"))
            await trio.testing.wait_all_tasks_blocked()
            assert batches == [3]  # the new epoch's unavailable snapshot, the snapshot, a change
            hub.dispose()
    with pytest.raises(trio.EndOfChannel):
        await stream.receive_all()


async def test_receive_all_after_an_overflow_starts_with_the_fresh_snapshot() -> None:
    """O4/O9: a backlog past the bound is one snapshot, and the fold equals the hub."""
    async with open_hub(queue_limit=8) as hub, hub.subscribe() as stream:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        await stream.receive_all()
        for index in range(20):
            publisher.publish_changed(root(str(index)))
        batch = await stream.receive_all()
        assert batch[0].kind == "snapshot"
        assert len(batch) <= 8
        assert fold(batch) == {r.root_run_id: r for r in hub.snapshot_frame().roots or ()}


async def test_receive_all_checkpoints_once_per_batch() -> None:
    """O9: a consumer whose backlog keeps refilling is still cancellable."""
    async with open_hub() as hub, hub.subscribe() as stream:
        publisher = hub.register_publisher()
        batches = 0
        with trio.CancelScope() as scope:
            scope.cancel()
            while batches < 1_000:
                await stream.receive_all()
                batches += 1
                publisher.publish_removed("x")  # the backlog never empties
        assert scope.cancelled_caught
        assert batches <= 1


async def test_receive_all_samples_the_lag_as_often_as_single_receives() -> None:
    """Metrics: one lag sample per LAG_SAMPLE_EVERY frames delivered, batched or not."""
    registry = CollectorRegistry()
    metrics = HubMetrics(registry=registry)
    frames = 4 * LAG_SAMPLE_EVERY
    async with open_hub(metrics=metrics) as hub, hub.subscribe() as stream:
        publisher = hub.register_publisher()
        await stream.receive_all()  # the attach snapshot: the first delivery is sampled
        for _ in range(frames):
            publisher.publish_removed("x")
        taken = 0
        while taken < frames:
            taken += len(await stream.receive_all())
    count = registry.get_sample_value("workflow_hub_delivery_lag_seconds_count")
    assert count == 1 + frames // LAG_SAMPLE_EVERY
