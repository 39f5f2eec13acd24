"""``/v1/fleet``: one event stream for a whole fleet, each event naming its source.

:class:`FleetFeed` keeps one log of the fleet, shared by every client: a ``source`` event
whenever a source's description (what ``/v1/sources`` lists) changes, a ``retired`` event when
one leaves, a ``readable`` event when Redis stops or starts answering, and every frame of every
source (``snapshot``/``changed``/``removed`` with ``{"source": …, "frame": …}``), each encoded
once. Every event's id is its position in that log, ``<boot>-<position>``.

A client holds nothing but its position and what it selected (frames of the sources it names,
of all of them, or of none: the table only). It sends everything from its position in one
write; when it fell behind further than the log reaches (a slow client) or reconnects with an
id the log no longer holds (another server run, trimmed), it gets a fresh picture instead: a
``fleet`` event (every source's description) and a snapshot of each source it selected. So a
slow client costs no memory, never slows the fleet, and never misses a change silently.
"""

from __future__ import annotations

import json
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import partial
from typing import Any, Final, Generic, Protocol, TypeVar, final

import trio
from starlette.datastructures import QueryParams
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .._contract import ContractError
from ._encode import sse_event
from ._streams import RETRY_FIELD, SSE_HEADERS

__all__ = [
    "DEFAULT_FLEET_LOG",
    "MAX_SELECTED",
    "FleetFeed",
    "FleetSelection",
    "FleetStreamResponse",
    "FleetStreams",
    "HeldEvents",
    "Positions",
    "SseResponse",
    "Streaming",
    "parse_selection",
    "quiet_for",
]

DEFAULT_FLEET_LOG: Final = 8192
"""Events of the whole fleet kept for clients that are behind or reconnect."""

MAX_SELECTED: Final = 100
"""At most this many ``source`` parameters on one stream (``frames=all`` for every source)."""

# A description is sent again when one of these changed: not for every frame (a cursor moves
# at each one) and not for every refresh (last_seen moves every second of every source).
# The last two are the source's liveness (``FleetFeed.liveness_changed``).
_KEY_FIELDS: Final = (
    "availability",
    "state",
    "detail",
    "roots",
    "working",
    "blocked",
    "attention",
    "stale",
    "declared",
)


@final
class FleetSelection:
    """Whose frames a client receives: ``every`` source's, or those ``named``; ``fresh`` are
    named sources that get a snapshot even when the stream resumes (newly selected)."""

    __slots__ = ("every", "fresh", "named")

    def __init__(self, every: bool, named: frozenset[str], fresh: frozenset[str]) -> None:
        self.every = every
        self.named = named
        self.fresh = fresh

    def wants(self, source: str) -> bool:
        return self.every or source in self.named


def parse_selection(query: QueryParams) -> FleetSelection:
    """``?source=a&source=b`` (frames of a and b), ``?frames=all`` (every source's), neither
    (the table only); ``snapshot=a`` for a selected source the client has no picture of."""
    frames = query.get("frames")
    if frames is not None and frames != "all":
        raise ContractError("frames", f"expected 'all' or nothing, got {frames!r}")
    named = query.getlist("source")
    if len(named) > MAX_SELECTED:
        raise ContractError("source", f"at most {MAX_SELECTED} sources (frames=all for every one)")
    if any(not name for name in named):
        raise ContractError("source", "a source name is not empty")
    every = frames == "all"
    fresh = frozenset(query.getlist("snapshot"))
    selection = FleetSelection(every, frozenset(named), fresh)
    for name in fresh:
        if not selection.wants(name):
            raise ContractError("snapshot", f"{name!r} is not a selected source")
    return selection


def _framed(source: str, frame_json: str) -> str:
    return f'{{"source":{json.dumps(source, ensure_ascii=False)},"frame":{frame_json}}}'


def _text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Positions:
    """What clients follow by position: event ids are ``<boot>-<position>``, and ``boot`` is
    new for every log of every run, so an id from another run (or another log) is never taken
    for a position here. :meth:`wait` returns at the next change (``end`` moved)."""

    __slots__ = ("_changed", "boot", "end")

    def __init__(self) -> None:
        self.boot = secrets.token_hex(4)
        self.end = 0
        self._changed = trio.Event()

    def event_id(self, position: int) -> str:
        return f"{self.boot}-{position}"

    async def wait(self) -> None:
        await self._changed.wait()


_T = TypeVar("_T")


class HeldEvents(Positions, Generic[_T]):
    """The last events of a log, each at a position (``end`` is the last one's)."""

    __slots__ = ("events",)

    def __init__(self, size: int) -> None:
        super().__init__()
        self.events: deque[_T] = deque(maxlen=size)

    @property
    def start(self) -> int:
        """The position of the oldest event held, minus one: a client at it misses nothing."""
        return self.end - len(self.events)

    def resume_position(self, since: tuple[str, int] | None) -> int | None:
        """Where a client that last saw ``since`` continues, if every event after it is held."""
        if since is None:
            return None
        boot, position = since
        if boot != self.boot:
            return None
        return position if self.start <= position <= self.end else None


@final
class FleetFeed(HeldEvents[tuple[str | None, bytes]]):
    """The fleet's log: what every client of ``/v1/fleet`` is sent, each event encoded once.

    Its events are ``(source, event)``: source None for the table's events, which every client
    receives."""

    __slots__ = ("_key", "readable", "summaries")

    def __init__(self, size: int = DEFAULT_FLEET_LOG) -> None:
        if type(size) is not int or size < 1:
            raise ContractError("fleet_log", f"expected an int >= 1, got {size!r}")
        super().__init__(size)
        self.summaries: dict[str, dict[str, Any]] = {}
        self._key: dict[str, tuple[object, ...]] = {}
        self.readable = True

    def _append(self, source: str | None, kind: str, data: str) -> None:
        self.end += 1
        self.events.append((source, sse_event(kind, data, self.event_id(self.end))))
        self._changed.set()
        self._changed = trio.Event()

    # --- what the fleet tells the feed ------------------------------------------------------

    def frame(self, source: str, kind: str, frame_json: str) -> None:
        self._append(source, kind, _framed(source, frame_json))

    def describe(self, summary: dict[str, Any]) -> None:
        """A source's description (``/v1/sources``' entry without the cursor): sent when it
        changed in anything but ``last_seen``."""
        source = summary["source"]
        key = tuple(summary[field] for field in _KEY_FIELDS)
        self.summaries[source] = summary
        if self._key.get(source) != key:
            self._key[source] = key
            self._append(None, "source", _text(summary))

    def liveness_changed(self, source: str, stale: bool, declared: bool) -> bool:
        """True when ``source`` was described with another liveness (``stale``, ``declared``)."""
        key = self._key.get(source)
        return key is not None and key[-2:] != (stale, declared)

    def retired(self, source: str) -> None:
        self.summaries.pop(source, None)
        self._key.pop(source, None)
        self._append(None, "retired", _text({"source": source}))

    def set_readable(self, readable: bool) -> None:
        if readable != self.readable:
            self.readable = readable
            self._append(None, "readable", _text({"readable": readable}))

    # --- what a client is sent --------------------------------------------------------------

    def picture(
        self,
        prefix: str,
        selection: FleetSelection,
        snapshot: Callable[[str], str | None],
        liveness: Mapping[str, float | None],
        only: Iterable[str] | None = None,
    ) -> bytes:
        """The fleet now: a ``fleet`` event (``only`` None) and a snapshot of each selected
        source (of ``only``), all with the id of the current position."""
        event_id = self.event_id(self.end)
        parts: list[bytes] = []
        if only is None:
            sources = []
            for name in sorted(self.summaries):
                summary = self.summaries[name]
                seen = liveness.get(name, summary["last_seen"])
                sources.append(
                    summary if seen == summary["last_seen"] else {**summary, "last_seen": seen}
                )
            body = {"prefix": prefix, "readable": self.readable, "sources": sources}
            parts.append(sse_event("fleet", _text(body), event_id))
            names: Iterable[str] = (
                sorted(self.summaries) if selection.every else sorted(selection.named)
            )
        else:
            names = sorted(only)
        for name in names:
            frame_json = snapshot(name)
            if frame_json is not None:
                parts.append(sse_event("snapshot", _framed(name, frame_json), event_id))
        return b"".join(parts)

    def take(
        self, position: int, wants: Callable[[str], bool], skip: frozenset[str] = frozenset()
    ) -> tuple[bytes | None, int]:
        """The events after ``position`` that a client wants, as one chunk (``None``: none),
        and the new position. ``position`` must be held (not below :attr:`start`)."""
        if position >= self.end:
            return None, position
        events = self.events
        first = position - self.start
        chosen = [
            event
            for index in range(first, len(events))
            for source, event in (events[index],)
            if source is None or (source not in skip and wants(source))
        ]
        return (b"".join(chosen) if chosen else None), self.end


class Streaming(Protocol):
    """What runs a response's stream: until it ends, the client leaves or the server stops."""

    async def stream_until_done(
        self, receive: Receive, send: Send, produce: Callable[[], Awaitable[None]]
    ) -> None: ...


class FleetStreams(Streaming, Protocol):
    """What a ``/v1/fleet`` response needs of the application (``FleetApp``)."""

    @property
    def feed(self) -> FleetFeed: ...
    @property
    def keepalive(self) -> float: ...
    @property
    def keepalive_bytes(self) -> bytes: ...
    def picture(self, selection: FleetSelection, only: Iterable[str] | None = None) -> bytes: ...


class SseResponse(Response):
    """The fleet server's event streams (``/v1/fleet``, a source's ``v1/activity`` and
    ``v1/events``): the SSE headers, saying whether the client resumed, then what
    :meth:`produce` sends for as long as ``streaming`` runs it."""

    def __init__(self, streaming: Streaming, resumed: bool) -> None:
        self._streaming = streaming
        self._resumed = resumed
        self.status_code = 200
        self.background = None
        self.raw_headers = list(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        resumed = b"true" if self._resumed else b"false"
        headers = [*self.raw_headers, (b"x-workflow-hub-resumed", resumed)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await self._streaming.stream_until_done(receive, send, partial(self.produce, send))

    async def produce(self, send: Send) -> None:
        """Send the stream's events until cancelled (or the stream ends)."""
        raise NotImplementedError


async def quiet_for(seconds: float, changed: Callable[[], Awaitable[None]]) -> bool:
    """Wait for ``changed()``, at most ``seconds``; True when nothing changed meanwhile (time
    for a keep-alive)."""
    with trio.move_on_after(seconds) as idle:
        await changed()
    return idle.cancelled_caught


@final
class FleetStreamResponse(SseResponse):
    """``/v1/fleet``: a picture of the fleet (or a resume), then every event, as SSE."""

    def __init__(
        self,
        app: FleetStreams,
        selection: FleetSelection,
        since: tuple[str, int] | None,
    ) -> None:
        self._position = app.feed.resume_position(since)
        super().__init__(app, self._position is not None)
        self._fleet = app
        self._selection = selection

    async def produce(self, send: Send) -> None:
        app = self._fleet
        feed = app.feed
        selection = self._selection
        wants = selection.wants
        position = self._position
        if position is not None and position < feed.start:
            position = None  # trimmed while the response started
        if position is None:
            body: bytes | None = app.picture(selection)
        else:
            # A resume: what was missed, then snapshots of the sources newly selected (their
            # frames before now are left out: the snapshot stands for them).
            fresh = selection.fresh
            body, _ = feed.take(position, wants, fresh)
            if fresh:
                body = (body or b"") + app.picture(selection, only=fresh)
        position = feed.end
        body = RETRY_FIELD + (body or b"")
        await send({"type": "http.response.body", "body": body, "more_body": True})
        keepalive = app.keepalive
        while True:
            if position < feed.start:
                # Fell behind further than the log reaches: a fresh picture, never a gap.
                body = app.picture(selection)
                position = feed.end
            else:
                body, position = feed.take(position, wants)
            if body is None:
                if not await quiet_for(keepalive, feed.wait):
                    continue
                body = app.keepalive_bytes
            await send({"type": "http.response.body", "body": body, "more_body": True})
