"""A source that shut down cleanly is never "crashed", not even for a fleet server started later.

SPEC N5 (a crashed source and one that declared itself unavailable are told apart), issue 36:
``/v1/sources`` carries ``declared`` (the source's own last frame says it is unavailable) beside
``stale`` (its mirror stopped refreshing). A fleet server that starts after both sources stopped
lists the one that declared itself unavailable as declared from the first description it gives,
and still once it is stale; the one that stopped without a word is stale and not declared.
Against a real redis-server; the mirrors run in this process.
"""

from __future__ import annotations

import functools
from typing import Any

import coredis
import httpx
import trio

from tests.support.fleet import stopped_source
from tests.support.redis_server import RedisServer
from workflow_hub.server import serve_fleet

WAIT = 30


async def described(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    sources = (await client.get(f"{url}/v1/sources")).json()["sources"]
    return {entry["source"]: entry for entry in sources}


async def test_a_fleet_server_started_after_a_clean_shutdown_never_calls_it_crashed(
    redis_server: RedisServer,
) -> None:
    prefix = "fleet-liveness-late"
    with trio.fail_after(WAIT):
        async with coredis.Redis.from_url(redis_server.url) as redis:
            await stopped_source(redis, prefix, "clean", declare=True)
            await stopped_source(redis, prefix, "killed", declare=False)
            async with trio.open_nursery() as nursery, httpx.AsyncClient(timeout=WAIT) as client:
                url: str = await nursery.start(
                    functools.partial(serve_fleet, redis, prefix=prefix, port=0, stale_after=0.5)
                )
                seen: list[tuple[bool, bool]] = []
                while True:
                    listed = await described(client, url)
                    if "clean" in listed:
                        clean = listed["clean"]
                        seen.append((clean["declared"], clean["stale"]))
                        killed = listed.get("killed", {})
                        if clean["stale"] and killed.get("stale") and killed["state"] == "unknown":
                            break
                    await trio.sleep(0.02)
                assert all(declared for declared, _ in seen), seen
                assert (clean["availability"], clean["state"]) == ("unavailable", "unknown")
                assert (killed["stale"], killed["declared"]) == (True, False)
                assert killed["availability"] == "unavailable"
                nursery.cancel_scope.cancel()
