"""A status reporter in a few lines: subscribe, fold every frame into a view, render.

:func:`run_reporter` is a task for the caller's nursery. It owns one subscription (SPEC O9), so it
has every observer guarantee: the snapshot first, FIFO, the bound and the overflow resnapshot.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import trio

from .._contract import ContractError, Frame
from ._view import ActivityView, ViewChange

__all__ = ["RenderCallback", "Subscribable", "run_reporter"]


class Subscribable(Protocol):
    """Anything with a hub's ``subscribe()``: a hub, or a remote source such as
    :class:`workflow_hub.remote.RemoteHub` or :class:`workflow_hub.redis.RedisSource`."""

    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[Frame]]: ...


RenderCallback = Callable[[ActivityView, ViewChange], Awaitable[object] | object]
"""What :func:`run_reporter` calls after each frame: ``render(view, change)``, sync or async."""


async def run_reporter(
    hub: Subscribable,
    render: RenderCallback,
    *,
    task_status: trio.TaskStatus[ActivityView] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Keep an :class:`ActivityView` of ``hub`` up to date and call ``render(view, change)``.

    ``hub`` may also be a :class:`~workflow_hub.remote.RemoteHub`: the same view of a hub served
    over the network. Start it with ``view = await nursery.start(run_reporter, hub, render)``: by the time ``start``
    returns, the subscription is attached, so nothing published afterwards is missed (O1). The
    render callback runs after every frame, in order, one call at a time; an async one is awaited
    before the next frame is folded. It also runs for a rejected frame (``change.applied`` is
    false), since the view's :attr:`~ActivityView.in_sync` changed.

    Returns when the hub is disposed. The view then keeps the last state it saw, which no longer
    describes a live source: a pane should show its reporter as stopped (activity unknown), not
    that last state. An exception from ``render`` ends the reporter and propagates
    to the caller's nursery (unlike a ``hub.observe`` callback, whose errors the hub only records):
    a broken reporter should be loud. Cancel the enclosing scope to stop it earlier.
    """
    if not callable(render):
        raise ContractError("render", f"expected a callable, got {type(render).__name__}")
    view = ActivityView()
    async with hub.subscribe() as stream:
        task_status.started(view)
        async for frame in stream:
            change = view.apply(frame)
            result: Any = render(view, change)
            if inspect.isawaitable(result):
                await result
