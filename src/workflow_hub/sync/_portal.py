"""The door between plain threads and the hub's trio thread: calls queued in order, cheaply.

Every call a thread makes through a host's handles is queued here and run in the hub's trio
thread, in the order it was queued (calls from one thread keep their order; calls from several
interleave in queue order). Queueing is a ``deque.append`` and, only when the trio thread is not
already draining the queue, one :meth:`trio.lowlevel.TrioToken.run_sync_soon`: a burst of
publishes from many threads costs the trio thread one wake-up, not one per call. The trio thread
drains in rounds of a bounded size, so its own tasks (observers, the server) run in between.

A blocking call queues the same way, then waits for its outcome: the result is returned and an
exception raised in the calling thread.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Final, ParamSpec, TypeVar, final

import trio

from .._exceptions import WorkflowHubError
from .._threads import Reply, refuse_trio_thread

__all__ = ["HostClosedError", "Portal"]

logger = logging.getLogger("workflow_hub")

_P = ParamSpec("_P")
_T = TypeVar("_T")

_ROUND: Final = 512
"""Calls run per round before the trio thread lets its tasks run."""


class HostClosedError(WorkflowHubError, RuntimeError):
    """The host has closed (or its trio thread has ended): it takes no more calls."""


@final
class Portal:
    """Calls from any thread, run in order in one trio thread."""

    __slots__ = ("_calls", "_closed", "_lock", "_scheduled", "_token", "thread")

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        """Made in the trio thread, whose ident it keeps (``thread``)."""
        self._token = token
        self.thread = threading.get_ident()
        self._calls: deque[Callable[[], object]] = deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._closed = False

    @property
    def token(self) -> trio.lowlevel.TrioToken:
        return self._token

    @property
    def closed(self) -> bool:
        return self._closed

    # --- any thread ------------------------------------------------------------------------

    def submit(self, call: Callable[[], object], *, wake: bool = True) -> None:
        """Queue ``call`` (no arguments, must not block) to run in the trio thread; return at once.

        An exception it raises there is logged on the ``workflow_hub`` logger: the caller has
        moved on. Raises :class:`HostClosedError` once the host has closed. ``wake=False``
        leaves the trio thread asleep: the call runs with the next one queued that wakes it
        (the caller promises one), so a burst costs that thread one wake-up, not several.
        """
        self._calls.append(call)
        # The unlocked read is the fast path: while a drain is scheduled, it will see this call
        # (it clears the flag *before* it pops, so a call queued after that schedules anew).
        if wake and not self._scheduled:
            with self._lock:
                if not self._scheduled:
                    self._schedule()
        if self._closed:
            raise HostClosedError("the hub's host has closed")

    def call(self, function: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run ``function(*args, **kwargs)`` in the trio thread and wait: its result, or its
        exception raised here. From the trio thread itself this raises ``RuntimeError``."""
        self._refuse_trio_thread()
        reply: Reply[_T] = Reply()
        self.submit(partial(reply.run, partial(function, *args, **kwargs)))
        return reply.wait()

    def call_async(self, nursery: trio.Nursery, function: Callable[[], Awaitable[_T]]) -> _T:
        """Run the trio coroutine function in a new task of ``nursery`` and wait for its result."""
        self._refuse_trio_thread()
        reply: Reply[_T] = Reply()

        async def run() -> None:
            try:
                value = await function()
            except BaseException as error:
                reply.set_error(error)
                if not isinstance(error, Exception):
                    raise
            else:
                reply.set_value(value)

        self.submit(lambda: nursery.start_soon(run))
        return reply.wait()

    # --- the trio thread -------------------------------------------------------------------

    def _schedule(self) -> None:
        self._scheduled = True
        try:
            self._token.run_sync_soon(self._drain)
        except trio.RunFinishedError:
            self._scheduled = False
            self._closed = True
            raise HostClosedError("the hub's host has closed") from None

    def _drain(self) -> None:
        with self._lock:
            self._scheduled = False
        if self._run_round():
            with self._lock:
                if not self._scheduled:
                    self._schedule()

    def _run_round(self, limit: int = _ROUND) -> bool:
        """Run up to ``limit`` calls; True when more are waiting."""
        calls = self._calls
        for _ in range(limit):
            try:
                call = calls.popleft()
            except IndexError:
                return False
            try:
                call()
            except Exception:
                logger.exception("a call queued for the hub's thread failed")
        return bool(calls)

    def run_queued(self) -> None:
        """In the trio thread: run the calls queued so far, in order, as the next wake-up would
        (calls queued while they run wait for it)."""
        self._run_round(len(self._calls))

    def close(self) -> None:
        """In the trio thread, as the run ends: refuse new calls, run those already queued."""
        self._closed = True
        while self._run_round():
            pass

    def _refuse_trio_thread(self) -> None:
        # One comparison of thread idents (the call's hot path): refuse_trio_thread's own test,
        # cached.
        if threading.get_ident() == self.thread:
            refuse_trio_thread(
                self._token,
                "a blocking call of workflow_hub.sync (hub.call, a *_blocking publish, "
                "subscribe(), a reading)",
                "in the hub's thread, use hub.trio_hub and the trio objects directly",
            )
