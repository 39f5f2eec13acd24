"""Serving a Redis fleet over HTTP (issue 17, last item): every source with a hub's endpoints.

SPEC O1 (snapshot first), O4/N2 (a fresh snapshot whenever continuity is lost), R4 (resume by
event id): each source's SSE stream folds to its hub's snapshot, a new source appears, a client
that is behind or reconnects late gets a fresh snapshot, one that reconnects in time resumes.
Against a real redis-server (tests/redis_support.py). The relay's own tests are about the internal
``workflow_hub.server._fleet_app`` (its ``_Relay``).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import coredis
import httpx
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.netutil import SseEvent, SseReader, sse
from tests.support.processes import owned_process
from tests.support.redis_server import RedisServer
from workflow_hub import (
    Availability,
    ChangedFrame,
    ContractError,
    Cursor,
    Frame,
    RemovedFrame,
    SnapshotFrame,
    WorkflowActivityHub,
    wire,
)
from workflow_hub.reporting import ActivityView
from workflow_hub.server import FleetApp, serve_fleet
from workflow_hub.server._fleet_app import _Relay
from workflow_hub.server._requests import parse_position

WAIT = 10
_FRAME = SnapshotFrame | ChangedFrame | RemovedFrame


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


def fold(view: ActivityView, event: SseEvent) -> None:
    view.apply(wire.loads(_FRAME, event.get("data") or ""))


async def fold_until(reader: SseReader, view: ActivityView, hub: WorkflowActivityHub) -> None:
    """Fold events until the view holds what the hub holds (bounded by the caller)."""
    while view.snapshot_frame() != hub.snapshot_frame():
        event = await reader.next()
        if not event.comment:
            fold(view, event)


async def wait_for_sources(client: httpx.AsyncClient, url: str, count: int) -> list[Any]:
    while True:
        sources: list[Any] = (await client.get(f"{url}/v1/sources")).json()["sources"]
        if len(sources) >= count and all(s["availability"] == "ready" for s in sources):
            return sources
        await trio.sleep(0.05)


async def test_each_source_streams_to_its_hub_and_a_new_source_appears(
    redis_server: RedisServer,
) -> None:
    prefix = "fleet-serve-1"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            hubs = {name: await mirrored(nursery, redis, prefix, name) for name in ("a", "b")}
            publishers = {name: hub.register_publisher() for name, hub in hubs.items()}
            publishers["a"].publish_snapshot("ready", [root("a1"), root("a2")])
            publishers["b"].publish_snapshot("ready", [root("b1")])
            listed = await wait_for_sources(client, url, 2)
            assert sorted(s["source"] for s in listed) == ["a", "b"]
            assert {s["path"] for s in listed} == {"sources/a/", "sources/b/"}
            for name, hub in hubs.items():
                view = ActivityView()
                async with sse(client, f"{url}/sources/{name}/v1/activity") as reader:
                    assert reader.response.headers["x-workflow-hub-resumed"] == "false"
                    first = await reader.next()
                    assert first.get("event") == "snapshot"  # O1: a snapshot first
                    fold(view, first)
                    publishers[name].publish_changed(
                        root(f"{name}3", state="blocked", reason="awaiting_input", blocks=1)
                    )
                    publishers[name].publish_removed(f"{name}1")
                    await fold_until(reader, view, hub)
                snapshot = await client.get(f"{url}/sources/{name}/v1/snapshot")
                assert wire.loads(SnapshotFrame, snapshot.text) == hub.snapshot_frame()
            # A source that appears later is served too.
            late = await mirrored(nursery, redis, prefix, "late")
            late.register_publisher().publish_snapshot("ready", [root("l1")])
            listed = await wait_for_sources(client, url, 3)
            assert "late" in {s["source"] for s in listed}
            async with sse(client, f"{url}/sources/late/v1/activity") as reader:
                view = ActivityView()
                await fold_until(reader, view, late)
            missing = await client.get(f"{url}/sources/nobody/v1/activity")
            assert missing.status_code == 404
            assert missing.json()["field"] == "source"
            nursery.cancel_scope.cancel()


async def test_a_reconnect_resumes_and_a_foreign_id_gets_a_fresh_snapshot(
    redis_server: RedisServer,
) -> None:
    """R4: the last event id resumes while the frames after it are held; otherwise O4."""
    prefix = "fleet-serve-2"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            hub = await mirrored(nursery, redis, prefix, "r")
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [root("x")])
            await wait_for_sources(client, url, 1)
            stream = f"{url}/sources/r/v1/activity"
            view = ActivityView()
            async with sse(client, stream) as reader:
                await fold_until(reader, view, hub)
                last = None
                publisher.publish_changed(root("y"))
                while view.snapshot_frame() != hub.snapshot_frame():
                    event = await reader.next()
                    fold(view, event)
                    last = event.get("id")
            assert last is not None
            publisher.publish_changed(root("z"))
            async with sse(client, stream, headers={"Last-Event-ID": last}) as reader:
                assert reader.response.headers["x-workflow-hub-resumed"] == "true"
                event = await reader.next()
                assert event.get("event") == "changed"  # no snapshot: the stream goes on
                fold(view, event)
                await fold_until(reader, view, hub)
            async with sse(client, f"{stream}?since=0000-3") as reader:
                assert reader.response.headers["x-workflow-hub-resumed"] == "false"
                assert (await reader.next()).get("event") == "snapshot"
            nursery.cancel_scope.cancel()


async def test_a_source_that_stops_refreshing_is_unavailable_never_its_last_state(
    redis_server: RedisServer,
) -> None:
    """Unknown is never shown as the last state: a stopped mirror's source streams an
    ``unavailable`` snapshot and is listed as unavailable."""
    prefix = "fleet-serve-stale"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix, stale_after=0.3) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            mirror_scope = trio.CancelScope()

            async def mirror_until_cancelled(*, task_status: trio.TaskStatus[Any]) -> None:
                with mirror_scope:
                    async with trio.open_nursery() as inner:
                        task_status.started(await mirrored(inner, redis, prefix, "gone"))

            hub = await nursery.start(mirror_until_cancelled)
            hub.register_publisher().publish_snapshot("ready", [root("x")])
            await wait_for_sources(client, url, 1)
            async with sse(client, f"{url}/sources/gone/v1/activity") as reader:
                view = ActivityView()
                await fold_until(reader, view, hub)
                mirror_scope.cancel()  # the scheduler stops: no more refreshes
                while view.availability != Availability.UNAVAILABLE:
                    event = await reader.next()
                    if not event.comment:
                        fold(view, event)
            assert view.roots == ()
            listed = (await client.get(f"{url}/v1/sources")).json()["sources"]
            assert [(s["source"], s["availability"]) for s in listed] == [("gone", "unavailable")]
            nursery.cancel_scope.cancel()


async def test_the_token_guards_the_data_but_not_the_pages(redis_server: RedisServer) -> None:
    async with (
        fleet_served(redis_server.url, "fleet-serve-3", token="s3cret") as (url, _),
        httpx.AsyncClient(timeout=WAIT) as client,
    ):
        with trio.fail_after(WAIT):
            refused = await client.get(f"{url}/v1/sources")
            allowed = await client.get(f"{url}/v1/sources?token=s3cret")
            page = await client.get(f"{url}/")
            source_page = await client.get(f"{url}/sources/a/")
            script = await client.get(f"{url}/sources/a/static/fold.js")
            data = await client.get(f"{url}/sources/a/v1/snapshot")
            stream = await client.head(f"{url}/v1/fleet")
            stream_allowed = await client.head(f"{url}/v1/fleet?token=s3cret")
            document = await client.get(f"{url}/openapi.json")
    assert stream.status_code == 401
    assert stream_allowed.status_code == 200
    assert stream_allowed.headers["content-type"].startswith("text/event-stream")
    assert document.status_code == 200
    assert document.json()["security"] == [{"bearer": []}, {"tokenQuery": []}]
    assert refused.status_code == 401
    assert allowed.status_code == 200
    assert allowed.json() == {"prefix": "fleet-serve-3", "readable": True, "sources": []}
    assert page.status_code == 200
    assert "fleet.js" in page.text
    assert source_page.status_code == 200
    assert "dashboard.js" in source_page.text
    assert script.status_code == 200
    assert data.status_code == 401


async def test_bad_arguments_name_the_field(redis_server: RedisServer) -> None:
    async with coredis.Redis.from_url(redis_server.url) as redis:
        with pytest.raises(ContractError) as history:
            FleetApp(redis, history=0)
        with pytest.raises(ContractError) as prefix:
            FleetApp(redis, prefix="")
        with pytest.raises(ContractError) as token:
            await serve_fleet(redis, host="0.0.0.0", port=0)
    assert (history.value.path, prefix.value.path, token.value.path) == (
        "history",
        "prefix",
        "token",
    )


# --- the relay, on its own: bounded per client, never a silent gap ---------------------------


def _frames(operations: list[tuple[str, int]]) -> list[Frame]:
    """A sequence a follower could deliver: snapshots (some unavailable) and changes."""
    frames: list[Frame] = [
        SnapshotFrame(
            cursor=Cursor(epoch="e1", revision=1), availability=Availability.READY, roots=()
        )
    ]
    revision = 1
    for kind, number in operations:
        revision += 1
        cursor = Cursor(epoch="e1", revision=revision)
        if kind == "changed":
            frames.append(ChangedFrame(cursor=cursor, root=root(f"r{number}")))
        elif kind == "removed":
            frames.append(RemovedFrame(cursor=cursor, root_run_id=f"r{number}"))
        elif kind == "unavailable":
            revision -= 1
            frames.append(
                SnapshotFrame(
                    cursor=Cursor(epoch="e1", revision=revision),
                    availability=Availability.UNAVAILABLE,
                )
            )
        else:
            frames.append(
                SnapshotFrame(
                    cursor=cursor, availability=Availability.READY, roots=(root(f"r{number}"),)
                )
            )
    return frames


def _fold_chunk(view: ActivityView, chunk: bytes) -> list[str]:
    ids = []
    for block in chunk.decode().split("\n\n"):
        if not block:
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        view.apply(wire.loads(_FRAME, fields["data"]))
        ids.append(fields["id"])
    return ids


@settings(max_examples=150, deadline=None)
@given(
    operations=st.lists(
        st.tuples(
            st.sampled_from(["changed", "removed", "unavailable", "snapshot"]), st.integers(0, 5)
        ),
        max_size=40,
    ),
    reads=st.lists(st.integers(0, 12), max_size=20),
    history=st.integers(1, 8),
)
def test_a_client_folds_what_the_relay_holds_whenever_it_reads(
    operations: list[tuple[str, int]], reads: list[int], history: int
) -> None:
    """Whatever the pace of pushes and reads, a client's fold equals the source's state after
    each read, and it holds nothing but a position (the relay holds at most ``history``)."""
    relay = _Relay("s", history)
    frames = iter(_frames(operations))
    client = ActivityView()
    position: int | None = None
    for burst in [*reads, 10**6]:
        for frame in [f for _, f in zip(range(burst), frames, strict=False)]:
            relay.push(frame)
        assert len(relay.events) <= history
        chunk, position = relay.take(position)
        if chunk is not None:
            ids = _fold_chunk(client, chunk)
            assert ids[-1] == relay.event_id(position)
        assert client.snapshot_frame() == relay.view.snapshot_frame()


def test_resume_positions_are_only_those_the_relay_still_holds() -> None:
    relay = _Relay("s", 2)
    for frame in _frames([("changed", 1), ("changed", 2), ("changed", 3)]):
        relay.push(frame)
    assert relay.start == 2
    assert relay.end == 4

    def resume(text: str) -> int | None:
        return relay.resume_position(parse_position(text, "since"))

    assert resume(relay.event_id(4)) == 4
    assert resume(relay.event_id(2)) == 2
    assert resume(relay.event_id(1)) is None  # trimmed: a fresh snapshot
    assert resume(relay.event_id(5)) is None  # from the future
    assert resume("other-3") is None  # another relay (or server run)
    assert relay.resume_position(None) is None
    chunk, position = relay.take(None)
    assert chunk is not None
    assert chunk.startswith(f"id: {relay.event_id(4)}\nevent: snapshot".encode())
    assert position == 4
    assert json.loads(chunk.decode().split("data: ", 1)[1])["kind"] == "snapshot"


def test_serve_fleet_command_serves_a_mirrored_source(redis_server: RedisServer) -> None:
    """``workflow-hub serve --fleet URL``: a source mirrored by ``serve --redis`` is served, and
    the single-hub ``snapshot`` command reads it under ``/sources/{source}``."""
    cli = [sys.executable, "-m", "workflow_hub._cli"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    prefix = "fleet-cli"
    common = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    with (
        owned_process(
            [
                *cli,
                "serve",
                "--redis",
                redis_server.url,
                "--source",
                "demo",
                "--prefix",
                prefix,
                "--seed",
                "1",
            ],
            **common,
        ) as mirror,
        owned_process(
            [
                *cli,
                "serve",
                "--fleet",
                redis_server.url,
                "--prefix",
                prefix,
                "--port",
                "0",
            ],
            **common,
        ) as server,
    ):
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), (
                server.stderr.read() if server.stderr else ""
            )
            # Until the source is served (both run until terminated; 60 s: a safety net).
            deadline = time.monotonic() + 60
            while True:
                result = subprocess.run(
                    [*cli, "snapshot", f"{url}/sources/demo"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                    env=env,
                    check=False,
                )
                if result.returncode == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.3)
            assert result.returncode == 0, result.stderr
            assert isinstance(wire.loads(SnapshotFrame, result.stdout), SnapshotFrame)
            listed = httpx.get(f"{url}/v1/sources", timeout=5).json()
            assert [source["source"] for source in listed["sources"]] == ["demo"]
        finally:
            server.terminate()
            mirror.terminate()
