"""Where the tracker is told: never in LangGraph's way, always in order.

A callback only queues its call; the gate applies the queue in order, a whole backlog in one
``tracker.batch()`` (one published change for it), away from the code LangGraph is running:

* a :class:`HubGate` (the thread host's tracker, ``workflow_hub.sync``'s) applies the calls in
  the hub's own thread, next to the tracker, at the next tick of a task there (every
  :data:`HUB_TICK` seconds while there are calls) or when the invocation ends: no thread of
  ours in between, no fact queued twice, and few wake-ups of the hub's thread;
* a :class:`ThreadGate` (sync invocations with any other thread-safe tracker) drains in its
  tracker's reporter thread (one for all the invocations reporting to a tracker, started on
  demand), at most :data:`LINGER` seconds after a call was queued;
* a :class:`LoopGate` (async invocations) drains on the event loop's thread, :data:`LINGER`
  seconds after a call was queued (sync nodes and tools run in executor threads and queue from
  there), so the tracker is only ever called on the loop's thread, as ``workflow_hub.asyncio``'s
  must be.

``close()`` ends an invocation's gate: what it holds is applied before anything asked of the
tracker afterwards (a hub gate queues it in the hub's thread, ahead of whatever is asked next,
and returns; the others apply it before they return). ``flush()`` waits until everything queued
so far has been applied.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, final

import trio

if TYPE_CHECKING:
    from ..sync import HubThread

__all__ = ["Gate", "HubGate", "HubReporter", "LoopGate", "Reporter", "ThreadGate"]

logger = logging.getLogger("workflow_hub")

Batch = Callable[[], AbstractContextManager[None]]
Failed = Callable[[BaseException], None]


LINGER = 0.02
"""Seconds a gate lets calls gather before it applies them (a reporter thread, or the event
loop): invisible to a person watching, as :data:`HUB_TICK` is. A fast graph's steps are told in
a few batches instead of one by one, and an invocation shorter than this in one: on the event
loop each batch is CPU taken from LangGraph's own thread, and the first fact of a batch costs
several times the next ones (5 ms told a request of four 1 ms nodes in three to four batches;
docs/decisions.md, "An async invocation is told in one batch")."""

HUB_TICK = 0.02
"""Seconds between the drains of hub gates: each wake-up of the hub's thread competes with
LangGraph's threads for the interpreter, so a short invocation is told in about two batches
(its start, with what it did by then, and its end); still invisible to a person watching
(docs/decisions.md, "A thread host's invocation is reported in the hub's thread")."""


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
        # A tracker that queues its facts raises a failed fact's error at the end of the
        # batch, once every fact of it was applied: nothing else is lost.
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

    __slots__ = ("_changed", "_ready", "_thread")

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._ready: deque[ThreadGate] = deque()
        self._thread: threading.Thread | None = None

    def gate(self, batch: Batch, failed: Failed) -> ThreadGate:
        return ThreadGate(self, batch, failed)

    @property
    def changed(self) -> threading.Condition:
        return self._changed

    def in_reporter(self) -> bool:
        return threading.current_thread() is self._thread

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
                work = [(gate, gate.take()) for gate in gates]
            for gate, calls in work:
                try:
                    _apply(calls, gate.batch, gate.failed)
                finally:
                    with changed:
                        gate.busy = False
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
    )

    def __init__(self, reporter: Reporter, batch: Batch, failed: Failed) -> None:
        self._reporter = reporter
        self.batch = batch
        self.failed = failed
        self._calls: deque[Callable[[], None]] = deque()
        self.busy = False
        self._closed = False
        self._flushing = 0
        self._queued = False  # in the reporter's ready queue

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
class HubReporter:
    """Applies the queued calls of many :class:`HubGate` (one thread host's tracker's) in the
    hub's own thread, where that tracker lives: a trio task there wakes every
    :data:`HUB_TICK` seconds while gates have calls, and drains those that became ready; it
    ends after :data:`IDLE` seconds without any (the next call starts it again).

    The thread host's tracker would queue each fact for that thread anyway; running the calls
    there, against the :class:`~workflow_hub.RunTracker` itself, saves a thread of ours and a
    second queue. Ticking instead of being woken saves the hub's thread two wake-ups an
    invocation (issue 38).
    """

    __slots__ = ("_lock", "_ready", "_ticking", "thread")

    def __init__(self, thread: HubThread) -> None:
        self.thread = thread
        self._lock = threading.Lock()
        self._ready: deque[HubGate] = deque()
        self._ticking = False  # the task runs, or is being started

    def gate(self, batch: Batch, failed: Failed) -> HubGate:
        return HubGate(self, batch, failed)

    def ready(self, gate: HubGate) -> None:
        """``gate`` has its first calls since it was last drained (any thread)."""
        with self._lock:
            self._ready.append(gate)
            if self._ticking:
                return
            self._ticking = True
        try:
            self.thread.submit(self._start)
        except BaseException:
            with self._lock:
                self._ticking = False
            raise

    def _start(self) -> None:
        trio.lowlevel.spawn_system_task(self._tick, name="workflow-hub-langgraph")

    async def _tick(self) -> None:
        idle = 0.0
        try:
            while True:
                await trio.sleep(HUB_TICK)
                with self._lock:
                    gates = list(self._ready)
                    self._ready.clear()
                    if not gates:
                        idle += HUB_TICK
                        if idle >= IDLE:
                            self._ticking = False
                            return
                        continue
                idle = 0.0
                # What a thread queued for the hub's thread before it handed a gate its calls
                # (a remove_run before invoke) is applied first: each thread keeps its order.
                self.thread.catch_up()
                for gate in gates:
                    gate.drain()
        finally:
            with self._lock:
                self._ticking = False  # cancelled as the host closes: the next call says so

    def flush(self, gates: list[HubGate], timeout: float | None) -> bool:
        """Apply ``gates`` now, after everything queued for the hub's thread before (the last
        calls of closed gates among it); False if ``timeout`` ran out first."""
        if self.thread.is_current():
            for gate in gates:
                gate.drain()
            return True
        done = threading.Event()

        def drain() -> None:
            try:
                for gate in gates:
                    gate.drain()
            finally:
                done.set()

        self.thread.submit(drain)
        return done.wait(timeout)


@final
class HubGate:
    """Applies queued calls in the hub's thread (see :class:`HubReporter`); closing it queues
    its last calls there, ahead of anything asked of the hub afterwards, and returns."""

    __slots__ = ("_batch", "_calls", "_closed", "_failed", "_lock", "_queued", "_reporter")

    def __init__(self, reporter: HubReporter, batch: Batch, failed: Failed) -> None:
        self._reporter = reporter
        self._batch = batch
        self._failed = failed
        self._lock = threading.Lock()
        self._calls: deque[Callable[[], None]] = deque()
        self._queued = False  # in the reporter's ready queue
        self._closed = False

    def submit(self, call: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
            self._calls.append(call)
            if self._queued:
                return
            self._queued = True
        self._reporter.ready(self)

    def drain(self) -> None:
        """In the hub's thread: apply what is queued, in one batch. Never raises: a call's
        error, or the batch's, is told to ``failed``."""
        with self._lock:
            calls = list(self._calls)
            self._calls.clear()
            self._queued = False
        if calls:
            try:
                _apply(calls, self._batch, self._failed)
            except Exception:  # failed() itself raised: never into the hub's run
                logger.exception("reporting a LangGraph event to the tracker")

    def flush(self, timeout: float | None = None) -> None:
        self._reporter.flush([self], timeout)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        if self._reporter.thread.is_current():
            self.drain()
        else:
            self._reporter.thread.submit(self.drain)


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
        if here and self._lingering:
            # A drain is due on this thread, which alone drains and closes the gate: nothing to
            # set, so no lock (an executor thread's append beside it is a deque's, atomic).
            self._calls.append(call)
            return
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
