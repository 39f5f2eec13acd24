"""The follower: a mirrored source read back from Redis with a local subscription's guarantees.

Redis skips trimmed entries without a word and forgets everything when it restarts without
persistence, so the follower checks continuity itself: every entry carries a sequence number one
more than the previous one. An entry that does not continue the sequence (and is not itself a
snapshot) means entries were lost; the follower then starts over from the checkpoint, which is
a snapshot, exactly as a local observer starts over after an overflow (SPEC N2, O4).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator
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
)
from .._public import NoPublicConstructor
from ..reporting import ActivityView
from ._keys import DEFAULT_PREFIX, SourceKeys, check_name, source_keys
from ._mirror import text, transient_errors

if TYPE_CHECKING:
    import coredis

__all__ = ["FollowerStatistics", "RedisSource", "SourceStream", "follow_source"]

logger = logging.getLogger("workflow_hub.redis")

DEFAULT_BLOCK = 1.0
DEFAULT_READ_COUNT = 1_000
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 2.0

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
    """Reads that failed on the connection and were retried."""
    last_seq: int
    """The sequence number of the last entry delivered (-1 before any)."""


@final
class SourceStream(metaclass=NoPublicConstructor):
    """Frames of one mirrored source, pulled with ``async for`` like a local ``FrameStream``.

    A snapshot first (the checkpoint), then every entry after it in order; whenever entries were
    lost, a fresh snapshot. While no checkpoint can be had (Redis restarted and the mirror has not
    written one yet, or the source stopped refreshing in a fleet), an ``unavailable`` snapshot at
    the last cursor says so: unknown is never shown as the last state. Made by
    :func:`follow_source`.
    """

    def __init__(
        self,
        redis: coredis.Redis[Any],
        *,
        source: str,
        keys: SourceKeys,
        block: float,
        count: int,
    ) -> None:
        self._redis = redis
        self._source = source
        self._keys = keys
        self._block_ms = max(1, int(block * 1000))
        self._poll = block
        self._count = count
        self._ready: deque[Frame] = deque()
        self._last_id: str | None = None  # None: start over from the checkpoint
        self._last_seq = -1
        self._cursor: Cursor | None = None  # the last frame delivered
        self._unavailable = False  # the last frame delivered was our own "unavailable"
        self._resynced_from: str | None = None  # the checkpoint last started from
        self._failed_checkpoint: str | None = None  # a checkpoint that led straight to a gap
        # Everything delivered, folded: after a stale spell, the state to say "available again"
        # with (the entries are still continuous, so it is exact).
        self._view = ActivityView()
        self._stale = False
        self._closed = False
        self._frames = 0
        self._resyncs = 0
        self._connection_errors = 0

    @property
    def source(self) -> str:
        return self._source

    def statistics(self) -> FollowerStatistics:
        return FollowerStatistics(
            source=self._source,
            frames=self._frames,
            resyncs=self._resyncs,
            connection_errors=self._connection_errors,
            last_seq=self._last_seq,
        )

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self

    async def __anext__(self) -> Frame:
        backoff = _BACKOFF_FIRST
        while not self._ready:
            if self._closed:
                raise StopAsyncIteration
            try:
                await self._fill()
                backoff = _BACKOFF_FIRST
            except transient_errors() as error:
                self._connection_errors += 1
                logger.warning(
                    "follower of %r: Redis unreachable (%s); retrying in %.2fs",
                    self._source,
                    error,
                    backoff,
                )
                await trio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
        frame = self._ready.popleft()
        self._frames += 1
        return frame

    async def receive(self) -> Frame:
        """The next frame; raises ``trio.EndOfChannel`` once the stream is closed."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise trio.EndOfChannel from None

    def close(self) -> None:
        """End iteration (after the frames already read)."""
        self._closed = True

    # --- fleet hooks -------------------------------------------------------------------------

    def mark_stale(self) -> None:
        """The source stopped refreshing: say so with an ``unavailable`` snapshot (at the next
        read timeout at the latest) until it shows signs of life again."""
        self._stale = True

    def mark_fresh(self) -> None:
        """The source refreshes again: its last known state holds (continuity was kept)."""
        if self._stale:
            self._stale = False
            self._restore()

    # --- reading -----------------------------------------------------------------------------

    def _deliver(self, frame: Frame) -> None:
        self._ready.append(frame)
        self._view.apply(frame)
        self._cursor = frame.cursor
        self._unavailable = False

    def _restore(self) -> None:
        """After our own ``unavailable``: the state as of the last entry, if nothing was lost."""
        if self._unavailable and self._last_id is not None:
            snapshot = self._view.snapshot_frame()
            if snapshot is not None:
                self._deliver(snapshot)

    def _say_unavailable(self) -> None:
        if self._cursor is not None and not self._unavailable:
            self._ready.append(
                SnapshotFrame(cursor=self._cursor, availability=Availability.UNAVAILABLE)
            )
            self._unavailable = True

    async def _fill(self) -> None:
        if self._stale:
            self._say_unavailable()
            if self._ready:
                return
        if self._last_id is None:
            await self._resync()
            return
        reply = await self._redis.xread(
            {self._keys.frames: self._last_id}, count=self._count, block=self._block_ms
        )
        if not reply:
            await self._check_quiet_source()
            return
        entries = next(iter(reply.values()))
        # A stale source appended again: it is alive after all. Unless it starts over with a
        # snapshot anyway, its state as of the last entry holds again.
        restore = bool(entries) and self._stale
        self._stale = self._stale and not restore
        for entry in entries:
            fields = {text(key): value for key, value in entry.field_values.items()}
            try:
                seq = int(text(fields["seq"]))
                frame: Frame = loads(_FRAME_TYPE, fields["frame"])
            except (KeyError, ValueError, ContractError):
                logger.error(
                    "follower of %r: malformed entry %s; starting over from the checkpoint",
                    self._source,
                    text(entry.identifier),
                )
                self._lose_continuity()
                return
            if seq != self._last_seq + 1 and not isinstance(frame, SnapshotFrame):
                logger.info(
                    "follower of %r: entry %d follows %d (trimmed or lost entries); resyncing",
                    self._source,
                    seq,
                    self._last_seq,
                )
                self._lose_continuity()
                return
            if restore:
                restore = False
                if not isinstance(frame, SnapshotFrame):
                    self._restore()
            self._resynced_from = self._failed_checkpoint = None
            self._last_seq = seq
            self._last_id = text(entry.identifier)
            self._deliver(frame)

    async def _check_quiet_source(self) -> None:
        """Nothing new for a whole blocking read: make sure the stream was not lost meanwhile.

        A Redis restart without persistence loses the stream silently; if no mirror appends
        afterwards, no entry would ever reveal it. The owner's sequence number would: it is gone,
        or it no longer reaches the last entry delivered.
        """
        seq = await self._redis.hget(self._keys.owner, "seq")
        if seq is None or int(text(seq)) < self._last_seq:
            logger.info("follower of %r: the stream was lost (Redis restarted?)", self._source)
            self._lose_continuity()

    def _lose_continuity(self) -> None:
        self._resyncs += 1
        self._last_id = None
        # A gap right after starting from a checkpoint: that checkpoint cannot restart the
        # sequence (the entries after it were trimmed too); wait for a newer one.
        self._failed_checkpoint = self._resynced_from

    async def _resync(self) -> None:
        checkpoint = {
            text(key): value
            for key, value in (await self._redis.hgetall(self._keys.checkpoint)).items()
        }
        identity = text(checkpoint["id"]) if "id" in checkpoint else None
        snapshot = None
        if identity is not None and identity != self._failed_checkpoint:
            try:
                snapshot = loads(SnapshotFrame, checkpoint["frame"])
                int(text(checkpoint["seq"]))
            except (KeyError, ValueError, ContractError):
                logger.error("follower of %r: malformed checkpoint; waiting", self._source)
                snapshot = None
            if snapshot is not None and self._older_than_delivered(snapshot.cursor):
                snapshot = None
        if snapshot is None:
            # Nothing to start over from yet (Redis restarted, or the mirror has not yet replaced
            # a checkpoint whose following entries were trimmed): unknown until it has.
            self._say_unavailable()
            if not self._ready:
                await trio.sleep(self._poll)
            return
        assert identity is not None
        self._last_seq = int(text(checkpoint["seq"]))
        self._last_id = self._resynced_from = identity
        self._deliver(snapshot)
        if self._stale:
            self._say_unavailable()

    def _older_than_delivered(self, cursor: Cursor) -> bool:
        # What a view would refuse (SPEC R2's rule too): an older revision of the same epoch.
        current = self._cursor
        return (
            current is not None
            and cursor.epoch == current.epoch
            and cursor.revision < current.revision
        )


@asynccontextmanager
async def follow_source(
    redis: coredis.Redis[Any],
    *,
    source: str,
    prefix: str = DEFAULT_PREFIX,
    block: float = DEFAULT_BLOCK,
    count: int = DEFAULT_READ_COUNT,
) -> AsyncIterator[SourceStream]:
    """``async with follow_source(redis, source="sched-1") as stream: async for frame in stream``.

    The same guarantees as ``hub.subscribe()``: a snapshot first, then FIFO, and a fresh snapshot
    whenever continuity is lost (entries trimmed or lost in a Redis restart, detected by their
    sequence numbers). ``block`` is the longest single blocking read in seconds; ``count`` the
    most entries read per round trip.
    """
    check_name(source, "source")
    check_name(prefix, "prefix")
    if type(count) is not int or count < 1:
        raise ContractError("count", f"expected an int >= 1, got {count!r}")
    if not isinstance(block, int | float) or isinstance(block, bool) or not 0 < block < 3600:
        raise ContractError("block", f"expected seconds in (0, 3600), got {block!r}")
    stream = SourceStream._create(
        redis, source=source, keys=source_keys(prefix, source), block=block, count=count
    )
    try:
        yield stream
    finally:
        stream.close()


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
