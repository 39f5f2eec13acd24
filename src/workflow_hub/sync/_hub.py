"""``with workflow_hub.sync.open_hub() as hub``: the hub for code without an event loop.

The hub stays a trio program, in a background thread the host starts and owns. :class:`Hub`
hands plain threads thread-safe handles: a publisher and a tracker callable from any thread,
blocking iteration of frames, and the HTTP server. Leaving the block closes the host as the
asyncio host does (SPEC H1): publishers disposed, the final ``unavailable`` frame delivered to
every observer, local or remote, the servers closed, the thread ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, ParamSpec, TypeVar, Unpack, final

import trio

from .. import Cursor, Diagnostic, HubStatistics, SnapshotFrame
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
from .._threads import signals_to_the_main_thread
from ._portal import HostClosedError, Portal
from ._publisher import Publisher
from ._stream import FrameStream, open_stream
from ._tracker import Tracker

if TYPE_CHECKING:
    from .. import HookRunner, WorkflowActivityHub

__all__ = ["Hub", "open_hub"]

_ADVICE = (
    "workflow_hub.sync's trio hub lives in its own thread: call the Hub's handles "
    "(register_publisher(), tracker(), subscribe()), which any thread may call, or run code "
    "in the hub's thread with hub.call(function)"
)

_P = ParamSpec("_P")
_T = TypeVar("_T")


@final
class Hub(metaclass=NoPublicConstructor):
    """A hub run by trio in a background thread; get it from :func:`open_hub`.

    Every method may be called from any thread. Calls that change the hub are queued to its
    thread in order; readings (:meth:`snapshot_frame`, :meth:`statistics`, ...) wait for the
    hub's thread to answer, so they see everything the calling thread did before.
    """

    __slots__ = ("_core", "_portal")

    def __init__(self, core: HostCore, portal: Portal) -> None:
        self._core = core
        self._portal = portal

    @property
    def trio_token(self) -> trio.lowlevel.TrioToken:
        """The hub thread's trio token, for code that hands it calls itself."""
        return self._portal.token

    @property
    def trio_hub(self) -> WorkflowActivityHub:
        """The hub in its trio thread. Touch it only from there (``hub.call(...)``)."""
        return self._core.hub

    def call(self, function: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run ``function(*args, **kwargs)`` in the hub's thread and wait for its result.

        ``function`` must be synchronous and must not block; what it raises is raised here.
        """
        return self._portal.call(function, *args, **kwargs)

    def register_publisher(self) -> Publisher:
        """Start a new source (P1) and return its thread-safe publisher; the host disposes it
        when it closes (H1)."""
        return Publisher._create(self._portal.call(self._core.register_publisher), self._portal)

    def tracker(self, *, owner_session_id: str, **options: Unpack[TrackerOptions]) -> Tracker:
        """A thread-safe :class:`~workflow_hub.RunTracker` on a new publisher, its heartbeats
        running in the host; ``options`` are the tracker's (``clock``, ``event_id_factory``,
        ``include_graph``). ``clock`` and ``event_id_factory`` are called in the hub's thread."""
        tracker = self._portal.call(
            self._core.tracker, owner_session_id=owner_session_id, **options
        )
        return Tracker._create(tracker, self._portal)

    def subscribe(self, *, since: Cursor | None = None) -> AbstractContextManager[FrameStream]:
        """``with hub.subscribe() as frames: for frame in frames:`` (O9), from any thread."""
        return open_stream(self._core.hub, self._core.nursery, self._portal, check_since(since))

    def snapshot_frame(self) -> SnapshotFrame:
        return self._portal.call(self._core.hub.snapshot_frame)

    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return self._portal.call(self._core.hub.diagnostics)

    def statistics(self) -> HubStatistics:
        return self._portal.call(self._core.hub.statistics)

    def serve(self, *, runner: HookRunner | None = None, **options: Unpack[ServeOptions]) -> str:
        """Serve the hub over HTTP (``workflow_hub.server``) in the hub's thread; the base URL.

        The keywords are :func:`workflow_hub.server.serve_hub`'s (``port`` defaults to 0, a free
        port; ``runner``, for ``/v1/events``, is a :class:`~workflow_hub.HookRunner` made in the
        hub's thread, e.g. with :meth:`call`). The server runs until the host closes, after the
        final frame reached its clients.
        """
        start = partial(self._core.serve, runner=runner, **options)
        return self._portal.call_async(self._core.nursery, start)

    def __repr__(self) -> str:
        return "<workflow_hub.sync.Hub>"


# The hosts entered and not yet left. A program that ends without leaving one (a host entered
# with ``__enter__`` and kept, a ``with`` a generator never finished) would keep every thread
# that waits for its frames waiting, and a non-daemon one keeps the interpreter from exiting:
# the interpreter's shutdown closes them first (_close_hosts_at_exit).
_open_hosts: set[_HostThread] = set()
_open_hosts_lock = threading.Lock()
_at_exit_registered = False


def _close_hosts_at_exit() -> None:
    """At the interpreter's shutdown, before it waits for the non-daemon threads: close every
    host still open, as leaving its block would (its streams end after the final frame)."""
    with _open_hosts_lock:
        hosts = list(_open_hosts)
    for host in hosts:
        host.close_at_exit()


def _register_at_exit() -> None:
    global _at_exit_registered
    if _at_exit_registered:
        return
    # threading's own hook runs before the interpreter joins the non-daemon threads (atexit's
    # runs after: too late); concurrent.futures uses it for the same reason.
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # pragma: no cover - CPython has had it since 3.9
        return
    with suppress(RuntimeError):  # the interpreter is shutting down already
        register(_close_hosts_at_exit)
        _at_exit_registered = True


@final
class _HostThread(AbstractContextManager[Hub]):
    """One run of the hub in its own thread, from entering :func:`open_hub` to leaving it."""

    def __init__(self, options: HubOptions, grace: float) -> None:
        self._options = options
        self._grace = grace
        self._stop = trio.Event()
        self._started = threading.Event()
        self._core: HostCore | None = None
        self._portal: Portal | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Hub:
        if self._thread is not None:
            raise RuntimeError("an open_hub() context can be entered only once")
        self._thread = threading.Thread(target=self._run, name="workflow-hub", daemon=True)
        with signals_to_the_main_thread():  # Ctrl-C is the main thread's, never the hub's
            self._thread.start()
        self._started.wait()
        if self._core is None or self._portal is None:
            self._thread.join()
            assert self._error is not None
            raise self._error
        with _open_hosts_lock:
            _register_at_exit()
            _open_hosts.add(self)
        return Hub._create(self._core, self._portal)

    def close_at_exit(self) -> None:
        """Close the host as leaving its block does, errors aside (the program is ending):
        set it to stop, and wait for its thread, which ends within the shutdown grace."""
        assert self._thread is not None
        assert self._portal is not None
        with suppress(HostClosedError):
            self._portal.submit(self._stop.set)
        self._thread.join()

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as error:
            self._error = error
        finally:
            self._started.set()

    async def _main(self) -> None:
        portal = Portal(trio.lowlevel.current_trio_token())

        def started(core: HostCore) -> None:
            self._core = core
            self._portal = portal
            self._started.set()

        try:
            await run_host(self._options, self._grace, started, self._stop, advice=_ADVICE)
        finally:
            portal.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._thread is not None
        assert self._portal is not None
        with _open_hosts_lock:
            _open_hosts.discard(self)
        # HostClosedError: the hub's thread has ended already (it failed); its error follows.
        with suppress(HostClosedError):
            self._portal.submit(self._stop.set)
        self._thread.join()
        if self._error is not None:
            raise self._error from exc


def open_hub(
    *, shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE, **options: Unpack[HubOptions]
) -> AbstractContextManager[Hub]:
    """Run a hub in a background trio thread: ``with open_hub() as hub:``.

    ``options`` are :func:`workflow_hub.open_hub`'s, checked now. Leaving the block disposes
    every publisher the host handed out (each observer, local or remote, gets the final
    ``unavailable`` snapshot), gives observers up to ``shutdown_grace`` seconds to take what is
    queued, closes the servers and ends the thread. An exception in the block propagates after
    that; one raised in the hub's thread is raised from the ``with`` (and, while the block
    runs, by every later call: :class:`HostClosedError`).
    """
    return _HostThread(*host_options(options, shutdown_grace))
