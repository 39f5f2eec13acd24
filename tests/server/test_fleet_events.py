"""The fleet server's hook events (issue 25, SPEC N6): ``/v1/events`` for the whole fleet and
``/sources/{source}/v1/events`` in the single hub's format, resumable by ``Last-Event-ID``,
with every loss of continuity an ``event: dropped``. Against a real redis-server.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import coredis
import httpx
import trio

from tests.support.fleet_events import hooked
from tests.support.netutil import SseEvent, SseReader, sse
from tests.support.redis_server import RedisServer
from workflow_hub import ActivityChangedEvent, wire
from workflow_hub.server import serve_fleet

WAIT = 20


@asynccontextmanager
async def fleet_served(
    redis_url: str, prefix: str
) -> AsyncIterator[tuple[str, coredis.Redis[bytes]]]:
    async with coredis.Redis.from_url(redis_url) as redis, trio.open_nursery() as nursery:
        url: str = await nursery.start(
            functools.partial(serve_fleet, redis, prefix=prefix, port=0, read_timeout=2.0)
        )
        try:
            yield url, redis
        finally:
            nursery.cancel_scope.cancel()


async def next_event(reader: SseReader) -> SseEvent:
    """The next event that is not a keep-alive comment."""
    while True:
        event = await reader.next()
        if not event.comment:
            return event


def changed_root(event: SseEvent) -> str:
    decoded = wire.loads(ActivityChangedEvent, event.get("data") or "")
    return decoded.root.root_run_id


async def test_the_fleet_stream_carries_every_source_and_a_source_stream_its_own(
    redis_server: RedisServer,
) -> None:
    """N6: ``/v1/events`` names each event's source and stream id; a source's stream is the
    single hub's ``/v1/events`` format (the event named by its type, the wire event as data)."""
    prefix = f"fev-{uuid.uuid4().hex[:8]}"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            a = await hooked(nursery, redis, prefix, "a")
            b = await hooked(nursery, redis, prefix, "b")
            await trio.sleep(1.5)  # discovered by the server's follower
            async with (
                sse(client, f"{url}/v1/events") as fleet,
                sse(client, f"{url}/sources/b/v1/events") as only_b,
            ):
                assert fleet.response.headers["content-type"].startswith("text/event-stream")
                await trio.sleep(0.3)
                for index in range(3):
                    a.change(f"a{index}")
                    b.change(f"b{index}")
                got: dict[str, list[str]] = {"a": [], "b": []}
                while len(got["a"]) + len(got["b"]) < 6:
                    event = await next_event(fleet)
                    assert event.get("event") == "workflow_activity_changed"
                    data = json.loads(event.get("data") or "")
                    assert set(data) == {"source", "id", "event"}
                    decoded = wire.from_wire(ActivityChangedEvent, data["event"])
                    got[data["source"]].append(decoded.root.root_run_id)
                    assert event.get("id")
                assert got == {"a": ["a0", "a1", "a2"], "b": ["b0", "b1", "b2"]}
                own = [await next_event(only_b) for _ in range(3)]
                assert [event.get("event") for event in own] == ["workflow_activity_changed"] * 3
                assert [changed_root(event) for event in own] == ["b0", "b1", "b2"]
            missing = await client.get(f"{url}/sources/nobody/v1/events")
            assert missing.status_code == 404
            nursery.cancel_scope.cancel()


async def test_a_reconnect_resumes_by_last_event_id_and_an_unknown_id_is_a_dropped_notice(
    redis_server: RedisServer,
) -> None:
    """N6 over HTTP: ``Last-Event-ID`` resumes right after the last event seen (no repeat, no
    gap); an id the server does not hold gets ``event: dropped`` (reason ``resume``) first;
    a malformed one is a 400 naming the field."""
    prefix = f"fev-{uuid.uuid4().hex[:8]}"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            a = await hooked(nursery, redis, prefix, "a")
            await trio.sleep(1.5)
            for path in ("/v1/events", "/sources/a/v1/events"):
                stream = f"{url}{path}"
                async with sse(client, stream) as reader:
                    await trio.sleep(0.3)
                    a.change(f"{path}-1")
                    first = await next_event(reader)
                    last = first.get("id")
                assert last is not None
                a.change(f"{path}-2")
                a.change(f"{path}-3")
                await trio.sleep(0.5)
                async with sse(client, stream, headers={"Last-Event-ID": last}) as reader:
                    assert reader.response.headers["x-workflow-hub-resumed"] == "true"
                    resumed = [await next_event(reader) for _ in range(2)]
                datas = [event.get("data") or "" for event in resumed]
                assert f"{path}-2" in datas[0]
                assert f"{path}-3" in datas[1]
                async with sse(client, f"{stream}?since=0000-1") as reader:
                    assert reader.response.headers["x-workflow-hub-resumed"] == "false"
                    notice = await next_event(reader)
                    assert notice.get("event") == "dropped"
                    assert json.loads(notice.get("data") or "")["reason"] == "resume"
                bad = await client.get(stream, headers={"Last-Event-ID": "zzz"})
                assert bad.status_code == 400
                assert "Last-Event-ID" in bad.text
            nursery.cancel_scope.cancel()


async def test_a_new_instance_of_a_source_is_a_dropped_event_naming_it(
    redis_server: RedisServer,
) -> None:
    """N6: a loss of continuity the follower sees (here a new instance of the source) reaches
    HTTP clients as ``event: dropped`` with the source and the reason, never silently."""
    prefix = f"fev-{uuid.uuid4().hex[:8]}"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            old = await hooked(nursery, redis, prefix, "a")
            await trio.sleep(1.5)
            async with sse(client, f"{url}/v1/events") as reader:
                await trio.sleep(0.3)
                old.change("old")
                assert "old" in ((await next_event(reader)).get("data") or "")
                old.kill()
                new = await hooked(nursery, redis, prefix, "a")
                new.change("new")
                events: list[dict[str, Any]] = []
                while not any(event["sse"] == "workflow_activity_changed" for event in events):
                    event = await next_event(reader)
                    events.append(
                        {**json.loads(event.get("data") or ""), "sse": event.get("event")}
                    )
            assert events[0]["sse"] == "dropped"
            assert events[0]["source"] == "a"
            assert events[0]["reason"] == "new_instance"
            assert events[-1]["source"] == "a"
            nursery.cancel_scope.cancel()
