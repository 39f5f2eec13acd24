"""Calls between asyncio and the trio guest that runs on the same loop, in the same thread.

trio's guest mode (``trio.lowlevel.start_guest_run``) runs trio's scheduler in callbacks of the
asyncio loop. Both live in one thread, so plain synchronous calls cross freely: asyncio code may
call the hub's synchronous API directly, and a trio task it wakes (a publish reschedules an
observer's task) makes trio tick as soon as possible (``Runner.reschedule`` asks the host for a
tick). What does not cross is *waiting*: a trio task cannot ``await`` an asyncio future, nor an
asyncio task a trio coroutine. :class:`Guest` is the two small doors for that.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, final

import outcome
import trio

from .._exceptions import WorkflowHubError

__all__ = ["Guest"]

_T = TypeVar("_T")


class CallbackCancelled(WorkflowHubError, RuntimeError):
    """An asyncio callback of the hub was cancelled by someone other than the hub."""


@final
class Guest:
    """The asyncio loop a guest trio run lives on, and the consumer calls running in asyncio."""

    __slots__ = ("_in_flight", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._in_flight = 0

    def in_flight(self) -> int:
        """asyncio callbacks and handlers the hub started and that have not finished."""
        return self._in_flight

    def adapt(self, function: Callable[..., object]) -> Callable[..., object]:
        """``function`` as trio code can call it: a plain function runs as it is; what an
        ``async def`` written for asyncio returns runs as an asyncio task, which the calling trio
        task awaits."""

        def call(*args: Any) -> object:
            result = function(*args)
            if inspect.isawaitable(result):
                return self.wait_for(result)
            return result

        return call

    async def wait_for(self, awaitable: Awaitable[_T]) -> _T:
        """Run an asyncio awaitable as an asyncio task, and wait for it from the calling trio task.

        If the trio task is cancelled (the hub is closing), the asyncio task is cancelled and
        waited for, so nothing the hub started outlives it.
        """
        task = asyncio.ensure_future(awaitable, loop=self.loop)
        trio_task = trio.lowlevel.current_task()
        aborted = False
        self._in_flight += 1

        def done(finished: asyncio.Future[_T]) -> None:
            self._in_flight -= 1
            if finished.cancelled():
                if aborted:
                    # trio re-delivers its own cancellation at the next checkpoint.
                    trio.lowlevel.reschedule(trio_task, outcome.Value(None))
                else:
                    error = CallbackCancelled("an asyncio callback of the hub was cancelled")
                    trio.lowlevel.reschedule(trio_task, outcome.Error(error))
                return
            trio.lowlevel.reschedule(trio_task, outcome.capture(finished.result))

        task.add_done_callback(done)

        def abort(_: object) -> trio.lowlevel.Abort:
            nonlocal aborted
            aborted = True
            task.cancel()
            return trio.lowlevel.Abort.FAILED

        result: _T = await trio.lowlevel.wait_task_rescheduled(abort)
        if aborted:
            await trio.lowlevel.checkpoint()
        return result

    async def call(self, nursery: trio.Nursery, function: Callable[[], Awaitable[_T]]) -> _T:
        """Run a trio coroutine function in a new task of ``nursery``; await its result in asyncio.

        What it raises is raised here. Cancelling the awaiting asyncio task cancels the trio one.
        """
        future: asyncio.Future[_T] = self.loop.create_future()
        scope = trio.CancelScope()

        async def run() -> None:
            with scope:
                try:
                    result = await function()
                except Exception as error:
                    if not future.done():
                        future.set_exception(error)
                    return
                except BaseException:
                    if not future.done():
                        future.cancel()
                    raise
                if not future.done():
                    future.set_result(result)
            if not future.done():
                future.cancel()

        nursery.start_soon(run)
        try:
            return await future
        except asyncio.CancelledError:
            scope.cancel()
            raise
