"""The hub's ASGI app mounted in a Starlette app under uvicorn, with the hub hosted by asyncio.

SPEC H1 with N1/N2: ``create_app(hub)`` for a ``workflow_hub.asyncio`` hub serves on an asyncio
ASGI server with the same endpoints and guarantees; a real SSE client (httpx + httpx-sse, the
client library ``workflow_hub.remote`` uses) reads, disconnects and resumes from its cursor.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import uvicorn
from httpx_sse import EventSource, ServerSentEvent
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, TextMessage
from wsproto.events import Request as WsRequest

from tests.support.builders import root, run_lifecycle
from workflow_hub import ChangedFrame, Frame, LifecycleEvent, SnapshotFrame, WorkflowEvent
from workflow_hub.asyncio import Hub, open_hub
from workflow_hub.server import create_app
from workflow_hub.wire import loads

from .support import is_unavailable, run


class _Server(uvicorn.Server):
    """uvicorn's server, telling when it listens (and on which port: the config says 0)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[object] | None = None) -> None:
        await super().startup(sockets)  # type: ignore[arg-type]
        self.listening.set()

    @property
    def url(self) -> str:
        port = self.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"


@asynccontextmanager
async def uvicorn_app(hub: Hub, keepalive: float = 0.2) -> AsyncIterator[str]:
    """A Starlette app with the hub mounted at ``/hub``, served by uvicorn; yields its URL."""

    async def home(request: object) -> PlainTextResponse:
        return PlainTextResponse("the scheduler's own page")

    runner = hub.hook_runner()
    hub_app = create_app(hub, runner=runner, keepalive=keepalive)
    runner.bind()
    app = Starlette(routes=[Route("/", home), Mount("/hub", app=hub_app)])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = _Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        await server.listening.wait()
        yield server.url
    finally:
        hub_app.close()  # ends open streams, so that uvicorn's shutdown need not wait for them
        server.should_exit = True
        await serving


async def read_frames(response: httpx.Response, count: int) -> list[ServerSentEvent]:
    events: list[ServerSentEvent] = []
    async for event in EventSource(response).aiter_sse():
        events.append(event)
        if len(events) == count:
            break
    return events


def test_a_starlette_app_under_uvicorn_serves_the_hub_and_an_sse_client_resumes() -> None:
    """H1, N2, R2: read, leave, miss frames, come back with Last-Event-ID: no gap, no snapshot."""

    async def main() -> None:
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [root("a")])
            async with uvicorn_app(hub) as url, httpx.AsyncClient(timeout=10) as client:
                assert (await client.get(f"{url}/")).text == "the scheduler's own page"
                snapshot = await client.get(f"{url}/hub/v1/snapshot")
                assert loads(SnapshotFrame, snapshot.text) == hub.snapshot_frame()

                async with client.stream("GET", f"{url}/hub/v1/activity") as response:
                    assert response.headers["x-workflow-hub-resumed"] == "false"
                    publisher.publish_changed(root("a", active=2))
                    first = await read_frames(response, 2)
                frames: list[Frame] = [loads(Frame, event.data) for event in first]  # type: ignore[arg-type]
                assert isinstance(frames[0], SnapshotFrame)
                assert isinstance(frames[1], ChangedFrame)
                last_id = first[-1].id

                # Missed while disconnected: the resume replays exactly these.
                missed = [publisher.publish_changed(root("a", active=n)) for n in (3, 4)]
                headers = {"Last-Event-ID": last_id}
                async with client.stream(
                    "GET", f"{url}/hub/v1/activity", headers=headers
                ) as response:
                    assert response.headers["x-workflow-hub-resumed"] == "true"
                    resumed = await read_frames(response, 2)
                assert [event.id for event in resumed] == [
                    f"{cursor.epoch}:{cursor.revision}" for cursor in missed if cursor
                ]

    run(main)


def test_hook_events_and_the_final_frame_reach_a_client_of_the_mounted_app() -> None:
    """H1, K6: ``/v1/events`` from the asyncio host's runner; leaving the host ends the stream
    after the final ``unavailable`` frame."""

    async def main() -> tuple[list[WorkflowEvent], list[Frame]]:
        hooks: list[WorkflowEvent] = []
        frames: list[Frame] = []
        async with httpx.AsyncClient(timeout=10) as client, AsyncExitStack() as servers:
            async with open_hub() as hub:
                url = await servers.enter_async_context(uvicorn_app(hub))
                publisher = hub.register_publisher()
                publisher.publish_snapshot("ready", [])
                connected = asyncio.Event()

                async def read_activity() -> None:
                    async with client.stream("GET", f"{url}/hub/v1/activity") as response:
                        connected.set()
                        async for event in EventSource(response).aiter_sse():
                            frames.append(loads(Frame, event.data))  # type: ignore[arg-type]

                reader = asyncio.create_task(read_activity())
                await connected.wait()
                async with client.stream("GET", f"{url}/hub/v1/events") as response:
                    publisher.publish_lifecycle(run_lifecycle("running"))
                    async for event in EventSource(response).aiter_sse():
                        hooks.append(loads(LifecycleEvent, event.data))
                        break
                # Leave the host with the activity stream open, uvicorn still serving.
            # The stream ended by itself (last chunk) after the final frame.
            await asyncio.wait_for(reader, 10)
        return hooks, frames

    hooks, frames = run(main)
    assert [event.event_id for event in hooks] == ["evt-run"]
    assert is_unavailable(frames[-1])


def test_closing_the_host_ends_the_hook_event_streams_of_the_mounted_app() -> None:
    """H1, K6: ``hub.close()`` ends an open ``/v1/events`` stream of the mounted app (its last
    chunk) once the host has closed, not at the next keep-alive (an hour here), so an ASGI
    server's shutdown need not wait for it; the block is still open meanwhile."""

    async def main() -> list[WorkflowEvent]:
        hooks: list[WorkflowEvent] = []
        async with open_hub() as hub, uvicorn_app(hub, keepalive=3600) as url:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            async with (
                httpx.AsyncClient(timeout=None) as client,
                client.stream("GET", f"{url}/hub/v1/events") as response,
            ):
                publisher.publish_lifecycle(run_lifecycle("running"))
                async for event in EventSource(response).aiter_sse():
                    hooks.append(loads(LifecycleEvent, event.data))
                    hub.close()
                # The stream ended (the loop above ran out): the host has closed.
                assert hub.disposed
        return hooks

    hooks = run(main)
    assert [event.event_id for event in hooks] == ["evt-run"]


class _AsyncioWebSocket:
    """A minimal asyncio WebSocket client on wsproto: text messages, and the close code."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._events: list[object] = []
        self.close_code: int | None = None

    async def _next_event(self) -> object:
        while not self._events:
            data = await self._reader.read(65536)
            self._ws.receive_data(data or None)
            self._events.extend(self._ws.events())
        return self._events.pop(0)

    async def handshake(self, target: str) -> None:
        self._writer.write(self._ws.send(WsRequest(host="127.0.0.1", target=target)))
        assert isinstance(await self._next_event(), AcceptConnection)

    async def messages(self) -> AsyncIterator[str]:
        """Each text message until the server closes (its code in ``close_code``)."""
        parts: list[str] = []
        while True:
            event = await self._next_event()
            if isinstance(event, TextMessage):
                parts.append(event.data)
                if event.message_finished:
                    yield "".join(parts)
                    parts.clear()
            elif isinstance(event, CloseConnection):
                self.close_code = event.code
                self._writer.write(self._ws.send(event.response()))
                return


def _frame(message: str) -> Frame:
    """A WebSocket message is ``{"id": <cursor text>, "frame": {...}}``."""
    frame: Frame = loads(Frame, json.dumps(json.loads(message)["frame"]))  # type: ignore[arg-type]
    return frame


def test_the_websocket_endpoint_of_the_mounted_app_streams_until_the_host_closes() -> None:
    """H1, O9: ``/v1/ws`` under uvicorn: the snapshot, each frame, the final frame, then 1001."""

    async def main() -> tuple[list[Frame], int | None]:
        received: list[Frame] = []
        async with AsyncExitStack() as servers:
            async with open_hub() as hub:
                publisher = hub.register_publisher()
                publisher.publish_snapshot("ready", [])
                url = await servers.enter_async_context(uvicorn_app(hub))
                host, _, port = url.removeprefix("http://").rpartition(":")
                reader, writer = await asyncio.open_connection(host, int(port))
                client = _AsyncioWebSocket(reader, writer)
                await client.handshake("/hub/v1/ws")
                messages = client.messages()
                received.append(_frame(await anext(messages)))
                publisher.publish_changed(root("a"))
                received.append(_frame(await anext(messages)))
            # The host closed: the final frame, then "going away".
            received.extend([_frame(text) async for text in messages])
            writer.close()
            return received, client.close_code

    frames, code = run(main)
    assert isinstance(frames[0], SnapshotFrame)
    assert isinstance(frames[1], ChangedFrame)
    assert is_unavailable(frames[-1])
    assert code == 1001
