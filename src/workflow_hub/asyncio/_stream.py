"""``async for frame in frames`` in asyncio code, over a hub subscription living in trio.

The subscription is the hub's own (``hub.subscribe()``): its bounded queue, its snapshot first,
its overflow resnapshot, its resume. asyncio and the guest share one thread, so when frames are
pending the asyncio iterator takes the next one from the hub's queue itself, synchronously, as
the hub's own ``FrameStream`` does for a trio task (``receive_nowait()``): no task switch, and exactly the hub's bound
(O4: only the frame being processed is out of the queue). Only when nothing is pending does it
wait, through a small trio task per stream, the *pump*, which receives the next frame for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from threading import get_ident
from typing import TYPE_CHECKING, Final, final

import trio

from .. import FrameStream as TrioFrameStream
from .. import ObserverLease
from .._core import FrameReceiver
from .._hosting import Pump, run_without_waiting
from .._public import NoPublicConstructor

if TYPE_CHECKING:
    from .. import Cursor, Frame, WorkflowActivityHub

__all__ = ["FrameStream", "open_stream"]

YIELD_EVERY: Final = 64
"""An iterator draining a backlog yields to the asyncio loop once every this many frames."""


@final
class FrameStream(FrameReceiver, metaclass=NoPublicConstructor):
    """Frames of one subscription, for asyncio code: ``async for frame in frames`` (O9, H1).

    The guarantees are the hub's: the current snapshot first (or the frames missed since a
    cursor, R2), then every frame in order, at most ``queue_limit`` pending, an overflow
    replaced by a fresh snapshot; the frame being processed is the one last yielded. Iteration
    ends when the subscription or the hub is disposed, or the host closes. One asyncio task at a
    time may receive.
    """

    __slots__ = ("_ended", "_held", "_loop", "_pump", "_streak", "_stream", "_thread", "_waiter")

    def __init__(self, stream: TrioFrameStream, loop: asyncio.AbstractEventLoop) -> None:
        self._stream = stream
        self._loop = loop
        # The loop's thread (made there): receiving, which wakes the trio pump, happens there.
        self._thread = get_ident()
        # The frame the pump received while the asyncio side waited (at most one).
        self._held: deque[Frame] = deque()
        self._ended = False
        self._streak = 0
        # The trio task that receives when the asyncio side waits; the asyncio side that waits.
        self._pump = Pump()
        self._waiter: asyncio.Future[None] | None = None

    @property
    def lease(self) -> ObserverLease:
        """The hub's lease of this subscription (``resumed``, ``pending``, ``dispose()``)."""
        return self._stream.lease

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self

    async def __anext__(self) -> Frame:
        if self._streak >= YIELD_EVERY:
            # A backlog that never empties must not keep the loop (and the guest) waiting.
            self._streak = 0
            await asyncio.sleep(0)
        frame = self._take_now()
        if frame is not None:
            self._streak += 1
            return frame
        self._streak = 0
        await self._wait()
        frame = self._take_now()
        if frame is None:
            raise StopAsyncIteration
        return frame

    async def receive_all(self) -> list[Frame]:
        """Every frame pending, oldest first, waiting for one when none is; for consumers that
        handle a backlog at once (a transport writing it in one write). Raises
        ``trio.EndOfChannel`` once the subscription has ended."""
        first = self._take_now()
        if first is None:
            await self._wait()
            first = self._take_now()
            if first is None:
                raise trio.EndOfChannel
        taken = [first]
        while (frame := self._take_now()) is not None:
            taken.append(frame)
        return taken

    def receive_all_nowait(self) -> list[Frame]:
        """Every frame pending, oldest first, without waiting; raises ``trio.WouldBlock`` when
        none is, ``trio.EndOfChannel`` once the subscription has ended."""
        if get_ident() != self._thread:
            self._refuse_thread("frames.receive_all_nowait()")
        taken = list(self._held)
        self._held.clear()
        if not self._ended:
            try:
                taken += self._stream.receive_all_nowait()
            except trio.WouldBlock:
                pass
            except trio.EndOfChannel:
                if not taken:
                    raise
        elif not taken:
            raise trio.EndOfChannel
        if not taken:
            raise trio.WouldBlock
        return taken

    # --- the asyncio side ------------------------------------------------------------------

    def _take_now(self) -> Frame | None:
        """The next frame if one can be had without waiting: held by the pump, or pending."""
        if self._held:
            return self._held.popleft()
        if self._ended:
            return None
        try:
            return self._stream.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return None

    async def _wait(self) -> None:
        """Wait until the pump holds a frame, or the subscription has ended."""
        if get_ident() != self._thread:
            self._refuse_thread("receiving from a subscription")
        if self._waiter is not None:
            raise RuntimeError("another asyncio task is already receiving these frames")
        while not self._held and not self._ended and not self._stream.lease.pending:
            waiter = self._waiter = self._loop.create_future()
            self._pump.wanted = True
            self._pump.wake()
            try:
                await waiter
            finally:
                self._waiter = None

    def _refuse_thread(self, call: str) -> None:
        # Waking the pump from another thread would leave it asleep for ever (issue 37).
        raise RuntimeError(
            f"{call} from thread {threading.current_thread().name!r}: a subscription of "
            "workflow_hub.asyncio is received in its asyncio loop's thread (workflow_hub.sync "
            "gives threads their own subscriptions)"
        )

    def _wake_waiter(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the trio side ---------------------------------------------------------------------

    async def _run_pump(self) -> None:
        """The trio task that receives the next frame when the asyncio side waits for one."""
        try:
            await self._pump.run(self._stream.receive, self._hold, self._has_ended)
        finally:
            self._ended = True
            self._wake_waiter()

    def _hold(self, frame: Frame) -> None:
        self._pump.wanted = False
        self._held.append(frame)
        self._wake_waiter()

    def _has_ended(self) -> bool:
        return self._ended

    def _close(self) -> None:
        self._ended = True
        self._pump.wake()
        self._wake_waiter()


@asynccontextmanager
async def open_stream(
    hub: WorkflowActivityHub,
    nursery: trio.Nursery,
    loop: asyncio.AbstractEventLoop,
    since: Cursor | None,
) -> AsyncIterator[FrameStream]:
    """Subscribe to ``hub`` from asyncio code; the pump runs in ``nursery``."""
    # The hub attaches synchronously (no checkpoint): the snapshot is captured right here, in
    # the caller's step, atomically with attaching (O1).
    subscription = hub.subscribe(since=since)
    trio_stream = run_without_waiting(subscription.__aenter__(), "hub.subscribe()")
    stream = FrameStream._create(trio_stream, loop)
    try:
        if trio.lowlevel.in_trio_run():
            try:
                nursery.start_soon(stream._run_pump)
            except RuntimeError:  # the host is closing: its nursery takes no new task
                stream._close()
        else:
            stream._close()  # the host has closed: inert, as a subscription to a disposed hub
        yield stream
    finally:
        stream._close()
        run_without_waiting(subscription.__aexit__(None, None, None), "leaving hub.subscribe()")
