"""A fleet: every source mirrored under one prefix, discovered, followed and folded together.

Sources register themselves in ``{prefix}:sources`` with the server time of their last refresh.
:func:`follow_fleet` polls that set, follows each source it finds (a :class:`SourceStream` per
source) and marks a source unavailable when its mirror stopped refreshing: a scheduler that died
or was partitioned away is shown as unknown, never as its last state.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, final, overload

import attrs
import trio

from .._contract import Availability, ContractError, Frame
from .._public import NoPublicConstructor
from ..fleet import SourceLiveness
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
from ._follow import (
    _BACKOFF_FIRST,
    _BACKOFF_MAX,
    DEFAULT_BLOCK,
    DEFAULT_READ_COUNT,
    DEFAULT_READ_TIMEOUT,
    BadData,
    FollowState,
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

__all__ = ["DEFAULT_POLL_INTERVAL", "DEFAULT_STALE_AFTER", "FleetStream", "follow_fleet"]

logger = logging.getLogger("workflow_hub.redis")

DEFAULT_STALE_AFTER = 5.0
"""Seconds (Redis server time) without a refresh after which a fleet's follower gives a source
an ``unavailable`` snapshot, until it refreshes again (an unknown source is never shown as
known)."""
DEFAULT_POLL_INTERVAL = 1.0
_ROUND_PER_SOURCE = 10e-6
"""Seconds between two reads of a fleet per source followed (10 ms for 1 000, at most 50 ms)."""

_DOORBELL_SPACING = 0.002
"""Seconds from one doorbell round to the next (each costs in the number of sources that
appended)."""
_DOORBELL_FROM = 200
"""Sources from which doorbell rounds are used: from here on a full round's spacing (2 ms at
200 sources) is no shorter than a doorbell round's (below, a blocking XREAD of every stream
wakes sooner and costs little)."""
_IDLE_AFTER = 3
"""Doorbell rounds in a row that read nothing before the follower waits in a blocking XREAD."""
_SLICE = 100
"""Streams read from their last entries alongside a doorbell round, in turn, so that every
stream is read at least every ``poll_interval`` without a full round (an ``XREAD`` of every
stream, several milliseconds at 1 000 sources) holding up the frames of busy sources."""

DOORBELL_SCRIPT = """
-- KEYS: sources. ARGV: a server time (ms), or '' for none; the frames key of a source is
-- ARGV[2] .. name .. ARGV[3]; ARGV[4] the most entries per source. The server's time now (ms)
-- and, for every source whose mirror appended or refreshed at that time or later (mirrors score
-- their source with the server time in the script that appends): its name, 'ok', the id of its
-- last entry before that millisecond ('' if none: the follower's last entry tells whether the
-- entries returned follow on from it) and its entries from that millisecond on; or its name and
-- 'wrongtype' when its frames key is not a stream. (The frames keys are not declared: a fleet
-- is read from one server, never a cluster, since one XREAD names every stream.)
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'zset' then return {'wrongtype', kind} end
local now = redis.call('TIME')
local ms = string.format('%.0f', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
if ARGV[1] == '' then return {'ok', ms, {}} end
-- A millisecond early: an entry's id and its score may be a millisecond apart.
local start = string.format('%.0f', math.max(1, tonumber(ARGV[1]) - 1))
local found = {}
for _, name in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf')) do
  local key = ARGV[2] .. name .. ARGV[3]
  local entries = redis.pcall('XRANGE', key, start, '+', 'COUNT', ARGV[4])
  if entries['err'] then
    found[#found + 1] = {name, 'wrongtype'}
  else
    local before = redis.call('XREVRANGE', key, '(' .. start .. '-0', '-', 'COUNT', 1)
    found[#found + 1] = {name, 'ok', before[1] and before[1][1] or '', entries}
  end
end
return {'ok', ms, found}
"""

_DOORBELL = ServerScript(DOORBELL_SCRIPT)
_DISCOVER = ServerScript(DISCOVER_SCRIPT)
_QUIET_MANY = ServerScript(QUIET_MANY_SCRIPT)
_QUIET_BATCH = 500
_SWEEP_BATCH = 100
"""Quiet checks per script in the background sweep: small enough that neither the server nor
this task holds up the read loop for long."""
_DISCOVERY_SLICE = 50
"""Sources a discovery folds between two checkpoints (the read loop runs in between)."""


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
        """What the registry said about each source at the last discovery, and whether it
        declared itself unavailable (see :class:`~workflow_hub.fleet.SourceLiveness`)."""
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
    def unexpected_errors(self) -> int:
        """Rounds of the fleet's reader, discovery or quiet checks that failed otherwise than
        on the connection or by a refusal of the server (an error of the client library, e.g.
        a client closed under the fleet, or a bug): logged once with a traceback, retried with
        a backoff, the sources unknown meanwhile as when Redis is unreachable."""
        return self._state.unexpected_errors

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


_UNAVAILABLE = Availability.UNAVAILABLE
_T = TypeVar("_T")


@final
class _Liveness(Mapping[str, SourceLiveness]):
    """What the registry said about each source at the last discovery, with whether the source
    declared itself unavailable read from its follower when asked: never behind the frames the
    fleet delivered (a follower that starts after a clean shutdown reads the declaration from
    the checkpoint before it delivers anything), so a source that shut down cleanly is never
    shown as crashed, not even for a moment."""

    __slots__ = ("_followed", "_registry")

    def __init__(
        self, registry: Mapping[str, SourceLiveness], followed: Mapping[str, FollowState]
    ) -> None:
        self._registry = registry
        self._followed = followed

    def __getitem__(self, source: str) -> SourceLiveness:
        seen = self.get(source)
        if seen is None:
            raise KeyError(source)
        return seen

    @overload
    def get(self, source: str, /) -> SourceLiveness | None: ...
    @overload
    def get(self, source: str, /, default: SourceLiveness | _T) -> SourceLiveness | _T: ...

    def get(self, source: str, /, default: object = None) -> object:
        # Written out (not Mapping's get over __getitem__): the fleet server asks once a frame.
        seen = self._registry.get(source)
        if seen is None:
            return default
        stream = self._followed.get(source)
        declared = stream is not None and stream.view.availability is _UNAVAILABLE
        return seen if seen.declared is declared else attrs.evolve(seen, declared=declared)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)


@attrs.define
class _FleetState:
    read_timeout: float
    last_discovery: float
    bad_members: int = 0
    unexpected_errors: int = 0

    def unexpected(self, redis: coredis.Redis[Any]) -> None:
        """Count an unexpected error; the next round trips run on fresh connections."""
        self.unexpected_errors += 1
        with contextlib.suppress(Exception):
            drop_connections(redis)


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
    # Each source's follower: the stream FleetStream.streams shows (for its statistics) and
    # the state the reader and discovery work on (the two ends of one follower).
    streams: dict[str, SourceStream] = {}
    followed: dict[str, FollowState] = {}
    liveness: dict[str, SourceLiveness] = {}
    timeout = float(read_timeout)
    state = _FleetState(read_timeout=timeout, last_discovery=trio.current_time())
    send, receive = trio.open_memory_channel[tuple[str, Frame | None]](1024)
    skipped: set[bytes] = set()

    def follow(source: str) -> None:
        one = FollowState(redis, prefix, source, block=block, count=count, read_timeout=timeout)
        followed[source] = one
        streams[source] = SourceStream._create(one)

    def mark(stream: FollowState, *, stale: bool, last_seen_ms: float | None = None) -> None:
        if stream.stale != stale:
            reader.request_full()  # said (unavailable, or the state again) in a full round
        if stale:
            stream.mark_stale(last_seen_ms)
        else:
            stream.mark_fresh()

    def retire(source: str) -> None:
        logger.info("fleet: source %r retired (no refresh for %gs)", source, retire_s)
        streams.pop(source, None)
        stream = followed.pop(source, None)
        if stream is not None:
            stream.closed = True
        liveness.pop(source, None)

    async def run_discovery(nursery: trio.Nursery) -> None:
        retirements: list[str] = []
        failures = OutageLog(logger)
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
                failures.report(
                    logging.WARNING,
                    "fleet discovery: Redis unreachable (%s)",
                    describe(error),
                    error=error,
                )
                await trio.sleep(poll)
                continue
            except (ValueError, IndexError, TypeError, *server_errors()) as error:  # type: ignore[misc]
                failures.report(
                    logging.ERROR,
                    "fleet discovery: cannot read the registry (%s)",
                    describe(error),
                    error=error,
                )
                for stream in followed.values():
                    mark(stream, stale=True)
                await trio.sleep(poll)
                continue
            except Exception as error:  # never into the host's nursery (see OutageLog)
                state.unexpected(redis)
                failures.report(
                    logging.ERROR,
                    "fleet discovery: unexpected error (%s); retrying",
                    describe(error),
                    error=error,
                )
                await trio.sleep(poll)
                continue
            failures.recovered()
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
            for known in list(followed):
                if known in listed:
                    continue
                # Not listed: retired by another follower, or the registry was lost (a Redis
                # restart). Unknown meanwhile; retired once its last refresh is old enough.
                before = liveness.get(known)
                mark(
                    followed[known],
                    stale=True,
                    last_seen_ms=(
                        None
                        if before is None or before.last_seen is None
                        else before.last_seen * 1000
                    ),
                )
                if (
                    before is None
                    or before.last_seen is None
                    or now - before.last_seen * 1000 > retire_s * 1000
                ):
                    retirements.append(known)
                else:
                    liveness[known] = attrs.evolve(before, stale=True)
            for number, (source, seen) in enumerate(listed.items()):
                if number % _DISCOVERY_SLICE == _DISCOVERY_SLICE - 1:
                    await trio.lowlevel.checkpoint()
                if source not in followed:
                    follow(source)
                    reader.request_full()  # its first snapshot comes from a full round
                stream = followed[source]
                stale = now - seen > stale_ms
                liveness[source] = SourceLiveness(source=source, last_seen=seen / 1000, stale=stale)
                mark(stream, stale=stale, last_seen_ms=seen)
            for source in retirements:
                retire(source)
                await send.send((source, None))
            retirements.clear()
            await trio.sleep(poll)

    reader = _FleetReader(
        redis,
        followed,
        send,
        state,
        sources=sources_key(prefix),
        frames_key=source_keys(prefix, "\0").frames,
        block=block,
        count=count,
        read_timeout=float(read_timeout),
        quiet_every=poll,
    )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_discovery, nursery)
        nursery.start_soon(reader.run)
        try:
            yield FleetStream._create(receive, streams, _Liveness(liveness, followed), state)
        finally:
            nursery.cancel_scope.cancel()


@final
class _FleetReader:
    """Every source of a fleet read over one ``XREAD`` at a time (one connection, whatever the
    number of sources); checkpoints, quiet checks and the registry's look-ups run on the
    client's shared, multiplexed connection. Each source keeps its own :class:`FollowState` (sequence check, resyncs, liveness); this task only does their reading for them.

    Two kinds of rounds. A *full* round names every stream in one blocking ``XREAD`` (it waits
    for the first entry of any source, resyncs, and brings back sources in trouble). While
    entries keep coming, *doorbell* rounds take over: mirrors refresh their source's score in
    ``{prefix}:sources`` in the script that appends, so the registry lists, by server time,
    which sources appended since the previous round, and a non-blocking ``XREAD`` reads just
    those, from their exact last entries. A round then costs in the number of busy sources,
    not in the size of the fleet. The registry is only a hint of where to look: every entry is
    still read in order and checked by its sequence number, and a full round at least every
    ``quiet_every`` seconds reads every stream (whatever a hint missed, e.g. after the
    server's clock stepped back, comes then).

    Quiet checks (has an idle source's stream been emptied, deleted, lost?) run in a task of
    their own, off the read path, for the sources that read nothing since the previous sweep.
    """

    def __init__(
        self,
        redis: coredis.Redis[Any],
        streams: dict[str, FollowState],
        send: trio.MemorySendChannel[tuple[str, Frame | None]],
        state: _FleetState | None = None,
        *,
        sources: str,
        frames_key: str,
        block: float,
        count: int,
        read_timeout: float,
        quiet_every: float,
    ) -> None:
        self._redis = redis
        self._streams = streams
        self._send = send
        self._state = state or _FleetState(read_timeout, last_discovery=trio.current_time())
        self._sources = sources
        # A source's frames key is head + name + tail (``frames_key`` is the one of "\0").
        self._frames_head, _, self._frames_tail = frames_key.partition("\0")
        self._block_ms = max(1, int(block * 1000))
        self._block = block
        self._count = count
        self._read_timeout = read_timeout
        self._quiet_every = quiet_every
        self._backoff = _BACKOFF_FIRST
        self._failures = OutageLog(logger)
        self._sweep_failures = OutageLog(logger)
        self._since: int | None = None  # server ms the next doorbell round lists appends from
        self._full_due = True  # the next round must be a full one
        self._next_full = -math.inf  # ... and one comes no later than this
        self._empty = 0  # doorbell rounds in a row that read nothing
        self._last_ok = -math.inf  # when the last doorbell round completed
        self._sliced = 0  # where the next slice of streams starts (in discovery order)
        self._next_slice = math.inf  # when a doorbell round reads the next slice too
        self._waiting: trio.CancelScope | None = None  # a full round's blocking XREAD
        self._swept: dict[FollowState, str | None] = {}

    def request_full(self) -> None:
        """Something changed that only a full round handles (a new source, a source gone
        stale or fresh again, one that lost continuity): do one next."""
        self._full_due = True

    async def run(self) -> None:
        next_round = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._sweep_quiet)
            while True:
                await trio.sleep_until(next_round)
                if not self._streams:
                    await trio.sleep(min(self._block, 0.05))  # nothing discovered yet
                    next_round = trio.current_time()
                    continue
                now = trio.current_time()
                doorbell = self._since is not None and not self._full_due
                doorbell = doorbell and now < self._next_full
                streams = self._streams if doorbell else dict(self._streams)
                touched: list[FollowState] = []
                try:
                    with bounded(self._redis, self._read_timeout):
                        if doorbell:
                            touched = await self._doorbell_round(streams, now)
                        else:
                            await self._round(streams)
                except Exception as error:  # never into the host's nursery (see OutageLog)
                    # (A refusal no single source explains, e.g. a key repaired between the
                    # refused XREAD and the look at the types: the whole round is retried. The
                    # round trips a round runs at once fail together: one failure for them.)
                    error = single(error)
                    if not unexpected(error):
                        self._failures.report(
                            logging.WARNING,
                            "fleet follower: Redis unreachable (%s); retrying",
                            describe(error),
                            error=error,
                        )
                    else:
                        self._state.unexpected(self._redis)
                        self._failures.report(
                            logging.ERROR,
                            "fleet follower: unexpected error (%s); retrying",
                            describe(error),
                            error=error,
                        )
                    self._since = None
                    self._full_due = True
                    failed = list(streams.values())
                    for stream in failed:
                        if stream.retry_at == 0.0:  # covered by the last doorbell round
                            stream.last_read = max(stream.last_read, self._last_ok)
                        if unexpected(error):
                            stream.failed(error, "unexpected error", logging.ERROR, log=False)
                        else:
                            stream.unreachable(error, log=False)
                    await self._deliver(failed)
                    await trio.sleep(self._backoff)
                    self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
                    next_round = trio.current_time()
                    continue
                self._backoff = _BACKOFF_FIRST
                self._failures.recovered()
                if doorbell:
                    await self._deliver(touched)
                    # One round per spacing while busy (a short pause at least, for the rest).
                    next_round = max(
                        now + _DOORBELL_SPACING, trio.current_time() + _DOORBELL_SPACING / 4
                    )
                else:
                    await self._deliver(streams.values())
                    # A full round costs time in the number of sources (the XREAD names every
                    # stream), so full rounds in a row are spaced out.
                    spacing = min(_ROUND_PER_SOURCE * len(streams), 0.05)
                    next_round = trio.current_time() + (
                        _DOORBELL_SPACING if self._since is not None else spacing
                    )

    async def _round(self, streams: dict[str, FollowState]) -> None:
        """A full round: every stream, resyncs, sources in trouble."""
        self._full_due = False
        self._since = None
        now = trio.current_time()
        for stream in streams.values():
            if stream.stale:
                stream.prepare()
        resyncing = [
            stream
            for stream in streams.values()
            if stream.last_id is None and stream.retry_at <= now
        ]
        if resyncing:
            await self._each(resyncing, _resync)
            await self._deliver(streams.values())  # a first snapshot need not wait for the XREAD
        reading = {
            stream.keys.frames: stream
            for stream in streams.values()
            if stream.last_id is not None and stream.retry_at <= now
        }
        got: set[str] = set()
        since = None
        if reading:
            if len(streams) >= _DOORBELL_FROM:
                # The server's time before the XREAD: the first doorbell round lists every
                # append from here on (what this XREAD reads too is read again from its last
                # entry on, so nothing is read twice).
                since = await self._server_ms()
            with trio.CancelScope() as self._waiting:
                got = await self._read(reading, block=True)
            self._waiting = None
            if self._full_due and not got:
                return  # a quiet check found a lost source: resync it without waiting
        else:
            await trio.sleep(self._block)
        quiet = [
            stream
            for stream in reading.values()
            if stream.source not in got and stream.last_id is not None and stream.unreadable
        ]
        if quiet:
            await self._quiet_checks(quiet)
        troubled = math.inf
        done = trio.current_time()
        for stream in streams.values():
            if stream.retry_at <= now:
                if stream.retry_at or stream.refused or stream.backoff != _BACKOFF_FIRST:
                    stream.read_ok()
                else:
                    stream.last_read = done  # all _read_ok would change
            if stream.unreadable or (stream.last_id is None and stream.retry_at <= now):
                self._full_due = True  # brought back by full rounds only
            elif stream.retry_at > now:
                troubled = min(troubled, stream.retry_at)
        self._next_full = min(trio.current_time() + self._quiet_every, troubled)
        if got and since is not None and not self._full_due:
            self._since = since  # entries are coming: doorbell rounds from here on
            self._empty = 0
            # Doorbell rounds read every stream in slices meanwhile (a full round comes for
            # sources in trouble, or when something changed that only a full round handles).
            self._next_full = troubled
            self._sliced = 0
            self._next_slice = trio.current_time() + self._slice_every(len(streams))

    async def _doorbell_round(
        self, streams: Mapping[str, FollowState], now: float
    ) -> list[FollowState]:
        """A doorbell round: the sources that appended since the previous round, with their
        entries, in one script (one round trip); the others are known to have nothing new.

        The script returns each listed source's entries from the previous round's millisecond
        on, and the id of the entry right before them: they are fed only when they follow on
        from the last entry this follower read (that id, or one of them, is it). Any other
        source (a gap in what the script saw, a full batch, a key of the wrong type) is read
        from its exact last entry by an ``XREAD`` in the same round, as before."""
        assert self._since is not None
        reply: Any = await _DOORBELL(
            self._redis,
            keys=[self._sources],
            args=[str(self._since), self._frames_head, self._frames_tail, str(self._count)],
        )
        if text(reply[0]) != "ok":
            self._since = None  # the registry is not a sorted set: discovery says why
            return []
        since = int(text(reply[1]))
        touched: list[FollowState] = []
        exact: dict[str, FollowState] = {}
        got = False
        for found in reply[2]:
            try:
                stream = streams.get(text(found[0]))
            except UnicodeDecodeError:
                continue  # not a source name (discovery logs and counts it)
            if stream is None or stream.last_id is None or stream.retry_at > now:
                continue
            stream.prepare()
            touched.append(stream)
            entries = None if text(found[1]) != "ok" else _following(stream.last_id, found)
            if entries is None:
                exact[stream.keys.frames] = stream  # the XREAD says what is wrong, or reads it
                continue
            if entries:
                got = True
                self._feed(stream, entries)
            if len(found[3]) >= self._count and stream.last_id is not None:
                exact[stream.keys.frames] = stream  # more may follow
        self._since = since
        if now >= self._next_slice:
            await self._deliver(touched)  # what the hints brought need not wait for the slice
            for stream in self._slice(streams, now):
                if stream.keys.frames not in exact:
                    stream.prepare()
                    touched.append(stream)
                    exact[stream.keys.frames] = stream
        if exact:
            got = bool(await self._read(exact, block=False)) or got
        self._last_ok = now
        for stream in touched:
            if stream.retry_at <= now:
                stream.read_ok()
            if stream.last_id is None or stream.retry_at > now:
                self._full_due = True  # lost continuity or refused: a full round handles it
        if got:
            self._empty = 0
        else:
            self._empty += 1
            if self._empty >= _IDLE_AFTER:
                self._since = None  # quiet again: wait on every stream in a blocking XREAD
        return touched

    def _slice_every(self, streams: int) -> float:
        """Seconds between two slices: every stream is read within ``quiet_every``."""
        return self._quiet_every / max(1, math.ceil(streams / _SLICE))

    def _slice(self, streams: Mapping[str, FollowState], now: float) -> list[FollowState]:
        """The next ``_SLICE`` streams in turn that can be read now."""
        names = list(streams)
        start = self._sliced if self._sliced < len(names) else 0
        self._sliced = start + _SLICE
        self._next_slice = now + self._slice_every(len(names))
        return [
            stream
            for name in names[start : start + _SLICE]
            if (stream := streams[name]).last_id is not None and stream.retry_at <= now
        ]

    async def _server_ms(self) -> int | None:
        """The server's time (ms), from the doorbell script; ``None`` when the registry is not
        a sorted set."""
        reply: Any = await _DOORBELL(self._redis, keys=[self._sources], args=[""])
        if text(reply[0]) != "ok":
            return None
        return int(text(reply[1]))

    async def _read(self, reading: Mapping[str, FollowState], *, block: bool) -> set[str]:
        """One ``XREAD`` of ``reading`` from each stream's last entry; the sources that got
        entries."""
        # A stream chosen for this read may have lost its position since (a quiet check in the
        # other task, while the round awaited the server's time or a doorbell): it starts over
        # from its checkpoint, so it is not read from a position it no longer has.
        sent = {
            key: stream.last_id for key, stream in reading.items() if stream.last_id is not None
        }
        got: set[str] = set()
        if not sent:
            return got
        try:
            reply = await self._redis.xread(
                sent,
                count=self._count,
                block=self._block_ms if block else None,
            )
        except server_errors() as error:
            # One key of the wrong type fails the whole read: find it, leave it out.
            if not await self._set_aside_bad_keys(reading, error):
                raise
            self._full_due = True
            return got
        for key, entries in (reply or {}).items():
            name = text(key)
            found = reading.get(name)
            if found is None or found.last_id != sent[name]:
                continue  # lost continuity meanwhile (a quiet check): it starts over anyway
            got.add(found.source)
            self._feed(found, entries)
        return got

    @staticmethod
    def _feed(stream: FollowState, entries: Sequence[Any]) -> None:
        try:
            stream.feed(entries)
        except Exception as error:  # one source never takes the fleet down
            logger.exception("fleet follower: source %r failed; starting over", stream.source)
            stream.lose_continuity()
            stream.refused_read(error)

    async def _each(
        self, streams: list[FollowState], action: Callable[[FollowState], Awaitable[None]]
    ) -> None:
        """Run ``action`` for every stream at once (their commands share one connection);
        a source whose data cannot be read is refused alone."""

        async def one(stream: FollowState) -> None:
            try:
                await action(stream)
            except (BadKey, BadData, *server_errors()) as error:  # type: ignore[misc]
                stream.refused_read(error)

        async with trio.open_nursery() as nursery:
            for stream in streams:
                nursery.start_soon(one, stream)

    async def _sweep_quiet(self) -> None:
        """Every ``quiet_every`` seconds, the quiet check of every source that read nothing
        since the previous sweep, off the read path (the read loop keeps reading meanwhile)."""
        while True:
            await trio.sleep(self._quiet_every)
            now = trio.current_time()
            streams = list(self._streams.values())
            quiet = [
                stream
                for stream in streams
                if stream.last_id is not None
                and not stream.unreadable
                and not stream.closed
                and stream.retry_at <= now
                and self._swept.get(stream, stream.last_id) == stream.last_id
            ]
            self._swept = {stream: stream.last_id for stream in streams}
            if not quiet:
                continue
            try:
                with bounded(self._redis, self._read_timeout):
                    await self._quiet_checks(quiet, batch=_SWEEP_BATCH)
            except Exception as error:  # never into the host's nursery (see OutageLog)
                error = single(error)
                if not unexpected(error):
                    # The read loop notices an unreachable Redis itself (and says so).
                    logger.debug("fleet follower: quiet checks failed (%s)", describe(error))
                    continue
                self._state.unexpected(self._redis)
                self._sweep_failures.report(
                    logging.ERROR,
                    "fleet follower: quiet checks failed (%s); retrying",
                    describe(error),
                    error=error,
                )
            else:
                self._sweep_failures.recovered()

    async def _quiet_checks(self, streams: list[FollowState], batch: int = _QUIET_BATCH) -> None:
        """The quiet check of every source in ``streams``, in one script per ``batch`` sources.

        A source that read an entry while its check was under way is not judged (it is not
        quiet). One that lost continuity gets a full round right away (it resyncs there)."""
        for start in range(0, len(streams), batch):
            some = streams[start : start + batch]
            keys = [key for stream in some for key in (stream.keys.owner, stream.keys.frames)]
            before = [stream.last_id for stream in some]
            replies: Any = await _QUIET_MANY(self._redis, keys=keys, args=[])
            for stream, last_id, reply in zip(some, before, replies, strict=True):
                if stream.last_id != last_id or last_id is None or stream.closed:
                    continue
                try:
                    lost = stream.judge_quiet(reply)
                    stream.after_quiet(lost)
                except (BadKey, BadData) as error:
                    stream.refused_read(error)
                    lost = True
                if lost:
                    self._full_due = True
                    if self._waiting is not None:
                        self._waiting.cancel()

    async def _set_aside_bad_keys(
        self, reading: Mapping[str, FollowState], error: Exception
    ) -> bool:
        """After a refused ``XREAD``: the sources whose frames key is not a stream are refused
        (unknown, read again later); True when there was one."""
        found = await not_streams(self._redis, reading)
        for key, kind in found.items():
            reading[key].refused_read(BadKey(f"{key} is a {kind}, not a stream"))
        return bool(found)

    async def _deliver(self, streams: Iterable[FollowState]) -> None:
        for stream in streams:
            if not stream.ready:
                continue
            for frame in stream.take_ready():
                if stream.closed:
                    break  # retired meanwhile: its ``None`` is (or will be) its last word
                await self._send.send((stream.source, frame))


class _Entry(NamedTuple):
    """A stream entry from a script's reply (what ``XREAD`` gives, as the follower reads it)."""

    identifier: Any
    field_values: dict[Any, Any]


def _following(last_id: str, found: Sequence[Any]) -> list[_Entry] | None:
    """The entries of a doorbell script's ``found`` item that come after ``last_id``, when they
    follow on from it; ``None`` when entries may be missing in between (or the reply is not
    readable): the caller then reads the source from ``last_id`` itself."""
    try:
        before = text(found[2])
        identifiers = [text(entry[0]) for entry in found[3]]
    except (UnicodeDecodeError, IndexError, TypeError):
        return None
    if last_id in identifiers:
        first = identifiers.index(last_id) + 1
    elif before == last_id or (not before and not identifiers):
        first = 0  # right after the last entry read (or the stream holds nothing at all)
    else:
        return None
    entries = []
    for identifier, (_, values) in zip(identifiers[first:], found[3][first:], strict=True):
        if not isinstance(values, list | tuple):
            return None
        entries.append(_Entry(identifier, dict(zip(values[::2], values[1::2], strict=False))))
    return entries


async def _resync(stream: FollowState) -> None:
    await stream.resync()
    stream.unreadable = False
