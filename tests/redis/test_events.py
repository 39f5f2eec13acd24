"""Hook events across machines, against a real redis-server (SPEC N6, with N3-N5).

A mirror started with the host's ``HookRunner`` appends every hook event to
``{prefix}:{source}:events``; ``follow_events`` gives them back per source, in order, with a
``ContinuityLost`` item wherever events may be missing, never a silent skip.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import coredis
import pytest
import trio
import trio.lowlevel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from tests.support.builders import root
from tests.support.redis_server import CuttableProxy, RedisServer, eventually
from workflow_hub import (
    ActivityChangedEvent,
    ContractError,
    HookRunner,
    WorkflowActivityHub,
    WorkflowActivityPublisher,
    open_hub,
)
from workflow_hub.redis import (
    ContinuityLost,
    EventItem,
    EventStream,
    Mirror,
    MirrorMetrics,
    SourceEvent,
    follow_events,
    mirror_hub,
)

READ_TIMEOUT = 1.0


@pytest.fixture
def prefix() -> str:
    return f"ev-{uuid.uuid4().hex[:8]}"


class Scheduler:
    """A running hub with a bound ``HookRunner`` (a scheduler's own handler records what it
    sees) and a mirror of it that copies the hook events into Redis."""

    def __init__(self, hub: WorkflowActivityHub, runner: HookRunner, mirror: Mirror) -> None:
        self.hub = hub
        self.runner = runner
        self.mirror = mirror
        self.publisher: WorkflowActivityPublisher = hub.register_publisher()
        self.seen: list[str] = []  # root ids the scheduler's own handler received
        self.scope = trio.CancelScope()
        self.published: set[str] = set()

    def kill(self) -> None:
        """The scheduler's process dies: hub, runner and mirror stop without a word."""
        self.scope.cancel()

    def change(self, name: str) -> None:
        self.published.add(name)
        self.publisher.publish_changed(root(name))


async def start_scheduler(
    nursery: trio.Nursery,
    redis: coredis.Redis[bytes],
    prefix: str,
    source: str,
    **options: object,
) -> Scheduler:
    async def run(*, task_status: trio.TaskStatus[Scheduler]) -> None:
        scope = trio.CancelScope()
        with scope:
            await _run(scope, task_status)

    async def _run(scope: trio.CancelScope, task_status: trio.TaskStatus[Scheduler]) -> None:
        async with open_hub() as hub, trio.open_nursery() as inner:
            runner = HookRunner(hub)
            seen: list[str] = []

            @runner.extension("scheduler").on("workflow_activity_changed")
            def record(event: ActivityChangedEvent) -> None:
                seen.append(event.root.root_run_id)

            mirror = await inner.start(
                functools.partial(
                    mirror_hub,
                    hub,
                    redis,
                    source=source,
                    prefix=prefix,
                    refresh_interval=0.05,
                    runner=runner,
                    **options,
                )
            )
            runner.bind()
            await mirror.wait_claimed()
            scheduler = Scheduler(hub, runner, mirror)
            scheduler.seen = seen
            scheduler.scope = scope
            task_status.started(scheduler)
            await trio.sleep_forever()

    scheduler: Scheduler = await nursery.start(run)
    return scheduler


@asynccontextmanager
async def collecting(
    redis: coredis.Redis[bytes], **options: object
) -> AsyncIterator[tuple[EventStream, list[EventItem]]]:
    items: list[EventItem] = []
    options = {"read_timeout": READ_TIMEOUT, "block": 0.2, **options}
    async with (
        follow_events(redis, **options) as events,  # type: ignore[arg-type]
        trio.open_nursery() as nursery,
    ):

        async def collect() -> None:
            async for item in events:
                items.append(item)

        nursery.start_soon(collect)
        yield events, items
        nursery.cancel_scope.cancel()


async def eventually_async(read: Callable[[], Awaitable[object]], expected: object) -> None:
    while await read() != expected:  # noqa: ASYNC110
        await trio.sleep(0.05)


def names(items: list[EventItem], source: str | None = None) -> list[str]:
    return [
        item.event.root.root_run_id
        for item in items
        if isinstance(item, SourceEvent)
        and isinstance(item.event, ActivityChangedEvent)
        and (source is None or item.source == source)
    ]


def gaps(items: list[EventItem]) -> list[ContinuityLost]:
    return [item for item in items if isinstance(item, ContinuityLost)]


async def test_events_of_one_source_arrive_in_order_and_the_scheduler_keeps_its_own(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6: every hook event of a source, in hub order, each naming its source and stream id,
    with consecutive sequence numbers; the scheduler's own handler still gets every event."""
    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            scheduler = await start_scheduler(nursery, redis, prefix, "s1")
            # (Not a liveness test: a generous read timeout, so that a loaded machine that
            # starves the follower for a second is no "unreachable" gap.)
            async with collecting(redis, prefix=prefix, source="s1", read_timeout=10.0) as (
                _,
                items,
            ):
                await trio.sleep(0.3)  # positioned at the (empty) stream's end
                expected = [f"r{index}" for index in range(2_000)]
                for index, name in enumerate(expected):
                    scheduler.change(name)
                    if index % 100 == 0:
                        await trio.lowlevel.checkpoint()
                await eventually(lambda: len(names(items)) >= len(expected))
            assert names(items) == expected
            assert scheduler.seen == expected
            assert gaps(items) == []
            delivered = [item for item in items if isinstance(item, SourceEvent)]
            assert {item.source for item in delivered} == {"s1"}
            seqs = [item.seq for item in delivered]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
            ids = [item.id for item in delivered]
            assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
            assert scheduler.mirror.statistics().events == len(expected)
            nursery.cancel_scope.cancel()


async def test_an_older_instance_cannot_append_events_after_a_newer_one_claimed(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6 with N3: the events of a replaced instance are refused by the server-side script;
    the follower sees a ``new_instance`` gap, then only the newer instance's events."""
    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            old = await start_scheduler(nursery, redis, prefix, "s1")
            async with collecting(redis, prefix=prefix, source="s1") as (_, items):
                await trio.sleep(0.3)
                old.change("old-1")
                await eventually(lambda: names(items) == ["old-1"])
                new = await start_scheduler(nursery, redis, prefix, "s1")
                new.change("new-1")
                await eventually(lambda: "new-1" in names(items))
                # The old instance is fenced at its next append: its events never land.
                old.change("old-2")
                await eventually(lambda: old.mirror.fenced)
                new.change("new-2")
                await eventually(lambda: "new-2" in names(items))
                await trio.sleep(0.3)
            assert names(items) == ["old-1", "new-1", "new-2"]
            lost = gaps(items)
            assert [gap.reason for gap in lost] == ["new_instance"]
            assert items.index(lost[0]) == 1  # between the old and the new instance
            raw = await redis.xrange(f"{prefix}:s1:events")
            epochs = [entry.field_values[b"epoch"].decode() for entry in raw]
            assert epochs == [old.mirror.epoch, new.mirror.epoch, new.mirror.epoch]
            nursery.cancel_scope.cancel()


async def test_a_trimmed_follower_sees_a_gap_marker_never_a_silent_skip(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6: the events stream is bounded (MAXLEN ~); a follower resuming from a position that
    was trimmed away gets a ``trimmed`` item first, then the retained events in order."""
    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            scheduler = await start_scheduler(nursery, redis, prefix, "s1", events_maxlen=100)
            scheduler.change("first")
            await eventually(lambda: scheduler.mirror.statistics().events == 1)
            first_id = (await redis.xrange(f"{prefix}:s1:events"))[0].identifier.decode()
            for index in range(1_000):
                scheduler.change(f"r{index}")
                if index % 50 == 0:
                    await trio.sleep(0.01)
            await eventually(lambda: scheduler.mirror.statistics().events == 1_001)
            length = await redis.xlen(f"{prefix}:s1:events")
            assert length < 300  # bounded: about MAXLEN, never the 1 001 appended
            async with collecting(redis, prefix=prefix, source="s1", since=first_id) as (_, items):
                await eventually(lambda: "r999" in names(items))
            lost = gaps(items)
            assert [gap.reason for gap in lost] == ["trimmed"]
            assert items[0] == lost[0]
            assert lost[0].after == first_id
            delivered = names(items)
            assert delivered == [f"r{index}" for index in range(1_000 - len(delivered), 1_000)]
            nursery.cancel_scope.cancel()


async def test_a_follower_that_falls_behind_the_trim_gets_a_gap_with_the_count(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6: a live follower whose connection stalls while the stream is trimmed past its
    position sees ``trimmed`` with the number of events missed, then goes on in order."""
    proxy = CuttableProxy(redis_server.port)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.run)
            async with (
                coredis.Redis.from_url(redis_server.url) as redis,
                coredis.Redis.from_url(proxy.url) as slow,
            ):
                scheduler = await start_scheduler(nursery, redis, prefix, "s1", events_maxlen=50)
                async with collecting(slow, prefix=prefix, source="s1", read_timeout=30) as (
                    _,
                    items,
                ):
                    await trio.sleep(0.3)
                    scheduler.change("before")
                    await eventually(lambda: names(items) == ["before"])
                    proxy.stall()
                    for index in range(500):
                        scheduler.change(f"r{index}")
                        if index % 50 == 0:
                            await trio.sleep(0.01)
                    await eventually(lambda: scheduler.mirror.statistics().events == 501)
                    proxy.release()
                    await eventually(lambda: "r499" in names(items))
                lost = gaps(items)
                assert [gap.reason for gap in lost] == ["trimmed"]
                # (The read in flight when the connection stalled may bring a few first.)
                gap_at = items.index(lost[0])
                before = names(items[:gap_at])
                after = names(items[gap_at:])
                assert before == ["before"] + [f"r{index}" for index in range(len(before) - 1)]
                assert after == [f"r{index}" for index in range(500 - len(after), 500)]
                assert lost[0].missed == 500 - len(after) - (len(before) - 1)
                nursery.cancel_scope.cancel()


async def test_events_the_mirror_had_to_drop_are_a_counted_gap(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6 with N1: while Redis does not answer, the mirror's buffer is bounded (the scheduler
    never waits); the oldest events are dropped, counted, and the follower sees ``dropped``
    with how many."""
    proxy = CuttableProxy(redis_server.port)
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.run)
            async with (
                coredis.Redis.from_url(redis_server.url) as redis,
                coredis.Redis.from_url(proxy.url) as mirrors,
            ):
                scheduler = await start_scheduler(
                    nursery, mirrors, prefix, "s1", events_buffer=10, round_trip_timeout=0.5
                )
                async with collecting(redis, prefix=prefix, source="s1") as (_, items):
                    await trio.sleep(0.3)
                    scheduler.change("before")
                    await eventually(lambda: names(items) == ["before"])
                    proxy.stall()
                    await trio.sleep(0.2)
                    for index in range(100):
                        scheduler.change(f"r{index}")
                    await eventually(lambda: len(scheduler.seen) == 101)  # never held up
                    await trio.sleep(0.1)
                    proxy.release()
                    await eventually(lambda: "r99" in names(items))
                stats = scheduler.mirror.statistics()
                lost = gaps(items)
                # (Where the holes fall depends on when the mirror's task took a batch.)
                assert lost
                assert {gap.reason for gap in lost} == {"dropped"}
                assert sum(gap.missed or 0 for gap in lost) == stats.events_dropped
                assert stats.events_dropped >= 80
                after = names(items)[1:]
                assert len(after) + stats.events_dropped == 100
                numbers = [int(name[1:]) for name in after]
                assert numbers == sorted(numbers)
                assert numbers[-1] == 99
                nursery.cancel_scope.cancel()


async def test_a_stopped_redis_is_a_continuity_loss_within_the_bound_then_events_resume(
    own_redis_server: RedisServer, prefix: str
) -> None:
    """N6 with N4: no read within ``read_timeout`` gives each followed source one
    ``unreachable`` item; when Redis is back, the events that come next are delivered."""
    server = own_redis_server
    with trio.fail_after(60):
        async with (
            coredis.Redis.from_url(server.url, stream_timeout=2) as redis,
            coredis.Redis.from_url(server.url, stream_timeout=2) as follower,
            trio.open_nursery() as nursery,
        ):
            schedulers = {
                name: await start_scheduler(nursery, redis, prefix, name) for name in ("a", "b")
            }
            async with collecting(follower, prefix=prefix) as (events, items):
                await eventually(lambda: events.sources == ("a", "b"))
                await trio.sleep(0.3)
                for name, scheduler in schedulers.items():
                    scheduler.change(f"{name}-1")
                await eventually(lambda: len(names(items)) == 2)
                server.stop()
                stopped = trio.current_time()
                await eventually(lambda: len(gaps(items)) == 2)
                # The bound plus slack for a loaded 2-core machine running two test workers.
                assert trio.current_time() - stopped <= READ_TIMEOUT + 3
                assert {(gap.source, gap.reason) for gap in gaps(items)} == {
                    ("a", "unreachable"),
                    ("b", "unreachable"),
                }
                server.start()
                await trio.sleep(0.5)
                for name, scheduler in schedulers.items():
                    scheduler.change(f"{name}-2")
                await eventually(lambda: {"a-2", "b-2"} <= set(names(items)))
            for name in ("a", "b"):
                delivered = names(items, name)
                assert delivered[0] == f"{name}-1"
                assert delivered[-1] == f"{name}-2"
            nursery.cancel_scope.cancel()


async def test_the_events_key_expires_with_the_source(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6 with N5: the mirror keeps the events key alive with the source's other keys; once
    it stops, the key expires after the retirement time, and a fleet follower says
    ``retired``."""
    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            key = f"{prefix}:s1:events"
            scheduler = await start_scheduler(nursery, redis, prefix, "s1", retire_after=2.0)
            scheduler.change("r1")
            await eventually(lambda: scheduler.mirror.statistics().events == 1)
            async with collecting(redis, prefix=prefix, retire_after=2.0) as (events, items):
                await eventually(lambda: events.sources == ("s1",))
                await trio.sleep(2.5)  # idle for longer than the retirement time, yet alive
                assert 1_000 < await redis.pttl(key) <= 2_000
                assert events.sources == ("s1",)
                scheduler.kill()
                await eventually(lambda: any(g.reason == "retired" for g in gaps(items)))
                assert events.sources == ()
            await eventually_async(lambda: redis.exists([key]), 0)
            nursery.cancel_scope.cancel()
            nursery.cancel_scope.cancel()


async def test_a_bad_position_is_refused() -> None:
    """Bad input raises ``ContractError`` naming the field."""
    redis = coredis.Redis(host="127.0.0.1", port=1)
    with pytest.raises(ContractError, match="since"):
        async with follow_events(redis, source="s1", since="yesterday"):
            pass
    with pytest.raises(ContractError, match="since"):
        async with follow_events(redis, since="1-0"):
            pass


FLEET = 200


async def test_a_fleet_of_200_sources_is_followed_in_order_over_at_most_four_connections(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6 and issue 25's budget: one ``follow_events`` over 200 mirrored sources delivers
    every source's events in order, each naming its source, over at most 4 connections
    (``CLIENT LIST``)."""
    with trio.fail_after(300):
        async with (
            coredis.Redis.from_url(redis_server.url, client_name="mirrors") as mirrors,
            coredis.Redis.from_url(redis_server.url, client_name="events-follower") as follower,
            trio.open_nursery() as nursery,
        ):
            schedulers = {
                f"s{index:03d}": await start_scheduler(nursery, mirrors, prefix, f"s{index:03d}")
                for index in range(FLEET)
            }
            # 200 schedulers and their mirrors share this process's loop: a reply can wait
            # longer than the module's 1 s outage bound on a busy machine, and this test is
            # about order and connections, not about outages.
            async with collecting(follower, prefix=prefix, since={}, read_timeout=30.0) as (
                events,
                items,
            ):
                await eventually(lambda: len(events.sources) == FLEET)
                for round_ in range(5):
                    for name, scheduler in schedulers.items():
                        scheduler.change(f"{name}-{round_}")
                    await trio.sleep(0.05)
                await eventually(lambda: len(names(items)) == FLEET * 5)
                clients = await mirrors.client_list()
                connections = [c for c in clients if c.get("name") == "events-follower"]
                assert 1 <= len(connections) <= 4, connections
            assert gaps(items) == []
            for name in schedulers:
                assert names(items, name) == [f"{name}-{round_}" for round_ in range(5)]
            nursery.cancel_scope.cancel()


async def open_client(url: str, *, task_status: trio.TaskStatus[coredis.Redis[bytes]]) -> None:
    async with coredis.Redis.from_url(url) as redis:
        task_status.started(redis)
        await trio.sleep_forever()


async def caught_up(
    scheduler: Scheduler, published: list[str], items: list[EventItem], proxy: CuttableProxy
) -> None:
    """Let the current scheduler's mirror append everything, then let the follower read, up
    to one more event published now (what came before may have been trimmed away; what a
    killed instance had not appended is lost, as it would be)."""
    mine = [name for name in published if name in scheduler.published]
    await eventually(lambda: scheduler.seen == mine)
    await eventually(lambda: scheduler.mirror.statistics().events == len(mine))
    proxy.release()
    published.append(f"e{len(published)}")
    scheduler.change(published[-1])
    await eventually(lambda: published[-1] in names(items))


_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(1, 40)),
        st.tuples(st.just("trim"), st.integers(0, 15)),
        st.tuples(st.just("restart"), st.just(0)),
        st.tuples(st.just("catch_up"), st.just(0)),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=_OPERATIONS)
async def test_whatever_is_appended_trimmed_or_restarted_the_follower_never_skips_silently(
    redis_server: RedisServer, operations: list[tuple[str, int]]
) -> None:
    """N6 as a property: under any interleaving of publishing, trimming the events stream
    (even to nothing) and replacing the scheduler by a new instance, what the follower
    delivers is the published sequence in order with pieces missing, and a ``ContinuityLost``
    stands wherever a piece is missing; the last event published arrives."""
    prefix = f"evprop-{uuid.uuid4().hex[:8]}"
    key = f"{prefix}:p:events"
    published: list[str] = []
    proxy = CuttableProxy(redis_server.port)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.run)
            redis = await nursery.start(open_client, redis_server.url)
            reader = await nursery.start(open_client, proxy.url)
            scheduler = await start_scheduler(nursery, redis, prefix, "p")
            # The follower reads through a connection that stalls between catch-ups, so that
            # trims and restarts happen to entries it has not read yet.
            async with collecting(reader, prefix=prefix, source="p", read_timeout=30) as (
                _,
                items,
            ):
                await trio.sleep(0.3)
                proxy.stall()

                def publish(count: int) -> None:
                    for _ in range(count):
                        published.append(f"e{len(published)}")
                        scheduler.change(published[-1])

                for operation, value in operations:
                    if operation == "publish":
                        publish(value)
                        await trio.sleep(0.01)
                    elif operation == "trim":
                        await redis.xtrim(key, threshold=value, trim_strategy="MAXLEN")
                    elif operation == "restart":
                        scheduler.kill()
                        scheduler = await start_scheduler(nursery, redis, prefix, "p")
                    else:
                        await caught_up(scheduler, published, items, proxy)
                        proxy.stall()
                await caught_up(scheduler, published, items, proxy)
            order = {name: index for index, name in enumerate(published)}
            previous = -1
            gap_since_previous = False
            for item in items:
                if isinstance(item, ContinuityLost):
                    gap_since_previous = True
                    continue
                assert isinstance(item.event, ActivityChangedEvent)
                index = order[item.event.root.root_run_id]
                assert index > previous, "out of order or twice"
                if index != previous + 1:
                    assert gap_since_previous, f"a silent skip from {previous} to {index}"
                previous = index
                gap_since_previous = False
            assert previous == len(published) - 1
            nursery.cancel_scope.cancel()


async def test_the_mirror_counts_its_events_for_prometheus(
    redis_server: RedisServer, prefix: str
) -> None:
    """The events appended and dropped are Prometheus counters of the mirror."""
    registry = CollectorRegistry()
    metrics = MirrorMetrics(registry)
    with trio.fail_after(20):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            scheduler = await start_scheduler(nursery, redis, prefix, "m1", metrics=metrics)
            for index in range(3):
                scheduler.change(f"r{index}")
            await eventually(lambda: scheduler.mirror.statistics().events == 3)
            labels = {"source": "m1"}
            assert registry.get_sample_value("workflow_hub_mirror_events_total", labels) == 3
            dropped = registry.get_sample_value("workflow_hub_mirror_events_dropped_total", labels)
            assert dropped == 0
            nursery.cancel_scope.cancel()


async def test_bad_data_in_one_events_stream_is_that_source_unreadable_and_others_go_on(
    redis_server: RedisServer, prefix: str
) -> None:
    """Bad data (issue 25 item 9) in the events: a foreign entry is skipped without a gap, an
    events key of another type makes that source ``unreadable`` (one item), and the other
    sources of the fleet go on."""
    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            good = await start_scheduler(nursery, redis, prefix, "good")
            bad = await start_scheduler(nursery, redis, prefix, "bad")
            async with collecting(redis, prefix=prefix) as (events, items):
                await eventually(lambda: events.sources == ("bad", "good"))
                await trio.sleep(0.3)
                await redis.xadd(f"{prefix}:good:events", {"note": "x" * 5_000})
                good.change("g1")
                bad.change("b1")
                await eventually(lambda: {"g1", "b1"} <= set(names(items)))
                assert gaps(items) == []
                bad.mirror._events.close()  # type: ignore[union-attr]  # its mirror stops appending
                await redis.delete([f"{prefix}:bad:events"])
                await redis.set(f"{prefix}:bad:events", "not a stream")
                good.change("g2")
                await eventually(lambda: "g2" in names(items))
                await eventually(lambda: len(gaps(items)) == 1)
                good.change("g3")
                await eventually(lambda: "g3" in names(items))
            (lost,) = gaps(items)
            assert lost.source == "bad"
            assert lost.reason == "unreadable"
            assert names(items, "good") == ["g1", "g2", "g3"]
            nursery.cancel_scope.cancel()


async def test_a_fleet_follower_resumes_from_its_positions_without_a_gap_or_a_repeat(
    redis_server: RedisServer, prefix: str
) -> None:
    """N6: ``events.positions()`` of one run, given as ``since`` to the next, continues
    exactly after what was delivered, for every source (one that appeared meanwhile from its
    first event)."""
    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            a = await start_scheduler(nursery, redis, prefix, "a")
            b = await start_scheduler(nursery, redis, prefix, "b")
            async with collecting(redis, prefix=prefix) as (events, first):
                await eventually(lambda: events.sources == ("a", "b"))
                await trio.sleep(0.3)
                a.change("a1")
                b.change("b1")
                await eventually(lambda: {"a1", "b1"} <= set(names(first)))
                positions = events.positions()
            assert set(positions) == {"a", "b"}
            a.change("a2")
            b.change("b2")
            c = await start_scheduler(nursery, redis, prefix, "c")
            c.change("c1")
            await eventually(lambda: c.mirror.statistics().events == 1)
            async with collecting(redis, prefix=prefix, since=positions) as (_, second):
                await eventually(lambda: {"a2", "b2", "c1"} <= set(names(second)))
                await trio.sleep(0.3)
            assert gaps(second) == []
            assert names(second, "a") == ["a2"]
            assert names(second, "b") == ["b2"]
            assert names(second, "c") == ["c1"]
            nursery.cancel_scope.cancel()
