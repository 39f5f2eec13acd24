"""The connection budget of a fleet follower: a handful of connections, whatever the sources.

Issue 25 item 5: ``follow_fleet`` multiplexes every source over one blocking ``XREAD`` and the
client's shared connection, so 1 000 sources take at most 4 Redis connections of the follower.
"""

from __future__ import annotations

import functools
import random
import uuid

import coredis
import trio

from tests.support.builders import root
from tests.support.redis_server import RedisServer, eventually
from workflow_hub import Availability, WorkflowActivityHub, WorkflowActivityPublisher, open_hub
from workflow_hub.redis import FleetView, follow_fleet, mirror_hub

SOURCES = 1_000


async def run_hubs(count: int, *, task_status: trio.TaskStatus[list[WorkflowActivityHub]]) -> None:
    """``count`` small hubs in one task tree (one scheduler each)."""
    hubs: list[WorkflowActivityHub] = []
    async with trio.open_nursery() as nursery:

        async def one(*, task_status: trio.TaskStatus[WorkflowActivityHub]) -> None:
            async with open_hub() as hub:
                task_status.started(hub)
                await trio.sleep_forever()

        for _ in range(count):
            hubs.append(await nursery.start(one))
        task_status.started(hubs)


async def test_a_thousand_sources_are_followed_over_at_most_four_connections(
    redis_server: RedisServer,
) -> None:
    """Every view of a 1 000-source fleet equals its hub, through a round of changes, and
    ``CLIENT LIST`` shows at most 4 connections named for the follower."""
    prefix = f"budget-{uuid.uuid4().hex[:8]}"
    rng = random.Random(1000)
    fleet_view = FleetView()
    with trio.fail_after(120):
        async with (
            trio.open_nursery() as nursery,
            coredis.Redis.from_url(redis_server.url, client_name="mirrors") as mirrors,
            coredis.Redis.from_url(redis_server.url, client_name="fleet-follower") as follower,
        ):
            hubs = await nursery.start(run_hubs, SOURCES)
            names = [f"s{index:04d}" for index in range(SOURCES)]
            publishers: list[WorkflowActivityPublisher] = []
            for name, hub in zip(names, hubs, strict=True):
                publisher = hub.register_publisher()
                publisher.publish_snapshot(Availability.READY, [root("r0")])
                publishers.append(publisher)
                await nursery.start(
                    functools.partial(
                        mirror_hub, hub, mirrors, source=name, prefix=prefix, refresh_interval=2
                    )
                )

            async def fold() -> None:
                async with follow_fleet(follower, prefix=prefix, stale_after=30) as fleet:
                    async for source, frame in fleet:
                        fleet_view.apply(source, frame)

            nursery.start_soon(fold)

            def all_folded() -> bool:
                return all(
                    (view := fleet_view.views.get(name)) is not None
                    and view.known
                    and view.cursor == hub.cursor
                    for name, hub in zip(names, hubs, strict=True)
                )

            await eventually(all_folded, every=0.05)
            for publisher in publishers:
                for _ in range(rng.randrange(1, 4)):
                    publisher.publish_changed(root(f"r{rng.randrange(5)}"))
            await eventually(all_folded, every=0.05)
            for name, hub in zip(names, hubs, strict=True):
                assert fleet_view.views[name].roots == hub.snapshot_frame().roots, name
            clients = await mirrors.client_list()
            connections = [c for c in clients if c.get("name") == "fleet-follower"]
            assert 1 <= len(connections) <= 4, connections
            nursery.cancel_scope.cancel()
