"""The ASGI application: routes, the token guard, and the three streams (SSE, hook SSE, WebSocket).

Routing, requests and plain responses are Starlette's. The two event streams are small ASGI
callables of our own rather than Starlette's ``StreamingResponse``, because what makes a stream
fast here is how writes are made: a client task wakes up, takes *everything* pending in its hub
queue and sends it as one body chunk (one write), never one write per frame. Each frame is encoded
once for all clients (:class:`~workflow_hub.server._encode.FrameEncoder`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import Final, Protocol, final

import anyio
import trio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from .._contract import ContractError, Cursor, Frame, SnapshotFrame
from .._core import HookRunner, ObserverLease, WorkflowActivityHub
from ..metrics import HubMetrics
from ._encode import FrameEncoder, cursor_text, sse_comment
from ._events import HookEventClient, HookEventFanout
from ._files import PageFiles, page_response
from ._middleware import Guard, NoStore, ProblemCORS
from ._openapi import OPENAPI_PATH, SCHEMA_PATH, openapi_document
from ._requests import (
    EXCEPTION_HANDLERS,
    contract_problem,
    document_bytes,
    document_response,
    error_response,
    json_response,
    parse_interval,
    problem,
    resume_position,
)
from ._schemas import events_schema
from ._streams import (
    RETRY_FIELD,
    SSE_HEADERS,
    ClientWriter,
    ClosedOverBudget,
    StreamHead,
    StreamTracker,
    WriteBudget,
)

__all__ = [
    "DEFAULT_EVENTS_BUFFER",
    "DEFAULT_KEEPALIVE",
    "STATIC_DIR",
    "HostedHub",
    "HostedRunner",
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


class _Frames(Protocol):
    """A subscription's frames: the hub's ``FrameStream`` (trio) or a host's (asyncio)."""

    @property
    def lease(self) -> ObserverLease: ...

    def __aiter__(self) -> AsyncIterator[Frame]: ...

    async def receive_all(self) -> list[Frame]: ...

    def receive_all_nowait(self) -> list[Frame]: ...


class _FrameSource(Protocol):
    def subscribe(self, *, since: Cursor | None = None) -> AbstractAsyncContextManager[_Frames]: ...


class HostedHub(Protocol):
    """A hub hosted for another event loop (``workflow_hub.asyncio``'s ``Hub``): the trio hub
    behind it, and subscriptions whose frames the host's loop can wait for. The server names
    this shape, not the host, so that hosts build on the server and never the other way round.

    A hosted hub may also offer ``async def wait_closed()``, returning once its host has
    closed: the app's hook-event streams end then (its activity streams end with the
    hub's subscriptions), so that the ASGI server's shutdown does not wait for them."""

    @property
    def trio_hub(self) -> WorkflowActivityHub: ...

    def subscribe(self, *, since: Cursor | None = None) -> AbstractAsyncContextManager[_Frames]: ...


class HostedRunner(Protocol):
    """A hook runner of a host (``workflow_hub.asyncio``'s ``HookRunner``): the trio runner behind it."""

    @property
    def trio_runner(self) -> HookRunner: ...


def _hosted(
    hub: object, runner: HookRunner | HostedRunner | None
) -> tuple[WorkflowActivityHub, HookRunner | None]:
    """The trio hub and runner behind a hosted hub and runner (see :class:`HostedHub`)."""
    trio_hub = getattr(hub, "trio_hub", None)
    if not isinstance(trio_hub, WorkflowActivityHub) or not callable(
        getattr(hub, "subscribe", None)
    ):
        raise ContractError(
            "hub",
            "expected a WorkflowActivityHub or a hosted hub (workflow_hub.asyncio), got "
            f"{type(hub).__name__}",
        )
    if runner is not None and not isinstance(runner, HookRunner):
        trio_runner = getattr(runner, "trio_runner", None)
        if isinstance(trio_runner, HookRunner):
            return trio_hub, trio_runner
    return trio_hub, runner  # type: ignore[return-value]  # checked by the caller


@final
class _ActivityStream(Response):
    """``/v1/activity``: one SSE event per frame, everything pending in one write."""

    def __init__(
        self,
        app: HubApp,
        since: Cursor | None,
        conflate: bool = False,
        interval: float | None = None,
    ) -> None:
        self._hub_app = app
        self._since = since
        self._conflate = conflate
        self._interval = interval  # ?interval=: the least time between two writes of frames
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
            with app.budget.writer(scope, send) as writer:
                writer.lease = stream.lease
                await app.stream_until_done(receive, send, partial(self._frames, stream, writer))

    async def _frames(self, stream: _Frames, writer: ClientWriter) -> None:
        try:
            await self._send_frames(stream, writer)
        except (trio.EndOfChannel, ClosedOverBudget):
            return  # the hub was disposed, or the client closed over its budget

    async def _send_frames(self, stream: _Frames, writer: ClientWriter) -> None:
        app = self._hub_app
        encoder = app.encoder
        backlog = encoder.backlog
        keepalive = app.keepalive
        lease = stream.lease
        interval = self._interval
        # A paced stream writes early when its queue holds half of what it may hold: conflated
        # then, it still fits (a conflating queue overflows when its roots fill more than half).
        room = 0 if interval is None else max(1, app.hub.queue_limit // 2)
        # The retry field goes in front of the first event (a write of its own: the snapshot's
        # bytes are shared by every client, never copied to put something in front).
        await writer.write(RETRY_FIELD)
        while True:
            # A client that is behind gets everything pending in one write. The hub's queue
            # bounds this: past its limit the hub replaced the backlog with one snapshot.
            if lease.pending:
                # Frames came in during the last write: no wait, so no idle timer (a cancel
                # scope with a deadline costs more than the rest of this loop, per write), and
                # no checkpoint either: other tasks pushed them, so this one has let them run
                # since it last took its frames (the checkpoint of receive_all would be a
                # second one, a scheduler round per write). Only the first frames (the attach
                # snapshot, or a resume's) are pending without that, once.
                frames = stream.receive_all_nowait()
            else:
                with anyio.move_on_after(keepalive) as idle:
                    frames = await stream.receive_all()
                if idle.cancelled_caught:
                    await writer.write(app.keepalive_bytes)
                    continue
            written_at = anyio.current_time()
            if type(frames[0]) is SnapshotFrame and len(frames) > 1:
                # A snapshot (attach, overflow, resume) is written from its shared encoding,
                # never joined with what follows into a new string per client.
                await writer.write(encoder.sse(frames.pop(0)))
            await writer.write_frames(backlog, frames)
            if interval is not None:
                await _pace(lease, written_at + interval, interval / _PACE_STEPS, room)


_PACE_STEPS: Final = 8
"""How often, within an ``?interval=``, a paced stream looks whether its queue filled up."""


async def _pace(lease: ObserverLease, until: float, step: float, room: int) -> None:
    """Let frames gather until ``until`` (the clock of ``anyio.current_time``), so that the
    next write carries each root's latest frame once, however often it changed meanwhile; no
    longer than it takes ``room`` frames to be pending."""
    while lease.pending < room:
        left = until - anyio.current_time()
        if left <= 0:
            return
        await anyio.sleep(min(step, left))


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
        wait_closed = self._hub_app._wait_closed
        if wait_closed is None:
            await self._send_events(client, send)
            return
        # A hosted hub says when its host has closed: the stream ends then, not at the next
        # keep-alive, so that an ASGI server shutting down need not wait for it.
        async with anyio.create_task_group() as nursery:

            async def end_when_closed() -> None:
                await wait_closed()
                client.end()

            nursery.start_soon(end_when_closed)
            await self._send_events(client, send)
            nursery.cancel_scope.cancel()

    async def _send_events(self, client: HookEventClient, send: Send) -> None:
        app = self._hub_app
        hub = app.hub
        retry = RETRY_FIELD  # in front of the first event, then never again
        # A disposed hub dispatches no more hooks; the stream ends at the next keep-alive (or
        # when a hosted hub's host has closed).
        while not hub.disposed:
            with anyio.move_on_after(app.keepalive) as idle:
                body = await client.take()
            if idle.cancelled_caught:
                if hub.disposed:
                    return
                body = app.keepalive_bytes
            elif not body:
                return  # ended: the host closed
            elif retry:
                body = retry + body
                retry = b""
            await send({"type": "http.response.body", "body": body, "more_body": True})


@final
class HubApp(StreamTracker):
    """The ASGI application that shows one hub over HTTP, for mounting in your own server
    (``create_app`` is another name for this class).

    Mount it in any ASGI server that runs on trio, or let :func:`~workflow_hub.server.serve_hub`
    run it. For a hub hosted by ``workflow_hub.asyncio`` (pass that host's hub, and its
    ``hook_runner()`` as ``runner``), mount it in an asyncio ASGI server (uvicorn, a FastAPI or
    Starlette app, e.g. ``starlette_app.mount("/hub", app)``): the streams are written with
    anyio, so they run on either loop, and frames reach them through the host's asyncio
    subscriptions; close that host (``hub.close()``, then ``await hub.wait_closed()``) when the
    server starts to shut down, before it closes its connections, and every open stream gets the
    final frame and ends. :meth:`close` ends every open stream cleanly at once (SSE streams end,
    WebSockets get close code 1001); disposing the hub does the same.

    ``token`` protects every endpoint but ``/healthz`` and the web page. ``runner`` (the host's
    :class:`~workflow_hub.HookRunner`) turns on ``/v1/events``; the app registers itself as one
    of its extensions. ``metrics`` turns on ``/metrics``. ``cors_origins`` lists the origins a
    browser may call from; without it no CORS header is sent. ``keepalive`` is the idle time
    after which an event stream sends a comment line; ``events_buffer`` bounds each hook-event
    client's buffer. ``static_dir`` is the web page's folder: its ``index.html`` is served at
    ``/`` and its files at ``/static/...``; the default is the dashboard shipped with the
    server (:data:`STATIC_DIR`), and ``None`` serves no page.
    """

    def __init__(
        self,
        hub: WorkflowActivityHub | HostedHub,
        *,
        token: str | None = None,
        runner: HookRunner | HostedRunner | None = None,
        metrics: HubMetrics | None = None,
        cors_origins: Sequence[str] | None = None,
        keepalive: float = DEFAULT_KEEPALIVE,
        events_buffer: int = DEFAULT_EVENTS_BUFFER,
        static_dir: Path | None = STATIC_DIR,
    ) -> None:
        source: _FrameSource = hub
        self._wait_closed: Callable[[], Awaitable[object]] | None = None
        if not isinstance(hub, WorkflowActivityHub):
            self._wait_closed = getattr(hub, "wait_closed", None)
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
        self.budget = WriteBudget(self.encoder)
        self._fanout = HookEventFanout(runner) if runner is not None else None
        super().__init__()
        self._private = token is not None
        self._openapi_body: bytes | None = None
        self._schema_body: bytes | None = None
        routes: list[Route | WebSocketRoute | Mount] = [
            Route("/livez", self._livez),
            Route("/readyz", self._readyz),
            Route("/healthz", self._healthz),
            Route("/metrics", self._metrics),
            Route("/v1/snapshot", self._snapshot),
            Route("/v1/activity", self._activity),
            Route("/v1/events", self._events),
            WebSocketRoute("/v1/ws", self._websocket),
            # A plain GET (no upgrade) on the WebSocket's path.
            Route("/v1/ws", self._upgrade_required),
            Route(OPENAPI_PATH, self._openapi),
            Route(SCHEMA_PATH, self._wire_schema),
        ]
        if static_dir is not None:
            self.static_dir = static_dir
            routes.append(Route("/", self._index))
            routes.append(Mount("/static", PageFiles(directory=static_dir, check_dir=False)))
        router = self._router = Starlette(
            routes=routes, exception_handlers=dict(EXCEPTION_HANDLERS)
        )
        inner: ASGIApp = Guard(router, token)
        if cors_origins:
            # Outside the token check: a preflight carries no credentials, and a 401 must carry
            # the CORS headers for the page to read it.
            inner = ProblemCORS(
                inner,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "HEAD"],
                allow_headers=["Authorization", "Last-Event-ID", "If-None-Match"],
                expose_headers=["ETag", "X-Workflow-Hub-Resumed"],
            )
        self._app = NoStore(inner)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    # --- streaming helpers -----------------------------------------------------------------

    @asynccontextmanager
    async def subscribe(
        self, since: Cursor | None, *, conflate: bool = False
    ) -> AsyncIterator[_Frames]:
        # The hub's own subscription under trio; the asyncio host's under asyncio. Conflation
        # (issue 29) is the trio hub's: a hosted hub refuses it before a stream starts.
        stream_of = (
            self.hub.subscribe(since=since, conflate=True)
            if conflate
            else self._source.subscribe(since=since)
        )
        async with stream_of as stream:
            yield stream

    # --- endpoints -------------------------------------------------------------------------

    async def _livez(self, request: Request) -> Response:
        """Liveness: the process answers. Never depends on the source (a restart cures nothing)."""
        return json_response(request, b'{"status":"ok"}')

    async def _readyz(self, request: Request) -> Response:
        """Readiness: 200 while the source is ``ready``; 503 while it is recovering or
        unavailable (its roots are unknown, so a balancer should send readers elsewhere)."""
        hub = self.hub
        availability = "unavailable" if hub.disposed else str(hub.availability)
        if availability != "ready":
            # Why, when the source said (C3's detail): what an operator reads first.
            said = None if hub.disposed else hub.snapshot_frame().detail
            why = "" if said is None else f" ({said})"
            return problem(
                503,
                f"the source is {availability}{why}: its roots are not known",
                extra={"availability": availability},
            )
        return json_response(request, b'{"status":"ready","availability":"ready"}')

    async def _healthz(self, request: Request) -> Response:
        """Liveness as the first release answered it, with the cursor (kept; see /livez)."""
        hub = self.hub
        body = {
            "status": "ok",
            "cursor": cursor_text(hub.cursor),
            "availability": str(hub.availability),
        }
        return json_response(request, json.dumps(body, ensure_ascii=False))

    async def _metrics(self, request: Request) -> Response:
        if self.metrics is None:
            return error_response(
                404, "metrics are off: pass metrics=HubMetrics(...) to the server"
            )
        from prometheus_client.exposition import choose_encoder

        # Prometheus asks for OpenMetrics in its Accept header; anything else gets the text format.
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(
            encoder(self.metrics.registry),
            headers={"Content-Type": content_type, "Vary": "Accept"},
        )

    async def _snapshot(self, request: Request) -> Response:
        frame = self.hub.snapshot_frame()
        return json_response(
            request,
            self.encoder.json(frame),
            etag=f'"{cursor_text(frame.cursor)}"',
            cache_control="private, no-cache" if self._private else "no-cache",
        )

    async def _activity(self, request: Request) -> Response:
        try:
            since = resume_position(request.query_params, request.headers)
        except ContractError as error:
            return contract_problem(error)
        # ?conflate=1: a client that lags gets each root's latest frame (issue 29).
        conflate = request.query_params.get("conflate", "0")
        if conflate not in ("0", "1"):
            return error_response(400, f"expected 0 or 1, got {conflate!r}", "conflate")
        if conflate == "1" and self._source is not self.hub:
            return error_response(
                400, "conflation needs a hub served on trio, not a hosted one", "conflate"
            )
        # ?interval=0.1 (with conflate=1): at most one write of frames every 0.1 s, each root's
        # latest (issue 38: a terminal view that draws a few times a second decoded every frame).
        interval_text = request.query_params.get("interval")
        interval = None
        if interval_text is not None:
            try:
                interval = parse_interval(interval_text)
            except ContractError as error:
                return contract_problem(error)
            if conflate != "1":
                return error_response(400, "interval needs conflate=1", "interval")
        if request.method == "HEAD":
            return StreamHead()
        return _ActivityStream(self, since, conflate == "1", interval)

    async def _events(self, request: Request) -> Response:
        if self._fanout is None:
            return error_response(
                404,
                "hook events are off: the server was started without a HookRunner (runner=...)",
            )
        if request.method == "HEAD":
            return StreamHead()
        return _HookStream(self, self._fanout)

    async def _upgrade_required(self, request: Request) -> Response:
        return problem(
            426,
            "/v1/ws is a WebSocket: send the upgrade handshake (Upgrade: websocket)",
            headers={"Upgrade": "websocket"},
        )

    def api_document(self) -> dict[str, object]:
        """This application's OpenAPI 3.1 document (what ``/openapi.json`` serves)."""
        return openapi_document(
            version=_version(),
            token=self._private,
            hooks=self._fanout is not None,
            metrics=self.metrics is not None,
            page=hasattr(self, "static_dir"),
        )

    async def _openapi(self, request: Request) -> Response:
        if self._openapi_body is None:
            self._openapi_body = document_bytes(self.api_document())
        return document_response(request, self._openapi_body, "application/json")

    async def _wire_schema(self, request: Request) -> Response:
        if self._schema_body is None:
            self._schema_body = document_bytes(events_schema())
        return document_response(request, self._schema_body, "application/schema+json")

    async def _index(self, request: Request) -> Response:
        return page_response(request, self.static_dir / "index.html")

    async def _websocket(self, websocket: WebSocket) -> None:
        try:
            since = resume_position(websocket.query_params, Headers())
        except ContractError as error:
            await websocket.send_denial_response(contract_problem(error))
            return
        await websocket.accept()
        left = False
        async with (
            self.subscribe(since) as stream,
            anyio.create_task_group() as nursery,
        ):

            async def watch_disconnect() -> None:
                # Messages from the client mean nothing (the server caps their size: 1009
                # beyond WS_MAX_MESSAGE); only its leaving does.
                nonlocal left
                while (await websocket.receive())["type"] != "websocket.disconnect":
                    pass
                left = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_disconnect)
            message = self.encoder.message
            with self._tracked(), self.budget.writer(websocket.scope, websocket.send) as writer:
                writer.lease = stream.lease
                try:
                    async for frame in stream:
                        await writer.message(websocket.send_text, message(frame))
                except ClosedOverBudget:
                    left = True  # cut: nothing more can be said to it
            nursery.cancel_scope.cancel()
        if not left:
            # 1001 "going away": the server (or its hub) is shutting down.
            await websocket.close(1001)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("workflow-hub")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


create_app: Final = HubApp
"""``create_app(hub, ...)`` is ``HubApp(hub, ...)``: the name the docs have always used, kept as the
class itself so that the two cannot take different arguments."""
