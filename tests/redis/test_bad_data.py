"""Data a mirror did not write, and streams emptied under a follower, against a real redis-server.

SPEC N2, N4: foreign entries never crash the mirror (nor the scheduler whose nursery it runs in)
or a follower; an emptied or deleted stream is noticed, never shown as the current state;
undecodable names, foreign registry members and keys of the wrong type make that one source
unknown, with a log line and a count, and never take down a follower or a fleet.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import pytest
import trio
from prometheus_client import CollectorRegistry

from tests.support.builders import root
from tests.support.redis_server import RedisServer, eventually
from workflow_hub import Availability, WorkflowActivityHub, open_hub
from workflow_hub.redis import (
    FleetStream,
    FleetView,
    FollowerMetrics,
    Mirror,
    SourceStream,
    follow_fleet,
    follow_source,
    mirror_hub,
)
from workflow_hub.reporting import ActivityView, AggregateState


@pytest.fixture
def prefix() -> str:
    return f"bad-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def client(url: str) -> AsyncIterator[coredis.Redis[bytes]]:
    async with coredis.Redis.from_url(url) as redis:
        yield redis


def folded(view: ActivityView, hub: WorkflowActivityHub) -> bool:
    return view.cursor == hub.cursor and view.known and view.roots == hub.snapshot_frame().roots


async def run_hub(*, task_status: trio.TaskStatus[WorkflowActivityHub]) -> None:
    async with open_hub() as hub:
        task_status.started(hub)
        await trio.sleep_forever()


async def start_mirror(
    nursery: trio.Nursery,
    hub: WorkflowActivityHub,
    redis: coredis.Redis[bytes],
    source: str,
    prefix: str,
    **options: object,
) -> Mirror:
    mirror: Mirror = await nursery.start(
        functools.partial(
            mirror_hub, hub, redis, source=source, prefix=prefix, refresh_interval=0.05, **options
        )
    )
    await mirror.wait_claimed()
    return mirror


async def fold_source(
    redis: coredis.Redis[bytes],
    source: str,
    prefix: str,
    view: ActivityView,
    *,
    task_status: trio.TaskStatus[SourceStream] = trio.TASK_STATUS_IGNORED,
) -> None:
    async with follow_source(redis, source=source, prefix=prefix, block=0.05) as stream:
        task_status.started(stream)
        async for frame in stream:
            view.apply(frame)


async def fold_fleet(
    redis: coredis.Redis[bytes],
    prefix: str,
    fleet_view: FleetView,
    *,
    task_status: trio.TaskStatus[FleetStream] = trio.TASK_STATUS_IGNORED,
) -> None:
    async with follow_fleet(
        redis, prefix=prefix, stale_after=0.5, poll_interval=0.05, block=0.05
    ) as fleet:
        task_status.started(fleet)
        async for source, frame in fleet:
            fleet_view.apply(source, frame)


async def test_a_foreign_entry_at_the_head_of_the_stream_never_stops_the_mirror(
    redis_server: RedisServer, prefix: str
) -> None:
    """Item 7: ``XADD P:s:frames * note <5 KB>`` trimmed to the head of the stream: every
    append still succeeds (the checkpoint check reads entries by field name), the scheduler's
    nursery never sees an error, and followers skip the entry and fold the hub."""
    view = ActivityView()
    key = f"{prefix}:odd:frames"
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery, client(redis_server.url) as redis:
            hub = await nursery.start(run_hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            mirror = await start_mirror(nursery, hub, redis, "odd", prefix)
            foreign = await redis.xadd(key, {"note": "x" * 5_000})
            await redis.xtrim(key, threshold=foreign, trim_strategy="minid")
            first = await redis.xrange(key, count=1)
            assert first[0].identifier == foreign  # the foreign entry is the stream's head
            for index in range(50):
                publisher.publish_changed(root(f"r{index}"))
                await trio.sleep(0.002)
            await nursery.start(fold_source, redis, "odd", prefix, view)
            await eventually(lambda: folded(view, hub))
            statistics = mirror.statistics()
            assert statistics.server_errors == 0
            assert statistics.last_seq >= 51
            assert not mirror.fenced
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("how", ["xtrim-maxlen-0", "del"])
async def test_an_emptied_or_deleted_stream_is_noticed_by_followers(
    redis_server: RedisServer, prefix: str, how: str
) -> None:
    """Item 8: the stream of an idle source is emptied (``XTRIM MAXLEN 0``) or deleted while
    the checkpoint is far behind the owner. A follower started afterwards never settles on the
    checkpoint's old state: it sees the owner ahead of everything it can read, the mirror
    notices at its next refresh and writes a fresh checkpoint, and the follower folds the hub.
    With the mirror gone, the source is unknown (unavailable), never its old state as ready."""
    key = f"{prefix}:idle:frames"
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery, client(redis_server.url) as redis:
            hub = await nursery.start(run_hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [])
            mirror_scope = trio.CancelScope()

            async def mirror_until_cancelled(*, task_status: trio.TaskStatus[Mirror]) -> None:
                with mirror_scope:
                    async with trio.open_nursery() as inner:
                        task_status.started(await start_mirror(inner, hub, redis, "idle", prefix))

            mirror = await nursery.start(mirror_until_cancelled)
            for index in range(300):
                publisher.publish_changed(root(f"r{index % 20}"))
                if index % 10 == 0:
                    await trio.sleep(0.001)
            await eventually(lambda: mirror.statistics().last_seq >= 301)
            checkpoint = await redis.hgetall(f"{prefix}:idle:checkpoint")
            assert int(checkpoint[b"seq"]) < 100  # the checkpoint is far behind the owner
            if how == "del":
                await redis.delete([key])
            else:
                await redis.xtrim(key, threshold=0, trim_strategy="maxlen")
            view = ActivityView()
            await nursery.start(fold_source, redis, "idle", prefix, view)
            await eventually(lambda: folded(view, hub))
            # The mirror goes away; the stream is emptied again under a new follower.
            mirror_scope.cancel()
            publisher.publish_changed(root("late"))  # never mirrored
            await redis.delete([key])
            await redis.hset(f"{prefix}:idle:owner", {"seq": "999"})
            late = ActivityView()
            await nursery.start(fold_source, redis, "idle", prefix, late)
            await eventually(lambda: late.availability is Availability.UNAVAILABLE)
            assert not late.known
            nursery.cancel_scope.cancel()


async def test_undecodable_names_and_members_make_only_that_source_unknown(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 9: a field name that is not UTF-8 in one source's stream and a member of
    ``P:sources`` that is not UTF-8. The source follower and the fleet follower keep going (the
    entry is skipped and counted, the member skipped and counted, each with a log line) and
    every real source still folds to its hub."""
    fleet_view = FleetView()
    view = ActivityView()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery, client(redis_server.url) as redis:
            hubs = {}
            publishers = {}
            for source in ("s1", "s2"):
                hub = hubs[source] = await nursery.start(run_hub)
                publishers[source] = hub.register_publisher()
                publishers[source].publish_snapshot(Availability.READY, [root("a")])
                await start_mirror(nursery, hub, redis, source, prefix)
            stream: SourceStream = await nursery.start(fold_source, redis, "s1", prefix, view)
            fleet: FleetStream = await nursery.start(fold_fleet, redis, prefix, fleet_view)
            await redis.xadd(f"{prefix}:s1:frames", {b"\xff\xfename": b"\xfe"})
            await redis.zadd(f"{prefix}:sources", {b"\xff\xfe": time.time() * 1000})
            for source, publisher in publishers.items():
                publisher.publish_changed(root(f"after-{source}"))
            await eventually(lambda: folded(view, hubs["s1"]))
            await eventually(
                lambda: all(
                    source in fleet_view.views and folded(fleet_view.views[source], hub)
                    for source, hub in hubs.items()
                )
            )
            await eventually(lambda: fleet.bad_members == 1)
            assert stream.statistics().foreign_entries == 1
            assert set(fleet_view.views) == {"s1", "s2"}
            messages = [record.getMessage() for record in caplog.records]
            assert any("not written by a mirror" in message for message in messages)
            assert any("not a source name" in message for message in messages)
            nursery.cancel_scope.cancel()


async def test_a_key_of_the_wrong_type_makes_only_that_source_unknown(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 9: the frames key of one source replaced by a string. Its mirror logs and counts
    the refusal and keeps the scheduler running; its follower and the fleet show it unknown;
    the other source of the fleet is unaffected. When the key is removed, everything recovers."""
    caplog.set_level(logging.INFO, logger="workflow_hub.redis")
    fleet_view = FleetView()
    view = ActivityView()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, client(redis_server.url) as redis:
            hubs = {}
            mirrors = {}
            publishers = {}
            for source in ("good", "bad"):
                hub = hubs[source] = await nursery.start(run_hub)
                publishers[source] = hub.register_publisher()
                publishers[source].publish_snapshot(Availability.READY, [root("a")])
                mirrors[source] = await start_mirror(nursery, hub, redis, source, prefix)
            stream: SourceStream = await nursery.start(fold_source, redis, "bad", prefix, view)
            fleet: FleetStream = await nursery.start(fold_fleet, redis, prefix, fleet_view)
            registry = CollectorRegistry()
            FollowerMetrics(registry).bind(fleet)
            await eventually(lambda: folded(view, hubs["bad"]))
            await redis.delete([f"{prefix}:bad:frames"])
            await redis.set(f"{prefix}:bad:frames", "not a stream")
            publisher = publishers["bad"]
            publisher.publish_changed(root("b"))
            publishers["good"].publish_changed(root("g"))
            await eventually(lambda: mirrors["bad"].statistics().server_errors > 0)
            await eventually(lambda: view.availability is Availability.UNAVAILABLE)
            await eventually(
                lambda: (
                    "bad" in fleet_view.views
                    and fleet_view.statuses()["bad"].state is AggregateState.UNKNOWN
                )
            )
            await eventually(lambda: folded(fleet_view.views["good"], hubs["good"]))
            assert stream.statistics().errors > 0
            assert fleet_view.aggregate().state is not AggregateState.IDLE
            errors = registry.get_sample_value(
                "workflow_hub_follower_errors_total", {"source": "bad"}
            )
            assert errors is not None
            assert errors > 0
            assert (
                registry.get_sample_value("workflow_hub_follower_errors_total", {"source": "good"})
                == 0
            )
            messages = [record.getMessage() for record in caplog.records]
            assert any("refused the append" in message for message in messages)
            assert any("cannot read the source" in message for message in messages)
            # Whoever wrote the string removes it: the mirror appends again, all recover.
            await redis.delete([f"{prefix}:bad:frames"])
            publisher.publish_changed(root("c"))
            await eventually(lambda: folded(view, hubs["bad"]))
            await eventually(lambda: folded(fleet_view.views["bad"], hubs["bad"]))
            nursery.cancel_scope.cancel()
