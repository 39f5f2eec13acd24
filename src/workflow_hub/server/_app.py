"""The ASGI application: routes, the token guard, and the three streams (SSE, hook SSE, WebSocket).

Routing, requests and plain responses are Starlette's. The two event streams are small ASGI
callables of our own rather than Starlette's ``StreamingResponse``, because what makes a stream
fast here is how writes are made: a client task wakes up, takes *everything* pending in its hub
queue and sends it as one body chunk (one write), never one write per frame. Each frame is encoded
once for all clients (:class:`~workflow_hub.server._encode.FrameEncoder`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import Final, final

import trio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from .._contract import ContractError, Cursor
from .._core import FrameStream, HookRunner, WorkflowActivityHub
from ..metrics import HubMetrics
from ._encode import FrameEncoder, cursor_text, sse_comment
from ._events import HookEventClient, HookEventFanout
from ._middleware import SSE_HEADERS, Guard, NoStore
from ._requests import error_response, resume_position
from ._streams import StreamTracker

__all__ = [
    "DEFAULT_EVENTS_BUFFER",
    "DEFAULT_KEEPALIVE",
    "STATIC_DIR",
    "HubApp",
    "StreamTracker",
    "create_app",
]

logger = logging.getLogger("workflow_hub.server")

DEFAULT_KEEPALIVE: Final = 15.0
"""Seconds of silence after which an event stream sends a comment line."""

DEFAULT_EVENTS_BUFFER: Final = 1000
"""Hook events buffered per ``/v1/events`` client before the oldest are dropped."""

STATIC_DIR: Final = Path(str(files(__package__).joinpath("static")))
"""The web page served at ``/`` (``index.html``) and its files at ``/static/...``."""


@final
class _ActivityStream(Response):
    """``/v1/activity``: one SSE event per frame, everything pending in one write."""

    def __init__(self, app: HubApp, since: Cursor | None, conflate: bool = False) -> None:
        self._hub_app = app
        self._since = since
        self._conflate = conflate
        self.status_code = 200
        self.background = None
        self.raw_headers = list(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._hub_app
        async with app.subscribe(self._since, conflate=self._conflate) as stream:
            # Whether the stream goes on from the client's cursor (no snapshot first): for
            # clients and people debugging; the frames themselves say it too.
            resumed = b"true" if stream.lease.resumed else b"false"
            headers = [*self.raw_headers, (b"x-workflow-hub-resumed", resumed)]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await app.stream_until_done(receive, send, partial(self._frames, stream, send))

    async def _frames(self, stream: FrameStream, send: Send) -> None:
        try:
            await self._send_frames(stream, send)
        except trio.EndOfChannel:
            return  # the hub was disposed

    async def _send_frames(self, stream: FrameStream, send: Send) -> None:
        app = self._hub_app
        backlog = app.encoder.backlog
        keepalive = app.keepalive
        while True:
            with trio.move_on_after(keepalive) as idle:
                # A client that is behind gets everything pending in one write. The hub's queue
                # bounds this: past its limit the hub replaced the backlog with one snapshot.
                frames = await stream.receive_all()
            if idle.cancelled_caught:
                await send(
                    {"type": "http.response.body", "body": app.keepalive_bytes, "more_body": True}
                )
                continue
            await send({"type": "http.response.body", "body": backlog(frames), "more_body": True})


@final
class _HookStream(Response):
    """``/v1/events``: hook events as SSE, with a bounded buffer per client and no resume."""

    def __init__(self, app: HubApp, fanout: HookEventFanout) -> None:
        self._hub_app = app
        self._fanout = fanout
        self.status_code = 200
        self.background = None
        self.raw_headers = list(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._hub_app
        client = self._fanout.attach(app.events_buffer)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            await app.stream_until_done(receive, send, partial(self._events, client, send))
        finally:
            self._fanout.detach(client)

    async def _events(self, client: HookEventClient, send: Send) -> None:
        app = self._hub_app
        hub = app.hub
        # A disposed hub dispatches no more hooks; the stream ends at the next keep-alive.
        while not hub.disposed:
            with trio.move_on_after(app.keepalive) as idle:
                body = await client.take()
            if idle.cancelled_caught:
                if hub.disposed:
                    return
                body = app.keepalive_bytes
            await send({"type": "http.response.body", "body": body, "more_body": True})


@final
class HubApp(StreamTracker):
    """The ASGI application of one hub; what :func:`create_app` returns.

    Mount it in any ASGI server that runs on trio, or let :func:`~workflow_hub.server.serve_hub`
    run it. :meth:`close` ends every open stream cleanly (SSE streams end, WebSockets get close
    code 1001); disposing the hub does the same.
    """

    def __init__(
        self,
        hub: WorkflowActivityHub,
        *,
        token: str | None = None,
        runner: HookRunner | None = None,
        metrics: HubMetrics | None = None,
        cors_origins: Sequence[str] | None = None,
        keepalive: float = DEFAULT_KEEPALIVE,
        events_buffer: int = DEFAULT_EVENTS_BUFFER,
        static_dir: Path | None = STATIC_DIR,
    ) -> None:
        if not isinstance(hub, WorkflowActivityHub):
            raise ContractError("hub", f"expected a WorkflowActivityHub, got {type(hub).__name__}")
        if token is not None and (not isinstance(token, str) or not token):
            raise ContractError("token", "expected a non-empty string or None")
        if runner is not None and not isinstance(runner, HookRunner):
            raise ContractError("runner", f"expected a HookRunner, got {type(runner).__name__}")
        if runner is not None and runner.hub is not hub:
            raise ContractError("runner", "the HookRunner belongs to another hub")
        if metrics is not None and not isinstance(metrics, HubMetrics):
            raise ContractError("metrics", f"expected HubMetrics, got {type(metrics).__name__}")
        if isinstance(cors_origins, str):
            raise ContractError("cors_origins", "expected a list of origins, not one string")
        if not isinstance(keepalive, int | float) or not keepalive > 0:
            raise ContractError("keepalive", f"expected seconds > 0, got {keepalive!r}")
        if type(events_buffer) is not int or events_buffer < 1:
            raise ContractError("events_buffer", f"expected an int >= 1, got {events_buffer!r}")
        self.hub = hub
        self.metrics = metrics
        self.keepalive = float(keepalive)
        self.keepalive_bytes = sse_comment("keep-alive")
        self.events_buffer = events_buffer
        self.encoder = FrameEncoder()
        self._fanout = HookEventFanout(runner) if runner is not None else None
        super().__init__()
        routes: list[Route | WebSocketRoute | Mount] = [
            Route("/healthz", self._healthz),
            Route("/metrics", self._metrics),
            Route("/v1/snapshot", self._snapshot),
            Route("/v1/activity", self._activity),
            Route("/v1/events", self._events),
            WebSocketRoute("/v1/ws", self._websocket),
        ]
        if static_dir is not None:
            self.static_dir = static_dir
            routes.append(Route("/", self._index))
            routes.append(Mount("/static", StaticFiles(directory=static_dir, check_dir=False)))
        inner: ASGIApp = Guard(Starlette(routes=routes), token)
        if cors_origins:
            # Outside the token check: a preflight carries no credentials, and a 401 must carry
            # the CORS headers for the page to read it.
            inner = CORSMiddleware(
                inner,
                allow_origins=list(cors_origins),
                allow_methods=["GET"],
                allow_headers=["Authorization", "Last-Event-ID"],
                expose_headers=["ETag", "X-Workflow-Hub-Resumed"],
            )
        self._app = NoStore(inner)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    # --- streaming helpers -----------------------------------------------------------------

    @asynccontextmanager
    async def subscribe(
        self, since: Cursor | None, *, conflate: bool = False
    ) -> AsyncIterator[FrameStream]:
        async with self.hub.subscribe(since=since, conflate=conflate) as stream:
            yield stream

    # --- endpoints -------------------------------------------------------------------------

    async def _healthz(self, request: Request) -> Response:
        hub = self.hub
        return JSONResponse(
            {
                "status": "ok",
                "cursor": cursor_text(hub.cursor),
                "availability": str(hub.availability),
            }
        )

    async def _metrics(self, request: Request) -> Response:
        if self.metrics is None:
            return error_response(
                404, "metrics are off: pass metrics=HubMetrics(...) to the server"
            )
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def _snapshot(self, request: Request) -> Response:
        frame = self.hub.snapshot_frame()
        etag = f'"{cursor_text(frame.cursor)}"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag})
        body = self.encoder.json(frame)
        return Response(body, media_type="application/json", headers={"ETag": etag})

    async def _activity(self, request: Request) -> Response:
        try:
            since = resume_position(request.query_params, request.headers)
        except ContractError as error:
            return error_response(400, error.problem, error.path)
        # ?conflate=1: a client that lags gets each root's latest frame (issue 29).
        conflate = request.query_params.get("conflate", "0")
        if conflate not in ("0", "1"):
            return error_response(400, f"expected 0 or 1, got {conflate!r}", "conflate")
        return _ActivityStream(self, since, conflate == "1")

    async def _events(self, request: Request) -> Response:
        if self._fanout is None:
            return error_response(
                404,
                "hook events are off: the server was started without a HookRunner (runner=...)",
            )
        return _HookStream(self, self._fanout)

    async def _index(self, request: Request) -> Response:
        index = self.static_dir / "index.html"
        if not index.is_file():
            return error_response(404, "no web page is installed")
        return FileResponse(index, media_type="text/html")

    async def _websocket(self, websocket: WebSocket) -> None:
        try:
            since = resume_position(websocket.query_params, Headers())
        except ContractError as error:
            await websocket.send_denial_response(error_response(400, error.problem, error.path))
            return
        await websocket.accept()
        left = False
        async with self.subscribe(since) as stream, trio.open_nursery() as nursery:

            async def watch_disconnect() -> None:
                nonlocal left
                try:
                    while True:
                        await websocket.receive_text()
                except (WebSocketDisconnect, KeyError, RuntimeError):
                    left = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_disconnect)
            message = self.encoder.message
            with self._tracked():
                async for frame in stream:
                    await websocket.send_text(message(frame))
            nursery.cancel_scope.cancel()
        if not left:
            # 1001 "going away": the server (or its hub) is shutting down.
            await websocket.close(1001)


def create_app(
    hub: WorkflowActivityHub,
    *,
    token: str | None = None,
    runner: HookRunner | None = None,
    metrics: HubMetrics | None = None,
    cors_origins: Sequence[str] | None = None,
    keepalive: float = DEFAULT_KEEPALIVE,
    events_buffer: int = DEFAULT_EVENTS_BUFFER,
) -> HubApp:
    """The ASGI application that shows ``hub`` over HTTP, for mounting in your own server.

    ``token`` protects every endpoint but ``/healthz`` and the web page. ``runner`` (the host's
    :class:`~workflow_hub.HookRunner`) turns on ``/v1/events``; the app registers itself as one
    of its extensions. ``metrics`` turns on ``/metrics``. ``cors_origins`` lists the origins a
    browser may call from; without it no CORS header is sent. ``keepalive`` is the idle time
    after which an event stream sends a comment line; ``events_buffer`` bounds each hook-event
    client's buffer.
    """
    return HubApp(
        hub,
        token=token,
        runner=runner,
        metrics=metrics,
        cors_origins=cors_origins,
        keepalive=keepalive,
        events_buffer=events_buffer,
    )
