"""The follower: a mirrored source read back from Redis with a local subscription's guarantees.

Redis skips trimmed entries without a word and forgets everything when it restarts without
persistence, so the follower checks continuity itself: every entry carries a sequence number one
more than the previous one. An entry that does not continue the sequence (and is not itself a
snapshot) means entries were lost; the follower then starts over from the checkpoint, which is
a snapshot, exactly as a local observer starts over after an overflow (SPEC N2, O4).
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, final

import attrs
import trio

from .._contract import (
    Availability,
    ChangedFrame,
    ContractError,
    Cursor,
    Frame,
    RemovedFrame,
    SnapshotFrame,
    loads,
    unknown_detail,
)
from .._core import FrameReceiver
from .._exceptions import WorkflowHubError
from .._public import NoPublicConstructor
from ..reporting import ActivityView
from ._connection import (
    bounded,
    describe,
    drop_connections,
    server_errors,
    text,
    transient_errors,
    unexpected,
)
from ._keys import (
    DEFAULT_PREFIX,
    QUIET_SCRIPT,
    ServerScript,
    SourceKeys,
    check_name,
    id_at_most,
    source_keys,
)
from ._mirror import BadKey, check_seconds

if TYPE_CHECKING:
    import coredis

__all__ = [
    "DEFAULT_READ_TIMEOUT",
    "FollowState",
    "FollowerStatistics",
    "RedisSource",
    "SourceStream",
    "follow_source",
]

logger = logging.getLogger("workflow_hub.redis")

DEFAULT_BLOCK = 1.0
"""Seconds one blocking read of a follower waits for new entries before it reads again (a
follower notices a closed stream or a stale source at least this often)."""
DEFAULT_READ_COUNT = 1_000
DEFAULT_READ_TIMEOUT = 5.0
"""Seconds without a completed read after which a follower presents its source as unknown."""
_BACKOFF_FIRST = 0.05
STOPPED_REFRESHING = "the source stopped refreshing"
"""Why a stale source is unknown (N5, C3's detail of the follower's own ``unavailable``)."""
_BACKOFF_MAX = 2.0
_QUIET = ServerScript(QUIET_SCRIPT)

_FRAME_TYPE = SnapshotFrame | ChangedFrame | RemovedFrame


@final
@attrs.frozen(kw_only=True)
class FollowerStatistics:
    """What a follower has done so far."""

    source: str
    """The source followed."""
    frames: int
    """Frames delivered (snapshots from checkpoints included)."""
    resyncs: int
    """Times continuity was lost (trimmed or lost entries) and a checkpoint restarted it."""
    connection_errors: int
    """Reads that failed on the connection (or timed out) and were retried."""
    last_seq: int
    """The sequence number of the last entry delivered (-1 before any)."""
    foreign_entries: int = 0
    """Stream entries without a sequence number of ours (another writer's), skipped."""
    errors: int = 0
    """Reads Redis refused or whose data could not be read (a key of the wrong type ...)."""
    unexpected_errors: int = 0
    """Reads that failed otherwise (an error of the client library, e.g. a client closed under
    the follower, or a bug): logged once with a traceback, retried with a backoff."""
    unreadable: bool = False
    """True while no read completed within the follower's ``read_timeout``: the source is
    presented as unknown until one does."""


class BadData(WorkflowHubError):
    """What a source's keys hold cannot be read (undecodable, not ours)."""


@final
class FollowState:
    """What the follower of one source knows, shared by its two ends (trio's channel state).

    The :class:`SourceStream` a user iterates takes frames from :attr:`ready`; a reader fills it:
    the stream's own (:meth:`read_once`, for :func:`follow_source`) or a fleet's shared one
    (``_follow_fleet``), which reads many sources at once and reports to each state through the
    methods below. Neither end reads the other's private attributes: they share this object.
    """

    __slots__ = (
        "alive_after",
        "backoff",
        "block_ms",
        "closed",
        "connection_errors",
        "count",
        "cursor",
        "errors",
        "failed_checkpoint",
        "foreign",
        "frames",
        "keys",
        "last_id",
        "last_read",
        "last_seq",
        "poll",
        "read_timeout",
        "ready",
        "redis",
        "refused",
        "resynced_from",
        "resyncs",
        "retry_at",
        "source",
        "stale",
        "unavailable",
        "unexpected_errors",
        "unreadable",
        "view",
    )

    def __init__(
        self,
        redis: coredis.Redis[Any],
        prefix: str,
        source: str,
        *,
        block: float,
        count: int,
        read_timeout: float,
    ) -> None:
        self.redis = redis
        self.source = source
        self.keys: SourceKeys = source_keys(prefix, source)
        self.block_ms = max(1, int(block * 1000))
        self.poll = block
        self.count = count
        self.read_timeout = read_timeout
        self.ready: deque[Frame] = deque()
        self.last_id: str | None = None  # None: start over from the checkpoint
        self.last_seq = -1
        self.cursor: Cursor | None = None  # the last frame delivered
        self.unavailable = False  # the last frame delivered was our own "unavailable"
        self.resynced_from: str | None = None  # the checkpoint last started from
        self.failed_checkpoint: str | None = None  # a checkpoint that led straight to a gap
        # Everything delivered, folded: after a stale spell, the state to say "available again"
        # with (the entries are still continuous, so it is exact).
        self.view = ActivityView()
        self.stale = False
        # The stream id a stale source must append after to count as alive again: its last
        # refresh (Redis server time), or the last entry read when that is not known. An entry
        # appended before it is only the source's backlog.
        self.alive_after: tuple[int, int] | None = None
        self.unreadable = False
        self.last_read = trio.current_time()
        self.backoff = _BACKOFF_FIRST
        self.retry_at = 0.0
        self.refused = ""  # the last error logged (logged once until reads work again)
        self.closed = False
        self.frames = 0
        self.resyncs = 0
        self.connection_errors = 0
        self.foreign = 0
        self.errors = 0
        self.unexpected_errors = 0

    def statistics(self) -> FollowerStatistics:
        return FollowerStatistics(
            source=self.source,
            frames=self.frames,
            resyncs=self.resyncs,
            connection_errors=self.connection_errors,
            last_seq=self.last_seq,
            foreign_entries=self.foreign,
            errors=self.errors,
            unexpected_errors=self.unexpected_errors,
            unreadable=self.unreadable,
        )

    async def read_once(self) -> None:
        """One read by the stream's own reader (after the backoff, if one is due)."""
        wait = self.retry_at - trio.current_time()
        if wait > 0:
            await trio.sleep(wait)
        try:
            with bounded(self.redis, self.read_timeout):
                await self.fill()
        except transient_errors() as error:
            self.unreachable(error)
        except (BadKey, BadData, *server_errors()) as error:  # type: ignore[misc]
            self.refused_read(error)
        except Exception as error:  # never into the reader's nursery (see OutageLog)
            self.unexpected(error)
        else:
            self.read_ok()

    # --- what a reader (this stream's own, or a fleet's shared one) reports -------------------

    def unreachable(self, error: Exception, *, log: bool = True) -> None:
        self.connection_errors += 1
        self.failed(error, "Redis unreachable", logging.WARNING, log=log)

    def refused_read(self, error: Exception) -> None:
        self.errors += 1
        # Nothing a retry soon would change: unknown now, and a read now and then.
        self.failed(error, "cannot read the source", logging.ERROR, unknown=True)
        self.backoff = _BACKOFF_MAX

    def unexpected(self, error: Exception, *, log: bool = True) -> None:
        """A read failed otherwise (the client library, a bug): unknown after ``read_timeout``
        as when Redis is unreachable, and the retry runs on fresh connections."""
        self.unexpected_errors += 1
        self.failed(error, "unexpected error", logging.ERROR, log=log)
        with contextlib.suppress(Exception):
            drop_connections(self.redis)

    def read_ok(self) -> None:
        self.last_read = trio.current_time()
        self.backoff = _BACKOFF_FIRST
        self.retry_at = 0.0
        self.refused = ""

    def take_ready(self) -> list[Frame]:
        frames = list(self.ready)
        self.ready.clear()
        self.frames += len(frames)
        return frames

    def failed(
        self, error: Exception, what: str, level: int, *, unknown: bool = False, log: bool = True
    ) -> None:
        now = trio.current_time()
        unknown = unknown or now - self.last_read >= self.read_timeout
        if unknown and not self.unreadable:
            self.unreadable = True
            self.say_unavailable(f"{what}: {describe(error)}")
        # Retry after the backoff, but no later than the moment the source becomes unknown.
        delay = self.backoff
        if not self.unreadable:
            delay = min(delay, max(0.0, self.last_read + self.read_timeout - now))
        self.retry_at = now + delay
        self.backoff = min(self.backoff * 2, _BACKOFF_MAX)
        if log and str(error) != self.refused:
            self.refused = str(error)
            logger.log(
                level,
                "follower of %r: %s (%s); retrying%s",
                self.source,
                what,
                describe(error),
                " (shown as unknown meanwhile)" if self.unreadable else "",
                exc_info=error if unexpected(error) else None,
            )

    # --- fleet hooks -------------------------------------------------------------------------

    def mark_stale(self, last_seen_ms: float | None = None) -> None:
        """The source stopped refreshing (its last refresh at ``last_seen_ms``, server time, when
        known): say so with an ``unavailable`` snapshot (at the next read timeout at the latest)
        until it shows signs of life again: an entry appended after that refresh (or, when it
        is not known, after the last entry read)."""
        self.stale = True
        if last_seen_ms is not None:
            self.alive_after = (int(last_seen_ms), _LAST)
        else:
            self.alive_after = _stream_id(self.last_id)

    def mark_fresh(self) -> None:
        """The source refreshes again: its last known state holds (continuity was kept)."""
        if self.stale:
            self.stale = False
            if not self.unreadable:
                self.restore()

    # --- reading -----------------------------------------------------------------------------

    def deliver(self, frame: Frame) -> None:
        if self.stale:
            # A stale source's backlog (what it appended before it stopped refreshing) keeps the
            # view exact for later, but is not shown: never its last state as current (N4). The
            # reader is told "unavailable" with the first frame hidden from it, so that the
            # source coming back always restores the state in full: a frame hidden without it
            # was a gap the next change papered over (N2).
            self.view.apply(frame)
            self.cursor = frame.cursor
            self.say_unavailable(STOPPED_REFRESHING)
            return
        self.ready.append(frame)
        self.view.apply(frame)
        self.cursor = frame.cursor
        self.unavailable = False

    def restore(self) -> None:
        """After our own ``unavailable``: the state as of the last entry, if nothing was lost."""
        if self.unavailable and self.last_id is not None:
            snapshot = self.view.snapshot_frame()
            if snapshot is not None:
                self.deliver(snapshot)

    def say_unavailable(self, why: str) -> None:
        """Our own ``unavailable`` (N4), saying why the source is unknown (C3's detail)."""
        if self.cursor is not None and not self.unavailable:
            self.ready.append(
                SnapshotFrame(
                    cursor=self.cursor,
                    availability=Availability.UNAVAILABLE,
                    detail=unknown_detail(why),
                )
            )
            self.unavailable = True

    async def fill(self) -> None:
        if self.stale:
            self.say_unavailable(STOPPED_REFRESHING)
            if self.ready:
                return
        if self.last_id is None:
            await self.resync()
            self.unreadable = False
            return
        reply = await self.redis.xread(
            {self.keys.frames: self.last_id}, count=self.count, block=self.block_ms
        )
        if not reply:
            self.after_quiet(await self.check_quiet_source())
            return
        self.feed(next(iter(reply.values())))

    def prepare(self) -> None:
        """Before a read: a stale source says so first."""
        if self.stale:
            self.say_unavailable(STOPPED_REFRESHING)

    def after_quiet(self, lost: bool) -> None:
        """After a quiet check (nothing new was read): back from an unreadable spell."""
        if self.unreadable:
            self.unreadable = False
            if not lost and not self.stale:
                self.restore()

    def feed(self, entries: Sequence[Any]) -> None:
        """Entries read after the last one delivered, in order."""
        # A stale source appended again: it is alive after all. Unless it starts over with a
        # snapshot anyway, its state as of the last entry holds again (after an unreadable
        # spell too: nothing was lost while the entries continue the sequence). Entries from
        # before its last known refresh are no such sign: a follower that starts after a crash
        # reads them too.
        revived = self.stale and bool(entries) and self.appended_since_stale(entries[-1])
        restore = revived or (self.unreadable and not self.stale)
        self.unreadable = False
        for entry in entries:
            identifier = text(entry.identifier)
            fields = _fields(entry.field_values)
            seq = _seq(fields)
            if seq is None:
                # Not one of ours (another writer, or undecodable): it carries no sequence
                # number, so skipping it loses nothing the sequence check would not see.
                self.foreign += 1
                if self.foreign == 1:
                    logger.warning(
                        "follower of %r: skipping entry %s, not written by a mirror",
                        self.source,
                        identifier,
                    )
                self.last_id = identifier
                continue
            assert fields is not None
            try:
                frame: Frame = loads(_FRAME_TYPE, fields["frame"])
            except (KeyError, ValueError, ContractError):
                logger.error(
                    "follower of %r: malformed entry %s; starting over from the checkpoint",
                    self.source,
                    identifier,
                )
                self.lose_continuity()
                return
            if seq != self.last_seq + 1 and not isinstance(frame, SnapshotFrame):
                logger.info(
                    "follower of %r: entry %d follows %d (trimmed or lost entries); resyncing",
                    self.source,
                    seq,
                    self.last_seq,
                )
                self.lose_continuity()
                return
            if restore:
                restore = False
                self.stale = False
                if not isinstance(frame, SnapshotFrame):
                    self.restore()
            self.resynced_from = self.failed_checkpoint = None
            self.last_seq = seq
            self.last_id = identifier
            self.deliver(frame)
        if restore and not self.stale:
            self.restore()

    def appended_since_stale(self, entry: Any) -> bool:
        if self.alive_after is None:
            return False  # nothing to tell new from old by: the registry will say
        try:
            appended = _stream_id(text(entry.identifier))
        except UnicodeDecodeError:
            return False
        return appended is not None and appended > self.alive_after

    async def check_quiet_source(self) -> bool:
        """Nothing new for a whole blocking read: make sure no entry was lost meanwhile.

        A Redis restart without persistence loses the stream silently, and so does an ``XTRIM
        MAXLEN 0`` or a ``DEL`` of an idle source; if no mirror appends afterwards, no entry
        would ever reveal it. The owner's sequence number does: it is gone, it no longer
        reaches the last entry delivered, or it is ahead of every entry the stream still holds.
        True when continuity was lost.
        """
        reply = await _QUIET(self.redis, keys=[self.keys.owner, self.keys.frames], args=[])
        return self.judge_quiet(reply)

    def judge_quiet(self, reply: object) -> bool:
        """The quiet check's verdict on ``QUIET_SCRIPT``'s reply for this source."""
        assert self.last_id is not None
        status, *rest = _reply_text(reply)
        if status == "wrongtype":
            raise BadKey(f"a key of source {self.source!r} is a {rest[0]}")
        owner, newest = rest
        try:
            seq = int(owner) if owner else None
            behind = seq is not None and seq > self.last_seq
            unreadable = behind and (not newest or id_at_most(newest, self.last_id))
        except ValueError:
            raise BadData(f"unreadable owner or stream of {self.source!r}") from None
        if seq is None or seq < self.last_seq:
            logger.info("follower of %r: the stream was lost (Redis restarted?)", self.source)
        elif unreadable:
            logger.info(
                "follower of %r: the owner is at entry %d, the stream holds nothing after %d "
                "(emptied or deleted)",
                self.source,
                seq,
                self.last_seq,
            )
        else:
            return False
        self.lose_continuity()
        return True

    def lose_continuity(self) -> None:
        self.resyncs += 1
        self.last_id = None
        # A gap right after starting from a checkpoint: that checkpoint cannot restart the
        # sequence (the entries after it were trimmed too); wait for a newer one.
        self.failed_checkpoint = self.resynced_from

    async def resync(self) -> None:
        checkpoint = _fields(await self.redis.hgetall(self.keys.checkpoint)) or {}
        identity = None
        snapshot = None
        with contextlib.suppress(ValueError):
            identity = text(checkpoint["id"]) if "id" in checkpoint else None
        if identity is not None and identity != self.failed_checkpoint:
            try:
                snapshot = loads(SnapshotFrame, checkpoint["frame"])
                int(text(checkpoint["seq"]))
            except (KeyError, ValueError, ContractError):
                logger.error("follower of %r: malformed checkpoint; waiting", self.source)
                snapshot = None
            if snapshot is not None and self.older_than_delivered(snapshot.cursor):
                snapshot = None
        if snapshot is None:
            # Nothing to start over from yet (Redis restarted, or the mirror has not yet replaced
            # a checkpoint whose following entries were trimmed): unknown until it has.
            self.say_unavailable("no checkpoint of the source to start from yet")
            if not self.ready:
                self.retry_at = trio.current_time() + self.poll
            return
        assert identity is not None
        self.last_seq = int(text(checkpoint["seq"]))
        self.last_id = self.resynced_from = identity
        self.deliver(snapshot)
        if self.stale:
            self.say_unavailable(STOPPED_REFRESHING)

    def older_than_delivered(self, cursor: Cursor) -> bool:
        # What a view would refuse (SPEC R2's rule too): an older revision of the same epoch.
        current = self.cursor
        return (
            current is not None
            and cursor.epoch == current.epoch
            and cursor.revision < current.revision
        )


@final
class SourceStream(FrameReceiver, metaclass=NoPublicConstructor):
    """Frames of one mirrored source, pulled with ``async for`` like a local ``FrameStream``.

    A snapshot first (the checkpoint), then every entry after it in order; whenever entries were
    lost, a fresh snapshot. While no checkpoint can be had (Redis restarted and the mirror has not
    written one yet, or the source stopped refreshing in a fleet), or while no read completed
    within ``read_timeout`` (Redis unreachable, a dead connection), an ``unavailable`` snapshot
    at the last cursor says so: unknown is never shown as the last state. Made by
    :func:`follow_source`.
    """

    def __init__(self, state: FollowState) -> None:
        self._state = state

    @property
    def source(self) -> str:
        return self._state.source

    @property
    def last_cursor(self) -> Cursor | None:
        """The cursor of the last frame delivered (``None`` before the first)."""
        return self._state.cursor

    def statistics(self) -> FollowerStatistics:
        return self._state.statistics()

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self

    async def __anext__(self) -> Frame:
        state = self._state
        while not state.ready:
            if state.closed:
                raise StopAsyncIteration
            await state.read_once()
        frame = state.ready.popleft()
        state.frames += 1
        return frame

    def close(self) -> None:
        """End iteration (after the frames already read)."""
        self._state.closed = True

    def mark_stale(self, last_seen_ms: float | None = None) -> None:
        """The source stopped refreshing (see :meth:`FollowState.mark_stale`)."""
        self._state.mark_stale(last_seen_ms)

    def mark_fresh(self) -> None:
        """The source refreshes again: its last known state holds (continuity was kept)."""
        self._state.mark_fresh()


_LAST = 2**64  # above every sequence part of a stream id: "after this millisecond"


def _stream_id(identifier: str | None) -> tuple[int, int] | None:
    """``"1700000000000-3"`` as ``(1700000000000, 3)``; ``None`` for anything else."""
    if identifier is None:
        return None
    milliseconds, _, sequence = identifier.partition("-")
    if not (milliseconds.isascii() and milliseconds.isdigit()):
        return None
    if not (sequence.isascii() and sequence.isdigit()):
        return None
    return int(milliseconds), int(sequence)


def _fields(values: Mapping[Any, Any]) -> dict[str, Any] | None:
    """A hash's or an entry's fields by name; ``None`` when a name is not UTF-8 (not ours)."""
    try:
        return {text(key): value for key, value in values.items()}
    except UnicodeDecodeError:
        return None


def _seq(fields: Mapping[str, Any] | None) -> int | None:
    if fields is None or "seq" not in fields:
        return None
    try:
        return int(text(fields["seq"]))
    except ValueError:
        return None


def _reply_text(reply: object) -> list[str]:
    if not isinstance(reply, list | tuple) or not reply:
        raise BadData(f"unexpected reply from the server: {reply!r}")
    try:
        return [text(value) for value in reply]
    except UnicodeDecodeError:
        raise BadData("undecodable reply from the server") from None


@asynccontextmanager
async def follow_source(
    redis: coredis.Redis[Any],
    *,
    source: str,
    prefix: str = DEFAULT_PREFIX,
    block: float = DEFAULT_BLOCK,
    count: int = DEFAULT_READ_COUNT,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
) -> AsyncIterator[SourceStream]:
    """``async with follow_source(redis, source="sched-1") as stream: async for frame in stream``.

    The same guarantees as ``hub.subscribe()``: a snapshot first, then FIFO, and a fresh snapshot
    whenever continuity is lost (entries trimmed or lost in a Redis restart, detected by their
    sequence numbers). ``block`` is the longest single blocking read in seconds; ``count`` the
    most entries read per round trip. When no read completed for ``read_timeout`` seconds (Redis
    unreachable, a connection that stopped passing bytes), the stream delivers an
    ``unavailable`` snapshot: the source is unknown until a read completes again, and then its
    state comes back (the follower's own fold, when the entries continue the sequence, else a
    checkpoint). A round trip that takes longer than ``read_timeout`` drops the client's
    connections, so the retry runs on a fresh one.
    """
    check_name(source, "source")
    check_name(prefix, "prefix")
    if type(count) is not int or count < 1:
        raise ContractError("count", f"expected an int >= 1, got {count!r}")
    check_block(block, read_timeout)
    timeout = float(read_timeout)
    state = FollowState(redis, prefix, source, block=block, count=count, read_timeout=timeout)
    stream = SourceStream._create(state)
    try:
        yield stream
    finally:
        stream.close()


def check_block(block: object, read_timeout: object) -> None:
    if not isinstance(block, int | float) or isinstance(block, bool) or not 0 < block < 3600:
        raise ContractError("block", f"expected seconds in (0, 3600), got {block!r}")
    timeout = check_seconds(read_timeout, "read_timeout")
    if timeout <= block:
        raise ContractError(
            "read_timeout", f"must be longer than block ({block:g}s), got {timeout:g}"
        )


@final
class RedisSource:
    """A mirrored source that reporters can subscribe to like a hub.

    ``run_reporter(RedisSource(redis, "sched-1"), render)`` keeps a view of the remote source.
    """

    def __init__(
        self, redis: coredis.Redis[Any], source: str, *, prefix: str = DEFAULT_PREFIX
    ) -> None:
        self._redis = redis
        self._source = check_name(source, "source")
        self._prefix = check_name(prefix, "prefix")

    def subscribe(self) -> AbstractAsyncContextManager[SourceStream]:
        """``async with source.subscribe() as stream`` — the same as :func:`follow_source`."""
        return follow_source(self._redis, source=self._source, prefix=self._prefix)
