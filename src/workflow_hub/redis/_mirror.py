"""The mirror: one hub's frames appended to a Redis stream, fenced so the newest instance wins.

The mirror is an ordinary observer of the hub (SPEC N1): its own bounded queue, an overflow
resnapshot when Redis is slower than the scheduler, and nothing it does ever waits inside a
publisher. Each frame is encoded once; whatever is pending is appended in one round trip by a
server-side script that checks the owner first (SPEC N3), so a paused or partitioned instance
cannot append after a successor claimed the source.
"""

from __future__ import annotations

import contextlib
import logging
import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, final

import attrs
import trio

from .._contract import ContractError, Cursor, Frame, SnapshotFrame, dumps
from .._core import HookRunner
from .._exceptions import WorkflowHubError
from .._public import NoPublicConstructor
from ..reporting import ActivityView
from ._connection import (
    OutageLog,
    bounded,
    describe,
    drop_connections,
    server_errors,
    text,
    transient_errors,
)
from ._keys import (
    APPEND_SCRIPT,
    CLAIM_SCRIPT,
    DEFAULT_PREFIX,
    DEFAULT_RETIRE_AFTER,
    ServerScript,
    SourceKeys,
    check_name,
    source_keys,
)
from ._mirror_events import DEFAULT_EVENTS_BUFFER, DEFAULT_EVENTS_MAXLEN, EventAppender
from ._statistics import MirrorStatistics

if TYPE_CHECKING:
    import coredis

    from .._core import FrameStream, WorkflowActivityHub
    from ._metrics import MirrorMetrics

__all__ = ["Mirror", "MirrorStatistics", "mirror_hub"]

logger = logging.getLogger("workflow_hub.redis")

DEFAULT_MAXLEN = 10_000
DEFAULT_CHECKPOINT_EVERY = 1_000
DEFAULT_REFRESH_INTERVAL = 1.0
DEFAULT_BATCH_LIMIT = 512
DEFAULT_TIMEOUT = 5.0
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 2.0
_APPEND = ServerScript(APPEND_SCRIPT)
_CLAIM = ServerScript(CLAIM_SCRIPT)


class BadKey(WorkflowHubError):
    """A key of the source holds something of another type (written by something else)."""


@final
class Mirror(metaclass=NoPublicConstructor):
    """The handle ``nursery.start(mirror_hub, ...)`` returns: statistics and the claim.

    Not constructed directly: :func:`mirror_hub` makes one.
    """

    def __init__(
        self,
        redis: coredis.Redis[Any],
        *,
        source: str,
        keys: SourceKeys,
        maxlen: int,
        checkpoint_every: int,
        refresh_interval: float,
        batch_limit: int,
        retire_after: float,
        timeout: float,
    ) -> None:
        self._redis = redis
        self._ttl_ms = str(max(1, round(retire_after * 1000)))
        self._timeout = timeout
        self._source = source
        self._keys = keys
        self._maxlen = maxlen
        self._checkpoint_every = checkpoint_every
        self._refresh_interval = refresh_interval
        self._batch_limit = batch_limit
        self._epoch = uuid.uuid4().hex
        self._claimed_order = ""  # the server's claim order, once claimed
        self._owned = False
        self._fenced = False
        self._fenced_by: str | None = None
        self._seq = 0
        self._last_id = ""
        self._checkpoint_seq = -1
        self._checkpoint_due = True
        # What the stream holds: every frame taken from the hub, folded. A checkpoint is this
        # view as a snapshot, so it always matches the stream's order (never the hub's newer
        # state, whose frames may still be queued for the mirror).
        self._view = ActivityView()
        self._claimed_event = trio.Event()
        self._appended: Cursor | None = None
        self._frames = 0
        self._batches = 0
        self._checkpoints = 0
        self._reclaims = 0
        self._connection_errors = 0
        self._server_errors = 0
        self._unexpected_errors = 0
        self._failures = OutageLog(logger)
        self._events: EventAppender | None = None

    @property
    def source(self) -> str:
        return self._source

    @property
    def epoch(self) -> str:
        """This mirror's fencing token."""
        return self._epoch

    @property
    def fenced(self) -> bool:
        return self._fenced

    @property
    def appended_cursor(self) -> Cursor | None:
        """The cursor of the last frame appended to the stream (``None`` before the first): once
        it equals the hub's cursor, everything published so far is in Redis."""
        return self._appended

    async def wait_claimed(self) -> None:
        """Return once this mirror has claimed its source (or has been fenced)."""
        await self._claimed_event.wait()

    def statistics(self) -> MirrorStatistics:
        return MirrorStatistics(
            source=self._source,
            epoch=self._epoch,
            claimed=self._owned,
            fenced=self._fenced,
            frames=self._frames,
            batches=self._batches,
            checkpoints=self._checkpoints,
            reclaims=self._reclaims,
            connection_errors=self._connection_errors,
            server_errors=self._server_errors,
            unexpected_errors=self._unexpected_errors
            + (0 if self._events is None else self._events.unexpected_errors),
            last_seq=self._seq,
            events=0 if self._events is None else self._events.appended,
            events_dropped=0 if self._events is None else self._events.dropped,
        )

    # --- the loop --------------------------------------------------------------------------

    async def _run(self, stream: FrameStream) -> None:
        backoff = _BACKOFF_FIRST
        batch: list[tuple[Frame, str]] = []
        batch_id = ""
        ended = False
        while not self._fenced:
            try:
                if not self._owned:
                    if await self._claim():
                        # What was in flight is covered by the snapshot the reclaim appended.
                        batch = []
                    if self._fenced:
                        break
                if not batch and not ended:
                    ended = await self._take(stream, batch)
                    batch_id = uuid.uuid4().hex[:16]  # kept while this batch is retried
                await self._send(batch, batch_id)
                batch = []
                backoff = _BACKOFF_FIRST
                self._failures.recovered()
                if ended:
                    return
            except Exception as error:  # never into the scheduler's nursery (see OutageLog)
                await trio.sleep(self._failed(error, backoff))
                backoff = min(backoff * 2, _BACKOFF_MAX)

    def _failed(self, error: Exception, backoff: float) -> float:
        """Count and log (once) a failed round trip; the seconds to wait before the next."""
        if isinstance(error, transient_errors()):
            self._connection_errors += 1
            self._failures.report(
                logging.WARNING,
                "mirror of %r: Redis unreachable (%s); retrying with a backoff",
                self._source,
                describe(error),
                error=error,
            )
            return backoff
        if isinstance(error, (BadKey, *server_errors())):
            # Nothing the mirror can repair (a key of the wrong type, a full or read-only
            # server): the scheduler keeps running, the source goes stale for followers,
            # and the mirror tries again at the longest backoff.
            self._server_errors += 1
            self._failures.report(
                logging.ERROR,
                "mirror of %r: Redis refused the append (%s); retrying every %.0fs",
                self._source,
                describe(error),
                _BACKOFF_MAX,
                error=error,
            )
            return _BACKOFF_MAX
        # An error of the client library (a client whose ``async with`` ended under the mirror:
        # "Connection pool is not initialized or has exited") or a bug: the scheduler keeps
        # running all the same. The retry runs on fresh connections; the batch is sent again
        # under the same id, so the script appends it once.
        self._unexpected_errors += 1
        self._failures.report(
            logging.ERROR,
            "mirror of %r: unexpected error (%s); retrying with a backoff",
            self._source,
            describe(error),
            error=error,
        )
        with contextlib.suppress(Exception):
            drop_connections(self._redis)
        return backoff

    async def _take(self, stream: FrameStream, batch: list[tuple[Frame, str]]) -> bool:
        """Wait (at most one refresh interval) for frames; take every one pending. True at end."""
        with trio.move_on_after(self._refresh_interval):
            try:
                frame = await stream.__anext__()
            except StopAsyncIteration:
                return True
            self._add(batch, frame)
            lease = stream.lease
            while lease.pending and len(batch) < self._batch_limit:
                self._add(batch, await stream.__anext__())
        return False

    def _add(self, batch: list[tuple[Frame, str]], frame: Frame) -> None:
        self._view.apply(frame)
        batch.append((frame, dumps(frame)))

    async def _claim(self) -> bool:
        """Claim the source; True when it was a reclaim (a snapshot entry was appended)."""
        reclaim = self._claimed_order != ""
        with bounded(self._redis, self._timeout):
            reply = await _CLAIM(
                self._redis,
                keys=[self._keys.owner],
                args=[self._epoch, self._claimed_order, str(self._seq), self._last_id],
            )
        status, *rest = _reply_text(reply)
        if status == "wrongtype":
            raise BadKey(f"{rest[0]} is a {rest[1]}, not a hash")
        if status == "fenced":
            self._fence(rest[0])
            return False
        self._claimed_order, seq, last = rest
        self._seq = int(seq)
        self._last_id = last
        if reclaim:
            # The stream may have lost entries: a fresh snapshot, as its own entry, tells every
            # follower to start over from it. Owned only once it is there (a failure claims again).
            snapshot = self._view.snapshot_frame()
            if snapshot is not None and not await self._send(
                [(snapshot, dumps(snapshot))], uuid.uuid4().hex[:16], force_checkpoint=True
            ):
                return False
            self._owned = True
            self._reclaims += 1
            logger.warning("mirror of %r: the owner key was lost; claimed again", self._source)
            return True
        self._owned = True
        self._claimed_event.set()
        logger.info("mirror of %r claimed the source (epoch %s)", self._source, self._epoch)
        return False

    async def _send(
        self,
        batch: Sequence[tuple[Frame, str]],
        batch_id: str,
        *,
        force_checkpoint: bool = False,
    ) -> bool:
        """Append ``batch`` (and a checkpoint when due); False when fenced or the owner is lost."""
        if any(isinstance(frame, SnapshotFrame) for frame, _ in batch):
            self._checkpoint_due = True
        count = len(batch)
        if self._seq + count - self._checkpoint_seq >= self._checkpoint_every:
            self._checkpoint_due = True
        checkpoint = ""
        if (self._checkpoint_due or force_checkpoint) and (count or self._last_id):
            last = batch[-1] if batch else None
            if last is not None and isinstance(last[0], SnapshotFrame):
                checkpoint = last[1]
            else:
                snapshot = self._view.snapshot_frame()
                checkpoint = dumps(snapshot) if snapshot is not None else ""
        with bounded(self._redis, self._timeout):
            reply = await _APPEND(
                self._redis,
                keys=[
                    self._keys.owner,
                    self._keys.frames,
                    self._keys.checkpoint,
                    self._keys.sources,
                    self._keys.events,  # its time to live is refreshed with the others
                ],
                args=[
                    self._epoch,
                    self._claimed_order,
                    str(self._seq),
                    str(self._maxlen),
                    self._source,
                    checkpoint,
                    batch_id,
                    self._ttl_ms,
                    *[payload for _, payload in batch],
                ],
            )
        status, *rest = _reply_text(reply)
        if status == "wrongtype":
            raise BadKey(f"{rest[0]} is a {rest[1]}")
        if status == "fenced":
            self._fence(rest[0])
            return False
        if status == "lost":
            self._owned = False
            return False
        last_id, stale, _duplicate = rest
        if batch:
            self._appended = batch[-1][0].cursor
        self._seq += count
        self._last_id = last_id
        self._frames += count
        self._batches += 1
        if checkpoint:
            self._checkpoint_seq = self._seq
            self._checkpoints += 1
            self._checkpoint_due = False
        if stale == "1":
            self._checkpoint_due = True
        return True

    def _fence(self, by: str) -> None:
        self._owned = False
        self._fenced = True
        self._fenced_by = by
        self._claimed_event.set()
        logger.error(
            "mirror of %r fenced: instance %s claimed the source; this mirror (epoch %s) stops",
            self._source,
            by,
            self._epoch,
        )


def _reply_text(reply: object) -> list[str]:
    if not isinstance(reply, list | tuple) or not reply:
        raise BadKey(f"unexpected reply from the mirror script: {reply!r}")
    return [text(value) for value in reply]


def check_seconds(value: object, field: str) -> float:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ContractError(field, f"expected seconds > 0, got {value!r}")
    return float(value)


def _check_positive_int(value: object, field: str) -> int:
    if type(value) is not int or value < 1:
        raise ContractError(field, f"expected an int >= 1, got {value!r}")
    return value


async def mirror_hub(
    hub: WorkflowActivityHub,
    redis: coredis.Redis[Any],
    *,
    source: str,
    prefix: str = DEFAULT_PREFIX,
    maxlen: int = DEFAULT_MAXLEN,
    checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
    refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
    batch_limit: int = DEFAULT_BATCH_LIMIT,
    retire_after: float = DEFAULT_RETIRE_AFTER,
    round_trip_timeout: float = DEFAULT_TIMEOUT,
    metrics: MirrorMetrics | None = None,
    runner: HookRunner | None = None,
    events_maxlen: int = DEFAULT_EVENTS_MAXLEN,
    events_buffer: int = DEFAULT_EVENTS_BUFFER,
    task_status: trio.TaskStatus[Mirror] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Mirror ``hub`` into ``{prefix}:{source}:frames`` until the hub is disposed or fenced.

    Start it with ``mirror = await nursery.start(functools.partial(mirror_hub, hub, redis,
    source="sched-1"))``: by then the mirror is subscribed, so nothing published afterwards is
    missed; ``await mirror.wait_claimed()`` waits for the claim. ``redis`` is a coredis client
    the caller opened. ``maxlen`` is the stream's approximate length (``MAXLEN ~``); a checkpoint
    is written at every snapshot frame and every ``checkpoint_every`` entries (at most half of
    ``maxlen``, so that one is always inside the retained stream); ``refresh_interval`` is how
    often an idle mirror refreshes its last-seen time in ``{prefix}:sources``. Each append and
    refresh gives the source's keys ``retire_after`` seconds more to live (an hour by default):
    once the mirror is gone for that long they expire and followers retire the source.
    ``round_trip_timeout`` bounds each round trip: one that misses it drops the client's connections and is
    retried on a fresh one. ``metrics`` (a :class:`MirrorMetrics`) exposes its statistics to
    Prometheus.

    Redis unreachable: the mirror retries with a backoff while the hub's bounded queue absorbs
    the frames (an overflow becomes one snapshot). Redis refuses the append (a key of the wrong
    type, out of memory): the mirror logs it, counts it and tries again every two seconds; the
    scheduler never sees the error. Fenced by a newer instance: it logs an
    error, sets ``mirror.fenced`` and returns; it never claims again by itself.

    Hook events (SPEC N6): with ``runner`` (the host's :class:`~workflow_hub.HookRunner`, the
    one that runs the scheduler's own handlers) the mirror registers as its extension
    ``"workflow_hub.redis"`` and appends every hook event to ``{prefix}:{source}:events``
    (``MAXLEN ~ events_maxlen``), fenced by the same claim as the frames and expiring with the
    source's other keys. Up to ``events_buffer`` events wait while Redis is slow; beyond, the
    oldest are dropped and counted, and followers see the hole (``follow_events``).
    """
    check_name(source, "source")
    check_name(prefix, "prefix")
    _check_positive_int(maxlen, "maxlen")
    _check_positive_int(checkpoint_every, "checkpoint_every")
    _check_positive_int(batch_limit, "batch_limit")
    _check_positive_int(events_maxlen, "events_maxlen")
    _check_positive_int(events_buffer, "events_buffer")
    if checkpoint_every * 2 > maxlen:
        raise ContractError(
            "checkpoint_every",
            f"must be at most maxlen / 2 ({maxlen // 2}), got {checkpoint_every}",
        )
    refresh_interval = check_seconds(refresh_interval, "refresh_interval")
    retire_after = check_seconds(retire_after, "retire_after")
    timeout = check_seconds(round_trip_timeout, "round_trip_timeout")
    if retire_after <= refresh_interval:
        raise ContractError(
            "retire_after",
            f"must be longer than refresh_interval ({refresh_interval:g}s), got {retire_after:g}",
        )
    mirror = Mirror._create(
        redis,
        source=source,
        keys=source_keys(prefix, source),
        maxlen=maxlen,
        checkpoint_every=checkpoint_every,
        refresh_interval=refresh_interval,
        batch_limit=batch_limit,
        retire_after=retire_after,
        timeout=timeout,
    )
    if metrics is not None:
        from ._metrics import MirrorMetrics  # prometheus_client only for those who use it

        if not isinstance(metrics, MirrorMetrics):
            raise ContractError("metrics", f"expected MirrorMetrics, got {type(metrics).__name__}")
        metrics.bind(mirror)
    if runner is not None:
        if not isinstance(runner, HookRunner):
            raise ContractError("runner", f"expected a HookRunner, got {type(runner).__name__}")
        if runner.hub is not hub:
            raise ContractError("runner", "the HookRunner belongs to another hub")
        keys = mirror._keys
        mirror._events = EventAppender(
            _Owner(mirror),
            redis,
            events_key=keys.events,
            owner_key=keys.owner,
            maxlen=events_maxlen,
            limit=events_buffer,
            batch_limit=batch_limit,
            ttl_ms=mirror._ttl_ms,
            timeout=timeout,
        )
        mirror._events.register(runner)
    async with hub.subscribe() as stream:
        events = mirror._events
        if events is None:
            task_status.started(mirror)
            await mirror._run(stream)
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(events.run)
            task_status.started(mirror)
            try:
                await mirror._run(stream)
            finally:
                events.close()
                if not mirror._claimed_event.is_set():
                    nursery.cancel_scope.cancel()  # never claimed: nothing to append to


@final
@attrs.define(eq=False)
class _Owner:
    """What the events half of a mirror (``_mirror_events``) sees of it: the claim it appends
    under and the fencing it reports, without reaching into the mirror's attributes."""

    _mirror: Mirror

    @property
    def source(self) -> str:
        return self._mirror.source

    @property
    def epoch(self) -> str:
        return self._mirror.epoch

    @property
    def fenced(self) -> bool:
        return self._mirror.fenced

    @property
    def claimed_order(self) -> str:
        return self._mirror._claimed_order

    async def wait_claimed(self) -> None:
        await self._mirror.wait_claimed()

    def fence(self, by: str) -> None:
        self._mirror._fence(by)
