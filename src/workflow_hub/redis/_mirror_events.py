"""The mirror's hook events: copied from the host's ``HookRunner`` into ``{prefix}:{source}:events``.

The mirror registers as one more extension of the runner that dispatches the scheduler's own hook
handlers (as the HTTP server's ``/v1/events`` does), so it sees every event those handlers see,
in the same order, and takes nothing from them. Its handler is a plain function that only
appends to a bounded buffer: a slow or lost Redis never slows the hook chain. When the buffer is
full the oldest event is dropped, and the next event appended carries how many were dropped
right before it (``lost``), so a follower sees a gap it can name instead of a silent skip.

Appends are fenced exactly like frames (``EVENTS_APPEND_SCRIPT`` checks the same owner key), so
an instance that lost its source appends neither frames nor events.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import trio

from .._contract import WorkflowEvent, dumps
from .._core import HOOK_EVENT_TYPES
from .._exceptions import WorkflowHubError
from ._connection import (
    OutageLog,
    bounded,
    describe,
    drop_connections,
    server_errors,
    text,
    transient_errors,
)
from ._keys import EVENTS_APPEND_SCRIPT, ServerScript

if TYPE_CHECKING:
    import coredis

    from .._core import HookRunner

__all__ = ["DEFAULT_EVENTS_BUFFER", "DEFAULT_EVENTS_MAXLEN", "EXTENSION_NAME", "EventAppender"]

logger = logging.getLogger("workflow_hub.redis")

DEFAULT_EVENTS_MAXLEN: Final = 10_000
"""Approximate length of a source's events stream (``MAXLEN ~``)."""
DEFAULT_EVENTS_BUFFER: Final = 4096
"""Hook events a mirror holds while Redis is slow or unreachable; beyond, the oldest is dropped."""
EXTENSION_NAME: Final = "workflow_hub.redis"
"""The name the mirror registers its hook handlers under in the host's ``HookRunner``."""

_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 2.0
_APPEND_EVENTS = ServerScript(EVENTS_APPEND_SCRIPT)


class _BadEventsKey(WorkflowHubError):
    pass


class _Owner(Protocol):
    """What the events half needs of its mirror (which owns the claim and the fencing)."""

    @property
    def source(self) -> str: ...
    @property
    def epoch(self) -> str: ...
    @property
    def fenced(self) -> bool: ...
    @property
    def claimed_order(self) -> str: ...
    async def wait_claimed(self) -> None: ...
    def fence(self, by: str) -> None: ...


@final
class EventAppender:
    """The events half of a mirror: a bounded buffer filled by a hook handler, drained by a task.

    Each buffered item is ``(seq, lost, payload)``: ``seq`` counts every event the runner gave
    this mirror (dropped ones included), so a drop leaves a hole in the sequence of exactly
    ``lost`` entries, which the next item records.
    """

    def __init__(
        self,
        mirror: _Owner,
        redis: coredis.Redis[Any],
        *,
        events_key: str,
        owner_key: str,
        maxlen: int,
        limit: int,
        batch_limit: int,
        ttl_ms: str,
        timeout: float,
    ) -> None:
        self._mirror = mirror
        self._redis = redis
        self._events_key = events_key
        self._owner_key = owner_key
        self._maxlen = str(maxlen)
        self._limit = limit
        self._batch_limit = batch_limit
        self._ttl_ms = ttl_ms
        self._timeout = timeout
        self._buffer: deque[tuple[int, int, str]] = deque()
        self._carry = 0  # dropped with an empty buffer after them: for the next event
        self._wakeup = trio.Event()
        self._closing = False
        self.received = 0
        self.appended = 0
        self.dropped = 0
        self.unexpected_errors = 0
        self._failures = OutageLog(logger)

    def register(self, runner: HookRunner) -> None:
        extension = runner.extension(EXTENSION_NAME)
        for event_type in HOOK_EVENT_TYPES:
            extension.on(event_type, self._push)

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def _push(self, event: WorkflowEvent) -> None:
        # Called synchronously by the runner, in hub order; it never waits.
        if self._closing or self._mirror.fenced:
            return
        self.received += 1
        buffer = self._buffer
        if len(buffer) >= self._limit:
            _, lost, _ = buffer.popleft()
            self.dropped += 1
            if buffer:
                seq, first_lost, payload = buffer[0]
                buffer[0] = (seq, first_lost + lost + 1, payload)
            else:
                self._carry += lost + 1
        buffer.append((self.received, self._carry, dumps(event)))
        self._carry = 0
        self._wakeup.set()

    def close(self) -> None:
        """No more events: :meth:`run` appends what is buffered (one try) and returns."""
        self._closing = True
        self._wakeup.set()

    async def run(self) -> None:
        await self._mirror.wait_claimed()
        backoff = _BACKOFF_FIRST
        batch: list[tuple[int, int, str]] = []
        batch_id = ""
        while not self._mirror.fenced:
            if not batch:
                while not self._buffer and not self._closing:
                    self._wakeup = trio.Event()
                    await self._wakeup.wait()
                if not self._buffer:
                    return  # closing, nothing left
                while self._buffer and len(batch) < self._batch_limit:
                    batch.append(self._buffer.popleft())
                batch_id = uuid.uuid4().hex[:16]
            try:
                if await self._send(batch, batch_id):
                    self.appended += len(batch)
                    batch = []
                    backoff = _BACKOFF_FIRST
                    self._failures.recovered()
                    continue
            except Exception as error:  # never into the scheduler's nursery (see OutageLog)
                if self._closing:
                    return  # the hub is gone; what could not be appended is lost with it
                backoff = max(backoff, self._failed(error))
            else:
                # Not owned (the owner key was lost and the frames side has not claimed again
                # yet): wait for the claim, then the same batch again.
                if self._closing:
                    return
            await trio.sleep(backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX)

    def _failed(self, error: Exception) -> float:
        """Log (once) a failed append; the least backoff before the next."""
        source = self._mirror.source
        if isinstance(error, transient_errors()):
            self._failures.report(
                logging.WARNING,
                "events mirror of %r: Redis unreachable (%s); retrying with a backoff",
                source,
                describe(error),
                error=error,
            )
            return 0.0
        if isinstance(error, (_BadEventsKey, *server_errors())):
            self._failures.report(
                logging.ERROR,
                "events mirror of %r: Redis refused the append (%s); retrying every %.0fs",
                source,
                describe(error),
                _BACKOFF_MAX,
                error=error,
            )
            return _BACKOFF_MAX
        self.unexpected_errors += 1
        self._failures.report(
            logging.ERROR,
            "events mirror of %r: unexpected error (%s); retrying with a backoff",
            source,
            describe(error),
            error=error,
        )
        with contextlib.suppress(Exception):
            drop_connections(self._redis)
        return 0.0

    async def _send(self, batch: list[tuple[int, int, str]], batch_id: str) -> bool:
        args = [
            self._mirror.epoch,
            self._mirror.claimed_order,
            self._maxlen,
            self._ttl_ms,
            batch_id,
        ]
        for seq, lost, payload in batch:
            args += [str(seq), str(lost), payload]
        with bounded(self._redis, self._timeout):
            reply = await _APPEND_EVENTS(
                self._redis, keys=[self._owner_key, self._events_key], args=args
            )
        if not isinstance(reply, list | tuple) or not reply:
            raise _BadEventsKey(f"unexpected reply from the events script: {reply!r}")
        status, *rest = [text(value) for value in reply]
        if status == "wrongtype":
            raise _BadEventsKey(f"{rest[0]} is a {rest[1]}")
        if status == "fenced":
            self._mirror.fence(rest[0])
            return False
        return status == "ok"
