"""Clients of one fleet source keep watching: through a reconnect, a fleet restart, a source
that is not there yet or has left (issue 37).

A resume position that does not apply to this server run (another run's id, a hub's cursor, a
fleet's id sent to a hub) gets a fresh snapshot, never a 400 that ends the client (R2, N2); a
source the fleet does not hold now is "not yet" — a 404 with ``Retry-After`` that ``RemoteHub``
waits out — never "never"; text that is no position at all is still a 400 naming the field (R4).
A real redis-server, real mirrors, and for the restart a real ``serve --fleet`` process
restarted on the same port.
"""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import coredis
import httpx
import pytest
import trio

from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.netutil import CuttingProxy, served, sse
from tests.support.processes import open_owned_process
from tests.support.redis_server import RedisServer, eventually, free_port
from workflow_hub import Availability, Frame, SnapshotFrame, open_hub
from workflow_hub.redis import mirror_hub
from workflow_hub.remote import Backoff, RemoteHub, RemoteStream
from workflow_hub.reporting import ActivityView
from workflow_hub.server import serve_fleet

COMMAND = [sys.executable, "-m", "workflow_hub._cli"]
PROBLEM = "application/problem+json"
# Reconnections that come back fast: the tests wait for events, not for a backoff.
FAST = Backoff(initial=0.02, maximum=0.2)
# Safety nets only: every wait below ends on what it waits for.
NET = 60
PROCESS_NET = 120


@pytest.fixture
def prefix() -> str:
    return f"reconnect-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def fleet_served(
    redis: coredis.Redis[bytes], prefix: str, **options: Any
) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(
            functools.partial(serve_fleet, redis, prefix=prefix, port=0, **options)
        )
        try:
            yield url
        finally:
            nursery.cancel_scope.cancel()


async def until(
    stream: RemoteStream, view: ActivityView, done: Callable[[ActivityView], bool]
) -> list[Frame]:
    """Fold frames of ``stream`` into ``view`` until ``done(view)``; the frames folded."""
    frames: list[Frame] = []
    while not done(view):
        frame = await stream.receive()
        view.apply(frame)
        frames.append(frame)
    return frames


def has(*names: str) -> Callable[[ActivityView], bool]:
    return lambda view: set(names) <= {root.root_run_id for root in view.roots}


async def ready_source(client: httpx.AsyncClient, url: str, source: str) -> str:
    """Wait until ``source`` is served; the id of its first event."""
    while (await client.get(f"{url}/sources/{source}/v1/snapshot")).status_code != 200:  # noqa: ASYNC110
        await trio.sleep(0.02)
    async with sse(client, f"{url}/sources/{source}/v1/activity") as reader:
        first = await reader.next()
    event_id = first.get("id")
    assert event_id is not None
    return event_id


# --- the restart, with real processes -------------------------------------------------------


def text_of(log: Path) -> str:
    return log.read_text()


@asynccontextmanager
async def fleet_process(redis_url: str, prefix: str, port: int, log: Path) -> AsyncIterator[str]:
    """``workflow-hub serve --fleet`` on ``port``; yields its URL once it listens."""
    with log.open("ab") as errors:
        async with open_owned_process(
            [*COMMAND, "serve", "--fleet", redis_url, "--prefix", prefix, "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=errors,
        ) as process:
            assert process.stdout is not None
            line = b""
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(1)
                assert chunk, f"serve --fleet ended first: {text_of(log)}"
                line += chunk
            url = line.decode().strip()
            assert url == f"http://127.0.0.1:{port}", (url, text_of(log))
            yield url


async def test_remote_hub_on_a_fleet_source_outlives_a_restart_of_the_fleet_server(
    redis_server: RedisServer, prefix: str, tmp_path: Path
) -> None:
    """R2, N2: ``RemoteHub`` on ``http://FLEET/sources/s1`` reconnects to the fleet server that
    restarted on the same port: it resends its position (today's client: the frame's cursor,
    which was a 400), the new run does not hold it (nor, for its first second, the source: a
    404 "(yet)"), and the stream goes on with a fresh snapshot of what changed meanwhile."""
    port = free_port()
    log = tmp_path / "fleet.log"
    with trio.fail_after(PROCESS_NET):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            hub = await mirrored(nursery, redis, prefix, "s1")
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a1")])
            remote = RemoteHub(f"http://127.0.0.1:{port}/sources/s1", backoff=FAST)
            view = ActivityView()
            async with remote.subscribe() as stream, httpx.AsyncClient(timeout=NET) as client:
                async with fleet_process(redis_server.url, prefix, port, log) as url:
                    await ready_source(client, url, "s1")  # the first connection is no retry
                    await until(stream, view, has("a1"))
                    publisher.publish_changed(root("a2"))
                    before = await until(stream, view, has("a2"))
                assert [frame.kind for frame in before] == ["changed"]
                # The first run is gone; the source changes meanwhile.
                publisher.publish_changed(root("a3"))
                async with fleet_process(redis_server.url, prefix, port, log):
                    after = await until(stream, view, has("a1", "a2", "a3"))
            nursery.cancel_scope.cancel()
    assert isinstance(after[0], SnapshotFrame), after
    assert stream.reconnects >= 1
    assert stream.resynced
    assert "Traceback" not in text_of(log)


# --- a reconnect to the same run resumes -----------------------------------------------------


async def test_remote_hub_resumes_a_fleet_source_after_cut_connections_without_a_snapshot(
    redis_server: RedisServer, prefix: str
) -> None:
    """R2: a connection cut anywhere (mid-event included) reconnects with the id of the last
    frame yielded, which the relay still holds: the frames missed, no snapshot, no gap, no
    duplicate (today's client sent the cursor and ended on the fleet's 400)."""
    names = [f"r{index}" for index in range(30)]
    with trio.fail_after(NET):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
            fleet_served(redis, prefix) as url,
            httpx.AsyncClient(timeout=NET) as client,
        ):
            hub = await mirrored(nursery, redis, prefix, "a")
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("r0")])
            await ready_source(client, url, "a")
            proxy = CuttingProxy(int(url.rpartition(":")[2]), seed=37, max_bytes=1500)
            proxy_port: int = await nursery.start(proxy.run)
            remote = RemoteHub(f"http://127.0.0.1:{proxy_port}/sources/a", backoff=FAST)
            view = ActivityView()
            async with remote.subscribe() as stream:
                frames = await until(stream, view, has("r0"))
                for name in names[1:]:
                    publisher.publish_changed(root(name))
                frames += await until(stream, view, has(*names))
            nursery.cancel_scope.cancel()
    assert proxy.cuts >= 2
    assert stream.reconnects >= 2
    kinds = [frame.kind for frame in frames]
    assert kinds == ["snapshot"] + ["changed"] * (len(names) - 1), kinds
    revisions = [frame.cursor.revision for frame in frames]
    assert revisions == sorted(set(revisions)), revisions


# --- not yet, not never ---------------------------------------------------------------------


async def test_remote_hub_waits_for_a_source_the_fleet_does_not_hold_yet(
    redis_server: RedisServer, prefix: str
) -> None:
    """N4: a source not discovered yet is "not yet": the fleet answers 404 with
    ``Retry-After`` (a one-shot request reads the 404), ``RemoteHub`` waits it out, saying why
    (``refusal``), and follows the source once its mirror starts."""
    with trio.fail_after(NET):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
            fleet_served(redis, prefix) as url,
            httpx.AsyncClient(timeout=NET) as client,
        ):
            for path in ("v1/snapshot", "v1/activity", "v1/events"):
                answer = await client.get(f"{url}/sources/late/{path}")
                assert answer.status_code == 404, path
                assert answer.headers["content-type"] == PROBLEM
                assert answer.headers["retry-after"] == "1"
                assert answer.json()["field"] == "source"
                assert "(yet)" in answer.json()["detail"]
            view = ActivityView()
            async with RemoteHub(f"{url}/sources/late", backoff=FAST).subscribe() as stream:
                async with trio.open_nursery() as reading:
                    reading.start_soon(until, stream, view, has("l1"))
                    await eventually(lambda: stream.refusal is not None)  # its first answer
                    assert stream.refusal == "404: no source 'late' in this fleet (yet)"
                    assert not stream.connected
                    hub = await mirrored(nursery, redis, prefix, "late")
                    hub.register_publisher().publish_snapshot(Availability.READY, [root("l1")])
                assert stream.connected
                assert stream.refusal is None
            nursery.cancel_scope.cancel()


async def test_a_retired_source_ends_its_streams_and_its_clients_find_it_when_it_returns(
    redis_server: RedisServer, prefix: str
) -> None:
    """N4, N5: a source that retires is told unknown (an ``unavailable`` snapshot), then its
    stream ends, so its clients are not left on a relay the fleet dropped: they wait out the
    404 "(yet)" and follow the source when a scheduler of that name comes back."""
    with trio.fail_after(NET):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
            fleet_served(redis, prefix, stale_after=0.3, retire_after=1.0) as url,
            httpx.AsyncClient(timeout=NET) as client,
        ):
            first = trio.CancelScope()

            async def scheduler(name: str, scope: trio.CancelScope) -> None:
                with scope:
                    async with open_hub() as hub, trio.open_nursery() as inner:
                        hub.register_publisher().publish_snapshot(Availability.READY, [root(name)])
                        mirror = await inner.start(
                            functools.partial(
                                mirror_hub,
                                hub,
                                redis,
                                source="s",
                                prefix=prefix,
                                refresh_interval=0.1,
                                retire_after=1.0,
                            )
                        )
                        await mirror.wait_claimed()
                        await trio.sleep_forever()

            nursery.start_soon(scheduler, "old", first)
            await ready_source(client, url, "s")
            view = ActivityView()
            async with RemoteHub(f"{url}/sources/s", backoff=FAST).subscribe() as stream:
                await until(stream, view, has("old"))
                first.cancel()  # killed: it declares nothing, it stops refreshing
                await until(stream, view, lambda view: view.availability is not Availability.READY)
                frames: list[Frame] = []

                async def read() -> None:
                    back = has("new")
                    frames.extend(await until(stream, view, back))

                async with trio.open_nursery() as reading:
                    reading.start_soon(read)
                    # The stream ended; the source is not there.
                    await eventually(lambda: stream.refusal is not None)
                    assert "(yet)" in (stream.refusal or "")
                    nursery.start_soon(scheduler, "new", trio.CancelScope())
            nursery.cancel_scope.cancel()
    assert isinstance(frames[0], SnapshotFrame)
    assert view.availability is Availability.READY
    assert {root.root_run_id for root in view.roots} == {"new"}


# --- what the servers answer ----------------------------------------------------------------


async def test_a_position_of_another_run_or_kind_is_a_fresh_start_on_every_fleet_stream(
    redis_server: RedisServer, prefix: str
) -> None:
    """R2, N2: a hub's cursor (what ``RemoteHub`` sent) and an id of another run, by
    ``Last-Event-ID`` or ``since``, start the source's stream over with a snapshot, the
    fleet's stream with a picture, the events stream with a ``dropped`` notice; text that is no
    position of any kind is still a 400 problem naming the field (R4)."""
    with trio.fail_after(NET):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
            fleet_served(redis, prefix) as url,
            httpx.AsyncClient(timeout=NET) as client,
        ):
            hub = await mirrored(nursery, redis, prefix, "a")
            hub.register_publisher().publish_snapshot(Availability.READY, [root("a1")])
            event_id = await ready_source(client, url, "a")
            boot = event_id.rpartition("-")[0]
            cursor = f"{hub.cursor.epoch}:{hub.cursor.revision}"
            foreign = [cursor, "0123abcd-1", "some-epoch:7"]
            assert f"{boot}-0" != foreign[1]
            for text in foreign:
                for options in ({"params": {"since": text}}, {"headers": {"Last-Event-ID": text}}):
                    async with sse(client, f"{url}/sources/a/v1/activity", **options) as reader:
                        assert reader.response.status_code == 200, (text, options)
                        assert reader.response.headers["x-workflow-hub-resumed"] == "false"
                        assert (await reader.next()).get("event") == "snapshot"
                    async with sse(client, f"{url}/v1/fleet", **options) as reader:
                        assert reader.response.status_code == 200, (text, options)
                        assert (await reader.next()).get("event") == "fleet"
                    async with sse(client, f"{url}/sources/a/v1/events", **options) as reader:
                        assert reader.response.status_code == 200, (text, options)
                        assert (await reader.next()).get("event") == "dropped"
            # Still a resume: the relay's own id.
            async with sse(
                client, f"{url}/sources/a/v1/activity", headers={"Last-Event-ID": event_id}
            ) as reader:
                assert reader.response.headers["x-workflow-hub-resumed"] == "true"
            # No position of any kind: a 400 naming the field.
            for text in ("zzz", "epoch:-1", f"{boot}-x", "bo ot-1", "a:b:c-1x", ":5"):
                for field, options in (
                    ("since", {"params": {"since": text}}),
                    ("Last-Event-ID", {"headers": {"Last-Event-ID": text}}),
                ):
                    for path in ("sources/a/v1/activity", "v1/fleet", "sources/a/v1/events"):
                        answer = await client.get(f"{url}/{path}", **options)
                        assert answer.status_code == 400, (text, field, path)
                        assert answer.headers["content-type"] == PROBLEM
                        assert answer.json()["field"] == field
            nursery.cancel_scope.cancel()


async def test_a_fleet_id_sent_to_a_single_hub_is_a_fresh_snapshot() -> None:
    """R2: the URL a fleet served before may be a single hub's now (behind the same proxy): a
    browser's EventSource resends the fleet's id, and a 400 would end it for good. A fresh
    snapshot instead; a malformed cursor is still a 400 naming the field (R4)."""
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        hub.register_publisher().publish_snapshot(Availability.READY, [root("h1")])
        with trio.fail_after(NET):
            for options in (
                {"headers": {"Last-Event-ID": "0123abcd-17"}},
                {"params": {"since": "0123abcd-17"}},
            ):
                async with sse(client, f"{url}/v1/activity", **options) as reader:
                    assert reader.response.status_code == 200
                    assert reader.response.headers["x-workflow-hub-resumed"] == "false"
                    assert (await reader.next()).get("event") == "snapshot"
            refused = await client.get(f"{url}/v1/activity", params={"since": "epoch:-1"})
    assert refused.status_code == 400
    assert refused.json()["field"] == "since"


# --- watch -----------------------------------------------------------------------------------


async def lines_until(
    process: trio.Process, lines: list[str], wanted: Callable[[list[str]], bool]
) -> None:
    """Read the process' stdout into ``lines`` until ``wanted(lines)``."""
    assert process.stdout is not None
    pending = b""
    while not wanted(lines):
        chunk = await process.stdout.receive_some(65536)
        assert chunk, f"the output ended first: {lines}"
        *complete, pending = (pending + chunk).split(b"\n")
        lines.extend(line.decode(errors="replace") for line in complete)


async def test_watch_waits_for_a_fleet_source_that_is_not_there_yet(
    redis_server: RedisServer, prefix: str
) -> None:
    """N4: ``watch http://FLEET/sources/late`` before the source exists says why it waits (its
    start no longer exits on the fleet's 404 "(yet)", nor calls it "no hub here"), and shows
    the source once its mirror starts; Ctrl-C ends it."""
    with trio.fail_after(PROCESS_NET):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
            fleet_served(redis, prefix) as url,
            open_owned_process(
                [*COMMAND, "watch", f"{url}/sources/late"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            ) as watch,
        ):
            lines: list[str] = []
            await lines_until(
                watch, lines, lambda lines: any("no source 'late'" in x for x in lines)
            )
            hub = await mirrored(nursery, redis, prefix, "late")
            hub.register_publisher().publish_snapshot(Availability.READY, [root("l1")])
            await lines_until(watch, lines, lambda lines: any("frame snapshot" in x for x in lines))
            watch.send_signal(signal.SIGINT)
            await watch.wait()
            nursery.cancel_scope.cancel()
    waiting = next(line for line in lines if "no source 'late'" in line)
    assert waiting == "connection connecting (no source 'late' in this fleet)", lines
    assert watch.returncode in (0, 130), lines
