"""One door into the mapper: LangGraph calls back from many threads, the tracker wants one caller.

A sync invocation runs its nodes in LangGraph's thread pool, so callbacks arrive from any thread:
a :class:`LockGate` lets one at a time through (the tracker must then accept calls from any
thread, as the thread host's does). An async invocation runs on an event loop, but a sync node or
tool inside it runs in an executor thread: a :class:`LoopGate` calls on the loop's thread at once
and posts calls from other threads to the loop, in order (the tracker is then only ever called on
the loop's thread, as the asyncio host's must be).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Protocol, final

__all__ = ["Gate", "LockGate", "LoopGate"]


class Gate(Protocol):
    def submit(self, call: Callable[[], None]) -> None:
        """Run ``call`` now or soon, never at the same time as another call of this gate."""


@final
class LockGate:
    __slots__ = ("_lock",)

    def __init__(self) -> None:
        # Reentrant: a tracker that runs a callback inline may report from inside a call.
        self._lock = threading.RLock()

    def submit(self, call: Callable[[], None]) -> None:
        with self._lock:
            call()


@final
class LoopGate:
    __slots__ = ("_loop", "_thread")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.get_ident()

    def submit(self, call: Callable[[], None]) -> None:
        if threading.get_ident() == self._thread:
            call()
        else:
            self._loop.call_soon_threadsafe(call)
