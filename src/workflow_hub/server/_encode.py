"""Frames and hook events as the bytes a client receives, each encoded once for every client.

Every remote client is its own hub observer, so the same frame object reaches every client's
queue. :class:`FrameEncoder` keeps the encoded form of recent frames keyed by the frame object's
identity: the first client to take a frame encodes it, the others reuse the bytes. The cache is
two generations of dicts (the older one dropped whole when the newer one fills), which bounds it
without deleting entries one by one. A frame old enough to have left both generations is encoded
again, which costs time but never correctness; :attr:`FrameEncoder.encodings` counts encodings so
that tests and benchmarks can check the ratio to frames is 1.

A changed frame, the one a scheduler publishes on every fact, is framed from its epoch's template
(cut from the epoch's first changed frame, encoded the ordinary way): its event is that text with
the revision and the root's JSON put in, in one format and one ``encode`` (issue 29). Its wire
JSON alone (for a WebSocket message) is made only when asked for. The root's JSON comes from a
small cache keyed by the root object's identity (the object held): a tracker republishes the same
immutable summary objects, so the same root is encoded again and again otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Final, final

from .._contract import (
    ChangedFrame,
    Cursor,
    Frame,
    RootActivity,
    SnapshotFrame,
    WorkflowEvent,
    dumps,
    format_cursor,
)

__all__ = ["FrameEncoder", "cursor_text", "encode_hook_event", "sse_comment", "sse_event"]

GENERATION_SIZE: Final = 1024
"""Frames per cache generation: four times what a hub queue holds by default (256), so that a
frame stays cached while any client that keeps up holds it. Smaller is faster: with 4 096 the
cache's working set outgrew the CPU's caches, and one client cost about 0.3 µs more per event
(issue 29). A client whose queue is longer than this (a hub with a larger ``queue_limit``, the
client far behind) may have a frame encoded again: a cost, never a different byte."""

BATCHES_KEPT: Final = 16
"""Joined backlogs kept for reuse: clients that keep up share the latest one or two."""

ROOTS_KEPT: Final = 1024
"""Roots' JSON texts kept at most (all dropped at once when full, a cheaper bound per miss
than generations: a miss is paid on every changed frame whose root is new to the cache)."""

ROOTS_PAUSE: Final = 16 * ROOTS_KEPT
"""Frames encoded without the roots' cache after it filled up with fewer hits than half its
size: roots that do not repeat (more of them changing than it holds) make every lookup a miss,
which costs more than it saves; after this many frames the cache is tried again."""

SNAPSHOTS_KEPT: Final = 4
"""Snapshot frames whose encodings are kept, the latest ones (issue 37). A snapshot's encoding is
as large as every root together (a megabyte or more for 20 000 roots), and each attach or
overflow at a new revision makes a new one: kept with the other frames, a generation could
hold a thousand of them. Clients writing the same snapshot share its bytes; a client still
writing one that has left this cache holds it alone (see ``_streams.WriteBudget``)."""

_REVISIONS_WITH_TEXT: Final = 1 << 63
"""Revisions below this have a text form (``format_cursor`` refuses the others, R4)."""


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
class _ChangedTemplate:
    """The SSE event of a changed frame of one epoch, as text around its revision and root.

    A changed frame's event is ``id: <epoch>:<revision>``, ``event: changed`` and its wire JSON,
    ``{"kind":"changed","cursor":{"epoch":<epoch>,"revision":<revision>},"root":<root>}``: all
    of it but the revision and the root's JSON is the same for every frame of an epoch, and the
    epoch's checks (its text form, R4) are the same too. The parts are cut out of the first
    frame's own encoding (``dumps`` and ``sse_event``), never written here, and used only if
    that frame's event is rebuilt from them exactly.
    """

    __slots__ = ("data_head", "epoch", "id_head")

    def __init__(self, epoch: str, id_head: str, data_head: str) -> None:
        self.epoch = epoch
        self.id_head = id_head
        self.data_head = data_head

    @classmethod
    def of(cls, frame: ChangedFrame, event: bytes) -> _ChangedTemplate | None:
        """The template of ``frame``'s epoch, given the frame's event; None if it does not fit."""
        epoch = frame.cursor.epoch
        revision = repr(frame.cursor.revision)
        root = dumps(frame.root)
        text = event.decode()
        id_head = f"id: {epoch}:"
        data_tail = f'}},"root":{root}}}\n\n'
        start = f"{id_head}{revision}\nevent: changed\ndata: "
        if not (text.startswith(start) and text.endswith(revision + data_tail)):
            return None
        template = cls(epoch, id_head, text[len(start) : -len(revision + data_tail)])
        if template.render(frame.cursor.revision, root) != event:
            return None
        return template

    def render(self, revision: int | str, root_json: str) -> bytes:
        """The event of the changed frame of this epoch at ``revision`` with this root's JSON.
        Written out in :meth:`FrameEncoder._join` (names inside the f-strings are the same at
        both places: tools/written_out.py renames none there)."""
        id_head, data_head = self.id_head, self.data_head
        # <copy-source _ChangedTemplate.render>
        sse = (
            f"{id_head}{revision}\nevent: changed\ndata: "
            f'{data_head}{revision}}},"root":{root_json}}}\n\n'
        )
        # </copy-source>
        return sse.encode()


_Entry = tuple[Frame, bytes | str, str | None, str | None]
"""A frame's cache entry: the frame (held so that its id() stays its own as long as the entry
lives), its SSE event, and its wire JSON and WebSocket message once asked for (a changed frame's
event is made without its JSON). A tuple: building one costs a fraction of an object's
``__init__``, and there is one per frame. The event is text when a backlog's join made it (the
backlog is encoded to bytes once, as a whole), bytes otherwise; :meth:`FrameEncoder.sse`
encodes the text once, when a single frame's event is asked for."""


def _parts(template: _ChangedTemplate | None) -> tuple[str | None, str, str]:
    if template is None:
        return None, "", ""
    return template.epoch, template.id_head, template.data_head


def _generic_event(frame: Frame) -> tuple[bytes, str]:
    """Any frame's SSE event and wire JSON: ``id``, ``event`` (its kind), one ``data`` line."""
    text = dumps(frame)
    return sse_event(frame.kind, text, cursor_text(frame.cursor)), text


@final
class FrameEncoder:
    """Encodes each frame once, whatever the number of clients that send it."""

    __slots__ = (
        "_batches",
        "_changed",
        "_current",
        "_previous",
        "_root_hits",
        "_root_pause",
        "_roots",
        "_snapshots",
        "batches_joined",
        "encodings",
        "on_snapshot_dropped",
        "snapshots_dropped",
    )

    def __init__(self) -> None:
        self._current: dict[int, _Entry] = {}
        self._previous: dict[int, _Entry] = {}
        self._batches: dict[tuple[int, int, int], tuple[Frame, Frame, bytes]] = {}
        self._changed: _ChangedTemplate | None = None
        # A root's JSON text by the root object's identity, the object held (so that its id()
        # stays its own): a tracker hands the hub the same immutable RootActivity again for
        # a summary it has had before, so the same root is encoded again and again.
        # None while paused (ROOTS_PAUSE).
        self._roots: dict[int, tuple[RootActivity, str]] | None = {}
        self._root_hits = 0
        """Hits since the roots' cache was last emptied."""
        self._root_pause = 0
        """Frames left to encode without the roots' cache."""
        self._snapshots: dict[int, _Entry] = {}
        """The latest SNAPSHOTS_KEPT snapshot frames' entries, oldest first."""
        self.snapshots_dropped = 0
        """How many snapshot encodings left the cache (a clock for stalled writers)."""
        self.on_snapshot_dropped: Callable[[], None] | None = None
        """Called each time a snapshot's encoding leaves the cache."""
        self.batches_joined = 0
        """How many backlogs were joined into one write (the others reused one of those)."""
        self.encodings = 0
        """How many times a frame was encoded (once per distinct frame while it is cached)."""

    def _store(self, key: int, entry: _Entry) -> None:
        if type(entry[0]) is SnapshotFrame:
            self._store_snapshot(key, entry)
            return
        current = self._current
        if len(current) >= GENERATION_SIZE:
            self._previous = current
            current = self._current = {}
        current[key] = entry

    def _store_snapshot(self, key: int, entry: _Entry) -> None:
        snapshots = self._snapshots
        snapshots.pop(key, None)
        snapshots[key] = entry
        if len(snapshots) > SNAPSHOTS_KEPT:
            del snapshots[next(iter(snapshots))]
            self.snapshots_dropped += 1
            if self.on_snapshot_dropped is not None:
                self.on_snapshot_dropped()

    def _snapshot_entry(self, frame: Frame) -> _Entry:
        """A snapshot frame's entry, from the snapshots' cache or encoded and kept there."""
        key = id(frame)
        entry = self._snapshots.get(key)
        if entry is None or entry[0] is not frame:
            entry = self._encode(frame)
            self._store_snapshot(key, entry)
        return entry

    def is_kept(self, body: bytes) -> bool:
        """Whether ``body`` is the SSE event of a snapshot whose encoding is kept (shared)."""
        return any(entry[1] is body for entry in self._snapshots.values())

    def _encode(self, frame: Frame) -> _Entry:
        """A new entry for ``frame``: its event from the epoch's template if it is a changed
        frame of the template's epoch, else the ordinary way (which makes the template of a
        changed frame's epoch). Counted in :attr:`encodings`."""
        cursor = frame.cursor
        template = self._changed
        if (
            type(frame) is ChangedFrame
            and template is not None
            and cursor.epoch == template.epoch
            and cursor.revision < _REVISIONS_WITH_TEXT
        ):
            entry: _Entry = (
                frame,
                template.render(cursor.revision, self._root(frame.root)),
                None,
                None,
            )
        else:
            sse, text = _generic_event(frame)  # refuses an epoch with no text form (R4)
            if type(frame) is ChangedFrame:
                self._changed = _ChangedTemplate.of(frame, sse)
            entry = (frame, sse, text, None)
        self.encodings += 1
        return entry

    def _root(self, root: RootActivity) -> str:
        """``dumps(root)``, from the cache of recent roots if the same object is in it. Written
        out in :meth:`_join`, which counts its hits once per backlog."""
        roots = self._roots_now(1)
        hits = 0
        # <copy-source FrameEncoder._root>
        if roots is None:
            root_json = dumps(root)
        else:
            key = id(root)
            kept = roots.get(key)
            if kept is not None and kept[0] is root:
                root_json = kept[1]
                hits += 1
            else:
                root_json = dumps(root)
                if len(roots) >= ROOTS_KEPT:
                    self._root_hits += hits
                    hits = 0
                    roots = self._roots_full()
                if roots is not None:
                    roots[key] = (root, root_json)
        # </copy-source>
        self._root_hits += hits
        return root_json

    def _roots_now(self, frames: int) -> dict[int, tuple[RootActivity, str]] | None:
        """The roots' cache for the next ``frames`` frames, or None while it is paused."""
        roots = self._roots
        if roots is None:
            self._root_pause -= frames
            if self._root_pause <= 0:
                roots = self._roots = {}
        return roots

    def _roots_full(self) -> dict[int, tuple[RootActivity, str]] | None:
        """The roots' cache, full, is emptied; or paused if it did not pay (see ROOTS_PAUSE)."""
        roots: dict[int, tuple[RootActivity, str]] | None = {}
        if self._root_hits < ROOTS_KEPT // 2:
            roots = None
            self._root_pause = ROOTS_PAUSE
        self._roots = roots
        self._root_hits = 0
        return roots

    def _missed(self, frame: Frame, key: int) -> _Entry:
        """The entry of a frame (``key``: its id) that the current generation does not hold:
        the previous generation's, or a new encoding, stored in the current generation (a
        snapshot's in the snapshots' cache)."""
        if type(frame) is SnapshotFrame:
            return self._snapshot_entry(frame)
        entry = self._previous.get(key)
        if entry is None or entry[0] is not frame:
            entry = self._encode(frame)
        self._store(key, entry)
        return entry

    def _entry(self, frame: Frame) -> _Entry:
        key = id(frame)
        entry = self._current.get(key)
        if entry is not None and entry[0] is frame:
            return entry
        return self._missed(frame, key)

    def json(self, frame: Frame) -> str:
        """The frame's wire JSON (what a WebSocket message carries)."""
        entry = self._entry(frame)
        text = entry[2]
        if text is None:
            text = dumps(frame)
            self._store(id(frame), (frame, entry[1], text, entry[3]))
        return text

    def sse(self, frame: Frame) -> bytes:
        """The frame as one SSE event: ``id``, ``event`` (its kind) and one ``data`` line."""
        # The hot path (every client after the first): one lookup, no further call.
        entry = self._current.get(id(frame))
        if entry is not None and entry[0] is frame:
            event = entry[1]
            if type(event) is bytes:
                return event
        entry = self._entry(frame)
        event = entry[1]
        if type(event) is bytes:
            return event
        assert type(event) is str
        encoded = event.encode()
        self._store(id(frame), (frame, encoded, entry[2], entry[3]))
        return encoded

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
        body = self._join(frames)
        self.batches_joined += 1
        if len(self._batches) >= BATCHES_KEPT:
            self._batches.clear()
        # The frames are held too, so that their id()s cannot be reused while the entry lives.
        self._batches[key] = (first, last, body)
        return body

    def _join(self, frames: Sequence[Frame]) -> bytes:
        """Every frame's event, encoded if it is not cached, joined: the loop over every frame
        of every write, so the common case (a changed frame of the template's epoch, new to
        the cache) is written out here rather than called."""
        if len(self._current) + len(frames) > GENERATION_SIZE:
            # A new generation for this backlog as a whole, so that none begins inside the
            # loop: a generation holds at most the larger of its size and one backlog.
            self._previous = self._current
            self._current = {}
        current = self._current
        previous = self._previous
        template = self._changed
        epoch, id_head, data_head = _parts(template)
        changed = ChangedFrame
        roots = self._roots_now(len(frames))
        encoded = 0
        hits = 0
        parts: list[str] = []
        add = parts.append
        try:
            for frame in frames:
                ident = id(frame)
                entry = current.get(ident)
                if entry is None or entry[0] is not frame:
                    entry = previous.get(ident)
                    if entry is None or entry[0] is not frame:
                        cursor = frame.cursor
                        if (
                            type(frame) is changed
                            and cursor.epoch == epoch
                            and cursor.revision < _REVISIONS_WITH_TEXT
                        ):
                            # _root and _ChangedTemplate.render, written out.
                            root = frame.root
                            # <copy-of FrameEncoder._root>
                            if roots is None:
                                root_json = dumps(root)
                            else:
                                key = id(root)
                                kept = roots.get(key)
                                if kept is not None and kept[0] is root:
                                    root_json = kept[1]
                                    hits += 1
                                else:
                                    root_json = dumps(root)
                                    if len(roots) >= ROOTS_KEPT:
                                        self._root_hits += hits
                                        hits = 0
                                        roots = self._roots_full()
                                    if roots is not None:
                                        roots[key] = (root, root_json)
                            # </copy-of>
                            revision = str(cursor.revision)  # formatted once, used twice
                            # <copy-of _ChangedTemplate.render>
                            sse = (
                                f"{id_head}{revision}\nevent: changed\ndata: "
                                f'{data_head}{revision}}},"root":{root_json}}}\n\n'
                            )
                            # </copy-of>
                            entry = (frame, sse, None, None)
                            encoded += 1
                            current[ident] = entry
                            add(sse)
                            continue
                        elif type(frame) is SnapshotFrame:
                            # Kept apart (SNAPSHOTS_KEPT), never in a generation.
                            event = self._snapshot_entry(frame)[1]
                            add(event if isinstance(event, str) else event.decode())
                            continue
                        else:
                            entry = self._encode(frame)
                            template = self._changed  # a new epoch may have begun
                            epoch, id_head, data_head = _parts(template)
                            roots = self._roots
                    current[ident] = entry
                event = entry[1]
                add(event if isinstance(event, str) else event.decode())
        finally:
            self.encodings += encoded
            self._root_hits += hits
        return "".join(parts).encode()

    def message(self, frame: Frame) -> str:
        """The frame as one WebSocket text message: ``{"id": <cursor text>, "frame": {...}}``."""
        entry = self._entry(frame)
        text = entry[3]
        if text is None:
            id_text = json.dumps(cursor_text(frame.cursor))
            frame_text = self.json(frame)
            text = f'{{"id":{id_text},"frame":{frame_text}}}'
            self._store(id(frame), (frame, entry[1], frame_text, text))
        return text


def encode_hook_event(event: WorkflowEvent) -> bytes:
    """A hook event as one SSE event named by its type; hook events carry no id (no resume)."""
    return sse_event(event.type, dumps(event))
