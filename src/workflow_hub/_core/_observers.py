"""Per-observer bounded queues, and the two ways to consume one: a callback task or a stream.

A queue belongs to one observer. The publisher side (`push`) is synchronous and O(1): it never
waits for the consumer. When ``limit`` frames are already pending, the arriving frame clears them
and one fresh snapshot of the hub's current state takes their place (SPEC O4), so an observer that
falls behind loses continuity visibly instead of losing updates silently.

The consumer side parks its task when the queue is empty and is rescheduled directly by `push`:
no channel, no event object per wait, and a consumer that wakes up drains everything pending
without a scheduler round trip per frame.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from types import CoroutineType
from typing import TYPE_CHECKING, Any, final

import trio

from .._contract import DiagnosticKind, Frame
from .._failure_log import FailureLog
from .._public import NoPublicConstructor
from ._conflate import conflate
from ._instruments import LAG_SAMPLE_EVERY

if TYPE_CHECKING:
    from ._hub import WorkflowActivityHub
    from ._instruments import HubInstruments

__all__ = ["FrameCallback", "FrameStream", "ObserverLease"]

logger = logging.getLogger("workflow_hub")

FrameCallback = Callable[[Frame], Awaitable[object] | object]
"""What ``hub.observe`` takes: a sync or async callable receiving one frame."""

YIELD_EVERY = 64
"""A consumer draining a backlog yields to the scheduler once every this many frames."""


@final
class ObserverQueue:
    """The frames pending for one observer, and the task (if any) waiting for them."""

    __slots__ = (
        "_frames",
        "_hub",
        "_limit",
        "_metrics",
        "_until_sample",
        "_waiter",
        "conflate",
        "disposed",
        "resumed",
    )

    def __init__(
        self,
        hub: WorkflowActivityHub,
        first: Iterable[Frame],
        limit: int,
        metrics: HubInstruments | None = None,
    ) -> None:
        self._hub = hub
        self._limit = limit
        # The attach snapshot, or the frames replayed for a resume (R2), possibly none.
        self._frames: deque[Frame] = deque(first)
        self._metrics = metrics
        self._waiter: trio.lowlevel.Task | None = None
        # Deliveries until the next delivery-lag sample (metrics only); the first is sampled.
        self._until_sample = 1
        self.disposed = False
        self.resumed = False
        # Opt-in (subscribe(conflate=True)): a backlog keeps only each root's latest frame.
        self.conflate = False

    @property
    def pending(self) -> int:
        return len(self._frames)

    def push(self, frame: Frame) -> None:
        """Queue ``frame``; a full queue conflates or overflows (O4). Written out where the hub
        broadcasts (one call less per delivery)."""
        # <copy-source ObserverQueue.push>
        frames = self._frames
        if len(frames) < self._limit:
            frames.append(frame)
            if self._waiter is not None:
                self._wake()
        else:
            self._push_full(frame)
        # </copy-source>

    def _push_full(self, frame: Frame) -> None:
        """:meth:`push` of a frame that finds the queue full."""
        if self.conflate and self._compact(frame):
            return
        frames = self._frames
        if self._metrics is not None:
            self._metrics.frames_dropped(len(frames))
        frames.clear()
        # The hub has already applied the arriving frame, so its snapshot includes it.
        frames.append(self._hub.snapshot_frame())
        self._hub._record(DiagnosticKind.OBSERVER_OVERFLOW)
        if self._waiter is not None:
            self._wake()

    def _compact(self, frame: Frame) -> bool:
        """A full conflating queue takes ``frame`` by conflating its backlog, if that frees at
        least half of it (so a backlog of many distinct roots costs O(1) per push, amortised,
        and overflows as usual); False, changing nothing, if it would not."""
        kept = conflate([*self._frames, frame])
        if len(kept) > self._limit // 2:
            return False
        if self._metrics is not None:
            self._metrics.frames_dropped(len(self._frames) + 1 - len(kept))
        self._frames.clear()
        self._frames.extend(kept)
        if self._waiter is not None:
            self._wake()
        return True

    def dispose(self) -> bool:
        """Drop what is pending and stop; True the first time only."""
        if self.disposed:
            return False
        self.disposed = True
        if self._metrics is not None:
            self._metrics.frames_dropped(len(self._frames))
        self._frames.clear()
        self._wake()
        return True

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            trio.lowlevel.reschedule(waiter)

    def start_delivery(self) -> Frame:
        """Take the oldest pending frame (there must be one): its delivery starts now.

        With metrics, one delivery in ``LAG_SAMPLE_EVERY`` also reports the frame's lag.
        """
        frame = self._frames.popleft()
        metrics = self._metrics
        if metrics is not None:
            # <copy-source ObserverQueue.start_delivery>
            self._until_sample -= 1
            if not self._until_sample:
                self._until_sample = LAG_SAMPLE_EVERY
                metrics.sample_lag(frame)
            # </copy-source>
        return frame

    def take_all(self) -> list[Frame]:
        """Take every pending frame at once, oldest first: their deliveries start now.

        For consumers that handle a backlog as one unit (a transport writing it in one go).
        With metrics, the same frames have their lag sampled as if they were taken one by one.
        """
        frames = conflate(self._frames) if self.conflate else list(self._frames)
        metrics = self._metrics
        if metrics is not None and len(frames) < len(self._frames):
            metrics.frames_dropped(len(self._frames) - len(frames))  # conflated away
        self._frames.clear()
        if metrics is not None:
            count = len(frames)
            index = self._until_sample - 1
            while index < count:
                metrics.sample_lag(frames[index])
                index += LAG_SAMPLE_EVERY
            self._until_sample = index - count + 1
        return frames

    async def wait(self) -> bool:
        """Wait until a frame is pending (True) or the queue is disposed (False).

        Parks the task only when nothing is pending: a consumer that pops until the queue is
        empty and only then waits drains a backlog without a scheduler round trip per frame.
        One task at a time may wait; a second one is a bug in the caller.
        """
        while not self._frames:
            if self.disposed:
                return False
            if self._waiter is not None:
                raise trio.BusyResourceError("another task is already receiving these frames")
            task = self._waiter = trio.lowlevel.current_task()

            def abort(_: object, task: trio.lowlevel.Task = task) -> trio.lowlevel.Abort:
                if self._waiter is task:
                    self._waiter = None
                return trio.lowlevel.Abort.SUCCEEDED

            await trio.lowlevel.wait_task_rescheduled(abort)
        return True


@final
class ObserverLease(metaclass=NoPublicConstructor):
    """Returned by ``hub.observe()``: dispose it to stop observing.

    Disposal is idempotent and records ``ObserverDisposed`` once. Pending frames are dropped; a
    callback already running is not cancelled, but no queued callback runs after disposal (O6).
    """

    __slots__ = ("_hub", "_queue")

    def __init__(self, hub: WorkflowActivityHub, queue: ObserverQueue) -> None:
        self._hub = hub
        self._queue = queue

    @property
    def disposed(self) -> bool:
        return self._queue.disposed

    @property
    def resumed(self) -> bool:
        """True when this observer resumed from ``since`` without a snapshot (R2): it received
        the frames it missed from the history, or had missed nothing. False when it started
        with a snapshot (no ``since``, another epoch, a revision the history no longer covers,
        a revision in the future, or more missed frames than ``queue_limit``)."""
        return self._queue.resumed

    @property
    def pending(self) -> int:
        """Frames waiting for this observer (the one being processed does not count)."""
        return self._queue.pending

    def dispose(self) -> None:
        self._hub._check_thread("lease.dispose()")
        self._hub._dispose_observer(self._queue)


def returns_coroutines(callback: Callable[..., object]) -> bool:
    """Whether calling ``callback`` always returns a coroutine: an ``async def`` function (or a
    method or partial of one), or an object whose class's ``__call__`` is one."""
    if inspect.iscoroutinefunction(callback):
        return True
    call = getattr(type(callback), "__call__", None)  # noqa: B004 (the class's, not callable())
    return not isinstance(callback, type) and inspect.iscoroutinefunction(call)


async def deliver_to_callback(
    hub: WorkflowActivityHub, queue: ObserverQueue, callback: FrameCallback
) -> None:
    """The task behind one callback observer: one callback at a time, in queue order (O2, O5).

    It drains what is pending, at most ``YIELD_EVERY`` frames between two checkpoints: a backlog
    that never empties (a callback that publishes into this hub keeps it full) must not starve
    everyone else. Whether the callback is async is decided once, not per frame. A callback
    that keeps failing is logged with one traceback per kind of failure, then counted.
    """
    failures = FailureLog(logger, "a workflow activity observer")
    try:
        if queue._metrics is not None:
            await _deliver_sampled(hub, queue, callback, queue._metrics, failures)
        else:
            await _deliver(hub, queue, callback, failures)
    finally:
        failures.close()


async def _deliver(
    hub: WorkflowActivityHub, queue: ObserverQueue, callback: FrameCallback, failures: FailureLog
) -> None:
    """:func:`deliver_to_callback` with metrics off."""
    frames = queue._frames
    # Without metrics, taking a frame is the deque's popleft itself (start_delivery does no more).
    take = frames.popleft
    coroutines = returns_coroutines(callback)
    while True:
        if not frames and not await queue.wait():
            return
        budget = YIELD_EVERY
        if coroutines:
            while frames and budget:
                budget -= 1
                try:
                    await callback(take())  # type: ignore[misc]
                except Exception as error:
                    _delivery_failed(hub, failures, error)
        else:
            while frames and budget:
                budget -= 1
                try:
                    result: Any = callback(take())
                    # A sync callback returns None: no need for the general (and much slower)
                    # inspect.isawaitable then.
                    if result is not None and (
                        type(result) is CoroutineType or inspect.isawaitable(result)
                    ):
                        await result
                except Exception as error:
                    _delivery_failed(hub, failures, error)
        if frames:
            await trio.lowlevel.checkpoint()


async def _deliver_sampled(
    hub: WorkflowActivityHub,
    queue: ObserverQueue,
    callback: FrameCallback,
    metrics: HubInstruments,
    failures: FailureLog,
) -> None:
    """:func:`deliver_to_callback` with metrics on: start_delivery's lag sampling written out,
    with its countdown in a local.

    The countdown lives here: only this task takes frames from a callback observer's queue.
    """
    frames = queue._frames
    popleft = frames.popleft
    until_sample = queue._until_sample
    coroutines = returns_coroutines(callback)
    while True:
        if not frames and not await queue.wait():
            return
        budget = YIELD_EVERY
        while frames and budget:
            budget -= 1
            frame = popleft()
            # <copy-of ObserverQueue.start_delivery self._until_sample=until_sample>
            until_sample -= 1
            if not until_sample:
                until_sample = LAG_SAMPLE_EVERY
                metrics.sample_lag(frame)
            # </copy-of>
            try:
                if coroutines:
                    await callback(frame)  # type: ignore[misc]
                    continue
                result: Any = callback(frame)
                if result is not None and (
                    type(result) is CoroutineType or inspect.isawaitable(result)
                ):
                    await result
            except Exception as error:
                _delivery_failed(hub, failures, error)
        if frames:
            await trio.lowlevel.checkpoint()


def _delivery_failed(hub: WorkflowActivityHub, failures: FailureLog, error: Exception) -> None:
    failures.failed(error)
    hub._record(DiagnosticKind.OBSERVER_DELIVERY_FAILED)


class FrameReceiver:
    """``receive()`` for a stream of frames that is an async iterator, so that every stream the
    library hands out (a hub's, a host's, a remote hub's, a Redis source's) reads both ways:
    ``async for frame in stream`` and trio's channel idiom, ``await stream.receive()``."""

    __slots__ = ()

    async def __anext__(self) -> Frame:
        raise NotImplementedError

    async def receive(self) -> Frame:
        """The next frame; raises ``trio.EndOfChannel`` once the stream has ended (disposed,
        closed, or its subscription gone)."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise trio.EndOfChannel from None


@final
class FrameStream(FrameReceiver, metaclass=NoPublicConstructor):
    """Frames for one subscriber, pulled with ``async for`` (O9).

    The same guarantees as a callback observer: a snapshot first, then FIFO, bounded, with an
    overflow resnapshot. The frame being processed is the one last yielded; it does not count
    against the bound. Iteration ends when the subscription or the hub is disposed.
    """

    __slots__ = ("_lease", "_queue", "_streak")

    def __init__(self, lease: ObserverLease, queue: ObserverQueue) -> None:
        self._lease = lease
        self._queue = queue
        self._streak = 0

    @property
    def lease(self) -> ObserverLease:
        return self._lease

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self

    async def __anext__(self) -> Frame:
        # Like a callback observer: a checkpoint when it has to wait, and one every YIELD_EVERY
        # frames of a backlog, not one per frame (that would cost more than the rest of the loop).
        queue = self._queue
        if queue._frames:
            self._streak += 1
            if self._streak < YIELD_EVERY:
                # start_delivery, written out: the hottest line of a stream.
                frame = queue._frames.popleft()
                metrics = queue._metrics
                if metrics is not None:
                    # <copy-of ObserverQueue.start_delivery self=queue>
                    queue._until_sample -= 1
                    if not queue._until_sample:
                        queue._until_sample = LAG_SAMPLE_EVERY
                        metrics.sample_lag(frame)
                    # </copy-of>
                return frame
            self._streak = 0
            await trio.lowlevel.checkpoint()
        else:
            self._streak = 0
        if not queue._frames and not await queue.wait():
            raise StopAsyncIteration
        return queue.start_delivery()

    def receive_nowait(self) -> Frame:
        """The next frame if one is pending, without waiting or checkpointing.

        Raises ``trio.WouldBlock`` when none is pending, ``trio.EndOfChannel`` once the
        subscription is disposed. The guarantees are those of :meth:`receive`. For code that
        shares the hub's thread without being a trio task: the asyncio host's iterators take
        frames this way when some are pending.
        """
        queue = self._queue
        if queue._frames:
            return queue.start_delivery()
        if queue.disposed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    async def receive_all(self) -> list[Frame]:
        """Every pending frame, oldest first, waiting for one when none is pending.

        For a consumer that handles a backlog as one unit, such as a transport that writes
        everything a slow client missed in one write. The guarantees are those of
        :meth:`receive`, frame for frame. Raises ``trio.EndOfChannel`` once the subscription
        is disposed.
        """
        queue = self._queue
        self._streak = 0
        if queue._frames:
            await trio.lowlevel.checkpoint()  # one per batch, so a busy consumer still yields
        if not queue._frames and not await queue.wait():
            raise trio.EndOfChannel
        return queue.take_all()

    def receive_all_nowait(self) -> list[Frame]:
        """Every pending frame, oldest first, without waiting or checkpointing.

        Raises ``trio.WouldBlock`` when none is pending, ``trio.EndOfChannel`` once the
        subscription is disposed. The guarantees are those of :meth:`receive_all`. For a
        consumer that has just yielded, so that the checkpoint :meth:`receive_all` makes
        before taking a backlog would be a second one: a transport whose write let other tasks
        run (they are what pushed the frames now pending).
        """
        queue = self._queue
        if queue._frames:
            self._streak = 0
            return queue.take_all()
        if queue.disposed:
            raise trio.EndOfChannel
        raise trio.WouldBlock
