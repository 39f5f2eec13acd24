"""The fleet's hook events over HTTP: one follower for every client, each event encoded once.

:class:`FleetEvents` follows the hook events of every source (one
``engine.follow_events()``, whatever the number of clients) and keeps the last
``history`` items, each encoded once in the two forms a client can ask for:

- ``/sources/{source}/v1/events`` — one source, in the single hub's ``/v1/events`` format (an
  SSE event named by the hook's type, the wire event as data);
- ``/v1/events`` — every source: the same events, with ``{"source", "id", "event"}`` as data.

A ``ContinuityLost`` from the follower is an ``event: dropped`` (as the single hub tells a
client it missed events), naming the source, the reason and the count when known. Each event
has an id, ``<boot>-<position>`` in this server's history, so a client that reconnects with
``Last-Event-ID`` (or ``?since=``) gets everything after it while the history still holds it,
and one ``dropped`` (reason ``"resume"``) otherwise: never a silent gap. A client that falls
further behind than the history reaches gets a ``dropped`` (reason ``"behind"``) the same way.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final, final

import trio
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Send

from .._contract import ContractError, dumps
from ..fleet import ContinuityLost, EventFollower, EventItem, FleetEngine
from ._encode import sse_comment, sse_event
from ._fleet_stream import Positions, SseResponse, quiet_for
from ._requests import contract_problem, resume_fleet_position
from ._streams import RETRY_FIELD, StreamHead, StreamTracker

__all__ = ["DEFAULT_EVENTS_HISTORY", "FleetEvents"]

logger = logging.getLogger("workflow_hub.server")

_KEEPALIVE: Final = sse_comment("keep-alive")

DEFAULT_EVENTS_HISTORY: Final = 4096
"""Hook events (of all sources together) the fleet server keeps for clients that reconnect."""


@final
class _Held:
    """One item of the history, encoded for both kinds of client."""

    __slots__ = ("fleet", "own", "position", "source")

    def __init__(self, position: int, source: str, fleet: bytes, own: bytes) -> None:
        self.position = position
        self.source = source
        self.fleet = fleet
        self.own = own


def _dropped(
    event_id: str | None, source: str | None, reason: str, count: int | None, detail: str
) -> bytes:
    data: dict[str, Any] = {"count": count, "reason": reason, "detail": detail}
    if source is not None:
        data = {"source": source, **data}
    return sse_event("dropped", json.dumps(data, separators=(",", ":")), event_id)


@final
class FleetEvents(Positions):
    """The fleet's hook events for HTTP clients: one follower, a bounded history, positions."""

    def __init__(self, engine: FleetEngine, *, history: int = DEFAULT_EVENTS_HISTORY) -> None:
        if type(history) is not int or history < 1:
            raise ContractError("events_history", f"expected an int >= 1, got {history!r}")
        super().__init__()
        self._engine = engine
        self._held: deque[_Held] = deque(maxlen=history)
        self.stream: EventFollower | None = None

    @property
    def start(self) -> int:
        """The position of the oldest item still held (``end + 1`` when none is)."""
        return self.end - len(self._held) + 1

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Follow the fleet's events for as long as the block runs."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self._run)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()

    async def _run(self, *, task_status: trio.TaskStatus[None]) -> None:
        async with self._engine.follow_events() as stream:
            self.stream = stream
            task_status.started()
            try:
                async for item in stream:
                    self.push(item)
            finally:
                self.stream = None

    def push(self, item: EventItem) -> None:
        self.end += 1
        event_id = self.event_id(self.end)
        if isinstance(item, ContinuityLost):
            args = (item.reason, item.missed, item.detail)
            fleet = _dropped(event_id, item.source, *args)
            own = _dropped(event_id, None, *args)
        else:
            wire = dumps(item.event)
            own = sse_event(item.event.type, wire, event_id)
            source = json.dumps(item.source)
            fleet = sse_event(
                item.event.type,
                f'{{"source":{source},"id":"{item.id}","event":{wire}}}',
                event_id,
            )
        self._held.append(_Held(self.end, item.source, fleet, own))
        self._changed.set()
        self._changed = trio.Event()

    def sources(self) -> set[str]:
        stream = self.stream
        known = {held.source for held in self._held}
        return known | set(stream.sources) if stream is not None else known

    def resume(self, since: tuple[str, int] | None) -> tuple[int, bool]:
        """Where a client starts (the last position it has) and whether that is a resume."""
        if since is None:
            return self.end, False
        boot, position = since
        if boot == self.boot and self.start - 1 <= position <= self.end:
            return position, True
        return self.end, False

    def take(self, position: int, source: str | None) -> tuple[bytes, int]:
        """What a client at ``position`` gets next (maybe nothing), and its new position."""
        if position >= self.end:
            return b"", position
        chunks: list[bytes] = []
        if position < self.start - 1:
            missed = self.start - 1 - position
            chunks.append(
                _dropped(
                    None,
                    None,
                    "behind",
                    missed if source is None else None,
                    "this client fell behind the server's history of hook events",
                )
            )
            position = self.start - 1
        first = position - self.start + 1
        held = self._held
        for index in range(first, len(held)):
            item = held[index]
            if source is None:
                chunks.append(item.fleet)
            elif item.source == source:
                chunks.append(item.own)
        return b"".join(chunks), self.end

    # --- endpoints -------------------------------------------------------------------------

    def response(
        self, request: Request, tracker: StreamTracker, keepalive: float, source: str | None
    ) -> Response:
        """``/v1/events`` (``source=None``) or ``/sources/{source}/v1/events``."""
        try:
            since = resume_fleet_position(request.query_params, request.headers)
        except ContractError as error:
            return contract_problem(error)
        if request.method == "HEAD":
            return StreamHead()
        return _EventStream(self, tracker, keepalive, source, since)


@final
class _EventStream(SseResponse):
    def __init__(
        self,
        events: FleetEvents,
        tracker: StreamTracker,
        keepalive: float,
        source: str | None,
        since: tuple[str, int] | None,
    ) -> None:
        self._position, resumed = events.resume(since)
        super().__init__(tracker, resumed)
        self._events = events
        self._keepalive = keepalive
        self._source = source
        self._since = since

    async def produce(self, send: Send) -> None:
        events = self._events
        position = self._position
        first = RETRY_FIELD
        if self._since is not None and not self._resumed:
            first += _dropped(
                None,
                None,
                "resume",
                None,
                "the position resumed from is not held by this server (restarted, or too old)",
            )
        await send({"type": "http.response.body", "body": first, "more_body": True})
        while True:
            body, position = events.take(position, self._source)
            if not body:
                if not await quiet_for(self._keepalive, events.wait):
                    continue
                body = _KEEPALIVE
            await send({"type": "http.response.body", "body": body, "more_body": True})
