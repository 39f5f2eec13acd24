"""``RedisFleet``: the fleet engine over Redis (issue 35), against a real redis-server.

The engine checks its settings once and opens the three followers with them: every source with
its liveness (N4), one source with a subscription's guarantees (O1: a snapshot first), and the
hook events (N6). The fleet server, ``watch`` and ``status`` read a fleet through it only.
"""

from __future__ import annotations

import coredis
import pytest
import trio

from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.redis_server import RedisServer
from workflow_hub import ContractError, SnapshotFrame
from workflow_hub.fleet import FleetEngine, FleetView
from workflow_hub.redis import RedisFleet

WAIT = 10


async def test_its_settings_are_checked_once_when_it_is_made(redis_server: RedisServer) -> None:
    async with coredis.Redis.from_url(redis_server.url) as redis:
        engine = RedisFleet(redis, prefix="p", read_timeout=1.0)
        assert isinstance(engine, FleetEngine)
        assert (engine.prefix, engine.read_timeout, engine.block) == ("p", 1.0, 0.5)
        assert RedisFleet(redis).block == 1.0
        for settings, field in (
            ({"prefix": ""}, "prefix"),
            ({"stale_after": 10.0, "retire_after": 5.0}, "retire_after"),
            ({"read_timeout": 0.5, "block": 1.0}, "read_timeout"),
        ):
            with pytest.raises(ContractError) as refused:
                RedisFleet(redis, **settings)  # type: ignore[arg-type]
            assert refused.value.path == field


async def test_its_followers_see_a_mirrored_source(redis_server: RedisServer) -> None:
    """O1 (a snapshot first) for one source, N4 (liveness) for the fleet, through the engine."""
    prefix = "engine-1"
    with trio.fail_after(WAIT):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            hub = await mirrored(nursery, redis, prefix, "sched-1")
            hub.register_publisher().publish_snapshot("ready", [root("r1")])
            engine: FleetEngine = RedisFleet(redis, prefix=prefix)
            async with engine.follow_source("sched-1") as frames:
                async for frame in frames:
                    assert isinstance(frame, SnapshotFrame)
                    if frame == hub.snapshot_frame():
                        break
            fleet_view = FleetView()
            async with engine.follow_fleet() as fleet:
                async for source, frame in fleet:
                    fleet_view.apply(source, frame)
                    view = fleet_view.views.get("sched-1")
                    if view is not None and view.snapshot_frame() == hub.snapshot_frame():
                        break
                assert set(fleet.liveness) == {"sched-1"}
                assert not fleet.liveness["sched-1"].stale
                assert fleet.readable
            async with engine.follow_events() as events:
                assert tuple(events.sources) == ("sched-1",)  # discovered before it yields
            nursery.cancel_scope.cancel()
