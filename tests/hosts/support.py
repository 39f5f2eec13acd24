"""Shared by the host tests: running a real asyncio program, and waiting for frames in one.

The asyncio tests are plain ``def test_...(): run(main)``: pytest-trio's ``trio_mode`` only wraps
``async def`` tests, so each is a real asyncio program (``asyncio.run``) with no trio runner
around it, bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import TypeVar

from workflow_hub import Frame, SnapshotFrame

T = TypeVar("T")

TIMEOUT = 30.0


def run(main: Callable[[], Awaitable[T]], timeout: float = TIMEOUT) -> T:
    """``asyncio.run(main())`` with a deadline: a hang fails the test instead of stalling it."""

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await main()

    return asyncio.run(bounded())


class Recorder:
    """An asyncio observer callback that records frames and wakes whoever waits for a count."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self._wanted: tuple[Callable[[list[Frame]], bool], asyncio.Event] | None = None

    async def __call__(self, frame: Frame) -> None:
        await asyncio.sleep(0)  # a real asyncio coroutine: it yields to the asyncio loop
        self.frames.append(frame)
        self._check()

    def _check(self) -> None:
        if self._wanted is not None and self._wanted[0](self.frames):
            self._wanted[1].set()

    async def wait_for(self, condition: Callable[[list[Frame]], bool]) -> list[Frame]:
        event = asyncio.Event()
        self._wanted = (condition, event)
        self._check()
        await event.wait()
        self._wanted = None
        return list(self.frames)

    async def wait_count(self, count: int) -> list[Frame]:
        return await self.wait_for(lambda frames: len(frames) >= count)


def is_unavailable(frame: Frame) -> bool:
    return isinstance(frame, SnapshotFrame) and frame.availability == "unavailable"


def continuous(frames: list[Frame]) -> bool:
    """Each frame's revision follows the one before it, within one epoch."""
    return all(
        later.cursor.epoch == earlier.cursor.epoch
        and later.cursor.revision == earlier.cursor.revision + 1
        for earlier, later in itertools.pairwise(frames)
    )
