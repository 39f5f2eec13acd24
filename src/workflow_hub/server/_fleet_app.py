"""``serve_fleet``: every source of a fleet over HTTP, each with a single hub's endpoints.

The fleet is read through its engine (:class:`~workflow_hub.fleet.FleetEngine`; Redis today).
One ``engine.follow_fleet()`` reads it (one follower per source, whatever
the number of HTTP clients) and feeds one :class:`_Relay` per source. A relay keeps the source's
folded state (for a client's first snapshot) and the last ``history`` frames, each encoded once
as an SSE event. A client holds nothing but its position in that history: it sends everything
from there in one write, and when it fell behind further than the history reaches it gets one
fresh snapshot instead (bounded per client, never a silent gap). The event ids are positions,
``<relay>-<position>``, so a reconnecting client resumes where it was while the relay still holds
the frames after it, and gets a fresh snapshot otherwise.

Each source is served under ``/sources/{source}/`` with the paths of a single hub's server
(``v1/snapshot``, ``v1/activity``, the page), so the single-hub dashboard shows one source
unchanged; ``/`` is the fleet's page (a table of the sources), ``/v1/sources`` lists them and
``/v1/fleet`` is one stream for the whole fleet (:mod:`._fleet_stream`): every frame is also
appended to its log, and each source's description whenever it changes.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Final, final

import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from .._contract import Availability, ContractError, Frame, SnapshotFrame, dumps
from .._defaults import DEFAULT_PORT
from ..fleet import FleetFollower, SourceLiveness
from ..reporting import ActivityView, aggregate
from ._app import DEFAULT_KEEPALIVE, STATIC_DIR
from ._encode import cursor_text, sse_comment, sse_event
from ._fleet_engine import FleetGiven, fleet_engine
from ._fleet_events import FleetEvents
from ._fleet_openapi import fleet_openapi_document
from ._fleet_stream import (
    DEFAULT_FLEET_LOG,
    FleetFeed,
    FleetSelection,
    FleetStreamResponse,
    HeldEvents,
    SseResponse,
    parse_selection,
    quiet_for,
)
from ._middleware import Guard, NoStore, is_open_path
from ._openapi import OPENAPI_PATH
from ._requests import (
    EXCEPTION_HANDLERS,
    contract_problem,
    document_bytes,
    document_response,
    error_response,
    json_response,
    problem,
    resume_fleet_position,
)
from ._serve import check_binding, run_asgi
from ._streams import RETRY_FIELD, StreamHead, StreamTracker

__all__ = ["DEFAULT_FLEET_HISTORY", "DEFAULT_FLEET_LOG", "FleetApp", "serve_fleet"]

logger = logging.getLogger("workflow_hub.server")

DEFAULT_FLEET_HISTORY: Final = 1024
"""Frames each source keeps for clients that are behind or reconnect."""

FLEET_STREAM_PATH: Final = "/v1/fleet"
"""The one stream of the whole fleet (``FleetFeed``)."""

LIVENESS_CHECK: Final = 0.25
"""Seconds between two looks at what changes without a frame (readable, stale)."""

NOT_YET_RETRY: Final = 1
"""``Retry-After`` (seconds) of the answers about a source the fleet does not hold now (404)
or has no snapshot of yet (503): the fleet looks for sources every second, so a source that
is starting, or that a restarted fleet server has not discovered yet, is "not yet", and a
client that keeps watching (``RemoteHub``) tries again rather than giving up."""

# The page of one source and its files: readable without the token, like the single hub's page.
_SOURCE_PAGE: Final = re.compile(r"^/sources/[^/]+/(static/.*)?$")


def _json_text(body: object) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _is_open_fleet_path(path: str) -> bool:
    return is_open_path(path) or path in _PROBES or _SOURCE_PAGE.match(path) is not None


_PROBES: Final = frozenset({"/livez", "/readyz"})


@final
class _Relay(HeldEvents[bytes]):
    """One source: its folded state and its last frames, each encoded once for every client.

    An id from another relay (or server run) names a different sequence: a fresh snapshot."""

    __slots__ = ("_snapshot", "_snapshot_json", "retired", "source", "view")

    def __init__(self, source: str, history: int) -> None:
        super().__init__(history)
        self.source = source
        self.view = ActivityView()
        self.retired = False
        self._snapshot: bytes | None = None
        self._snapshot_json: str | None = None

    def retire(self) -> None:
        """The source left the fleet: streams end once they sent what they hold, so that
        their clients come back and find the source again if it returns (a new relay)."""
        self.retired = True
        self._changed.set()
        self._changed = trio.Event()

    def push(self, frame: Frame) -> str:
        """Fold and keep ``frame``; its JSON text (encoded once, for the fleet's stream too)."""
        # Every frame the follower delivered, as a local subscriber would get it; the view
        # folds it with ActivityView's rules, the same the page's fold applies.
        self.view.apply(frame)
        self.end += 1
        text = dumps(frame)
        self.events.append(sse_event(frame.kind, text, self.event_id(self.end)))
        self._snapshot = None
        self._snapshot_json = None
        self._changed.set()
        self._changed = trio.Event()
        return text

    def snapshot_json(self) -> str | None:
        """The state at :attr:`end` as a snapshot frame's JSON; ``None`` before the first frame."""
        if self._snapshot_json is None:
            frame = self.view.snapshot_frame()
            if frame is None:
                return None
            self._snapshot_json = dumps(frame)
        return self._snapshot_json

    def snapshot(self) -> bytes | None:
        """The state at :attr:`end` as one snapshot event; ``None`` before the first frame."""
        if self._snapshot is None:
            frame = self.view.snapshot_frame()
            if frame is None:
                return None
            self._snapshot = sse_event(frame.kind, dumps(frame), self.event_id(self.end))
        return self._snapshot

    def take(self, position: int | None) -> tuple[bytes | None, int]:
        """Everything after ``position`` as one chunk, or a snapshot if it is no longer held."""
        if position is None or position < self.start:
            return self.snapshot(), self.end
        if position >= self.end:
            return None, position
        events = self.events
        first = position - self.start
        if first == 0:
            return b"".join(events), self.end
        return b"".join([events[index] for index in range(first, len(events))]), self.end

    def summary(self, liveness: SourceLiveness | None) -> dict[str, Any]:
        """The source as ``/v1/fleet`` describes it: ``/v1/sources``' entry without the cursor."""
        view = self.view
        status = aggregate(view)
        return {
            "source": self.source,
            "availability": None if view.availability is None else str(view.availability),
            "state": str(status.state),
            "detail": view.detail,
            "roots": len(view.roots),
            "working": status.working,
            "blocked": status.blocked,
            "attention": status.attention,
            "last_seen": None if liveness is None else liveness.last_seen,
            "stale": False if liveness is None else liveness.stale,
            "declared": False if liveness is None else liveness.declared,
            "path": f"sources/{self.source}/",
        }

    def describe(self, liveness: SourceLiveness | None) -> dict[str, Any]:
        """The source as ``/v1/sources`` lists it."""
        cursor = self.view.cursor
        return {
            **self.summary(liveness),
            "cursor": None if cursor is None else cursor_text(cursor),
        }


@final
class _SourceStream(SseResponse):
    """``/sources/{source}/v1/activity``: a snapshot (or a resume), then every frame, as SSE."""

    def __init__(self, app: FleetApp, relay: _Relay, position: int | None) -> None:
        super().__init__(app, position is not None)
        self._fleet = app
        self._relay = relay
        self._position = position

    async def produce(self, send: Send) -> None:
        relay = self._relay
        position = self._position
        keepalive = self._fleet.keepalive
        retry = RETRY_FIELD  # in front of the first event, then never again
        while True:
            body, position = relay.take(position)
            if body is None:
                if relay.retired:
                    return  # the client reconnects: "not yet" until the source returns
                if not await quiet_for(keepalive, relay.wait):
                    continue
                body = self._fleet.keepalive_bytes
            elif retry:
                body = retry + body
                retry = b""
            await send({"type": "http.response.body", "body": body, "more_body": True})


@final
class FleetApp(StreamTracker):
    """The ASGI application of a fleet; :meth:`run` (in a nursery) follows the fleet.

    :func:`serve_fleet` does both. Mounted elsewhere: ``await nursery.start(app.run)`` first.
    """

    def __init__(
        self,
        fleet: FleetGiven,
        *,
        prefix: str | None = None,
        token: str | None = None,
        history: int = DEFAULT_FLEET_HISTORY,
        fleet_log: int = DEFAULT_FLEET_LOG,
        stale_after: float | None = None,
        read_timeout: float | None = None,
        retire_after: float | None = None,
        keepalive: float = DEFAULT_KEEPALIVE,
        static_dir: Path | None = STATIC_DIR,
    ) -> None:
        # ``prefix`` ... ``retire_after`` are the engine's settings, for the coredis form only.
        settings = {
            "prefix": prefix,
            "stale_after": stale_after,
            "read_timeout": read_timeout,
            "retire_after": retire_after,
        }
        self.engine = engine = fleet_engine(fleet, settings)
        if token is not None and (not isinstance(token, str) or not token):
            raise ContractError("token", "expected a non-empty string or None")
        if type(history) is not int or history < 1:
            raise ContractError("history", f"expected an int >= 1, got {history!r}")
        if not isinstance(keepalive, int | float) or not keepalive > 0:
            raise ContractError("keepalive", f"expected seconds > 0, got {keepalive!r}")
        super().__init__()
        self.prefix = engine.prefix
        self.history = history
        self.read_timeout = engine.read_timeout
        self.fleet: FleetFollower | None = None  # while run() follows the fleet
        self.keepalive = float(keepalive)
        self.keepalive_bytes = sse_comment("keep-alive")
        self.relays: dict[str, _Relay] = {}
        # Hook events of every source (mirrors started with a runner): /v1/events.
        self.events = FleetEvents(engine)
        self.feed = FleetFeed(fleet_log)
        routes: list[Route | Mount] = [
            Route("/healthz", self._healthz),
            Route("/livez", self._livez),
            Route("/readyz", self._readyz),
            Route("/v1/sources", self._sources),
            Route(FLEET_STREAM_PATH, self._fleet_stream),
            Route(OPENAPI_PATH, self._openapi),
            Route("/sources/{source}/v1/snapshot", self._snapshot),
            Route("/sources/{source}/v1/activity", self._activity),
            Route("/sources/{source}/v1/events", self._source_events),
            Route("/v1/events", self._fleet_events),
        ]
        if static_dir is not None:
            self.static_dir = static_dir
            files = StaticFiles(directory=static_dir, check_dir=False)
            routes += [
                Route("/", self._fleet_page),
                Route("/sources/{source}/", self._source_page),
                Mount("/sources/{source}/static", files),
                Mount("/static", files),
            ]
        router = Starlette(routes=routes, exception_handlers=dict(EXCEPTION_HANDLERS))
        self._router = router
        self._private = token is not None
        self._openapi_body: bytes | None = None
        inner: ASGIApp = Guard(router, token, _is_open_fleet_path)
        self._app = NoStore(inner)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow the fleet until cancelled; then every stream ends."""
        try:
            async with (
                self.events.running(),
                self.engine.follow_fleet() as fleet,
                trio.open_nursery() as nursery,
            ):
                self.fleet = fleet
                nursery.start_soon(self._watch_liveness, fleet)
                task_status.started()
                async for source, frame in fleet:
                    self._deliver(fleet, source, frame)
                nursery.cancel_scope.cancel()
        finally:
            self.fleet = None
            self.close()

    def _deliver(self, fleet: FleetFollower, source: str, frame: Frame | None) -> None:
        relay = self.relays.get(source)
        feed = self.feed
        if frame is None:
            # Retired: clients still streaming it are told it is unknown.
            if relay is not None:
                del self.relays[source]
                cursor = relay.view.cursor
                if cursor is not None:
                    unknown = SnapshotFrame(
                        cursor=cursor, availability=Availability.UNAVAILABLE, detail="retired"
                    )
                    feed.frame(source, unknown.kind, relay.push(unknown))
                relay.retire()
                feed.retired(source)
                logger.info("fleet source %r retired", source)
            return
        if relay is None:
            relay = self.relays[source] = _Relay(source, self.history)
            logger.info("serving fleet source %r", source)
        feed.frame(source, frame.kind, relay.push(frame))
        feed.describe(relay.summary(fleet.liveness.get(source)))

    async def _watch_liveness(self, fleet: FleetFollower) -> None:
        """What changes without a frame: the fleet readable or not, a mirror that stopped (or
        started again) refreshing, a source that declared itself unavailable (its follower
        knew before the frame reached this relay). Checked every :data:`LIVENESS_CHECK`
        seconds."""
        feed = self.feed
        while True:
            feed.set_readable(fleet.readable)
            liveness = fleet.liveness
            for source, relay in self.relays.items():
                seen = liveness.get(source)
                if seen is not None and feed.liveness_changed(source, seen.stale, seen.declared):
                    feed.describe(relay.summary(seen))
            await trio.sleep(LIVENESS_CHECK)

    def picture(self, selection: FleetSelection, only: Iterable[str] | None = None) -> bytes:
        """The fleet now, for a ``/v1/fleet`` client that starts over (see ``FleetFeed``)."""
        fleet = self.fleet
        liveness = {} if fleet is None else fleet.liveness
        relays = self.relays

        def snapshot(source: str) -> str | None:
            relay = relays.get(source)
            return None if relay is None else relay.snapshot_json()

        last_seen = {name: seen.last_seen for name, seen in liveness.items()}
        return self.feed.picture(self.prefix, selection, snapshot, last_seen, only)

    @property
    def readable(self) -> bool:
        """True while the fleet is being read (see ``FleetFollower.readable``)."""
        return self.fleet is not None and self.fleet.readable

    # --- endpoints -------------------------------------------------------------------------

    def _relay(self, request: Request) -> _Relay | Response:
        source = request.path_params["source"]
        relay = self.relays.get(source)
        if relay is None:
            return _no_source_yet(source)
        return relay

    async def _healthz(self, request: Request) -> Response:
        """Liveness as the first release answered it (always 200), with ``readable``."""
        return JSONResponse(
            {"status": "ok", "sources": len(self.relays), "readable": self.readable}
        )

    async def _livez(self, request: Request) -> Response:
        """Liveness: the process answers. Never depends on the fleet's store (a restart cures
        nothing)."""
        return JSONResponse({"status": "ok"})

    async def _readyz(self, request: Request) -> Response:
        """Readiness: 503 while the fleet cannot be read (no read from Redis within
        ``read_timeout``: every source is shown unknown), 200 otherwise."""
        if not self.readable:
            # The same problem+json shape as the single hub's /readyz (server/_requests.py).
            return problem(
                503,
                f"no read from Redis within {self.read_timeout:g}s: every source is shown unknown",
                extra={"readable": False},
            )
        return JSONResponse({"status": "ready", "sources": len(self.relays)})

    async def _sources(self, request: Request) -> Response:
        liveness = self.fleet.liveness if self.fleet is not None else {}
        body = {
            "prefix": self.prefix,
            "readable": self.readable,
            "sources": [
                self.relays[name].describe(liveness.get(name)) for name in sorted(self.relays)
            ],
        }
        # gzip from 1 KiB on, like the single hub's JSON: 200 sources are some 40 KiB.
        return json_response(request, _json_text(body))

    async def _fleet_stream(self, request: Request) -> Response:
        try:
            selection = parse_selection(request.query_params)
            since = resume_fleet_position(request.query_params, request.headers)
        except ContractError as error:
            return contract_problem(error)
        if request.method == "HEAD":
            return StreamHead()
        return FleetStreamResponse(self, selection, since)

    async def _snapshot(self, request: Request) -> Response:
        relay = self._relay(request)
        if not isinstance(relay, _Relay):
            return relay
        frame = relay.view.snapshot_frame()
        if frame is None:
            return error_response(
                503,
                "no snapshot of this source yet",
                "source",
                **{"Retry-After": str(NOT_YET_RETRY)},
            )
        etag = f'"{cursor_text(frame.cursor)}"'
        return json_response(
            request, relay.snapshot_json() or dumps(frame), etag=etag, cache_control="no-cache"
        )

    async def _activity(self, request: Request) -> Response:
        relay = self._relay(request)
        if not isinstance(relay, _Relay):
            return relay
        try:
            since = resume_fleet_position(request.query_params, request.headers)
        except ContractError as error:
            return contract_problem(error)
        if request.method == "HEAD":
            return StreamHead()
        return _SourceStream(self, relay, relay.resume_position(since))

    async def _source_events(self, request: Request) -> Response:
        source = request.path_params["source"]
        if source not in self.relays and source not in self.events.sources():
            return _no_source_yet(source)
        return self.events.response(request, self, self.keepalive, source)

    async def _fleet_events(self, request: Request) -> Response:
        return self.events.response(request, self, self.keepalive, None)

    def api_document(self) -> dict[str, object]:
        """This application's OpenAPI 3.1 document (what ``/openapi.json`` serves)."""
        return fleet_openapi_document(
            version=_version(), token=self._private, page=hasattr(self, "static_dir")
        )

    async def _openapi(self, request: Request) -> Response:
        if self._openapi_body is None:
            self._openapi_body = document_bytes(self.api_document())
        return document_response(request, self._openapi_body, "application/json")

    async def _fleet_page(self, request: Request) -> Response:
        return self._page("fleet.html")

    async def _source_page(self, request: Request) -> Response:
        return self._page("index.html")

    def _page(self, name: str) -> Response:
        page = self.static_dir / name
        if not page.is_file():
            return error_response(404, "no web page is installed")
        return FileResponse(page, media_type="text/html")


def _no_source_yet(source: str) -> Response:
    """404 with ``Retry-After``: the source is not in the fleet now, which is "not yet" (it may
    be starting, or this server may not have discovered it yet since it started), never
    "never"; a one-shot request reads the 404, a watching client tries again."""
    return error_response(
        404,
        f"no source {source!r} in this fleet (yet)",
        "source",
        **{"Retry-After": str(NOT_YET_RETRY)},
    )


def _version() -> str:
    try:
        return version("workflow-hub")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


async def serve_fleet(
    fleet: FleetGiven,
    *,
    prefix: str | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    insecure: bool = False,
    history: int = DEFAULT_FLEET_HISTORY,
    fleet_log: int = DEFAULT_FLEET_LOG,
    stale_after: float | None = None,
    read_timeout: float | None = None,
    retire_after: float | None = None,
    keepalive: float = DEFAULT_KEEPALIVE,
    cors_origins: Sequence[str] | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve every source of a fleet: ``url = await nursery.start(serve_fleet, engine)``.

    ``fleet`` is a :class:`~workflow_hub.fleet.FleetEngine` (``RedisFleet(redis, prefix=…)``),
    or a coredis client the caller opened: then ``prefix``, ``stale_after``, ``read_timeout``
    and ``retire_after`` are the settings of the :class:`~workflow_hub.redis.RedisFleet` made
    over it (with an engine they are its own, and left out here). Each source gets a single hub's endpoints
    under ``/sources/{source}/``; ``/v1/sources`` lists the sources and ``/`` shows them all.
    ``history`` frames per source are kept for clients that are behind or reconnect (beyond
    it they get a fresh snapshot), and ``fleet_log`` events of the whole fleet for clients of
    ``/v1/fleet``. The binding rules are those of
    :func:`~workflow_hub.server.serve_hub`.
    """
    check_binding(host, port, token, insecure)
    app = FleetApp(
        fleet,
        prefix=prefix,
        token=token,
        history=history,
        fleet_log=fleet_log,
        stale_after=stale_after,
        read_timeout=read_timeout,
        retire_after=retire_after,
        keepalive=keepalive,
    )
    asgi: ASGIApp = app
    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        asgi = CORSMiddleware(
            app,
            allow_origins=list(cors_origins),
            allow_methods=["GET"],
            allow_headers=["Authorization", "Last-Event-ID"],
            expose_headers=["ETag", "X-Workflow-Hub-Resumed"],
        )
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        url: str = await nursery.start(
            partial(run_asgi, asgi, app, host=host, port=port, keepalive=keepalive)
        )
        task_status.started(url)
        await trio.sleep_forever()
