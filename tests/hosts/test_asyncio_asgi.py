"""The hub's ASGI app mounted in a Starlette app under uvicorn, with the hub hosted by asyncio.

SPEC H1 with N1/N2: ``create_app(hub)`` for a ``workflow_hub.asyncio`` hub serves on an asyncio
ASGI server with the same endpoints and guarantees; a real SSE client (httpx + httpx-sse, the
client library ``workflow_hub.remote`` uses) reads, disconnects and resumes from its cursor.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import uvicorn
from httpx_sse import EventSource, ServerSentEvent
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from workflow_hub import ChangedFrame, Frame, LifecycleEvent, SnapshotFrame, WorkflowEvent
from workflow_hub.asyncio import Hub, open_hub
from workflow_hub.server import create_app
from workflow_hub.wire import loads

from ..builders import root, run_lifecycle
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
async def uvicorn_app(hub: Hub) -> AsyncIterator[str]:
    """A Starlette app with the hub mounted at ``/hub``, served by uvicorn; yields its URL."""

    async def home(request: object) -> PlainTextResponse:
        return PlainTextResponse("the scheduler's own page")

    runner = hub.hook_runner()
    hub_app = create_app(hub, runner=runner, keepalive=0.2)
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
    """H1, N6: ``/v1/events`` from the asyncio host's runner; leaving the host ends the stream
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
