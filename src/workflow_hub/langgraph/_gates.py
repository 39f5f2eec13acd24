"""Where the tracker is told: never in LangGraph's way, always in order.

A callback only queues its call; the gate applies the queue in order, a whole backlog in one
``tracker.batch()`` (one published change for it), away from the code LangGraph is running:

* a :class:`ThreadGate` (sync invocations) drains in its tracker's reporter thread (one for all
  the invocations reporting to a tracker, started on demand), at most a few milliseconds after
  a call was queued, so a node's thread never waits for the hub
  (``workflow_hub.sync``'s tracker queues the facts for the hub's thread in turn, and the end of
  the drain's batch waits for them and raises a failed one's error, which is told to the
  gate's ``failed``: logged and counted);
* a :class:`LoopGate` (async invocations) drains on the event loop's thread, a few milliseconds
  after a call was queued (sync nodes and tools run in executor threads and queue from there),
  so the tracker is only ever called on the loop's thread, as ``workflow_hub.asyncio``'s must be.

``flush()`` waits until everything queued so far has been applied; an invocation flushes before
it returns, so what it did is published when ``invoke`` returns.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol, final

__all__ = ["Gate", "Handoff", "LoopGate", "Reporter", "ThreadGate"]

Batch = Callable[[], AbstractContextManager[None]]
Failed = Callable[[BaseException], None]


class Handoff(NamedTuple):
    """How a closed :class:`ThreadGate` hands its last calls to a tracker that queues facts for
    another thread (``workflow_hub.sync``'s) without making the closing caller wait for them to
    be applied: a batch whose end is queued too, and the wait for that (raising a fact's error),
    which the reporter thread then takes on alone."""

    batch: Batch
    settle: Callable[[], None]
    key: object
    """Whose calls these are (an invocation's thread): see :meth:`Reporter.settled`."""


LINGER = 0.005
"""Seconds a gate lets calls gather before it applies them (a reporter thread, or the event
loop): invisible to a person watching, and a fast graph's steps are told in a few batches
instead of one by one."""


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


IDLE = 1.0
"""Seconds a reporter thread with nothing to do waits before it ends (the next call starts it)."""


@final
class Reporter:
    """One thread that applies the queued calls of many :class:`ThreadGate` (one tracker's).

    Started on demand and ended after :data:`IDLE` seconds without work, so an invocation does
    not pay for a thread of its own (starting and joining one was most of what a short
    invocation cost). Gates are drained in the order they became ready, each backlog in its
    own batch.
    """

    __slots__ = ("_changed", "_ready", "_settling", "_thread")

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._ready: deque[ThreadGate] = deque()
        self._thread: threading.Thread | None = None
        # Closed gates whose last calls are queued, not yet known applied, by their handoff's key.
        self._settling: Counter[object] = Counter()

    def gate(self, batch: Batch, failed: Failed, handoff: Handoff | None = None) -> ThreadGate:
        return ThreadGate(self, batch, failed, handoff)

    @property
    def changed(self) -> threading.Condition:
        return self._changed

    def in_reporter(self) -> bool:
        return threading.current_thread() is self._thread

    def settled(self, key: object = None, timeout: float | None = None) -> bool:
        """Wait until the last calls of every closed gate (of those whose handoff has ``key``,
        when given) were applied, their errors told to the gate's ``failed``: what
        :meth:`ThreadGate.close` no longer waits for. False if ``timeout`` ran out first."""
        if self.in_reporter():
            return True
        settling = self._settling
        with self._changed:
            if key is None:
                return self._changed.wait_for(lambda: not settling, timeout)
            return self._changed.wait_for(lambda: key not in settling, timeout)

    def ready(self, gate: ThreadGate) -> None:
        """``gate`` has calls (hold ``changed``)."""
        self._ready.append(gate)
        self._changed.notify_all()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="workflow-hub-langgraph", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        changed = self._changed
        while True:
            with changed:
                if not changed.wait_for(lambda: self._ready, IDLE):
                    self._thread = None
                    return
                # Let a burst gather: one drain (one batch, one published change) per gate.
                changed.wait_for(lambda: any(gate.urgent for gate in self._ready), LINGER)
                gates = list(self._ready)
                self._ready.clear()
                work = [
                    (gate, gate.handoff if gate.closed else None, gate.take()) for gate in gates
                ]
            for gate, handoff, calls in work:
                try:
                    _apply(calls, gate.batch if handoff is None else handoff.batch, gate.failed)
                finally:
                    with changed:
                        gate.busy = False
                        if handoff is not None:
                            self._settling[handoff.key] += 1
                        changed.notify_all()
                if handoff is not None:
                    # The closing caller has gone on: its calls are queued in order, and apply
                    # before anything it asks the hub next. Waiting for them is ours alone.
                    try:
                        handoff.settle()
                    except Exception as error:
                        gate.failed(error)
                    finally:
                        with changed:
                            self._settling[handoff.key] -= 1
                            if not self._settling[handoff.key]:
                                del self._settling[handoff.key]
                            changed.notify_all()


@final
class ThreadGate:
    """Applies queued calls in its tracker's reporter thread (see :class:`Reporter`)."""

    __slots__ = (
        "_calls",
        "_closed",
        "_flushing",
        "_queued",
        "_reporter",
        "batch",
        "busy",
        "failed",
        "handoff",
    )

    def __init__(
        self, reporter: Reporter, batch: Batch, failed: Failed, handoff: Handoff | None
    ) -> None:
        self._reporter = reporter
        self.batch = batch
        self.failed = failed
        self.handoff = handoff
        self._calls: deque[Callable[[], None]] = deque()
        self.busy = False
        self._closed = False
        self._flushing = 0
        self._queued = False  # in the reporter's ready queue

    @property
    def closed(self) -> bool:
        """Nothing is queued after the calls it holds now (the reporter holds ``changed``)."""
        return self._closed

    @property
    def urgent(self) -> bool:
        """Someone waits for this gate's calls: apply them without lingering."""
        return self._closed or self._flushing > 0

    def take(self) -> list[Callable[[], None]]:
        """The calls to apply now (the reporter holds ``changed``)."""
        calls = list(self._calls)
        self._calls.clear()
        self._queued = False
        self.busy = True
        return calls

    def submit(self, call: Callable[[], None]) -> None:
        with self._reporter.changed:
            if self._closed:
                return
            self._calls.append(call)
            if not self._queued:
                self._queued = True
                self._reporter.ready(self)

    def _wait(self, timeout: float | None) -> None:
        changed = self._reporter.changed
        self._flushing += 1
        changed.notify_all()
        try:
            changed.wait_for(lambda: not self._calls and not self.busy, timeout)
        finally:
            self._flushing -= 1

    def flush(self, timeout: float | None = None) -> None:
        if self._reporter.in_reporter():
            return
        with self._reporter.changed:
            self._wait(timeout)

    def close(self) -> None:
        with self._reporter.changed:
            self._closed = True
            if not self._reporter.in_reporter():
                self._wait(None)


@final
class LoopGate:
    """Applies queued calls on the event loop's thread: :data:`LINGER` seconds after the first
    of them was queued there, so an invocation's steps are told in a few batches (as a
    :class:`ThreadGate` tells them), each a published change; at once for a call queued from
    another thread."""

    __slots__ = (
        "_batch",
        "_calls",
        "_closed",
        "_failed",
        "_lingering",
        "_lock",
        "_loop",
        "_soon",
        "_thread",
        "_timer",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, batch: Batch, failed: Failed) -> None:
        self._loop = loop
        self._batch = batch
        self._failed = failed
        self._thread = threading.get_ident()
        self._calls: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._lingering = False  # a drain is due LINGER after a call queued on the loop
        self._soon = False  # a drain is on its way from another thread (call_soon_threadsafe)
        self._closed = False
        self._timer: asyncio.TimerHandle | None = None  # touched on the loop's thread only

    def submit(self, call: Callable[[], None]) -> None:
        here = threading.get_ident() == self._thread
        with self._lock:
            if self._closed:
                return
            self._calls.append(call)
            if here:
                if self._lingering or self._soon:
                    return
                self._lingering = True
            else:
                if self._soon:
                    return
                self._soon = True
        if here:
            self._timer = self._loop.call_later(LINGER, self._drain)
        else:
            # From an executor thread (a sync node or tool): at once, so that what the thread
            # queued reaches the loop before anything it asks the loop afterwards.
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        if self._timer is not None:
            self._timer.cancel()  # a no-op when it is the timer that called
            self._timer = None
        with self._lock:
            calls = list(self._calls)
            self._calls.clear()
            self._lingering = self._soon = False
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
