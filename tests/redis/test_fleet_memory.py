"""The fleet server keeps nothing per Redis restart, per source boot or per client (issue 37).

``make soak`` saw ``serve --fleet`` grow by about 1 MiB a minute while Redis restarted empty
every 45 s; measured, that is its three bounded histories filling (docs/performance.md, "The
soak"). This keeps it so: a fleet server with small histories, a real redis-server restarted
(data lost) again and again, a new mirror (a new boot) each time and clients that connect and
leave. From the third cycle to the last, no type of the package's own gains as many objects as
there were cycles (a leak per restart, boot or client gains at least one each; a count may still
move by one or two with what is in flight when it is taken).
"""

from __future__ import annotations

import functools
import gc
import uuid
from collections import Counter

import coredis
import httpx
import trio

from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.netutil import sse
from tests.support.redis_server import RedisServer
from workflow_hub import Availability
from workflow_hub.server import serve_fleet

NET = 60  # a safety net only: every wait below ends on what it waits for
CYCLES = 9
MEASURED_FROM = 3


def own_objects() -> Counter[str]:
    """The live objects of the package's own types, by type (after a full collection)."""
    gc.collect()
    counts: Counter[str] = Counter()
    for thing in gc.get_objects():
        kind = type(thing)
        module = kind.__dict__.get("__module__")
        if isinstance(module, str) and module.startswith("workflow_hub"):
            counts[f"{module}.{kind.__qualname__}"] += 1
    return counts


async def cycle(
    redis: coredis.Redis[bytes],
    redis_server: RedisServer,
    client: httpx.AsyncClient,
    url: str,
    prefix: str,
    number: int,
) -> None:
    """Redis restarts empty; a new mirror of ``s1`` (a new boot) shows ``c{number}``; the fleet
    serves it; a client of the source and one of the fleet come, read, and leave."""
    await trio.to_thread.run_sync(redis_server.restart)
    async with trio.open_nursery() as nursery:
        hub = await mirrored(nursery, redis, prefix, "s1")
        hub.register_publisher().publish_snapshot(Availability.READY, [root(f"c{number}")])
        while f'"c{number}"' not in (await client.get(f"{url}/sources/s1/v1/snapshot")).text:  # noqa: ASYNC110
            await trio.sleep(0.02)
        for path in ("/sources/s1/v1/activity", "/v1/fleet"):
            async with sse(client, f"{url}{path}") as reader:
                await reader.next()
        nursery.cancel_scope.cancel()


async def test_fleet_server_keeps_nothing_per_redis_restart_boot_or_client(
    redis_server: RedisServer,
) -> None:
    """R2, N6: a fleet server's memory is its bounded histories (frames, the fleet's log, hook
    events); Redis restarts that lose the data, sources that come back with new boots and clients
    that come and go add no object."""
    prefix = f"memory-{uuid.uuid4().hex[:8]}"
    with trio.fail_after(NET):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=NET) as client,
        ):
            url: str = await nursery.start(
                functools.partial(serve_fleet, redis, prefix=prefix, port=0, history=4, fleet_log=4)
            )
            for number in range(MEASURED_FROM):
                await cycle(redis, redis_server, client, url, prefix, number)
            before = own_objects()
            for number in range(MEASURED_FROM, CYCLES):
                await cycle(redis, redis_server, client, url, prefix, number)
            after = own_objects()
            nursery.cancel_scope.cancel()
    measured = CYCLES - MEASURED_FROM
    grown = {kind: after[kind] - before[kind] for kind in after if after[kind] > before[kind]}
    assert all(more < measured for more in grown.values()), grown
    assert after["workflow_hub.server._fleet_app._Relay"] == 1, after
    assert after["workflow_hub.redis._follow.FollowState"] == 1, after
