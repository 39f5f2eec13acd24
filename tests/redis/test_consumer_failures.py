"""A consumer never takes the scheduler down, against a real redis-server.

SPEC N1, N4: a mirror, a follower and a fleet's reader run in the nursery of the scheduler or
host that embeds them; whatever fails under them (Redis stopped, the client's connection pool
closed under them, garbage in their keys) is logged once per distinct failure, counted and
retried with a backoff, and never reaches that nursery. The hub keeps publishing meanwhile and
the consumer recovers once the cause is gone.
"""

from __future__ import annotations

import functools
import logging
import uuid

import coredis
import pytest
import trio
from prometheus_client import CollectorRegistry

from tests.redis.test_events import gaps, names, start_scheduler
from tests.support.builders import root
from tests.support.redis_server import RedisServer, eventually
from workflow_hub import Availability, WorkflowActivityHub, open_hub
from workflow_hub.fleet import EventItem
from workflow_hub.redis import (
    EventStream,
    FleetStream,
    FleetView,
    FollowerMetrics,
    Mirror,
    SourceStream,
    follow_events,
    follow_fleet,
    follow_source,
    mirror_hub,
)
from workflow_hub.reporting import ActivityView, AggregateState

UNEXPECTED = "unexpected error"


@pytest.fixture
def prefix() -> str:
    return f"fail-{uuid.uuid4().hex[:8]}"


async def run_hub(*, task_status: trio.TaskStatus[WorkflowActivityHub]) -> None:
    async with open_hub() as hub:
        task_status.started(hub)
        await trio.sleep_forever()


def messages(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [record for record in caplog.records if text in record.getMessage()]


async def test_a_client_closed_under_the_mirror_never_ends_the_scheduler(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """N1: the coredis client's ``async with`` ends while its mirror still runs (what a host
    that opens the client inside the nursery of its mirror does at shutdown, and the race that
    made ``test_undecodable_names_and_members_make_only_that_source_unknown`` fail under load):
    coredis raises ``RuntimeError: Connection pool is not initialized or has exited`` out of the
    append. The scheduler's nursery never sees it; the hub keeps publishing; the mirror logs it
    once with its traceback, counts every retry, and appends again once the client is open."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            hub = await nursery.start(run_hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            redis = coredis.Redis.from_url(redis_server.url)
            async with redis:
                mirror: Mirror = await nursery.start(
                    functools.partial(
                        mirror_hub, hub, redis, source="s", prefix=prefix, refresh_interval=0.05
                    )
                )
                await mirror.wait_claimed()
                await eventually(lambda: mirror.appended_cursor == hub.cursor)
            # The pool has exited under the running mirror.
            publisher.publish_changed(root("b"))
            await eventually(lambda: bool(messages(caplog, UNEXPECTED)))
            await eventually(lambda: mirror.statistics().unexpected_errors >= 3)
            publisher.publish_changed(root("c"))  # the scheduler goes on publishing
            assert mirror.appended_cursor != hub.cursor
            logged = messages(caplog, UNEXPECTED)
            assert len(logged) == 1, "logged once, not once per retry"
            assert logged[0].levelno == logging.ERROR
            assert logged[0].exc_info is not None
            assert "Connection pool" in logged[0].getMessage()
            async with redis:  # the client opened again: the mirror recovers by itself
                await eventually(lambda: mirror.appended_cursor == hub.cursor)
                assert not mirror.fenced
                nursery.cancel_scope.cancel()


async def fold_fleet(
    redis: coredis.Redis[bytes],
    prefix: str,
    fleet_view: FleetView,
    *,
    task_status: trio.TaskStatus[FleetStream] = trio.TASK_STATUS_IGNORED,
) -> None:
    async with follow_fleet(
        redis, prefix=prefix, stale_after=2, poll_interval=0.05, block=0.05, read_timeout=0.5
    ) as fleet:
        task_status.started(fleet)
        async for source, frame in fleet:
            fleet_view.apply(source, frame)


def folded(view: ActivityView | None, hub: WorkflowActivityHub) -> bool:
    return (
        view is not None
        and view.cursor == hub.cursor
        and view.known
        and view.roots == hub.snapshot_frame().roots
    )


def unknown(fleet_view: FleetView, source: str) -> bool:
    status = fleet_view.statuses().get(source)
    return status is not None and status.state is AggregateState.UNKNOWN


async def test_a_fleet_outlives_redis_stopping_while_a_source_waits_to_resync(
    own_redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """N4 (issue 37): one source of the fleet waits for a usable checkpoint (its checkpoint is
    malformed, so it resyncs at every full round) when Redis stops. The resyncs, run at once,
    failed together as an exception group, which the reader's round did not recognise as a lost
    connection: it ended ``follow_fleet`` (``serve --fleet`` and ``watch redis://`` exited with
    "internal error"). Now every source is unknown while Redis is away, the failure is logged
    once and counted, and the fleet folds its sources again once Redis is back."""
    server = own_redis_server
    fleet_view = FleetView()
    with trio.fail_after(60):
        async with coredis.Redis.from_url(server.url) as redis, trio.open_nursery() as nursery:
            hub = await nursery.start(run_hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            mirror: Mirror = await nursery.start(
                functools.partial(
                    mirror_hub, hub, redis, source="s1", prefix=prefix, refresh_interval=0.05
                )
            )
            await mirror.wait_claimed()
            now_ms = (await redis.time()).timestamp() * 1000
            await redis.hset(
                f"{prefix}:ghost:checkpoint", {"id": "1-0", "seq": "1", "frame": "not a frame"}
            )
            await redis.zadd(f"{prefix}:sources", {"ghost": now_ms + 3_600_000})
            fleet: FleetStream = await nursery.start(fold_fleet, redis, prefix, fleet_view)
            await eventually(lambda: folded(fleet_view.views.get("s1"), hub))
            await eventually(lambda: bool(messages(caplog, "malformed checkpoint")))
            await trio.to_thread.run_sync(server.stop)
            publisher.publish_changed(root("while-away"))  # the scheduler goes on
            await eventually(lambda: unknown(fleet_view, "s1"))
            s1 = fleet.streams["s1"]
            await eventually(lambda: s1.statistics().connection_errors >= 10)
            logged = messages(caplog, "fleet follower: Redis unreachable")
            assert 1 <= len(logged) <= 3, "logged once per distinct failure, not per retry"
            await trio.to_thread.run_sync(server.start)
            publisher.publish_changed(root("back"))
            await eventually(lambda: folded(fleet_view.views.get("s1"), hub))
            assert "ghost" not in fleet_view.views  # still nothing to start it from
            assert mirror.statistics().reclaims >= 1
            nursery.cancel_scope.cancel()


async def test_a_client_closed_under_a_follower_or_a_fleet_never_ends_their_reader(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """N4: the coredis client of a source follower and a fleet follower is closed under them
    while they read. Their readers keep going: both show the source unknown after
    ``read_timeout``, count the failure (``unexpected_errors``, also in the metrics) and log it
    once with its traceback; once the client is open again, both fold the hub again."""
    view = ActivityView()
    fleet_view = FleetView()
    registry = CollectorRegistry()
    fleet_registry = CollectorRegistry()
    with trio.fail_after(60):
        async with (
            coredis.Redis.from_url(redis_server.url) as mirrored,
            trio.open_nursery() as nursery,
        ):
            hub = await nursery.start(run_hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            mirror: Mirror = await nursery.start(
                functools.partial(
                    mirror_hub, hub, mirrored, source="s1", prefix=prefix, refresh_interval=0.05
                )
            )
            await mirror.wait_claimed()
            redis = coredis.Redis.from_url(redis_server.url)
            async with redis:
                stream: SourceStream = await nursery.start(fold_source, redis, prefix, view)
                fleet: FleetStream = await nursery.start(fold_fleet, redis, prefix, fleet_view)
                FollowerMetrics(fleet_registry).bind(fleet)
                FollowerMetrics(registry).bind_source(stream)
                await eventually(lambda: folded(view, hub))
                await eventually(lambda: folded(fleet_view.views.get("s1"), hub))
            # The pool has exited under both readers.
            publisher.publish_changed(root("b"))
            await eventually(lambda: view.availability is Availability.UNAVAILABLE)
            await eventually(lambda: unknown(fleet_view, "s1"))
            await eventually(
                lambda: stream.statistics().unexpected_errors >= 3 and fleet.unexpected_errors >= 3
            )
            for who in ("follower of 's1'", "fleet follower"):
                logged = [
                    record
                    for record in messages(caplog, UNEXPECTED)
                    if record.getMessage().startswith(who)
                ]
                assert len(logged) == 1, (who, "logged once, not once per retry")
                assert logged[0].exc_info is not None
            unexpected = registry.get_sample_value(
                "workflow_hub_follower_unexpected_errors_total", {"source": "s1"}
            )
            assert unexpected is not None
            assert unexpected >= 3
            fleet_unexpected = fleet_registry.get_sample_value(
                "workflow_hub_fleet_unexpected_errors_total"
            )
            assert fleet_unexpected is not None
            assert fleet_unexpected >= 3
            async with redis:  # open again: both recover by themselves
                await eventually(lambda: folded(view, hub))
                await eventually(lambda: folded(fleet_view.views.get("s1"), hub))
                nursery.cancel_scope.cancel()


async def fold_source(
    redis: coredis.Redis[bytes],
    prefix: str,
    view: ActivityView,
    *,
    task_status: trio.TaskStatus[SourceStream] = trio.TASK_STATUS_IGNORED,
) -> None:
    async with follow_source(
        redis, source="s1", prefix=prefix, block=0.05, read_timeout=0.5
    ) as stream:
        task_status.started(stream)
        async for frame in stream:
            view.apply(frame)


async def test_a_client_closed_under_an_events_follower_never_ends_it(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """N6 with N4: ``follow_events``'s client is closed under it while it reads. It says
    ``unreachable`` for the source, counts the failure (``unexpected_errors``) and logs it
    once; once the client is open again, the events that come next are delivered."""
    items: list[EventItem] = []

    async def collect(
        redis: coredis.Redis[bytes], *, task_status: trio.TaskStatus[EventStream]
    ) -> None:
        async with follow_events(redis, prefix=prefix, read_timeout=0.5, block=0.05) as events:
            task_status.started(events)
            async for item in events:
                items.append(item)

    with trio.fail_after(60):
        async with (
            coredis.Redis.from_url(redis_server.url) as mirrored,
            trio.open_nursery() as nursery,
        ):
            scheduler = await start_scheduler(nursery, mirrored, prefix, "a")
            redis = coredis.Redis.from_url(redis_server.url)
            async with redis:
                events: EventStream = await nursery.start(collect, redis)
                await eventually(lambda: events.sources == ("a",))
                await trio.sleep(0.3)  # positioned at the newest entry
                scheduler.change("a-1")
                await eventually(lambda: names(items) == ["a-1"])
            await eventually(lambda: events.unexpected_errors >= 3)
            await eventually(lambda: [gap.reason for gap in gaps(items)] == ["unreachable"])
            assert len(messages(caplog, "events follower: " + UNEXPECTED)) == 1
            async with redis:
                scheduler.change("a-2")
                await eventually(lambda: "a-2" in names(items))
                nursery.cancel_scope.cancel()


async def test_a_client_closed_under_a_mirror_of_hook_events_never_ends_the_scheduler(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """N6 with N1: the same for a mirror given the host's ``HookRunner``: its events half
    fails as its frames half does, never into the scheduler's nursery; the scheduler's own
    handlers get every event meanwhile, and once the client is open again every event that
    waited in the mirror's buffer is appended."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            redis = coredis.Redis.from_url(redis_server.url)
            async with redis:
                scheduler = await start_scheduler(nursery, redis, prefix, "a")
                scheduler.change("a-1")
                await eventually(lambda: scheduler.mirror.statistics().events == 1)
            scheduler.change("a-2")
            scheduler.change("a-3")
            await eventually(
                lambda: len(messages(caplog, "events mirror of 'a': " + UNEXPECTED)) == 1
            )
            await eventually(lambda: scheduler.mirror.statistics().unexpected_errors >= 6)
            assert scheduler.seen == ["a-1", "a-2", "a-3"]
            assert len(messages(caplog, "events mirror of 'a': " + UNEXPECTED)) == 1
            async with redis:
                await eventually(lambda: scheduler.mirror.statistics().events == 3)
                nursery.cancel_scope.cancel()
