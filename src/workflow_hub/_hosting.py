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
import threading
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Final, TypedDict, TypeVar, Unpack, final

import trio
import trio.testing

from . import Cursor, WorkflowActivityHub, WorkflowActivityPublisher
from ._core import host_hub
from .tracker import RunTracker

if TYPE_CHECKING:
    from . import HookRunner
    from .metrics import HubMetrics

__all__ = [
    "DEFAULT_SHUTDOWN_GRACE",
    "HostCore",
    "HubOptions",
    "Pump",
    "ServeOptions",
    "TrackerOptions",
    "check_since",
    "check_timeout",
    "host_options",
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


class TrackerOptions(TypedDict, total=False):
    """The keywords of :class:`~workflow_hub.RunTracker` beside its publisher and owner, which a
    host's ``tracker()`` takes too."""

    clock: Callable[[], float] | None
    event_id_factory: Callable[[], str] | None
    include_graph: bool


class ServeOptions(TypedDict, total=False):
    """The keywords of :func:`workflow_hub.server.serve_hub` a host's ``serve()`` passes on
    (the hook runner is the host's own: see each host)."""

    host: str
    port: int
    token: str | None
    metrics: HubMetrics | None
    insecure: bool
    cors_origins: Sequence[str] | None
    keepalive: float
    events_buffer: int


def host_options(options: HubOptions, shutdown_grace: object) -> tuple[HubOptions, float]:
    """What a host's ``open_hub`` was given, checked before any trio run starts:
    :func:`hub_options` and the shutdown grace (seconds, finite, >= 0)."""
    return hub_options(options), _check_grace(shutdown_grace)


def check_since(since: object) -> Cursor | None:
    """A host's ``subscribe(since=...)`` argument, checked in the caller (ContractError)."""
    if since is not None and not isinstance(since, Cursor):
        from ._contract import ContractError

        raise ContractError("since", f"expected a Cursor or None, got {type(since).__name__}")
    return since


def check_timeout(value: object, name: str = "timeout") -> float | None:
    """A blocking call's ``timeout`` (seconds), checked in the caller (ContractError naming
    ``name``): None, or a number >= 0. Infinity, and anything longer than the platform can wait
    (``threading.TIMEOUT_MAX``, some 292 years), mean "as long as it takes" (None), as trio
    reads an infinite deadline; NaN, a negative number, a bool or a string are refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        from ._contract import ContractError

        raise ContractError(
            name, f"expected seconds (a number >= 0) or None, got {type(value).__name__}"
        )
    if not value >= 0:  # NaN too
        from ._contract import ContractError

        raise ContractError(name, f"expected seconds >= 0 or None, got {value!r}")
    if value >= threading.TIMEOUT_MAX:  # inf, 1e300, 2**63: no wait is that long
        return None
    return float(value)


def _check_grace(value: object) -> float:
    from ._contract import ContractError

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
    from ._contract import ContractError

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
class Pump:
    """The trio side of one host stream: a task that receives from the hub's subscription only
    when the code outside trio has asked (``wanted``).

    Frames nobody asked for stay in the hub's own bounded queue (O4), so a slow consumer outside
    trio gets the hub's overflow resnapshot, not a second queue. Between asks the task is parked
    at no cost. Everything here runs in the hub's trio run.
    """

    __slots__ = ("_task", "wanted")

    def __init__(self) -> None:
        self._task: trio.lowlevel.Task | None = None
        # Set by the side that asks; cleared by ``deliver`` with what it received.
        self.wanted = False

    async def run(
        self,
        receive: Callable[[], Awaitable[_T]],
        deliver: Callable[[_T], object],
        ended: Callable[[], bool],
    ) -> None:
        """Until the subscription ends or ``ended()``: wait to be wanted, ``receive()`` once and
        ``deliver`` what came (which clears ``wanted`` under whatever lock the stream needs)."""
        try:
            while True:
                while not self.wanted:
                    self._task = trio.lowlevel.current_task()
                    await trio.lowlevel.wait_task_rescheduled(self._abort)
                    if ended():
                        return
                try:
                    received = await receive()
                except trio.EndOfChannel:
                    return
                deliver(received)
        finally:
            self._task = None

    def wake(self) -> None:
        """Let a parked pump look again (at ``wanted``, and at whether its stream ended)."""
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)

    def _abort(self, _: object) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED


def _only_exception(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one exception inside nested groups of one, if that is what ``group`` is."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        if len(error.exceptions) != 1:
            return None
        error = error.exceptions[0]
    return error


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

    def tracker(self, *, owner_session_id: str, **options: Unpack[TrackerOptions]) -> RunTracker:
        """A :class:`RunTracker` on a new publisher, its heartbeat task running in the host."""
        # Checked on a scratch hub's publisher first: bad options raise before this hub starts
        # a new epoch, so they change nothing (C1).
        RunTracker(
            WorkflowActivityHub().register_publisher(), owner_session_id=owner_session_id, **options
        )
        tracker = RunTracker(
            self.register_publisher(), owner_session_id=owner_session_id, **options
        )
        self._trackers.append(tracker)
        if not self._closing:
            self._nursery.start_soon(tracker.run_heartbeats)
        return tracker

    async def serve(
        self, *, runner: HookRunner | None = None, **options: Unpack[ServeOptions]
    ) -> str:
        """Start ``workflow_hub.server.serve_hub`` among the host's servers; its base URL.

        A host serves on a free port unless told otherwise (``port=0``).
        """
        from .server import serve_hub

        if self._closing:
            raise RuntimeError("the host is closing: it starts no new server")
        keywords: ServeOptions = {"port": 0, **options}
        try:
            url: str = await self._servers.start(
                partial(serve_hub, self.hub, runner=runner, **keywords)
            )
        except BaseExceptionGroup as group:
            # A server that cannot start fails in nested nurseries; the caller (asyncio code or
            # a thread) gets the one error it can act on (a port in use), not the nesting.
            single = _only_exception(group)
            if single is None:
                raise
            raise single from group
        return url

    def dispose_publishers(self) -> None:
        """Dispose every publisher the host handed out (P8): the current one publishes
        ``unavailable`` to every observer; the others are fenced already."""
        for tracker in self._trackers:
            tracker.publisher.dispose()
        for publisher in self._publishers:
            publisher.dispose()

    async def close(self) -> None:
        """The host's clean end (H1): what was published delivered (frames and hook events),
        publishers disposed, observers given the final frame, servers closed (their streams end
        properly), then every host task cancelled.

        Observers get at most the shutdown grace to take what is queued for them: a consumer
        that never takes its frames cannot keep the host open.
        """
        self._closing = True
        with trio.move_on_after(self._grace):
            # First what was published before the exit, hook events included: once the
            # publishers are disposed, their queued events are fenced (K2) and never dispatched.
            await self._drain()
            self.dispose_publishers()
            await self._drain()
        self.dispose_publishers()  # idempotent; here when the grace ran out first
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
    advice: str,
) -> None:
    """The host's trio main: run the hub until ``stop`` is set, then close it cleanly.

    ``advice`` is what a call from a thread other than the hub's is told (the host's name, the
    thread to call from and how to get there): the hub refuses such a call (H1, issue 37).

    ``started(core)`` is called once the hub runs. A task of the host that raises ends the run
    with that exception (the host hands it to the code outside trio); cancellation from outside
    (the host giving up) skips the drain.
    """
    from . import open_hub

    async with open_hub(**options) as hub, trio.open_nursery() as nursery:
        host_hub(hub, advice)
        async with trio.open_nursery() as servers:
            core = HostCore(hub, nursery, servers, grace=grace, in_flight=in_flight)
            started(core)
            await stop.wait()
            await core.close()
        nursery.cancel_scope.cancel()
