"""Where the tracker is told: never in LangGraph's way, always in order.

A callback only queues its call; the gate applies the queue in order, a whole backlog in one
``tracker.batch()`` (one published change for it), away from the code LangGraph is running:

* a :class:`ThreadGate` (sync invocations) drains in a reporter thread of its own, at most a
  few milliseconds after a call was queued, so a node's thread never waits for the hub
  (``workflow_hub.sync``'s tracker queues the facts for the hub's thread in turn, and the end of
  the drain's batch waits for them and raises a failed one's error, which is told to the
  gate's ``failed``: logged and counted);
* a :class:`LoopGate` (async invocations) drains on the event loop's thread, soon after the call
  was queued (sync nodes and tools run in executor threads and queue from there), so the tracker
  is only ever called on the loop's thread, as ``workflow_hub.asyncio``'s must be.

``flush()`` waits until everything queued so far has been applied; an invocation flushes before
it returns, so what it did is published when ``invoke`` returns.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, final

__all__ = ["Gate", "LoopGate", "ThreadGate"]

Batch = Callable[[], AbstractContextManager[None]]
Failed = Callable[[BaseException], None]

LINGER = 0.005
"""Seconds a reporter thread lets calls gather before it applies them: invisible to a person
watching, and a fast graph's steps are told in a few batches instead of one by one."""


class Gate(Protocol):
    def submit(self, call: Callable[[], None]) -> None:
        """Queue ``call``; calls run one at a time, in the order they were queued."""

    def flush(self, timeout: float | None = None) -> None:
        """Return once every call queued so far has run."""

    def close(self) -> None:
        """Run what is queued and stop; nothing queued afterwards runs."""


def _apply(calls: list[Callable[[], None]], batch: Batch, failed: Failed) -> None:
    try:
        with batch():
            for call in calls:
                try:
                    call()
                except Exception as error:  # one bad fact must not lose the ones after it
                    failed(error)
    except Exception as error:
        # A tracker that queues its facts (workflow_hub.sync's) raises a failed fact's error
        # at the end of the batch, once every fact of it was applied: nothing else is lost.
        failed(error)


@final
class ThreadGate:
    """Applies queued calls in a reporter thread of its own."""

    __slots__ = (
        "_batch",
        "_busy",
        "_calls",
        "_changed",
        "_closed",
        "_failed",
        "_flushing",
        "_thread",
    )

    def __init__(self, batch: Batch, failed: Failed) -> None:
        self._batch = batch
        self._failed = failed
        self._calls: deque[Callable[[], None]] = deque()
        self._changed = threading.Condition()
        self._busy = False
        self._closed = False
        self._flushing = 0
        self._thread = threading.Thread(
            target=self._run, name="workflow-hub-langgraph", daemon=True
        )
        self._thread.start()

    def submit(self, call: Callable[[], None]) -> None:
        with self._changed:
            if not self._closed:
                self._calls.append(call)
                self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._calls or self._closed)
                if not self._calls:
                    return
                # Let a burst gather: one drain (one batch, one published change) for all of it.
                self._changed.wait_for(lambda: self._closed or self._flushing > 0, LINGER)
                calls = list(self._calls)
                self._calls.clear()
                self._busy = True
            try:
                _apply(calls, self._batch, self._failed)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()

    def flush(self, timeout: float | None = None) -> None:
        if threading.current_thread() is self._thread:
            return
        with self._changed:
            self._flushing += 1
            self._changed.notify_all()
            try:
                self._changed.wait_for(lambda: not self._calls and not self._busy, timeout)
            finally:
                self._flushing -= 1

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()


@final
class LoopGate:
    """Applies queued calls on the event loop's thread, soon after they were queued."""

    __slots__ = (
        "_batch",
        "_calls",
        "_closed",
        "_failed",
        "_lock",
        "_loop",
        "_scheduled",
        "_thread",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, batch: Batch, failed: Failed) -> None:
        self._loop = loop
        self._batch = batch
        self._failed = failed
        self._thread = threading.get_ident()
        self._calls: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._closed = False

    def submit(self, call: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
            self._calls.append(call)
            if self._scheduled:
                return
            self._scheduled = True
        if threading.get_ident() == self._thread:
            self._loop.call_soon(self._drain)
        else:
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            calls = list(self._calls)
            self._calls.clear()
            self._scheduled = False
        if calls:
            _apply(calls, self._batch, self._failed)

    def flush(self, timeout: float | None = None) -> None:
        """On the loop's thread, apply the queue now (elsewhere calls reach the loop in order)."""
        if threading.get_ident() == self._thread:
            self._drain()

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._closed = True
            self._calls.clear()
