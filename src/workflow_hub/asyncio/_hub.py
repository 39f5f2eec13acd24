"""``async with workflow_hub.asyncio.open_hub() as hub``: the hub, hosted by asyncio.

The hub stays a trio program. It runs as a guest on the running asyncio loop (no thread), and
:class:`Hub` is its asyncio face: the synchronous API as it is, observation with asyncio
callbacks and iterators, a tracker with its heartbeats, hooks with asyncio handlers, and the
HTTP server. Leaving the block closes the host cleanly (SPEC H1): publishers disposed, the final
``unavailable`` frame delivered to every observer, local or remote, the servers closed, and the
trio run finished. An exception on either side reaches the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, suppress
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack, final

import attrs
import outcome
import trio

from .. import (
    ContractError,
    Cursor,
    Diagnostic,
    FrameCallback,
    HubStatistics,
    ObserverLease,
    SnapshotFrame,
    WorkflowActivityHub,
    WorkflowActivityPublisher,
    WorkflowEvent,
)
from .. import HookRunner as TrioHookRunner
from .._core import check_hub_thread
from .._hosting import (
    DEFAULT_SHUTDOWN_GRACE,
    HostCore,
    HubOptions,
    ServeOptions,
    TrackerOptions,
    check_since,
    host_options,
    run_host,
)
from .._public import NoPublicConstructor
from ..tracker import RunTracker
from ._guest import Guest
from ._hooks import HookRunner
from ._stream import FrameStream, open_stream

if TYPE_CHECKING:
    from .. import Availability, HandlerFailure

__all__ = ["Hub", "open_hub"]

_ADVICE = (
    "workflow_hub.asyncio's hub is called from its asyncio loop's thread only; from another "
    "thread, hand the call to the loop (loop.call_soon_threadsafe(publisher.publish_changed, "
    "root), asyncio.run_coroutine_threadsafe), or use workflow_hub.sync.open_hub(), whose "
    "handles any thread may call"
)


@final
@attrs.define(eq=False)
class Hub(metaclass=NoPublicConstructor):
    """A hub run by trio as a guest of the running asyncio loop; get it from :func:`open_hub`.

    Call everything from the loop's thread, asyncio code or not: the hub's synchronous API
    (:meth:`register_publisher`, the publisher's ``publish_*``, :meth:`snapshot_frame`,
    :meth:`statistics`, :meth:`diagnostics`) and a :class:`~workflow_hub.RunTracker`'s facts are
    the hub's own, called directly. Callbacks, handlers and iterators are asyncio's.
    """

    _core: HostCore
    _guest: Guest
    _run: _HostRun

    @property
    def trio_hub(self) -> WorkflowActivityHub:
        """The :class:`~workflow_hub.WorkflowActivityHub` inside the guest (same thread): for
        code that takes one, such as ``workflow_hub.server.create_app`` (which takes this host's
        hub too). Its callbacks and ``subscribe()`` are trio's; use this object's instead."""
        return self._core.hub

    # --- the hub's synchronous API ---------------------------------------------------------

    def register_publisher(self) -> WorkflowActivityPublisher:
        """Start a new source (P1); the host disposes it when it closes (H1)."""
        return self._core.register_publisher()

    def tracker(self, *, owner_session_id: str, **options: Unpack[TrackerOptions]) -> RunTracker:
        """A :class:`~workflow_hub.RunTracker` on a new publisher, with its heartbeats running
        in the host; ``options`` are the tracker's (``clock``, ``event_id_factory``,
        ``include_graph``). Report facts (and use ``batch()`` and ``hydrating()``) directly;
        call ``start()`` (or restore inside ``hydrating()``) before the first fact."""
        return self._core.tracker(owner_session_id=owner_session_id, **options)

    @property
    def cursor(self) -> Cursor:
        return self._core.hub.cursor

    @property
    def availability(self) -> Availability:
        return self._core.hub.availability

    @property
    def disposed(self) -> bool:
        return self._core.hub.disposed

    def snapshot_frame(self) -> SnapshotFrame:
        return self._core.hub.snapshot_frame()

    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return self._core.hub.diagnostics()

    def statistics(self) -> HubStatistics:
        return self._core.hub.statistics()

    def dispose(self) -> None:
        """``hub.dispose()`` (L2). Leaving :func:`open_hub` does more: see there."""
        self._core.hub.dispose()

    # --- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Start the host's clean end now, without waiting: what leaving :func:`open_hub` does
        (publishers disposed, the final ``unavailable`` frame to every observer, the streams and
        servers ended, the trio run finished), begun before the block is left.

        Returns at once; safe from any thread and from a signal handler. For an ASGI server
        that serves ``create_app(hub)``: call it (and await :meth:`wait_closed`) when the server
        starts to shut down, before it closes its connections; the open streams then get the
        final frame and end, so the server need not wait for them (docs/hosts.md shows it for
        uvicorn). Idempotent; leaving the block then waits for the end begun here.
        """
        self._run.close_soon()

    async def wait_closed(self) -> None:
        """Return once the host has closed (its trio run ended), however it ended; the block's
        exit raises what went wrong, this does not."""
        await self._run.wait_finished()

    # --- observing -------------------------------------------------------------------------

    def observe(self, callback: FrameCallback, *, since: Cursor | None = None) -> ObserverLease:
        """Attach a callback: an ``async def`` for asyncio, or a plain function (O1-O6).

        The snapshot (or the frames missed since ``since``, R2) first, then every frame in order;
        one call at a time, each awaited on the asyncio loop before the next starts. A callback
        that raises records ``ObserverDeliveryFailed`` and delivery goes on.
        """
        if not callable(callback):
            raise ContractError("callback", f"expected a callable, got {type(callback).__name__}")
        return self._core.hub.observe(self._guest.adapt(callback), since=since)

    def subscribe(self, *, since: Cursor | None = None) -> AbstractAsyncContextManager[FrameStream]:
        """``async with hub.subscribe() as frames: async for frame in frames:`` (O9).

        Attaching happens when the block is entered, atomically with capturing the snapshot.
        """
        return open_stream(self._core.hub, self._core.nursery, self._guest.loop, check_since(since))

    # --- hooks -----------------------------------------------------------------------------

    def hook_runner(
        self, *, on_error: Callable[[HandlerFailure], object] | None = None
    ) -> HookRunner:
        """A new :class:`HookRunner` for this hub, with asyncio handlers; :meth:`HookRunner.bind`
        it once its extensions are registered (one bound runner per hub)."""
        return HookRunner._create(TrioHookRunner(self._core.hub, on_error=on_error), self._guest)

    def bind_dispatcher(
        self, dispatch: Callable[[WorkflowEvent, Callable[[], bool]], Awaitable[object] | object]
    ) -> None:
        """``hub.bind_dispatcher`` (K1) with a dispatcher that may be an asyncio coroutine."""
        if not callable(dispatch):
            raise ContractError("dispatch", f"expected a callable, got {type(dispatch).__name__}")
        adapted = self._guest.adapt(dispatch)

        async def run(event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
            result = adapted(event, is_current)
            if isinstance(result, Awaitable):
                await result

        self._core.hub.bind_dispatcher(run)

    # --- serving ---------------------------------------------------------------------------

    async def serve(
        self, *, runner: HookRunner | None = None, **options: Unpack[ServeOptions]
    ) -> str:
        """Serve the hub over HTTP (``workflow_hub.server``) inside the guest; the base URL.

        The keywords are :func:`workflow_hub.server.serve_hub`'s (``port`` defaults to 0, a free
        port; ``runner`` is this host's :class:`HookRunner` for ``/v1/events``). The server runs
        until the host closes, and closes after the final frame has reached its clients.
        """
        check_hub_thread(self._core.hub, "hub.serve()")
        trio_runner = None if runner is None else runner.trio_runner
        start = partial(self._core.serve, runner=trio_runner, **options)
        return await self._guest.call(self._core.nursery, start)

    def __repr__(self) -> str:
        return f"<workflow_hub.asyncio.Hub cursor={self.cursor!r}>"


@final
class _HostRun(AbstractAsyncContextManager[Hub]):
    """One guest run of the hub, from entering :func:`open_hub` to leaving it."""

    def __init__(self, options: HubOptions, grace: float) -> None:
        self._options = options
        self._grace = grace
        self._stop = trio.Event()
        self._scope = trio.CancelScope()
        self._finished: asyncio.Future[outcome.Outcome[None]] | None = None
        self._host_task: asyncio.Task[Any] | None = None
        self._exiting = False
        self._cancelled_host = False
        self._entered = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __aenter__(self) -> Hub:
        if self._entered:
            raise RuntimeError("an open_hub() context can be entered only once")
        self._entered = True
        if trio.lowlevel.in_trio_run():
            raise RuntimeError(
                "a trio run is already active in this thread: workflow_hub.asyncio hosts one hub "
                "per thread (in trio code, use workflow_hub.open_hub)"
            )
        loop = self._loop = asyncio.get_running_loop()
        self._host_task = asyncio.current_task()
        guest = Guest(loop)
        started: asyncio.Future[HostCore] = loop.create_future()
        finished: asyncio.Future[outcome.Outcome[None]] = loop.create_future()
        self._finished = finished

        def on_started(core: HostCore) -> None:
            if not started.done():
                started.set_result(core)

        def on_done(result: outcome.Outcome[None]) -> None:
            if not finished.done():
                finished.set_result(result)
            if not started.done():
                if isinstance(result, outcome.Error):
                    started.set_exception(result.error)
                else:
                    started.cancel()
            elif not self._exiting and isinstance(result, outcome.Error):
                # The hub failed while asyncio code is still inside the block: end the block.
                self._cancelled_host = True
                if self._host_task is not None:
                    self._host_task.cancel()

        async def main() -> None:
            with self._scope:
                await run_host(
                    self._options,
                    self._grace,
                    on_started,
                    self._stop,
                    in_flight=guest.in_flight,
                    advice=_ADVICE,
                )

        trio.lowlevel.start_guest_run(
            main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=loop.call_soon,
            done_callback=on_done,
            # asyncio owns the signal wakeup fd (loop.add_signal_handler); trio leaves it alone.
            host_uses_signal_set_wakeup_fd=True,
        )
        try:
            core = await started
        except BaseException:
            self._scope.cancel()
            await _wait_uncancellable(finished)
            raise
        return Hub._create(core, guest, self)

    def close_soon(self) -> None:
        """Have the loop's thread set ``stop`` (thread- and signal-safe); nothing once ended."""
        loop, finished = self._loop, self._finished
        if loop is None or finished is None or finished.done():
            return
        with suppress(RuntimeError):  # the loop closed meanwhile: the host is gone with it
            loop.call_soon_threadsafe(self._stop.set)

    async def wait_finished(self) -> None:
        finished = self._finished
        assert finished is not None
        await asyncio.shield(finished)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._exiting = True
        finished = self._finished
        assert finished is not None
        if not finished.done():
            self._stop.set()
        cancellation = await _wait_uncancellable(finished, on_cancel=self._scope.cancel)
        result = finished.result()
        if self._cancelled_host:
            # Our own cancellation of the block (the hub failed): replace it with the failure.
            assert self._host_task is not None
            self._host_task.uncancel()
            assert isinstance(result, outcome.Error)
            raise result.error
        if isinstance(result, outcome.Error):
            raise result.error from exc
        if cancellation is not None and exc is None:
            # The caller's own cancellation (a Ctrl-C under asyncio.run, a timeout), raised on
            # as it came, once trio has ended.
            raise cancellation
        return False


async def _wait_uncancellable(
    future: asyncio.Future[Any], on_cancel: Callable[[], object] | None = None
) -> asyncio.CancelledError | None:
    """Wait for ``future`` even if the waiting task is cancelled; the first cancellation, if any.

    A trio run must never outlive the block that hosts it: a cancelled exit cuts the drain short
    (``on_cancel``) but still waits for trio to finish.
    """
    cancellation: asyncio.CancelledError | None = None
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError as cancelled:
            if cancellation is None:
                cancellation = cancelled
            if on_cancel is not None:
                on_cancel()
    return cancellation


def open_hub(
    *, shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE, **options: Unpack[HubOptions]
) -> AbstractAsyncContextManager[Hub]:
    """Run a hub as a trio guest on the running asyncio loop: ``async with open_hub() as hub:``.

    ``options`` are :func:`workflow_hub.open_hub`'s (``queue_limit``, ``history_limit``,
    ``metrics`` ...), checked now. Leaving the block disposes every publisher the host handed
    out (each observer, local or remote, gets the final ``unavailable`` snapshot), gives
    observers up to ``shutdown_grace`` seconds to take what is queued for them, closes the
    servers and ends the trio run. An exception raised in the block propagates after that clean
    end; an exception raised in the hub's trio tasks cancels the block and is raised from it.
    One hub per thread: trio allows one run per thread.
    """
    return _HostRun(*host_options(options, shutdown_grace))
