"""Following hook events across machines: one source's, or a whole fleet's (SPEC N6).

A mirror with a ``runner`` appends each hook event to ``{prefix}:{source}:events`` with its
epoch (the mirror's fencing token) and a sequence number counting that mirror's events. The
follower checks both on every entry, so what it delivers is, per source, the mirror's events in
order, and every place where that sequence is broken is an item of its own
(:class:`ContinuityLost`): entries trimmed before they were read, events the mirror had to drop
(Redis was too slow for it), a new instance of the source, an unreachable Redis, unreadable
data, a retired source. Events are never skipped silently.

Every source followed is read by one blocking ``XREAD`` (one connection, whatever the number of
sources); discovery and positioning share the client's multiplexed connection.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, Final, Literal, final

import attrs
import trio

from .._contract import ContractError, WorkflowEvent, loads
from .._public import NoPublicConstructor
from ..fleet import ContinuityLost, EventItem, GapReason, SourceEvent
from ._connection import (
    OutageLog,
    bounded,
    describe,
    drop_connections,
    not_streams,
    server_errors,
    single,
    text,
    transient_errors,
    unexpected,
)
from ._follow import DEFAULT_BLOCK, DEFAULT_READ_COUNT, DEFAULT_READ_TIMEOUT, check_block
from ._follow_fleet import DEFAULT_POLL_INTERVAL
from ._keys import (
    DEFAULT_PREFIX,
    DEFAULT_RETIRE_AFTER,
    DISCOVER_SCRIPT,
    ServerScript,
    check_name,
    source_keys,
    sources_key,
)
from ._mirror import check_seconds

if TYPE_CHECKING:
    import coredis

__all__ = ["EventStream", "follow_events"]

logger = logging.getLogger("workflow_hub.redis")


_DISCOVER = ServerScript(DISCOVER_SCRIPT)
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 2.0
_STREAM_ID: Final = re.compile(r"^[0-9]+-[0-9]+$")


@attrs.define
class _Track:
    """The reading state of one source's events stream."""

    source: str
    key: str
    start: Literal["newest", "oldest", "since"]
    last_id: str | None = None  # the stream id read after; None until positioned
    epoch: str | None = None
    seq: int | None = None
    unreachable: bool = False  # a ContinuityLost("unreachable") was delivered for this outage
    refused_until: float = -1.0
    refused: str = ""
    last_seen: float | None = None  # registry score (ms), fleet mode
    # True when the next entry read starts the sequence anew without a gap of its own (after
    # a gap that already said events are missing there).
    baseline_free: bool = False
    foreign: int = 0


@final
class EventStream(metaclass=NoPublicConstructor):
    """:class:`SourceEvent` and :class:`ContinuityLost` items; made by :func:`follow_events`."""

    def __init__(
        self,
        receive: trio.MemoryReceiveChannel[EventItem],
        tracks: Mapping[str, _Track],
        reader: _EventReader,
    ) -> None:
        self._receive = receive
        self._tracks = tracks
        self._reader = reader

    @property
    def unexpected_errors(self) -> int:
        """Rounds of the reader or its discovery that failed otherwise than on the connection
        or by a refusal of the server (an error of the client library, e.g. a client closed
        under the follower, or a bug): logged once with a traceback, retried with a backoff."""
        return self._reader.unexpected_errors

    @property
    def sources(self) -> tuple[str, ...]:
        """The sources followed right now, in name order."""
        return tuple(sorted(self._tracks))

    def positions(self) -> dict[str, str]:
        """Each source's position (the id read after), to resume with ``since=``."""
        return {
            name: track.last_id
            for name, track in sorted(self._tracks.items())
            if track.last_id is not None
        }

    def __aiter__(self) -> AsyncIterator[EventItem]:
        return self

    async def __anext__(self) -> EventItem:
        try:
            return await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None


def _check_position(value: object, field: str) -> str:
    if not isinstance(value, str) or not _STREAM_ID.match(value):
        raise ContractError(field, f"expected a stream id such as '1700000000000-0', got {value!r}")
    return value


@asynccontextmanager
async def follow_events(
    redis: coredis.Redis[Any],
    *,
    prefix: str = DEFAULT_PREFIX,
    source: str | None = None,
    since: str | Mapping[str, str] | None = None,
    block: float = DEFAULT_BLOCK,
    count: int = DEFAULT_READ_COUNT,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    retire_after: float = DEFAULT_RETIRE_AFTER,
    buffer: int = 1024,
) -> AsyncIterator[EventStream]:
    """``async with follow_events(redis) as events: async for item in events``.

    The hook events of one ``source``, or (``source=None``) of every source registered under
    ``prefix``, discovered every ``poll_interval`` seconds as :func:`follow_fleet` does. Items
    are :class:`SourceEvent` (in the order the source's hub dispatched them) and
    :class:`ContinuityLost` wherever that order may be missing events.

    Where it starts: without ``since``, at the newest event of each source present at the first
    discovery (only what comes next), and at the oldest retained event of sources discovered
    later (a new scheduler's first events are not lost to the discovery interval). ``since`` is
    a position from a previous run (a :attr:`SourceEvent.id`, or :meth:`EventStream.positions`):
    a stream id for ``source``, or a mapping of source to stream id for a fleet; sources not in
    the mapping start at their oldest retained event. A position no longer in the stream is a
    ``"trimmed"`` gap first.

    ``block`` is the longest blocking read, ``count`` the most entries read per source and
    read; when no read completes within ``read_timeout``, each source followed gets one
    ``"unreachable"`` item. At most ``buffer`` items wait for the consumer; a consumer slower
    than that makes the follower wait (the events wait in Redis, trimmed ones become gaps).
    """
    check_name(prefix, "prefix")
    if source is not None:
        check_name(source, "source")
    check_block(block, read_timeout)
    if type(count) is not int or count < 1:
        raise ContractError("count", f"expected an int >= 1, got {count!r}")
    if type(buffer) is not int or buffer < 1:
        raise ContractError("buffer", f"expected an int >= 1, got {buffer!r}")
    poll = check_seconds(poll_interval, "poll_interval")
    retire_ms = check_seconds(retire_after, "retire_after") * 1000
    positions: dict[str, str] | None = None
    if since is not None:
        if isinstance(since, str):
            if source is None:
                raise ContractError(
                    "since", "a single position needs a source; for a fleet, map source to id"
                )
            positions = {source: _check_position(since, "since")}
        elif isinstance(since, Mapping):
            positions = {
                check_name(name, "since"): _check_position(value, f"since[{name!r}]")
                for name, value in since.items()
            }
        else:
            raise ContractError("since", f"expected a str or a mapping, got {type(since).__name__}")
    send, receive = trio.open_memory_channel[EventItem](buffer)
    reader = _EventReader(
        redis,
        prefix=prefix,
        send=send,
        positions=positions,
        block=float(block),
        count=count,
        read_timeout=float(read_timeout),
    )
    async with trio.open_nursery() as nursery:
        if source is not None:
            reader.add(source, first=True)
        else:
            await nursery.start(reader.discover, poll, retire_ms)
        nursery.start_soon(reader.run)
        try:
            yield EventStream._create(receive, reader.tracks, reader)
        finally:
            nursery.cancel_scope.cancel()


@final
class _EventReader:
    def __init__(
        self,
        redis: coredis.Redis[Any],
        *,
        prefix: str,
        send: trio.MemorySendChannel[EventItem],
        positions: dict[str, str] | None,
        block: float,
        count: int,
        read_timeout: float,
    ) -> None:
        self._redis = redis
        self._prefix = prefix
        self._send = send
        self._positions = positions
        self._block_ms = max(1, int(block * 1000))
        self._count = count
        self._read_timeout = read_timeout
        self.tracks: dict[str, _Track] = {}
        self._pending: list[EventItem] = []
        self.unexpected_errors = 0

    def add(self, source: str, *, first: bool) -> _Track:
        key = source_keys(self._prefix, source).events
        track = _Track(source=source, key=key, start="oldest")
        position = None if self._positions is None else self._positions.get(source)
        if position is not None and position not in ("0", "0-0"):
            track.start = "since"
            track.last_id = position
        elif self._positions is None and first:
            track.start = "newest"
        self.tracks[source] = track
        return track

    def _gap(
        self, track: _Track, reason: GapReason, detail: str, missed: int | None = None
    ) -> None:
        after = None if track.last_id in (None, "0-0") else track.last_id
        self._pending.append(
            ContinuityLost(
                source=track.source, reason=reason, after=after, missed=missed, detail=detail
            )
        )

    # --- discovery -------------------------------------------------------------------------

    async def discover(
        self, poll: float, retire_ms: float, *, task_status: trio.TaskStatus[None]
    ) -> None:
        first = True
        failures = OutageLog(logger)
        while True:
            try:
                with bounded(self._redis, self._read_timeout):
                    reply: Any = await _DISCOVER(
                        self._redis,
                        keys=[sources_key(self._prefix)],
                        args=[str(round(retire_ms))],
                    )
                if text(reply[0]) != "ok":
                    raise ValueError(f"{sources_key(self._prefix)} is not a sorted set")
                now = int(text(reply[1]))
                flat = list(reply[2])
            except transient_errors() as error:
                failures.report(
                    logging.WARNING,
                    "events discovery: Redis unreachable (%s)",
                    describe(error),
                    error=error,
                )
            except (ValueError, IndexError, TypeError, *server_errors()) as error:  # type: ignore[misc]
                failures.report(
                    logging.ERROR,
                    "events discovery: cannot read the registry (%s)",
                    describe(error),
                    error=error,
                )
            except Exception as error:  # never into the host's nursery (see OutageLog)
                self.unexpected_errors += 1
                failures.report(
                    logging.ERROR,
                    "events discovery: unexpected error (%s); retrying",
                    describe(error),
                    error=error,
                )
                with contextlib.suppress(Exception):
                    drop_connections(self._redis)
            else:
                failures.recovered()
                listed: dict[str, float] = {}
                for index in range(0, len(flat) - 1, 2):
                    try:
                        listed[text(flat[index])] = float(text(flat[index + 1]))
                    except (UnicodeDecodeError, ValueError):
                        continue  # not a source name (follow_fleet counts and logs these)
                for name, seen in listed.items():
                    track = self.tracks.get(name) or self.add(name, first=first)
                    track.last_seen = seen
                for name, track in list(self.tracks.items()):
                    if name in listed:
                        continue
                    # Retired by a follower (maybe this one), or the registry was lost: dropped
                    # once its last refresh is older than the retirement time.
                    if track.last_seen is None or now - track.last_seen > retire_ms:
                        del self.tracks[name]
                        self._gap(
                            track,
                            "retired",
                            f"{name!r} stopped refreshing for {retire_ms / 1000:g}s: retired",
                        )
            if first:
                first = False
                task_status.started()
            await trio.sleep(poll)

    # --- reading ---------------------------------------------------------------------------

    async def run(self) -> None:
        backoff = _BACKOFF_FIRST
        failures = OutageLog(logger)
        while True:
            tracks = dict(self.tracks)
            if not tracks:
                await self._flush()
                await trio.sleep(min(self._block_ms / 1000, 0.05))
                continue
            try:
                with bounded(self._redis, self._read_timeout):
                    await self._round(tracks)
            except Exception as error:  # never into the host's nursery (see OutageLog)
                # (The positions of several sources are read at once: they fail together.)
                error = single(error)
                if unexpected(error):
                    self.unexpected_errors += 1
                    failures.report(
                        logging.ERROR,
                        "events follower: unexpected error (%s); retrying",
                        describe(error),
                        error=error,
                    )
                    with contextlib.suppress(Exception):
                        drop_connections(self._redis)
                else:
                    failures.report(
                        logging.WARNING,
                        "events follower: Redis unreachable (%s)",
                        describe(error),
                        error=error,
                    )
                for track in tracks.values():
                    if not track.unreachable:
                        track.unreachable = True
                        self._gap(
                            track,
                            "unreachable",
                            f"no read from Redis within {self._read_timeout:g}s "
                            f"({describe(error)})",
                        )
                await self._flush()
                await trio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
                continue
            backoff = _BACKOFF_FIRST
            failures.recovered()
            for track in tracks.values():
                track.unreachable = False
            await self._flush()

    async def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for item in pending:
            await self._send.send(item)

    async def _round(self, tracks: dict[str, _Track]) -> None:
        now = trio.current_time()
        unpositioned = [
            track
            for track in tracks.values()
            if (track.last_id is None or (track.start == "since" and track.seq is None))
            and track.refused_until <= now
        ]
        if unpositioned:
            async with trio.open_nursery() as nursery:
                for track in unpositioned:
                    nursery.start_soon(self._position, track)
        reading = {
            track.key: track
            for track in tracks.values()
            if track.last_id is not None and track.refused_until <= now
        }
        if not reading:
            await trio.sleep(self._block_ms / 1000)
            return
        try:
            reply = await self._redis.xread(
                {key: track.last_id for key, track in reading.items()},  # type: ignore[misc]
                count=self._count,
                block=self._block_ms,
            )
        except server_errors():
            if not await self._set_aside_bad_keys(reading):
                raise
            return
        for key, entries in (reply or {}).items():
            try:
                found = reading.get(text(key))
            except UnicodeDecodeError:
                continue
            if found is not None:
                self._feed(found, entries)

    async def _position(self, track: _Track) -> None:
        """Where a track starts reading: after its newest entry, its oldest, or a given id."""
        try:
            if track.start == "newest":
                newest = await self._redis.xrevrange(track.key, count=1)
                if newest:
                    entry = newest[0]
                    track.last_id = text(entry.identifier)
                    track.epoch, track.seq, _ = _header(entry.field_values)
                else:
                    # Empty (trimmed, expired or never written): where the mirror stands, so
                    # that entries appended and trimmed before this follower reads are a gap.
                    track.last_id = "0-0"
                    owner = source_keys(self._prefix, track.source).owner
                    epoch, seq = await self._redis.hmget(owner, ["events_epoch", "events_seq"])
                    if epoch is not None and seq is not None:
                        with suppress(UnicodeDecodeError, ValueError):
                            track.epoch, track.seq = text(epoch), int(text(seq))
            elif track.start == "oldest":
                track.last_id = "0-0"
            else:
                assert track.last_id is not None
                found = await self._redis.xrange(track.key, track.last_id, track.last_id)
                header = _header(found[0].field_values) if found else (None, None, 0)
                if header[0] is None or header[1] is None:
                    self._gap(
                        track,
                        "trimmed",
                        f"event {track.last_id} of {track.source!r} is no longer in the stream",
                    )
                    track.start = "oldest"
                    track.baseline_free = True  # the next entry read is the new baseline
                else:
                    track.epoch, track.seq, _ = header
        except server_errors() as error:
            self._refuse(track, f"{track.key}: {describe(error)}")

    def _refuse(self, track: _Track, why: str) -> None:
        track.refused_until = trio.current_time() + _BACKOFF_MAX
        if why != track.refused:
            track.refused = why
            logger.error("events follower: cannot read %r (%s)", track.source, why)
            self._gap(track, "unreadable", f"cannot read the events of {track.source!r}: {why}")

    async def _set_aside_bad_keys(self, reading: Mapping[str, _Track]) -> bool:
        found = await not_streams(self._redis, reading)
        for key, kind in found.items():
            self._refuse(reading[key], f"{key} is a {kind}, not a stream")
        return bool(found)

    def _missing(self, track: _Track, missed: int, lost: int, trimmed: str) -> None:
        """``missed`` events before this one: dropped by the mirror when it says so (``lost``),
        else trimmed or lost in Redis (``trimmed`` says how)."""
        if lost == missed:
            detail = f"the mirror of {track.source!r} dropped {missed} event(s): Redis was too slow"
            self._gap(track, "dropped", detail + " for it", missed)
        else:
            self._gap(track, "trimmed", trimmed, missed)

    def _feed(self, track: _Track, entries: Sequence[Any]) -> None:
        for entry in entries:
            identifier = text(entry.identifier)
            epoch, seq, lost = _header(entry.field_values)
            if epoch is None or seq is None:
                # Not written by a mirror: no sequence number of ours to lose.
                track.foreign += 1
                if track.foreign == 1:
                    logger.warning(
                        "events follower of %r: skipping entry %s, not written by a mirror",
                        track.source,
                        identifier,
                    )
                track.last_id = identifier
                continue
            if track.epoch is not None and epoch != track.epoch:
                self._gap(
                    track,
                    "new_instance",
                    f"{track.source!r} has a new instance (epoch {epoch}); events the previous "
                    "one had not appended are lost",
                )
            elif track.seq is not None and seq <= track.seq:
                # Older than what was delivered (a stream rewritten by something else).
                track.last_id = identifier
                continue
            elif track.seq is not None and seq != track.seq + 1:
                missed = seq - track.seq - 1
                trimmed = "were trimmed or lost before they were read"
                self._missing(
                    track, missed, lost, f"{missed} event(s) of {track.source!r} {trimmed}"
                )
            elif track.seq is None and seq > 1 and not track.baseline_free:
                # Read from the start of the stream: what came before it is missing.
                missed = seq - 1
                trimmed = "are no longer in the stream"
                self._missing(
                    track,
                    missed,
                    lost,
                    f"the first {missed} event(s) of {track.source!r} {trimmed}",
                )
            track.epoch = epoch
            track.seq = seq
            track.baseline_free = False
            try:
                event: WorkflowEvent = loads(WorkflowEvent, _fields(entry.field_values)["event"])
            except (KeyError, ValueError, TypeError, ContractError) as error:
                self._gap(
                    track,
                    "unreadable",
                    f"event {identifier} of {track.source!r} does not decode ({error})",
                    1,
                )
                track.last_id = identifier
                continue
            track.last_id = identifier
            self._pending.append(
                SourceEvent(source=track.source, id=identifier, epoch=epoch, seq=seq, event=event)
            )


def _fields(values: Mapping[Any, Any]) -> dict[str, Any]:
    return {text(key): value for key, value in values.items()}


def _header(values: Mapping[Any, Any]) -> tuple[str | None, int | None, int]:
    """An entry's epoch, sequence number and lost count; ``None``s when it is not ours."""
    try:
        fields = _fields(values)
        return text(fields["epoch"]), int(text(fields["seq"])), int(text(fields.get("lost", "0")))
    except (KeyError, ValueError, UnicodeDecodeError):
        return None, None, 0
