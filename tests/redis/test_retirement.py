"""Retirement: a source whose mirror is gone leaves Redis, and its followers, after a known time.

SPEC N5: a source that stopped refreshing for ``retire_after`` is dropped from the registry and
its keys expire (the live mirror keeps refreshing their time to live), so Redis' memory is bounded
by the live sources; followers drop it from their views. A crashed source (stopped refreshing,
with its last-seen time) is told apart from one that declared itself unavailable.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import pytest
import trio

from tests.support.builders import root
from tests.support.redis_server import RedisServer, eventually
from workflow_hub import Availability, WorkflowActivityHub, open_hub
from workflow_hub.redis import FleetStream, FleetView, Mirror, follow_fleet, mirror_hub

RETIRE_AFTER = 1.0


@pytest.fixture
def prefix() -> str:
    return f"retire-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def client(url: str) -> AsyncIterator[coredis.Redis[bytes]]:
    async with coredis.Redis.from_url(url) as redis:
        yield redis


async def keys_of(redis: coredis.Redis[bytes], prefix: str) -> set[bytes]:
    return {key async for key in redis.scan_iter(match=f"{prefix}:*")}


async def run_source(
    redis: coredis.Redis[bytes],
    prefix: str,
    source: str,
    *,
    task_status: trio.TaskStatus[tuple[WorkflowActivityHub, Mirror]],
) -> None:
    """A scheduler: a hub with one root, mirrored, until cancelled (killed: nothing declared)."""
    async with open_hub() as hub, trio.open_nursery() as nursery:
        hub.register_publisher().publish_snapshot(Availability.READY, [root("r")])
        mirror: Mirror = await nursery.start(
            functools.partial(
                mirror_hub,
                hub,
                redis,
                source=source,
                prefix=prefix,
                refresh_interval=0.2,
                retire_after=RETIRE_AFTER,
            )
        )
        await mirror.wait_claimed()
        task_status.started((hub, mirror))


async def follow(
    redis: coredis.Redis[bytes],
    prefix: str,
    fleet_view: FleetView,
    *,
    task_status: trio.TaskStatus[FleetStream],
) -> None:
    async with follow_fleet(
        redis,
        prefix=prefix,
        stale_after=0.5,
        retire_after=RETIRE_AFTER,
        poll_interval=0.1,
        block=0.1,
    ) as fleet:
        task_status.started(fleet)
        async for source, frame in fleet:
            fleet_view.apply(source, frame)


async def test_a_killed_mirror_is_stale_then_retired_and_its_keys_expire(
    redis_server: RedisServer, prefix: str
) -> None:
    """N5: ``killed`` is cancelled (a crash: it declares nothing); ``declared`` disposes its
    publisher (the scheduler shut down cleanly) and keeps mirroring. The crashed source is
    stale with its last-seen time, the declared one is not stale but unavailable; after the
    retirement time the crashed source is gone from the registry, its keys have expired and
    the follower dropped it; the live ones stay."""
    fleet_view = FleetView()
    with trio.fail_after(20):
        async with (
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
            client(redis_server.url) as reader,
        ):
            killed = trio.CancelScope()

            async def run_killed(*, task_status: trio.TaskStatus[None]) -> None:
                with killed:
                    await run_source(redis, prefix, "killed", task_status=task_status)
                    await trio.sleep_forever()

            await nursery.start(run_killed)
            declared_hub, _ = await nursery.start(run_source, redis, prefix, "declared")
            await nursery.start(run_source, redis, prefix, "alive")
            fleet: FleetStream = await nursery.start(follow, reader, prefix, fleet_view)
            await eventually(
                lambda: (
                    set(fleet_view.views) == {"killed", "declared", "alive"}
                    and all(view.known for view in fleet_view.views.values())
                )
            )
            for source in fleet_view.views:
                assert len(await redis.keys(f"{prefix}:{source}:*")) == 3
            declared_hub.register_publisher().dispose()  # unavailable, declared by its scheduler
            killed_at = time.time()
            killed.cancel()
            await eventually(
                lambda: (live := fleet.liveness.get("killed")) is not None and live.stale
            )
            crashed = fleet.liveness["killed"]
            assert crashed.last_seen is not None
            assert killed_at - 1 <= crashed.last_seen <= killed_at + 0.1
            await eventually(
                lambda: fleet_view.views["killed"].availability is Availability.UNAVAILABLE
            )
            await eventually(
                lambda: fleet_view.views["declared"].availability is Availability.UNAVAILABLE
            )
            assert not fleet.liveness["declared"].stale  # declared, not crashed
            await eventually(lambda: "killed" not in fleet_view.views)
            assert "killed" not in fleet.liveness
            assert set(fleet_view.views) == {"declared", "alive"}
            assert await redis.zscore(f"{prefix}:sources", "killed") is None
            with trio.fail_after(5):
                while await redis.keys(f"{prefix}:killed:*"):  # noqa: ASYNC110
                    await trio.sleep(0.05)
            assert len(await redis.keys(f"{prefix}:alive:*")) == 3
            nursery.cancel_scope.cancel()


async def used_memory(redis: coredis.Redis[bytes]) -> int:
    info = await redis.info("memory")
    return int(info["used_memory"])


async def test_sources_that_come_and_go_keep_redis_memory_flat(
    redis_server: RedisServer, prefix: str
) -> None:
    """N5: 500 sources in five waves of 100, each wave killed and retired before the next.
    With 100 live sources Redis uses as much memory in the fifth wave as in the first (a
    steady fleet), and once all are retired the prefix holds no key at all."""
    fleet_view = FleetView()
    memory: list[int] = []
    with trio.fail_after(300):
        async with (
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
            client(redis_server.url) as reader,
        ):
            await nursery.start(follow, reader, prefix, fleet_view)
            for wave in range(5):
                scope = trio.CancelScope()
                names = [f"w{wave}-{index:03d}" for index in range(100)]

                async def run_wave(
                    names: list[str] = names,
                    scope: trio.CancelScope = scope,
                    *,
                    task_status: trio.TaskStatus[None],
                ) -> None:
                    with scope:
                        async with trio.open_nursery() as wave_nursery:
                            for name in names:
                                await wave_nursery.start(run_source, redis, prefix, name)
                            task_status.started()

                await nursery.start(run_wave)
                await eventually(lambda names=names: all(n in fleet_view.views for n in names))
                memory.append(await used_memory(redis))
                scope.cancel()  # the whole wave crashes
                await eventually(lambda: not fleet_view.views)
                with trio.fail_after(10):
                    while await keys_of(redis, prefix) - {f"{prefix}:sources".encode()}:  # noqa: ASYNC110
                        await trio.sleep(0.1)
            assert await redis.zcard(f"{prefix}:sources") == 0
            nursery.cancel_scope.cancel()
    print(f"used_memory with 100 live sources, waves 1-5: {memory}")
    assert memory[-1] <= memory[0] * 1.1 + 100_000, memory
