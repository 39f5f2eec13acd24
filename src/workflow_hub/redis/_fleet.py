"""A fleet: every source mirrored under one prefix, discovered, followed and folded together.

Sources register themselves in ``{prefix}:sources`` with the server time of their last refresh.
:func:`follow_fleet` polls that set, follows each source it finds (a :class:`SourceStream` per
source) and marks a source unavailable when its mirror stopped refreshing: a scheduler that died
or was partitioned away is shown as unknown, never as its last state.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, final, overload

import attrs
import trio

from .._contract import Availability, ContractError, Frame, SnapshotFrame
from .._public import NoPublicConstructor
from ..reporting import ActivityView, AggregateStatus, ViewChange, aggregate, combine
from ._connection import bounded, describe, server_errors, text, transient_errors
from ._follow import (
    _BACKOFF_FIRST,
    _BACKOFF_MAX,
    DEFAULT_BLOCK,
    DEFAULT_READ_COUNT,
    DEFAULT_READ_TIMEOUT,
    BadData,
    SourceStream,
    check_block,
)
from ._keys import (
    DEFAULT_PREFIX,
    DEFAULT_RETIRE_AFTER,
    DISCOVER_SCRIPT,
    QUIET_MANY_SCRIPT,
    ServerScript,
    check_name,
    source_keys,
    sources_key,
)
from ._mirror import BadKey, check_seconds

if TYPE_CHECKING:
    import coredis

__all__ = ["FleetStream", "FleetView", "SourceLiveness", "follow_fleet"]

logger = logging.getLogger("workflow_hub.redis")

DEFAULT_STALE_AFTER = 5.0
DEFAULT_POLL_INTERVAL = 1.0
_ROUND_PER_SOURCE = 10e-6
"""Seconds between two reads of a fleet per source followed (10 ms for 1 000, at most 50 ms)."""

_DISCOVER = ServerScript(DISCOVER_SCRIPT)
_QUIET_MANY = ServerScript(QUIET_MANY_SCRIPT)
_QUIET_BATCH = 500


@final
@attrs.frozen(kw_only=True)
class SourceLiveness:
    """What the registry says about one source of a fleet."""

    source: str
    last_seen: float | None
    """When its mirror last refreshed it: Redis server time, seconds since the epoch
    (``None`` when the registry lost it, e.g. after a Redis restart)."""
    stale: bool
    """True when its mirror stopped refreshing for ``stale_after`` (crashed or partitioned
    away), as opposed to a source whose own last frame says it is unavailable (its scheduler
    declared it: shut down cleanly, or not ready)."""


@final
class FleetView:
    """One :class:`~workflow_hub.reporting.ActivityView` per source, and the fleet's status.

    Feed it what :func:`follow_fleet` yields: ``fleet_view.apply(source, frame)``; a ``None``
    frame retires the source (its view is dropped).
    """

    def __init__(self) -> None:
        self._views: dict[str, ActivityView] = {}

    @overload
    def apply(self, source: str, frame: Frame) -> ViewChange: ...
    @overload
    def apply(self, source: str, frame: None) -> None: ...
    @overload
    def apply(self, source: str, frame: Frame | None) -> ViewChange | None: ...

    def apply(self, source: str, frame: Frame | None) -> ViewChange | None:
        """Fold one frame of ``source`` into its view (created on its first frame); ``None``
        (a retired source) drops the view."""
        if frame is None:
            self._views.pop(source, None)
            return None
        view = self._views.get(source)
        if view is None:
            view = self._views[source] = ActivityView()
        return view.apply(frame)

    @property
    def views(self) -> Mapping[str, ActivityView]:
        """Every source seen so far and not retired, in discovery order."""
        return self._views

    def statuses(self) -> dict[str, AggregateStatus]:
        """Each source boiled down to one status (see :func:`~workflow_hub.reporting.aggregate`),
        in name order."""
        return {source: aggregate(self._views[source]) for source in sorted(self._views)}

    def aggregate(self) -> AggregateStatus:
        """The whole fleet as one status, with the rules of ``aggregate`` for one source.

        Working if any source works, else blocked if any is blocked, else unknown if any source
        is unknown (or none was seen yet), else idle. Unknown is never idle: one scheduler that
        cannot be seen means "idle" cannot be claimed for the fleet.
        """
        statuses = list(self.statuses().values())
        fleet = combine(statuses)
        sources = f"{len(statuses)} source{'' if len(statuses) == 1 else 's'}"
        return attrs.evolve(fleet, message=" · ".join(filter(None, [sources, fleet.message])))


@final
class FleetStream(metaclass=NoPublicConstructor):
    """``(source, frame)`` pairs from every source of a fleet; made by :func:`follow_fleet`.

    ``frame`` is ``None`` once for a source that was retired (its mirror stopped refreshing for
    the retirement time): drop it.
    """

    def __init__(
        self,
        receive: trio.MemoryReceiveChannel[tuple[str, Frame | None]],
        streams: Mapping[str, SourceStream],
        liveness: Mapping[str, SourceLiveness],
        state: _FleetState,
    ) -> None:
        self._receive = receive
        self._streams = streams
        self._liveness = liveness
        self._state = state

    @property
    def streams(self) -> Mapping[str, SourceStream]:
        """The follower of each source discovered so far (for their statistics)."""
        return self._streams

    @property
    def liveness(self) -> Mapping[str, SourceLiveness]:
        """What the registry said about each source at the last discovery."""
        return self._liveness

    @property
    def readable(self) -> bool:
        """False while the fleet cannot be read: no discovery completed within ``read_timeout``
        or some source's follower is unreadable. (For readiness probes.)"""
        state = self._state
        if trio.current_time() - state.last_discovery > state.read_timeout:
            return False
        return not any(stream.statistics().unreadable for stream in self._streams.values())

    @property
    def bad_members(self) -> int:
        """Members of ``{prefix}:sources`` that are not source names (not UTF-8), skipped."""
        return self._state.bad_members

    def __aiter__(self) -> AsyncIterator[tuple[str, Frame | None]]:
        return self

    async def __anext__(self) -> tuple[str, Frame | None]:
        try:
            return await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None


def _unknown(stream: SourceStream) -> SnapshotFrame | None:
    """An ``unavailable`` snapshot at the last cursor the stream delivered, if any."""
    cursor = stream.last_cursor
    if cursor is None:
        return None
    return SnapshotFrame(cursor=cursor, availability=Availability.UNAVAILABLE)


@attrs.define
class _FleetState:
    read_timeout: float
    last_discovery: float
    bad_members: int = 0


@asynccontextmanager
async def follow_fleet(
    redis: coredis.Redis[Any],
    *,
    prefix: str = DEFAULT_PREFIX,
    stale_after: float = DEFAULT_STALE_AFTER,
    retire_after: float = DEFAULT_RETIRE_AFTER,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    block: float = DEFAULT_BLOCK,
    count: int = DEFAULT_READ_COUNT,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
) -> AsyncIterator[FleetStream]:
    """``async with follow_fleet(redis) as fleet: async for source, frame in fleet``.

    Discovers the sources in ``{prefix}:sources`` every ``poll_interval`` seconds and follows
    each one with the guarantees of :func:`follow_source` (``read_timeout`` included). A source
    whose mirror has not refreshed for ``stale_after`` seconds (server time) gets an
    ``unavailable`` snapshot; when it refreshes again, its state comes back (or a fresh
    snapshot, if entries were lost). One that has not refreshed for ``retire_after`` seconds is
    retired: removed from the registry (by whichever follower sees it first) and yielded once
    with ``None`` for a frame. Bad data in one source (undecodable names, keys of the wrong
    type) makes that source unknown, with a log line and a count, never anything more.
    """
    check_name(prefix, "prefix")
    stale_ms = check_seconds(stale_after, "stale_after") * 1000
    retire_s = check_seconds(retire_after, "retire_after")
    if retire_s * 1000 <= stale_ms:
        raise ContractError("retire_after", f"must be longer than stale_after, got {retire_s:g}")
    poll = check_seconds(poll_interval, "poll_interval")
    check_block(block, read_timeout)
    if type(count) is not int or count < 1:
        raise ContractError("count", f"expected an int >= 1, got {count!r}")
    streams: dict[str, SourceStream] = {}
    liveness: dict[str, SourceLiveness] = {}
    state = _FleetState(read_timeout=float(read_timeout), last_discovery=trio.current_time())
    send, receive = trio.open_memory_channel[tuple[str, Frame | None]](1024)
    skipped: set[bytes] = set()

    def new_stream(source: str) -> SourceStream:
        return SourceStream._create(
            redis,
            source=source,
            keys=source_keys(prefix, source),
            block=block,
            count=count,
            read_timeout=float(read_timeout),
        )

    def retire(source: str) -> None:
        logger.info("fleet: source %r retired (no refresh for %gs)", source, retire_s)
        stream = streams.pop(source, None)
        if stream is not None:
            stream.close()
        liveness.pop(source, None)

    async def run_discovery(nursery: trio.Nursery) -> None:
        retirements: list[str] = []
        refused = ""
        while True:
            try:
                with bounded(redis, float(read_timeout)):
                    reply: Any = await _DISCOVER(
                        redis, keys=[sources_key(prefix)], args=[str(round(retire_s * 1000))]
                    )
                status = text(reply[0])
                if status == "wrongtype":
                    raise ValueError(f"{sources_key(prefix)} is a {text(reply[1])}, not a zset")
                now = int(text(reply[1]))
                flat = list(reply[2])
            except transient_errors() as error:
                logger.warning("fleet discovery: Redis unreachable (%s)", describe(error))
                await trio.sleep(poll)
                continue
            except (ValueError, IndexError, TypeError, *server_errors()) as error:  # type: ignore[misc]
                if str(error) != refused:
                    refused = str(error)
                    logger.error("fleet discovery: cannot read the registry (%s)", describe(error))
                for stream in streams.values():
                    stream.mark_stale()
                await trio.sleep(poll)
                continue
            refused = ""
            state.last_discovery = trio.current_time()
            listed: dict[str, float] = {}
            for index in range(0, len(flat) - 1, 2):
                member = flat[index]
                try:
                    listed[text(member)] = float(text(flat[index + 1]))
                except (UnicodeDecodeError, ValueError):
                    key = member if isinstance(member, bytes) else str(member).encode()
                    if key not in skipped:
                        skipped.add(key)
                        state.bad_members += 1
                        logger.error(
                            "fleet discovery: skipping %r in %s: not a source name",
                            member,
                            sources_key(prefix),
                        )
            for known in list(streams):
                if known in listed:
                    continue
                # Not listed: retired by another follower, or the registry was lost (a Redis
                # restart). Unknown meanwhile; retired once its last refresh is old enough.
                before = liveness.get(known)
                streams[known].mark_stale(
                    None if before is None or before.last_seen is None else before.last_seen * 1000
                )
                if (
                    before is None
                    or before.last_seen is None
                    or now - before.last_seen * 1000 > retire_s * 1000
                ):
                    retirements.append(known)
                else:
                    liveness[known] = attrs.evolve(before, stale=True)
            for source, seen in listed.items():
                if source not in streams:
                    streams[source] = new_stream(source)
                stream = streams[source]
                stale = now - seen > stale_ms
                liveness[source] = SourceLiveness(source=source, last_seen=seen / 1000, stale=stale)
                if stale:
                    stream.mark_stale(seen)
                else:
                    stream.mark_fresh()
            for source in retirements:
                retire(source)
                await send.send((source, None))
            retirements.clear()
            await trio.sleep(poll)

    reader = _FleetReader(
        redis,
        streams,
        send,
        block=block,
        count=count,
        read_timeout=float(read_timeout),
        quiet_every=poll,
    )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_discovery, nursery)
        nursery.start_soon(reader.run)
        try:
            yield FleetStream._create(receive, streams, liveness, state)
        finally:
            nursery.cancel_scope.cancel()


@final
class _FleetReader:
    """Every source of a fleet read over one blocking ``XREAD`` (one connection, whatever the
    number of sources); checkpoints and quiet checks run concurrently on the client's shared,
    multiplexed connection. Each source keeps its own :class:`SourceStream` state (sequence
    check, resyncs, liveness); this task only does their reading for them.
    """

    def __init__(
        self,
        redis: coredis.Redis[Any],
        streams: dict[str, SourceStream],
        send: trio.MemorySendChannel[tuple[str, Frame | None]],
        *,
        block: float,
        count: int,
        read_timeout: float,
        quiet_every: float,
    ) -> None:
        self._redis = redis
        self._streams = streams
        self._send = send
        self._block_ms = max(1, int(block * 1000))
        self._block = block
        self._count = count
        self._read_timeout = read_timeout
        self._quiet_every = quiet_every
        self._last_quiet = -math.inf
        self._backoff = _BACKOFF_FIRST
        self._refused = ""

    async def run(self) -> None:
        next_round = trio.current_time()
        while True:
            # A round costs time in the number of sources (the XREAD names every stream), so
            # with many busy sources rounds are spaced out and each one takes what piled up.
            await trio.sleep_until(next_round)
            next_round = trio.current_time() + min(_ROUND_PER_SOURCE * len(self._streams), 0.05)
            streams = dict(self._streams)
            if not streams:
                await trio.sleep(min(self._block, 0.05))  # nothing discovered yet
                continue
            try:
                with bounded(self._redis, self._read_timeout):
                    await self._round(streams)
            except (*transient_errors(), *server_errors()) as error:
                # (A refusal no single source explains, e.g. a key repaired between the refused
                # XREAD and the look at the types: the whole round is retried.)
                if str(error) != self._refused:
                    self._refused = str(error)
                    logger.warning(
                        "fleet follower: Redis unreachable (%s); retrying", describe(error)
                    )
                for stream in streams.values():
                    stream._unreachable(error, log=False)
                await self._deliver(streams)
                await trio.sleep(self._backoff)
                self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
                continue
            self._backoff = _BACKOFF_FIRST
            self._refused = ""
            await self._deliver(streams)

    async def _round(self, streams: dict[str, SourceStream]) -> None:
        now = trio.current_time()
        for stream in streams.values():
            stream._prepare()
        resyncing = [
            stream
            for stream in streams.values()
            if stream._last_id is None and stream._retry_at <= now
        ]
        if resyncing:
            await self._each(resyncing, _resync)
            await self._deliver(streams)  # a first snapshot need not wait for the XREAD
        reading = {
            stream._keys.frames: stream
            for stream in streams.values()
            if stream._last_id is not None and stream._retry_at <= now
        }
        got: set[str] = set()
        if reading:
            try:
                reply = await self._redis.xread(
                    {key: stream._last_id for key, stream in reading.items()},  # type: ignore[misc]
                    count=self._count,
                    block=self._block_ms,
                )
            except server_errors() as error:
                # One key of the wrong type fails the whole read: find it, leave it out.
                if not await self._set_aside_bad_keys(reading, error):
                    raise
                return
            for key, entries in (reply or {}).items():
                found = reading.get(text(key))
                if found is None:
                    continue
                got.add(found.source)
                try:
                    found._feed(entries)
                except Exception as error:  # one source never takes the fleet down
                    logger.exception(
                        "fleet follower: source %r failed; starting over", found.source
                    )
                    found._lose_continuity()
                    found._refused_read(error)
        else:
            await trio.sleep(self._block)
        due = trio.current_time() - self._last_quiet >= self._quiet_every
        if due:
            self._last_quiet = trio.current_time()
        quiet = [
            stream
            for stream in reading.values()
            if stream.source not in got
            and stream._last_id is not None
            and (due or stream._unreadable)
        ]
        if quiet:
            await self._quiet_checks(quiet)
        for stream in streams.values():
            if stream._retry_at <= now:
                stream._read_ok()

    async def _each(
        self, streams: list[SourceStream], action: Callable[[SourceStream], Awaitable[None]]
    ) -> None:
        """Run ``action`` for every stream at once (their commands share one connection);
        a source whose data cannot be read is refused alone."""

        async def one(stream: SourceStream) -> None:
            try:
                await action(stream)
            except (BadKey, BadData, *server_errors()) as error:  # type: ignore[misc]
                stream._refused_read(error)

        async with trio.open_nursery() as nursery:
            for stream in streams:
                nursery.start_soon(one, stream)

    async def _quiet_checks(self, streams: list[SourceStream]) -> None:
        """The quiet check of every source that read nothing, in one script per 500 sources."""
        for start in range(0, len(streams), _QUIET_BATCH):
            batch = streams[start : start + _QUIET_BATCH]
            keys = [key for stream in batch for key in (stream._keys.owner, stream._keys.frames)]
            replies: Any = await _QUIET_MANY(self._redis, keys=keys, args=[])
            for stream, reply in zip(batch, replies, strict=True):
                try:
                    stream._after_quiet(stream._judge_quiet(reply))
                except (BadKey, BadData) as error:
                    stream._refused_read(error)

    async def _set_aside_bad_keys(
        self, reading: Mapping[str, SourceStream], error: Exception
    ) -> bool:
        """After a refused ``XREAD``: the sources whose frames key is not a stream are refused
        (unknown, read again later); True when there was one."""
        kinds: dict[str, str] = {}

        async def kind_of(key: str) -> None:
            kinds[key] = text(await self._redis.type(key))

        # Concurrent commands share the client's multiplexed connection: one round trip.
        async with trio.open_nursery() as nursery:
            for key in reading:
                nursery.start_soon(kind_of, key)
        found = False
        for key, kind in kinds.items():
            if kind not in ("stream", "none"):
                found = True
                reading[key]._refused_read(BadKey(f"{key} is a {kind}, not a stream"))
        return found

    async def _deliver(self, streams: dict[str, SourceStream]) -> None:
        for source, stream in streams.items():
            for frame in stream._take_ready():
                if stream._closed:
                    break  # retired meanwhile: its ``None`` is (or will be) its last word
                await self._send.send((source, frame))


async def _resync(stream: SourceStream) -> None:
    await stream._resync()
    stream._unreadable = False
