"""The fleet server reads a fleet through ``FleetEngine`` alone (issue 35): any engine serves.

An engine with no store at all (frames a test hands it) is served like a Redis fleet: its sources
are listed, each source's snapshot is its last state (O1), a retired source leaves the list (N5),
readiness follows the engine's ``readable`` (N4). The coredis form of ``serve_fleet`` keeps
working (``tests/server/test_server_fleet.py``); an engine brings its own settings, so the Redis
ones are refused next to it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

import httpx
import pytest
import trio

from tests.support.builders import root
from workflow_hub import ContractError, Frame, SnapshotFrame, open_hub, wire
from workflow_hub.fleet import EventItem, FleetEngine, SourceLiveness
from workflow_hub.server import FleetApp, serve_fleet

WAIT = 10


class _Followed:
    """What ``MemoryFleet.follow_fleet`` yields: the frames put in, in order."""

    def __init__(self, fleet: MemoryFleet) -> None:
        self._fleet = fleet

    @property
    def liveness(self) -> Mapping[str, SourceLiveness]:
        return self._fleet.liveness

    @property
    def readable(self) -> bool:
        return self._fleet.readable

    async def __aiter__(self) -> AsyncIterator[tuple[str, Frame | None]]:
        async for item in self._fleet.receive:
            yield item


class _NoEvents:
    sources: Sequence[str] = ()

    async def __aiter__(self) -> AsyncIterator[EventItem]:
        await trio.sleep_forever()
        yield  # pragma: no cover - never reached


class MemoryFleet:
    """A fleet engine without a store: ``put(source, frame)`` is what its follower yields."""

    prefix = "memory"
    read_timeout = 5.0

    def __init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[tuple[str, Frame | None]](64)
        self.liveness: dict[str, SourceLiveness] = {}
        self.readable = True

    def put(self, source: str, frame: Frame | None) -> None:
        if frame is None:
            self.liveness.pop(source, None)
        else:
            self.liveness[source] = SourceLiveness(
                source=source, last_seen=time.time(), stale=False
            )
        self.send.send_nowait((source, frame))

    @asynccontextmanager
    async def follow_fleet(self) -> AsyncIterator[_Followed]:
        yield _Followed(self)

    @asynccontextmanager
    async def follow_source(self, source: str) -> AsyncIterator[AsyncIterator[Frame]]:
        async def frames() -> AsyncIterator[Frame]:
            async for name, frame in self.receive:
                if name == source and frame is not None:
                    yield frame

        yield frames()

    @asynccontextmanager
    async def follow_events(self, source: str | None = None) -> AsyncIterator[_NoEvents]:
        yield _NoEvents()


async def _sources(client: httpx.AsyncClient, url: str, count: int) -> list[dict[str, object]]:
    while True:
        listed: list[dict[str, object]] = (await client.get(f"{url}/v1/sources")).json()["sources"]
        if len(listed) == count:
            return listed
        await trio.sleep(0.02)


async def test_any_fleet_engine_is_served_without_a_store() -> None:
    """O1, N4, N5 through the interface: listed, snapshot first, unready, retired."""
    engine = MemoryFleet()
    assert isinstance(engine, FleetEngine)
    with trio.fail_after(WAIT):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            url: str = await nursery.start(functools.partial(serve_fleet, engine, port=0))
            hub.register_publisher().publish_snapshot("ready", [root("a1"), root("a2")])
            engine.put("a", hub.snapshot_frame())
            (listed,) = await _sources(client, url, 1)
            assert (listed["source"], listed["availability"], listed["roots"]) == ("a", "ready", 2)
            assert (await client.get(f"{url}/v1/sources")).json()["prefix"] == "memory"
            snapshot = await client.get(f"{url}/sources/a/v1/snapshot")
            assert wire.loads(SnapshotFrame, snapshot.text) == hub.snapshot_frame()
            assert (await client.get(f"{url}/readyz")).status_code == 200
            engine.readable = False
            assert (await client.get(f"{url}/readyz")).status_code == 503
            engine.put("a", None)
            await _sources(client, url, 0)
            assert (await client.get(f"{url}/sources/a/v1/snapshot")).status_code == 404
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("setting", ["prefix", "stale_after", "read_timeout", "retire_after"])
def test_an_engine_brings_its_own_settings(setting: str) -> None:
    """The Redis settings of the coredis form are refused next to an engine, naming the field."""
    value: object = "p" if setting == "prefix" else 9.0
    with pytest.raises(ContractError) as refused:
        FleetApp(MemoryFleet(), **{setting: value})  # type: ignore[arg-type]
    assert refused.value.path == setting


def test_what_is_neither_an_engine_nor_a_client_is_refused() -> None:
    with pytest.raises(ContractError) as refused:
        FleetApp("redis://127.0.0.1:6379/0")  # type: ignore[arg-type]
    assert refused.value.path == "fleet"
