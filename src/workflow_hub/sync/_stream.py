"""``for frame in frames`` in a plain thread, over a hub subscription living in trio.

As for asyncio (``workflow_hub.asyncio``), a small trio task per stream, the pump, takes frames
from the hub's own bounded queue only when the thread has none left and asks, so the frames a
slow thread has not asked for stay under the hub's bound (O4), and a thread that is behind gets
its whole backlog at once.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from threading import get_ident
from typing import TYPE_CHECKING, final

import trio

from .. import FrameStream as TrioFrameStream
from .. import ObserverLease
from .._hosting import Pump, check_timeout, run_without_waiting
from .._public import NoPublicConstructor
from ._portal import HostClosedError, Portal

if TYPE_CHECKING:
    from .. import Cursor, Frame, WorkflowActivityHub

__all__ = ["FrameStream", "open_stream"]


@final
class FrameStream(metaclass=NoPublicConstructor):
    """Frames of one subscription for a thread: ``for frame in frames`` blocks for the next one.

    The hub's guarantees (O9): the snapshot first (or the frames missed since a cursor, R2),
    then every frame in order, bounded, an overflow replaced by a fresh snapshot. One thread at
    a time may receive. Iteration ends when the subscription or the hub ends.
    """

    __slots__ = ("_changed", "_ended", "_frames", "_portal", "_pump", "_stream")

    def __init__(self, stream: TrioFrameStream, portal: Portal) -> None:
        self._stream = stream
        self._portal = portal
        self._frames: deque[Frame] = deque()
        self._changed = threading.Condition(threading.Lock())
        self._ended = False
        self._pump = Pump()

    @property
    def lease(self) -> ObserverLease:
        """The hub's lease of this subscription. Read ``resumed`` freely; ``dispose()`` it by
        leaving the ``with`` block."""
        return self._stream.lease

    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        try:
            return self.receive()
        except trio.EndOfChannel:
            raise StopIteration from None

    def receive(self, timeout: float | None = None) -> Frame:
        """The next frame, waiting at most ``timeout`` seconds (None: as long as it takes).

        Raises :class:`TimeoutError` when none came in time, ``trio.EndOfChannel`` once the
        subscription has ended. ``timeout`` is None or seconds >= 0 (infinity, or more than the
        platform can wait, is as long as it takes); anything else raises
        :class:`~workflow_hub.ContractError` naming it. Called in the hub's own thread (inside
        ``hub.call``), where waiting would stop the hub that sends the frames, it raises
        ``RuntimeError`` instead.
        """
        seconds = check_timeout(timeout)
        if get_ident() == self._portal.thread:
            self._refuse_hub_thread("frames.receive()")
        frames = self._frames
        if not frames:
            self._fill(seconds)
        return frames.popleft()

    def receive_all(self, timeout: float | None = None) -> list[Frame]:
        """Every frame pending, oldest first, waiting as :meth:`receive` does when none is."""
        seconds = check_timeout(timeout)
        if get_ident() == self._portal.thread:
            self._refuse_hub_thread("frames.receive_all()")
        if not self._frames:
            self._fill(seconds)
        taken = list(self._frames)
        self._frames.clear()
        return taken

    # --- the receiving thread --------------------------------------------------------------

    def _refuse_hub_thread(self, call: str) -> None:
        raise RuntimeError(
            f"{call} in the hub's own thread (inside hub.call) would wait for ever: the frames "
            "come from that thread. Receive in another thread, or use the trio hub's "
            "subscribe() in trio code"
        )

    def _fill(self, timeout: float | None) -> None:
        with self._changed:
            if not self._frames and not self._ended:
                self._pump.wanted = True
                self._portal.submit(self._pump.wake)
                self._changed.wait_for(lambda: self._frames or self._ended, timeout)
            if self._frames:
                return
            if self._ended:
                raise trio.EndOfChannel
        raise TimeoutError(f"no frame within {timeout} seconds")

    # --- the hub's thread ------------------------------------------------------------------

    async def _run_pump(self) -> None:
        try:
            await self._pump.run(self._stream.receive_all, self._deliver, self._has_ended)
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def _deliver(self, taken: list[Frame]) -> None:
        with self._changed:
            self._pump.wanted = False
            self._frames.extend(taken)
            self._changed.notify_all()

    def _has_ended(self) -> bool:
        return self._ended

    def _close(self) -> None:
        with self._changed:
            self._ended = True
            self._changed.notify_all()
        self._pump.wake()


@contextmanager
def open_stream(
    hub: WorkflowActivityHub, nursery: trio.Nursery, portal: Portal, since: Cursor | None
) -> Iterator[FrameStream]:
    """Subscribe to ``hub`` from a thread: attached in the hub's thread, atomically (O1)."""
    subscription = hub.subscribe(since=since)

    def attach() -> FrameStream:
        trio_stream = run_without_waiting(subscription.__aenter__(), "hub.subscribe()")
        stream = FrameStream._create(trio_stream, portal)
        nursery.start_soon(stream._run_pump)
        return stream

    stream = portal.call(attach)

    def detach() -> None:
        stream._close()
        run_without_waiting(subscription.__aexit__(None, None, None), "leaving hub.subscribe()")

    try:
        yield stream
    finally:
        # HostClosedError: the hub has ended, and the subscription with it.
        with suppress(HostClosedError):
            portal.call(detach)
