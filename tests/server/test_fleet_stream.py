"""``/v1/fleet``: one event stream for a whole fleet (issue 25, "a real fleet page").

Against a real fleet server on a real redis-server, read with httpx. SPEC O1 (a picture
first), N2 (never a gap: what was missed, or a fresh picture), N4 (a source that cannot be seen
is unknown, never its last state), O4/N1 (a slow client gets a fresh picture and slows nobody),
R4 (resume by event id).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import coredis
import httpx
import pytest
import trio

from tests.server.stalled import http_get, port_of, stalled_socket
from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.netutil import SseEvent, SseReader, sse
from tests.support.redis_server import RedisServer
from workflow_hub import ChangedFrame, RemovedFrame, SnapshotFrame, WorkflowActivityHub, wire
from workflow_hub.reporting import ActivityView
from workflow_hub.server import serve_fleet

WAIT = 15
_FRAME = SnapshotFrame | ChangedFrame | RemovedFrame
FRAME_KINDS = ("snapshot", "changed", "removed")


@asynccontextmanager
async def fleet_served(
    redis_url: str, prefix: str, **options: Any
) -> AsyncIterator[tuple[str, coredis.Redis[bytes]]]:
    async with coredis.Redis.from_url(redis_url) as redis, trio.open_nursery() as nursery:
        url: str = await nursery.start(
            functools.partial(serve_fleet, redis, prefix=prefix, port=0, **options)
        )
        try:
            yield url, redis
        finally:
            nursery.cancel_scope.cancel()


class FleetClient:
    """Folds a ``/v1/fleet`` stream: the table (source -> description) and a view per source."""

    def __init__(self) -> None:
        self.table: dict[str, dict[str, Any]] = {}
        self.views: dict[str, ActivityView] = {}
        self.readable = True
        self.ids: list[str] = []
        self.kinds: list[str] = []
        self.pictures = 0

    def apply(self, event: SseEvent) -> None:
        if event.comment:
            return
        kind = event.get("event") or ""
        data = json.loads(event.get("data") or "null")
        event_id = event.get("id")
        assert event_id is not None, "every event of the fleet's stream has an id"
        self.ids.append(event_id)
        self.kinds.append(kind)
        if kind == "fleet":
            self.pictures += 1
            self.table = {entry["source"]: entry for entry in data["sources"]}
            self.readable = data["readable"]
        elif kind == "source":
            self.table[data["source"]] = data
        elif kind == "retired":
            self.table.pop(data["source"], None)
        elif kind == "readable":
            self.readable = data["readable"]
        else:
            assert kind in FRAME_KINDS, kind
            view = self.views.setdefault(data["source"], ActivityView())
            view.apply(wire.loads(_FRAME, json.dumps(data["frame"])))

    async def until(self, reader: SseReader, done: Any) -> None:
        while not done():
            self.apply(await reader.next())

    def equal(self, hubs: dict[str, WorkflowActivityHub]) -> bool:
        return all(
            name in self.views and self.views[name].snapshot_frame() == hub.snapshot_frame()
            for name, hub in hubs.items()
        )


async def wait_for_sources(http: httpx.AsyncClient, url: str, count: int) -> None:
    while True:
        if len((await http.get(f"{url}/v1/sources")).json()["sources"]) >= count:
            return
        await trio.sleep(0.05)


def positions(ids: list[str]) -> list[int]:
    return [int(text.rpartition("-")[2]) for text in ids]


async def test_one_stream_names_each_source_in_order(redis_server: RedisServer) -> None:
    """O1: the stream starts with a picture of the fleet (a ``fleet`` event, then a snapshot of
    each selected source), then every change of every selected source in order, each event
    naming its source; unselected sources' frames are left out but their descriptions are not."""
    prefix = "fleet-stream-1"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as http,
        ):
            hubs = {name: await mirrored(nursery, redis, prefix, name) for name in "abc"}
            pubs = {name: hub.register_publisher() for name, hub in hubs.items()}
            for name, pub in pubs.items():
                pub.publish_snapshot("ready", [root(f"{name}1")])
            await wait_for_sources(http, url, 3)
            client = FleetClient()
            async with sse(http, f"{url}/v1/fleet?source=a&source=b") as reader:
                assert reader.response.headers["x-workflow-hub-resumed"] == "false"
                first = await reader.next()
                assert reader.retry == "2000"
                client.apply(first)
                assert client.kinds == ["fleet"]
                assert sorted(client.table) == ["a", "b", "c"]
                await client.until(reader, lambda: client.equal({"a": hubs["a"], "b": hubs["b"]}))
                assert client.kinds[1:3] == ["snapshot", "snapshot"]
                for step in range(3):
                    pubs["a"].publish_changed(root(f"a-{step}"))
                    pubs["b"].publish_changed(
                        root(f"b-{step}", state="blocked", reason="awaiting_input", blocks=1)
                    )
                    pubs["c"].publish_changed(root(f"c-{step}"))
                pubs["a"].publish_removed("a1")
                want = {"a": hubs["a"], "b": hubs["b"]}
                await client.until(
                    reader,
                    lambda: (
                        client.equal(want)
                        and client.table["a"]["roots"] == 3
                        and client.table["b"]["blocked"] == 3
                        and client.table["c"]["roots"] == 4
                    ),
                )
            assert "c" not in client.views, "frames of a source not selected are left out"
            assert positions(client.ids) == sorted(positions(client.ids))
            assert client.table["a"] == {
                "source": "a",
                "availability": "ready",
                "state": "working",
                "detail": None,
                "roots": 3,
                "working": 3,
                "blocked": 0,
                "attention": 0,
                "last_seen": client.table["a"]["last_seen"],
                "stale": False,
                "declared": False,
                "path": "sources/a/",
            }
            # The table only: no frames at all.
            table_only = FleetClient()
            async with sse(http, f"{url}/v1/fleet") as reader:
                table_only.apply(await reader.next())
                pubs["c"].publish_changed(root("c-late", state="idle", reason="quiescent"))
                await table_only.until(reader, lambda: table_only.table["c"]["roots"] == 5)
            assert table_only.views == {}
            assert set(table_only.kinds) <= {"fleet", "source"}
            nursery.cancel_scope.cancel()


async def test_a_reconnect_resumes_without_a_gap_or_gets_a_fresh_picture(
    redis_server: RedisServer,
) -> None:
    """R4/N2: with its last event id a client gets exactly what it missed (no snapshot); a
    source it newly selects gets a snapshot; an id the server does not hold, a fresh picture."""
    prefix = "fleet-stream-2"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as http,
        ):
            hubs = {name: await mirrored(nursery, redis, prefix, name) for name in "ab"}
            pubs = {name: hub.register_publisher() for name, hub in hubs.items()}
            for name, pub in pubs.items():
                pub.publish_snapshot("ready", [root(f"{name}1")])
            client = FleetClient()
            async with sse(http, f"{url}/v1/fleet?source=a") as reader:
                await client.until(reader, lambda: client.equal({"a": hubs["a"]}))
                await client.until(reader, lambda: "b" in client.table)
            last = client.ids[-1]
            # Missed while away: two changes of a, a change of b.
            pubs["a"].publish_changed(root("a2"))
            pubs["b"].publish_changed(root("b2"))
            pubs["a"].publish_removed("a1")
            await trio.sleep(0.3)
            resumed = FleetClient()
            resumed.views = {"a": client.views["a"]}
            async with sse(
                http, f"{url}/v1/fleet?source=a", headers={"Last-Event-ID": last}
            ) as reader:
                assert reader.response.headers["x-workflow-hub-resumed"] == "true"
                await resumed.until(reader, lambda: resumed.equal({"a": hubs["a"]}))
            frames = [kind for kind in resumed.kinds if kind in FRAME_KINDS]
            assert frames == ["changed", "removed"], "what was missed, not a snapshot"
            assert "fleet" not in resumed.kinds
            assert positions(resumed.ids)[0] > positions([last])[0]
            # Selecting b on a resume: b's snapshot (its earlier frames left out), a resumes.
            last = resumed.ids[-1]
            pubs["a"].publish_changed(root("a3"))
            added = FleetClient()
            added.views = {"a": resumed.views["a"]}
            async with sse(
                http, f"{url}/v1/fleet?source=a&source=b&snapshot=b&since={last}"
            ) as reader:
                assert reader.response.headers["x-workflow-hub-resumed"] == "true"
                await added.until(reader, lambda: added.equal(hubs))
            # a3 may reach the server before or after this client connects: either way a's
            # change comes as a change and b (newly selected) as a snapshot, once each.
            assert sorted(k for k in added.kinds if k in FRAME_KINDS) == ["changed", "snapshot"]
            # An id of another run: a fresh picture.
            fresh = FleetClient()
            async with sse(http, f"{url}/v1/fleet?source=a", headers={"Last-Event-ID": "0-1"}) as (
                reader
            ):
                assert reader.response.headers["x-workflow-hub-resumed"] == "false"
                await fresh.until(reader, lambda: fresh.equal({"a": hubs["a"]}))
            assert fresh.kinds[:2] == ["fleet", "snapshot"]
            # Bad input names the field and changes nothing.
            for query, field in [
                ("since=zzz", "since"),
                ("frames=some", "frames"),
                ("source=", "source"),
                ("source=a&snapshot=b", "snapshot"),
            ]:
                answer = await http.get(f"{url}/v1/fleet?{query}")
                assert answer.status_code == 400, query
                assert answer.json()["field"] == field
            nursery.cancel_scope.cancel()


async def test_a_source_whose_mirror_stops_is_unknown_on_the_stream(
    redis_server: RedisServer,
) -> None:
    """N4: a stopped mirror's source turns stale and unknown on the stream (its description and
    an ``unavailable`` snapshot), never its last state; N5: once retired, a ``retired`` event."""
    prefix = "fleet-stream-3"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix, stale_after=0.3, retire_after=3) as (
                url,
                redis,
            ),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as http,
        ):
            mirror_scope = trio.CancelScope()

            async def mirror_until_cancelled(*, task_status: trio.TaskStatus[Any]) -> None:
                with mirror_scope:
                    async with trio.open_nursery() as inner:
                        task_status.started(await mirrored(inner, redis, prefix, "gone"))

            hub = await nursery.start(mirror_until_cancelled)
            stays = await mirrored(nursery, redis, prefix, "stays")
            hub.register_publisher().publish_snapshot("ready", [root("x")])
            stays.register_publisher().publish_snapshot("ready", [root("y")])
            client = FleetClient()
            async with sse(http, f"{url}/v1/fleet?frames=all") as reader:
                await client.until(
                    reader,
                    lambda: (
                        client.equal({"gone": hub, "stays": stays})
                        and client.table.get("gone", {}).get("state") == "working"
                        and client.table.get("stays", {}).get("state") == "working"
                    ),
                )
                mirror_scope.cancel()  # the scheduler stops: no more refreshes
                await client.until(
                    reader,
                    lambda: (
                        client.table["gone"]["stale"]
                        and client.table["gone"]["state"] == "unknown"
                        and client.views["gone"].availability == "unavailable"
                    ),
                )
                assert client.table["gone"]["state"] == "unknown"
                assert client.table["gone"]["availability"] == "unavailable"
                assert client.views["gone"].roots == ()
                assert client.table["stays"]["state"] == "working"
                await client.until(reader, lambda: "gone" not in client.table)
            assert client.kinds[-1] == "retired"
            assert sorted(client.table) == ["stays"]
            nursery.cancel_scope.cancel()


# coredis creates a connection's memory streams before it connects: refused attempts while the
# server is down leave them to the garbage collector (see tests/redis/test_liveness.py).
@pytest.mark.filterwarnings("ignore:Unclosed <MemoryObject:ResourceWarning")
async def test_every_source_is_unknown_on_the_stream_while_redis_is_stopped() -> None:
    """N4: redis-server stops under the fleet server: the stream says ``readable: false`` and
    every source is unknown; when it is back, the sources are known again."""
    server = RedisServer()
    server.start()
    try:
        with trio.fail_after(40):
            async with (
                fleet_served(server.url, "fleet-stream-4", read_timeout=1) as (url, _),
                coredis.Redis.from_url(server.url) as mirrors,
                trio.open_nursery() as nursery,
                httpx.AsyncClient(timeout=WAIT) as http,
            ):
                hubs = {
                    name: await mirrored(nursery, mirrors, "fleet-stream-4", name) for name in "ab"
                }
                for hub in hubs.values():
                    hub.register_publisher().publish_snapshot(
                        "ready", [root("r", state="idle", reason="quiescent", active=0)]
                    )
                client = FleetClient()
                async with sse(http, f"{url}/v1/fleet") as reader:
                    await client.until(
                        reader,
                        lambda: (
                            len(client.table) == 2
                            and all(s["state"] == "idle" for s in client.table.values())
                        ),
                    )
                    server.stop()
                    await client.until(
                        reader,
                        lambda: (
                            not client.readable
                            and all(s["state"] == "unknown" for s in client.table.values())
                        ),
                    )
                    server.start()
                    await client.until(
                        reader,
                        lambda: (
                            client.readable
                            and all(s["state"] == "idle" for s in client.table.values())
                        ),
                    )
                nursery.cancel_scope.cancel()
    finally:
        server.close()


async def test_a_slow_client_gets_a_fresh_picture_and_slows_nobody(
    redis_server: RedisServer,
) -> None:
    """O4/N1: a client that stops reading falls behind the fleet's log (512 events here) while
    another keeps up with every source; when it reads again it gets a fresh picture (``fleet``
    and snapshots), never a gap."""
    prefix = "fleet-stream-5"
    with trio.fail_after(40):
        async with (
            fleet_served(redis_server.url, prefix, fleet_log=512) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as http,
        ):
            hubs = {name: await mirrored(nursery, redis, prefix, name) for name in "ab"}
            pubs = {name: hub.register_publisher() for name, hub in hubs.items()}
            for name, pub in pubs.items():
                pub.publish_snapshot("ready", [root(f"{name}-0")])
            await wait_for_sources(http, url, 2)
            slow = await stalled_socket(port_of(url), http_get("/v1/fleet?frames=all"))
            with slow:
                fast = FleetClient()
                async with sse(http, f"{url}/v1/fleet?frames=all") as reader:
                    await fast.until(reader, lambda: fast.equal(hubs))

                    caught_up = trio.Event()

                    async def keep_up() -> None:
                        nonlocal caught_up
                        while True:
                            fast.apply(await reader.next())
                            if fast.equal(hubs):
                                caught_up.set()

                    async with trio.open_nursery() as readers:
                        readers.start_soon(keep_up)
                        # Big snapshots, many of them: far more than the slow socket takes.
                        many = [root(f"run-{index:04d}-{'x' * 60}") for index in range(30)]
                        for step in range(400):
                            for name, pub in pubs.items():
                                pub.publish_snapshot("ready", [*many, root(f"{name}-{step}")])
                            await trio.sleep(0.005)
                            if (step % 50 == 49 or step == 399) and not fast.equal(hubs):
                                # The reader keeps up (a slow machine must not make it slow).
                                caught_up = trio.Event()
                                await caught_up.wait()
                        readers.cancel_scope.cancel()
                assert fast.pictures == 1, "the client that keeps up never starts over"
                # The slow client reads again: somewhere in what it gets, a fresh picture.
                received = b""
                while received.count(b"event: fleet\n") < 2:
                    chunk = await slow.recv(65536)
                    assert chunk, "the stream ended"
                    received += chunk
            nursery.cancel_scope.cancel()


async def test_a_bad_log_size_names_the_field(redis_server: RedisServer) -> None:
    from workflow_hub import ContractError
    from workflow_hub.server import FleetApp

    async with coredis.Redis.from_url(redis_server.url) as redis:
        for size in (0, -1, 1.5, "8"):
            with pytest.raises(ContractError) as raised:
                FleetApp(redis, fleet_log=size)  # type: ignore[arg-type]
            assert raised.value.path == "fleet_log"
