"""The trio side of a host: what ``workflow_hub.asyncio`` and ``workflow_hub.sync`` share.

A host runs one hub in a trio run it owns (a guest run on asyncio's loop, or a run in a
background thread) and hands the code outside trio a door. Both doors need the same things on
the trio side, written once here: the publishers and trackers the host handed out (so that
leaving the host disposes them), the heartbeat task of each tracker, the servers started with
``serve``, and the shutdown that delivers the final ``unavailable`` frame to every observer,
local or remote, before the servers close and the hub ends (SPEC H1).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypedDict, TypeVar, final

import trio
import trio.testing

from . import WorkflowActivityHub, WorkflowActivityPublisher
from .tracker import RunTracker

if TYPE_CHECKING:
    from . import HookRunner
    from .metrics import HubMetrics

__all__ = [
    "DEFAULT_SHUTDOWN_GRACE",
    "HostCore",
    "HubOptions",
    "check_grace",
    "hub_options",
    "run_host",
    "run_without_waiting",
]

_T = TypeVar("_T")

DEFAULT_SHUTDOWN_GRACE: Final = 2.0
"""Seconds a host gives its observers to take the final frame when it closes."""

# How long everything must stay blocked before the drain believes it is over: long enough for a
# frame handed to a socket to be written, short enough not to slow a shutdown down.
_SETTLE_CUSHION: Final = 0.01


class HubOptions(TypedDict, total=False):
    """The keywords of :func:`workflow_hub.open_hub`, which every host takes too."""

    queue_limit: int
    diagnostics_limit: int
    hook_buffer_limit: int
    history_limit: int
    epoch_factory: Callable[[], str]
    metrics: HubMetrics


def check_grace(value: object) -> float:
    from ._errors import ContractError

    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ContractError("shutdown_grace", f"expected seconds >= 0, got {value!r}")
    if not math.isfinite(value):
        raise ContractError("shutdown_grace", f"expected a finite number, got {value!r}")
    return float(value)


def hub_options(options: HubOptions) -> HubOptions:
    """The options of :func:`workflow_hub.open_hub`, checked by building a hub with them.

    Bad limits raise :class:`~workflow_hub.ContractError` here, in the caller, before any trio
    run is started. ``epoch_factory`` and ``metrics`` are left out of the trial hub (it would
    take an epoch from the factory and register with the metrics); the real hub checks them as
    it starts, and the host raises what it finds from its start.
    """
    from ._errors import ContractError

    unknown = sorted(set(options) - set(HubOptions.__annotations__))
    if unknown:
        raise ContractError(unknown[0], "not an option of workflow_hub.open_hub")
    trial = {k: v for k, v in options.items() if k not in ("epoch_factory", "metrics")}
    WorkflowActivityHub(**trial)  # type: ignore[arg-type]
    factory = options.get("epoch_factory")
    if factory is not None and not callable(factory):
        raise ContractError("epoch_factory", f"expected a callable, got {factory!r}")
    return options


def run_without_waiting(awaitable: Awaitable[_T], what: str) -> _T:
    """Run a trio coroutine that is known never to wait (no checkpoint) to its end, right here.

    Entering and leaving ``hub.subscribe()`` are such coroutines: they attach and dispose a
    lease synchronously. Running them right where ``subscribe()`` is called (asyncio code, or a
    call handed to the hub's thread) keeps it atomic (O1) without a trio task. Should one ever
    wait, this raises instead of hanging.
    """
    coroutine = awaitable.__await__()
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: _T = done.value
        return result
    close = getattr(coroutine, "close", None)
    if close is not None:
        close()
    raise RuntimeError(f"{what} waited; it cannot run from asyncio code")


@final
class HostCore:
    """One hub inside its trio run, with the publishers, trackers and servers a host started.

    Everything here runs in the hub's trio run (for the asyncio host: on the asyncio thread,
    which is the same thing). ``in_flight`` tells the shutdown how many consumer calls are still
    running outside trio (asyncio callbacks), so that it waits for them too.
    """

    __slots__ = (
        "_closing",
        "_grace",
        "_in_flight",
        "_nursery",
        "_publishers",
        "_servers",
        "_trackers",
        "hub",
    )

    def __init__(
        self,
        hub: WorkflowActivityHub,
        nursery: trio.Nursery,
        servers: trio.Nursery,
        *,
        grace: float,
        in_flight: Callable[[], int] = lambda: 0,
    ) -> None:
        self.hub = hub
        self._nursery = nursery
        self._servers = servers
        self._grace = grace
        self._in_flight = in_flight
        self._publishers: list[WorkflowActivityPublisher] = []
        self._trackers: list[RunTracker] = []
        self._closing = False

    @property
    def nursery(self) -> trio.Nursery:
        """Where the host's own tasks run (heartbeats, stream pumps); cancelled last."""
        return self._nursery

    @property
    def closing(self) -> bool:
        return self._closing

    def register_publisher(self) -> WorkflowActivityPublisher:
        """``hub.register_publisher()``, remembered so that closing the host disposes it."""
        publisher = self.hub.register_publisher()
        self._publishers.append(publisher)
        return publisher

    def tracker(
        self,
        *,
        owner_session_id: str,
        clock: Callable[[], float] | None = None,
        event_id_factory: Callable[[], str] | None = None,
        include_graph: bool = False,
    ) -> RunTracker:
        """A :class:`RunTracker` on a new publisher, its heartbeat task running in the host."""
        # Checked on an inert publisher first: bad options raise before the hub starts a new
        # epoch, so they change nothing (C1).
        RunTracker(
            WorkflowActivityPublisher._create(self.hub, None),
            owner_session_id=owner_session_id,
            clock=clock,
            event_id_factory=event_id_factory,
            include_graph=include_graph,
        )
        tracker = RunTracker(
            self.register_publisher(),
            owner_session_id=owner_session_id,
            clock=clock,
            event_id_factory=event_id_factory,
            include_graph=include_graph,
        )
        self._trackers.append(tracker)
        if not self._closing:
            self._nursery.start_soon(tracker.run_heartbeats)
        return tracker

    async def serve(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        runner: HookRunner | None = None,
        insecure: bool = False,
        cors_origins: Sequence[str] | None = None,
        **options: Any,
    ) -> str:
        """Start ``workflow_hub.server.serve_hub`` among the host's servers; its base URL."""
        from .server import serve_hub

        if self._closing:
            raise RuntimeError("the host is closing: it starts no new server")

        async def serve(*, task_status: trio.TaskStatus[str]) -> None:
            await serve_hub(
                self.hub,
                host=host,
                port=port,
                token=token,
                runner=runner,
                insecure=insecure,
                cors_origins=cors_origins,
                task_status=task_status,
                **options,
            )

        url: str = await self._servers.start(serve)
        return url

    def dispose_publishers(self) -> None:
        """Dispose every publisher the host handed out (P8): the current one publishes
        ``unavailable`` to every observer; the others are fenced already."""
        for tracker in self._trackers:
            tracker.publisher.dispose()
        for publisher in self._publishers:
            publisher.dispose()

    async def close(self) -> None:
        """The host's clean end (H1): publishers disposed, observers given the final frame,
        servers closed (their streams end properly), then every host task cancelled.

        Observers get at most the shutdown grace to take what is queued for them: a consumer
        that never takes its frames cannot keep the host open.
        """
        self._closing = True
        self.dispose_publishers()
        with trio.move_on_after(self._grace):
            await self._drain()
        # Servers first, on their own: each ends its streams (an SSE stream's last chunk, a
        # WebSocket's close 1001) and stops within a second.
        self._servers.cancel_scope.cancel()

    async def _drain(self) -> None:
        # Done when every trio task is blocked, nothing runs outside trio on the hub's behalf
        # (an asyncio callback or handler) and no frame waits in an observer's queue. Hook
        # events still buffered then wait for a dispatcher that is not bound: not our business.
        hub = self.hub
        while True:
            await trio.testing.wait_all_tasks_blocked(_SETTLE_CUSHION)
            if not self._in_flight() and not hub.statistics().pending_frames:
                return
            # A consumer outside trio is still busy, or one has not asked for its frames yet.
            await trio.sleep(_SETTLE_CUSHION)


async def run_host(
    options: HubOptions,
    grace: float,
    started: Callable[[HostCore], object],
    stop: trio.Event,
    *,
    in_flight: Callable[[], int] = lambda: 0,
) -> None:
    """The host's trio main: run the hub until ``stop`` is set, then close it cleanly.

    ``started(core)`` is called once the hub runs. A task of the host that raises ends the run
    with that exception (the host hands it to the code outside trio); cancellation from outside
    (the host giving up) skips the drain.
    """
    from . import open_hub

    async with open_hub(**options) as hub, trio.open_nursery() as nursery:
        async with trio.open_nursery() as servers:
            core = HostCore(hub, nursery, servers, grace=grace, in_flight=in_flight)
            started(core)
            await stop.wait()
            await core.close()
        nursery.cancel_scope.cancel()
