"""The ASGI application: routes, the token guard, and the three streams (SSE, hook SSE, WebSocket).

Routing, requests and plain responses are Starlette's. The two event streams are small ASGI
callables of our own rather than Starlette's ``StreamingResponse``, because what makes a stream
fast here is how writes are made: a client task wakes up, takes *everything* pending in its hub
queue and sends it as one body chunk (one write), never one write per frame. Each frame is encoded
once for all clients (:class:`~workflow_hub.server._encode.FrameEncoder`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol, final

import anyio
import trio
from starlette.applications import Starlette
from starlette.datastructures import Headers, QueryParams
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from .._contract import Cursor, Frame
from .._cursor_text import parse_cursor
from .._errors import ContractError
from .._hooks import HookRunner
from .._hub import WorkflowActivityHub
from .._metrics import HubMetrics
from .._observers import ObserverLease
from ._encode import FrameEncoder, cursor_text, sse_comment
from ._events import HookEventClient, HookEventFanout

if TYPE_CHECKING:
    from ..asyncio import HookRunner as AsyncioHookRunner
    from ..asyncio import Hub as AsyncioHub

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

# Paths a client may read without the token: liveness, and the page (it holds no hub data and
# asks the user for the token itself).
_OPEN_PATHS: Final = frozenset({"/healthz", "/", "/favicon.ico"})
_OPEN_PREFIXES: Final = ("/static/",)

_NO_STORE: Final = (b"cache-control", b"no-store")
_SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    # nginx and some other proxies buffer responses unless told not to.
    (b"x-accel-buffering", b"no"),
]


class _Frames(Protocol):
    """A subscription's frames: the hub's ``FrameStream`` (trio) or the asyncio host's."""

    @property
    def lease(self) -> ObserverLease: ...

    def __aiter__(self) -> AsyncIterator[Frame]: ...

    async def receive_all(self) -> list[Frame]: ...


class _FrameSource(Protocol):
    def subscribe(self, *, since: Cursor | None = None) -> AbstractAsyncContextManager[_Frames]: ...


def _hosted(
    hub: object, runner: HookRunner | AsyncioHookRunner | None
) -> tuple[WorkflowActivityHub, HookRunner | None]:
    """The trio hub and runner behind a ``workflow_hub.asyncio`` host's hub and runner."""
    from ..asyncio import HookRunner as HostRunner
    from ..asyncio import Hub as HostHub

    if not isinstance(hub, HostHub):
        raise ContractError(
            "hub",
            "expected a WorkflowActivityHub or a workflow_hub.asyncio hub, got "
            f"{type(hub).__name__}",
        )
    if isinstance(runner, HostRunner):
        runner = runner.trio_runner
    return hub.trio_hub, runner


def _is_open_path(path: str) -> bool:
    return path in _OPEN_PATHS or path.startswith(_OPEN_PREFIXES)


def _parse_cursor(text: str, field: str) -> Cursor:
    """A cursor's text form (R4), its errors naming the request's ``field``."""
    try:
        return parse_cursor(text)
    except ContractError as error:
        raise ContractError(field, f"{error.problem} (expected '<epoch>:<revision>')") from None


def _error(status: int, message: str, field: str | None = None, **headers: str) -> JSONResponse:
    body: dict[str, str] = {"error": message}
    if field is not None:
        body["field"] = field
    return JSONResponse(body, status_code=status, headers=headers or None)


def _since(query: QueryParams, headers: Headers) -> Cursor | None:
    """Where a stream resumes: the ``since`` query parameter wins over ``Last-Event-ID``.

    An empty value means "no cursor" (a fresh start with a snapshot); anything else that is not a
    cursor raises :class:`ContractError` naming the parameter.
    """
    text = query.get("since")
    if text is not None:
        return _parse_cursor(text, "since") if text else None
    text = headers.get("last-event-id")
    if text:
        return _parse_cursor(text, "Last-Event-ID")
    return None


@final
class _NoStore:
    """The outermost layer: ``Cache-Control: no-store`` on every response, errors included."""

    __slots__ = ("_app",)

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return

        async def send_no_store(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.http.response.start"):
                message["headers"] = [*message.get("headers", ()), _NO_STORE]
            await send(message)

        await self._app(scope, receive, send_no_store)


@final
class _Guard:
    """The token check, inside CORS (so that a browser can read a 401) and outside the routes."""

    __slots__ = ("_app", "_is_open", "_token")

    def __init__(
        self, app: ASGIApp, token: str | None, is_open: Callable[[str], bool] | None = None
    ) -> None:
        self._app = app
        self._token = None if token is None else token.encode()
        self._is_open = is_open or _is_open_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._token is None or scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        if not self._allowed(scope):
            response = _error(
                401, "a valid token is required", "token", **{"WWW-Authenticate": "Bearer"}
            )
            if scope["type"] == "websocket":
                await receive()  # websocket.connect: the handshake comes before any answer
                if "websocket.http.response" not in scope.get("extensions", {}):
                    await send({"type": "websocket.close", "code": 1008})
                    return
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        if self._is_open(scope["path"]):
            return True
        given = Headers(scope=scope).get("authorization", "")
        scheme, _, credentials = given.partition(" ")
        if scheme.lower() == "bearer" and credentials:
            offered = credentials.strip()
        else:
            offered = QueryParams(scope.get("query_string", b"")).get("token", "")
        assert self._token is not None
        # Constant time: how long the comparison takes says nothing about the token.
        return hmac.compare_digest(offered.encode(), self._token)


@final
class _ActivityStream(Response):
    """``/v1/activity``: one SSE event per frame, everything pending in one write."""

    def __init__(self, app: HubApp, since: Cursor | None) -> None:
        self._hub_app = app
        self._since = since
        self.status_code = 200
        self.background = None
        self.raw_headers = list(_SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._hub_app
        async with app.subscribe(self._since) as stream:
            # Whether the stream goes on from the client's cursor (no snapshot first): for
            # clients and people debugging; the frames themselves say it too.
            resumed = b"true" if stream.lease.resumed else b"false"
            headers = [*self.raw_headers, (b"x-workflow-hub-resumed", resumed)]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await app.stream_until_done(receive, send, partial(self._frames, stream, send))

    async def _frames(self, stream: _Frames, send: Send) -> None:
        try:
            await self._send_frames(stream, send)
        except trio.EndOfChannel:
            return  # the hub was disposed

    async def _send_frames(self, stream: _Frames, send: Send) -> None:
        app = self._hub_app
        backlog = app.encoder.backlog
        keepalive = app.keepalive
        while True:
            with anyio.move_on_after(keepalive) as idle:
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
        self.raw_headers = list(_SSE_HEADERS)

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
            with anyio.move_on_after(app.keepalive) as idle:
                body = await client.take()
            if idle.cancelled_caught:
                if hub.disposed:
                    return
                body = app.keepalive_bytes
            await send({"type": "http.response.body", "body": body, "more_body": True})


class StreamTracker:
    """Open event streams, so that :meth:`close` can end them all (shared by the hub's and the
    fleet's applications)."""

    def __init__(self) -> None:
        self._streams: set[anyio.CancelScope] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """End every open stream now and every stream opened later at once. Idempotent."""
        self._closed = True
        for scope in list(self._streams):
            scope.cancel()

    @contextmanager
    def _tracked(self) -> Iterator[anyio.CancelScope]:
        scope = anyio.CancelScope()
        if self._closed:
            scope.cancel()
        self._streams.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._streams.discard(scope)

    async def stream_until_done(
        self, receive: Receive, send: Send, produce: Callable[[], Awaitable[None]]
    ) -> None:
        """Run ``produce`` until it returns (hub disposed), the app closes or the client leaves.

        Unless the client left, the response then ends properly (the last chunk), so the
        client sees the stream end rather than a broken connection.
        """
        gone = False
        async with anyio.create_task_group() as nursery:

            async def watch_disconnect() -> None:
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_disconnect)
            with self._tracked():
                await produce()
            nursery.cancel_scope.cancel()
        if not gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


@final
class HubApp(StreamTracker):
    """The ASGI application of one hub; what :func:`create_app` returns.

    Mount it in any ASGI server that runs on trio, or let :func:`~workflow_hub.server.serve_hub`
    run it. For a hub hosted by ``workflow_hub.asyncio`` (pass that host's hub, and its
    ``hook_runner()`` as ``runner``), mount it in an asyncio ASGI server (uvicorn, a FastAPI or
    Starlette app): the streams are written with anyio, so they run on either loop, and frames
    reach them through the host's asyncio subscriptions. :meth:`close` ends every open stream
    cleanly (SSE streams end, WebSockets get close code 1001); disposing the hub does the same.
    """

    def __init__(
        self,
        hub: WorkflowActivityHub | AsyncioHub,
        *,
        token: str | None = None,
        runner: HookRunner | AsyncioHookRunner | None = None,
        metrics: HubMetrics | None = None,
        cors_origins: Sequence[str] | None = None,
        keepalive: float = DEFAULT_KEEPALIVE,
        events_buffer: int = DEFAULT_EVENTS_BUFFER,
        static_dir: Path | None = STATIC_DIR,
    ) -> None:
        source: _FrameSource = hub
        if not isinstance(hub, WorkflowActivityHub):
            hub, runner = _hosted(hub, runner)
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
        self._source = source
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
        inner: ASGIApp = _Guard(Starlette(routes=routes), token)
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
        self._app = _NoStore(inner)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    # --- streaming helpers -----------------------------------------------------------------

    @asynccontextmanager
    async def subscribe(self, since: Cursor | None) -> AsyncIterator[_Frames]:
        # The hub's own subscription under trio; the asyncio host's under asyncio.
        async with self._source.subscribe(since=since) as stream:
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
            return _error(404, "metrics are off: pass metrics=HubMetrics(...) to the server")
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def _snapshot(self, request: Request) -> Response:
        frame = self.hub.snapshot_frame()
        etag = f'"{cursor_text(frame.cursor)}"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag})
        body = self.encoder._entry(frame).json
        return Response(body, media_type="application/json", headers={"ETag": etag})

    async def _activity(self, request: Request) -> Response:
        try:
            since = _since(request.query_params, request.headers)
        except ContractError as error:
            return _error(400, error.problem, error.path)
        return _ActivityStream(self, since)

    async def _events(self, request: Request) -> Response:
        if self._fanout is None:
            return _error(
                404,
                "hook events are off: the server was started without a HookRunner (runner=...)",
            )
        return _HookStream(self, self._fanout)

    async def _index(self, request: Request) -> Response:
        index = self.static_dir / "index.html"
        if not index.is_file():
            return _error(404, "no web page is installed")
        return FileResponse(index, media_type="text/html")

    async def _websocket(self, websocket: WebSocket) -> None:
        try:
            since = _since(websocket.query_params, Headers())
        except ContractError as error:
            await websocket.send_denial_response(_error(400, error.problem, error.path))
            return
        await websocket.accept()
        left = False
        async with self.subscribe(since) as stream, anyio.create_task_group() as nursery:

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
    hub: WorkflowActivityHub | AsyncioHub,
    *,
    token: str | None = None,
    runner: HookRunner | AsyncioHookRunner | None = None,
    metrics: HubMetrics | None = None,
    cors_origins: Sequence[str] | None = None,
    keepalive: float = DEFAULT_KEEPALIVE,
    events_buffer: int = DEFAULT_EVENTS_BUFFER,
) -> HubApp:
    """The ASGI application that shows ``hub`` over HTTP, for mounting in your own server.

    ``hub`` is a trio hub (mount the app in a trio ASGI server) or a ``workflow_hub.asyncio``
    host's hub (mount it in an asyncio one, e.g. ``starlette_app.mount("/hub", app)`` under
    uvicorn).

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
