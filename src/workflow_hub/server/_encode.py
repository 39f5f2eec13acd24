"""Frames and hook events as the bytes a client receives, each encoded once for every client.

Every remote client is its own hub observer, so the same frame object reaches every client's
queue. :class:`FrameEncoder` keeps the encoded form of recent frames keyed by the frame object's
identity: the first client to take a frame encodes it, the others reuse the bytes. The cache is
two generations of dicts (the older one dropped whole when the newer one fills), which bounds it
without deleting entries one by one. A frame old enough to have left both generations is encoded
again, which costs time but never correctness; :attr:`FrameEncoder.encodings` counts encodings so
that tests and benchmarks can check the ratio to frames is 1.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, final

from .._contract import Cursor, Frame, WorkflowEvent, dumps, format_cursor

__all__ = ["FrameEncoder", "cursor_text", "encode_hook_event", "sse_comment", "sse_event"]

GENERATION_SIZE: Final = 4096
"""Frames per cache generation: far more than a hub queue holds (256 by default)."""

BATCHES_KEPT: Final = 16
"""Joined backlogs kept for reuse: clients that keep up share the latest one or two."""


def cursor_text(cursor: Cursor) -> str:
    """The cursor's text form, ``<epoch>:<revision>`` (R4): an SSE id and an ETag."""
    return format_cursor(cursor)


def sse_event(event: str, data: str, id: str | None = None) -> bytes:
    """One SSE event. ``data`` is compact JSON, so it is one line: one ``data:`` field."""
    head = f"id: {id}\n" if id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n".encode()


def sse_comment(text: str) -> bytes:
    """A comment line: ignored by every SSE parser, it keeps proxies from closing the stream."""
    return f": {text}\n\n".encode()


@final
class _Encoded:
    __slots__ = ("frame", "id", "json", "sse", "ws")

    def __init__(self, frame: Frame) -> None:
        # Held so that the frame (and so its id()) stays alive as long as the entry does.
        self.frame = frame
        self.id = cursor_text(frame.cursor)
        self.json = dumps(frame)
        self.sse = sse_event(frame.kind, self.json, self.id)
        self.ws: str | None = None


@final
class FrameEncoder:
    """Encodes each frame once, whatever the number of clients that send it."""

    __slots__ = ("_batches", "_current", "_previous", "batches_joined", "encodings")

    def __init__(self) -> None:
        self._current: dict[int, _Encoded] = {}
        self._previous: dict[int, _Encoded] = {}
        self._batches: dict[tuple[int, int, int], tuple[Frame, Frame, bytes]] = {}
        self.batches_joined = 0
        """How many backlogs were joined into one write (the others reused one of those)."""
        self.encodings = 0
        """How many times a frame was encoded (once per distinct frame while it is cached)."""

    def _entry(self, frame: Frame) -> _Encoded:
        key = id(frame)
        entry = self._current.get(key)
        if entry is not None and entry.frame is frame:
            return entry
        entry = self._previous.get(key)
        if entry is None or entry.frame is not frame:
            entry = _Encoded(frame)
            self.encodings += 1
        if len(self._current) >= GENERATION_SIZE:
            self._previous = self._current
            self._current = {}
        self._current[key] = entry
        return entry

    def json(self, frame: Frame) -> str:
        """The frame's wire JSON (what a WebSocket message carries)."""
        return self._entry(frame).json

    def sse(self, frame: Frame) -> bytes:
        """The frame as one SSE event: ``id``, ``event`` (its kind) and one ``data`` line."""
        # The hot path (every client after the first): one lookup, no further call.
        entry = self._current.get(id(frame))
        if entry is not None and entry.frame is frame:
            return entry.sse
        return self._entry(frame).sse

    def backlog(self, frames: Sequence[Frame]) -> bytes:
        """``frames`` (at least one) as one chunk of SSE events, to be sent in one write.

        Clients that keep up hold the same backlog: the frames broadcast since they last wrote.
        A hub queue holds a contiguous run of the hub's broadcast frames, possibly after one
        snapshot frame that stands for everything before it (attach, overflow, resume), and the
        hub builds one snapshot object per revision. So two backlogs with the same first and
        last frame objects and the same length hold the same frames, and the chunk joined for
        one client is reused, as it is, for the others.
        """
        count = len(frames)
        if count == 1:
            return self.sse(frames[0])
        first = frames[0]
        last = frames[-1]
        key = (id(first), id(last), count)
        cached = self._batches.get(key)
        if cached is not None and cached[0] is first and cached[1] is last:
            return cached[2]
        sse = self.sse
        body = b"".join([sse(frame) for frame in frames])
        self.batches_joined += 1
        if len(self._batches) >= BATCHES_KEPT:
            self._batches.clear()
        # The frames are held too, so that their id()s cannot be reused while the entry lives.
        self._batches[key] = (first, last, body)
        return body

    def message(self, frame: Frame) -> str:
        """The frame as one WebSocket text message: ``{"id": <cursor text>, "frame": {...}}``."""
        entry = self._entry(frame)
        text = entry.ws
        if text is None:
            text = entry.ws = f'{{"id":{json.dumps(entry.id)},"frame":{entry.json}}}'
        return text


def encode_hook_event(event: WorkflowEvent) -> bytes:
    """A hook event as one SSE event named by its type; hook events carry no id (no resume)."""
    return sse_event(event.type, dumps(event))
