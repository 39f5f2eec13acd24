"""``async for frame in frames`` in asyncio code, over a hub subscription living in trio.

The subscription is the hub's own (``hub.subscribe()``): its bounded queue, its snapshot first,
its overflow resnapshot, its resume. One small trio task per stream, the *pump*, moves frames
from that queue to the asyncio side, and only when the asyncio side has none left and asks: so
the frames a slow asyncio consumer has not asked for stay in the hub's queue, where the bound
(O4) applies to them exactly as for a trio consumer. When it asks, the pump takes everything
pending at once (``FrameStream.receive_all()``): a consumer that is behind gets its backlog with
one wake-up of each side, not one per frame.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, final

import trio

from .. import FrameStream as TrioFrameStream
from .. import ObserverLease
from .._hosting import run_without_waiting
from .._public import NoPublicConstructor

if TYPE_CHECKING:
    from .. import Cursor, Frame, WorkflowActivityHub

__all__ = ["FrameStream", "open_stream"]


@final
class FrameStream(metaclass=NoPublicConstructor):
    """Frames of one subscription, for asyncio code: ``async for frame in frames`` (O9, H1).

    The guarantees are the hub's: the current snapshot first (or the frames missed since a
    cursor, R2), then every frame in order, at most ``queue_limit`` pending, an overflow
    replaced by a fresh snapshot. Frames the iterator has taken from the hub but not yet yielded
    (what was pending when it last asked) are in flight, like the frame being processed.
    Iteration ends when the subscription or the hub is disposed, or the host closes.
    """

    __slots__ = ("_ended", "_frames", "_loop", "_pump", "_stream", "_waiter", "_wanted")

    def __init__(self, stream: TrioFrameStream, loop: asyncio.AbstractEventLoop) -> None:
        self._stream = stream
        self._loop = loop
        self._frames: deque[Frame] = deque()
        self._ended = False
        # The pump task when it is parked waiting to be asked; the asyncio side that waits.
        self._pump: trio.lowlevel.Task | None = None
        self._wanted = False
        self._waiter: asyncio.Future[None] | None = None

    @property
    def lease(self) -> ObserverLease:
        """The hub's lease of this subscription (``resumed``, ``pending``, ``dispose()``)."""
        return self._stream.lease

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self

    async def __anext__(self) -> Frame:
        frames = self._frames
        if not frames:
            await self._fill()
            if not frames:
                raise StopAsyncIteration
        return frames.popleft()

    async def receive(self) -> Frame:
        """The next frame; raises ``trio.EndOfChannel`` once the subscription has ended."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise trio.EndOfChannel from None

    async def receive_all(self) -> list[Frame]:
        """Every frame pending, oldest first, waiting for one when none is; for consumers that
        handle a backlog at once (a transport writing it in one write). Raises
        ``trio.EndOfChannel`` once the subscription has ended."""
        if not self._frames:
            await self._fill()
            if not self._frames:
                raise trio.EndOfChannel
        taken = list(self._frames)
        self._frames.clear()
        return taken

    # --- the asyncio side ------------------------------------------------------------------

    async def _fill(self) -> None:
        while not self._frames and not self._ended:
            if self._waiter is not None:
                raise RuntimeError("another asyncio task is already receiving these frames")
            waiter = self._waiter = self._loop.create_future()
            self._wanted = True
            self._wake_pump()
            try:
                await waiter
            finally:
                self._waiter = None

    def _wake_pump(self) -> None:
        pump = self._pump
        if pump is not None:
            self._pump = None
            trio.lowlevel.reschedule(pump)

    def _wake_waiter(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the trio side ---------------------------------------------------------------------

    async def _run_pump(self) -> None:
        """The trio task that takes frames from the hub's queue when the asyncio side asks."""
        try:
            while True:
                while not self._wanted:
                    self._pump = trio.lowlevel.current_task()

                    def abort(_: object) -> trio.lowlevel.Abort:
                        self._pump = None
                        return trio.lowlevel.Abort.SUCCEEDED

                    await trio.lowlevel.wait_task_rescheduled(abort)
                    if self._ended:
                        return
                try:
                    taken = await self._stream.receive_all()
                except trio.EndOfChannel:
                    return
                self._wanted = False
                self._frames.extend(taken)
                self._wake_waiter()
        finally:
            self._ended = True
            self._pump = None
            self._wake_waiter()

    def _close(self) -> None:
        self._ended = True
        self._wake_pump()
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
        nursery.start_soon(stream._run_pump)
        yield stream
    finally:
        stream._close()
        run_without_waiting(subscription.__aexit__(None, None, None), "leaving hub.subscribe()")
