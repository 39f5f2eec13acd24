"""Publishing, and driving a tracker, from threads that are not the hub's trio thread.

The hub, its publishers and :class:`RunTracker` belong to one trio thread. A scheduler that runs
in other threads hands its calls to that thread through a :class:`ThreadPublisher`: each call is
queued with :meth:`trio.lowlevel.TrioToken.run_sync_soon`, which trio runs in strict first-in,
first-out order. So calls from one thread take effect in the order that thread made them (calls
from different threads interleave in the order they were queued), nothing is lost, and the
caller never waits for the hub, let alone for a consumer.

The ``*_blocking`` variants queue the same way (so they stay in order with everything queued
before them) and then wait until the trio thread has run the call, returning its result: for
``publish_*_blocking``, the cursor the hub assigned.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Generic, ParamSpec, TypeVar, final

import trio

from ._contract import (
    Availability,
    ContractError,
    Cursor,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
    check_str,
    instance_check,
    snapshot_arguments,
)
from ._core import WorkflowActivityPublisher
from ._public import claim_root_names

__all__ = ["Reply", "ThreadPublisher", "refuse_trio_thread", "signals_to_the_main_thread"]

logger = logging.getLogger("workflow_hub")

_P = ParamSpec("_P")
_T = TypeVar("_T")

_check_root = instance_check(RootActivity)
_check_lifecycle = instance_check(LifecycleInput)
_check_heartbeat = instance_check(HeartbeatEvent)
_check_publisher = instance_check(WorkflowActivityPublisher)


def _log_error(error: Exception) -> None:
    logger.error("a call handed to the trio thread failed", exc_info=error)


@contextmanager
def signals_to_the_main_thread() -> Iterator[None]:
    """Threads started inside (and the threads they start) block SIGINT and SIGTERM, so that the
    operating system hands those to the main thread.

    Python runs signal handlers in the main thread only. A signal the kernel gives another
    thread (it may, when the main thread has one pending already: a second Ctrl-C) only sets a
    flag, and a main thread asleep in a system call is not woken to look at it: Ctrl-C seems
    lost. The thread host's trio thread is started inside this. The calling thread's mask is restored on leaving (a signal that
    came meanwhile is delivered then).
    """
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:  # no POSIX threads' masks (Windows): nothing to steer
        yield
        return
    previous = mask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, previous)


def refuse_trio_thread(token: trio.lowlevel.TrioToken, call: str, advice: str) -> None:
    """Raise :class:`RuntimeError` when called from ``token``'s own trio thread, where a call
    that waits for that thread would wait for ever."""
    try:
        current = trio.lowlevel.current_trio_token()
    except RuntimeError:
        return
    if current is token:
        raise RuntimeError(f"{call} from the hub's own trio thread would wait forever; {advice}")


@final
class Reply(Generic[_T]):
    """Where the trio thread leaves a blocking call's outcome for the one thread waiting on it.

    A lock held from the start and released once the outcome is there (one waiter: cheaper than
    an event). :meth:`ThreadPublisher.call_blocking` and the thread host's portal both use it.
    """

    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self._value: _T | None = None
        self._error: BaseException | None = None

    def set_value(self, value: _T) -> None:
        """In the trio thread: the call returned ``value``."""
        self._value = value
        self._done.release()

    def set_error(self, error: BaseException) -> None:
        """In the trio thread: the call raised ``error``."""
        self._error = error
        self._done.release()

    def run(self, function: Callable[[], _T]) -> None:
        """In the trio thread: call ``function`` and leave its outcome."""
        try:
            value = function()
        except BaseException as error:
            self.set_error(error)
        else:
            self.set_value(value)

    def wait(self) -> _T:
        """In the waiting thread: the outcome once it is there, a value or an exception raised."""
        self._done.acquire()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set by the call when no error


@final
class ThreadPublisher:
    """A thread-safe front for a publisher (and anything else living in the hub's trio thread).

    Create it in the trio thread (it captures :func:`trio.lowlevel.current_trio_token`), or pass
    ``trio_token`` explicitly; then share it with any number of threads. Its ``publish_*`` methods
    mirror :class:`WorkflowActivityPublisher`'s, validate their arguments in the calling thread
    (raising :class:`ContractError` there, before anything is queued) and return at once.
    :meth:`call_soon` queues any call, e.g. ``portal.call_soon(tracker.set_stage_status, "run-1",
    "plan", "running")``.

    A queued call that raises in the trio thread is handed to ``on_error`` (there, in the trio
    thread; by default it is logged on the ``workflow_hub`` logger): the caller has moved on, and
    the hub's loop must not crash. Once the trio run has finished, every method raises
    :class:`trio.RunFinishedError`.
    """

    __slots__ = ("_on_error", "_publisher", "_token")

    def __init__(
        self,
        publisher: WorkflowActivityPublisher,
        *,
        trio_token: trio.lowlevel.TrioToken | None = None,
        on_error: Callable[[Exception], object] | None = None,
    ) -> None:
        self._publisher = _check_publisher(publisher, "publisher")
        if trio_token is None:
            trio_token = trio.lowlevel.current_trio_token()
        elif not isinstance(trio_token, trio.lowlevel.TrioToken):
            raise ContractError("trio_token", f"expected a TrioToken, got {type(trio_token)}")
        if on_error is not None and not callable(on_error):
            raise ContractError("on_error", f"expected a callable, got {type(on_error)}")
        self._token = trio_token
        self._on_error: Callable[[Exception], object] = on_error or _log_error

    @property
    def publisher(self) -> WorkflowActivityPublisher:
        return self._publisher

    @property
    def trio_token(self) -> trio.lowlevel.TrioToken:
        return self._token

    # --- any call --------------------------------------------------------------------------

    def call_soon(self, fn: Callable[_P, object], /, *args: _P.args, **kwargs: _P.kwargs) -> None:
        """Queue ``fn(*args, **kwargs)`` to run in the trio thread, after everything queued before.

        Returns at once. ``fn`` must be synchronous and must not block.
        """

        def run() -> None:
            try:
                fn(*args, **kwargs)
            except Exception as error:
                self._report(error)

        self._token.run_sync_soon(run)

    def call_blocking(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Queue ``fn(*args, **kwargs)`` like :meth:`call_soon`, wait for it, return its result.

        An exception raised by ``fn`` is raised here, in the calling thread. Calling this from
        the trio thread itself would wait forever, so it raises :class:`RuntimeError` instead.
        """
        self._refuse_trio_thread()
        reply: Reply[_T] = Reply()
        self._token.run_sync_soon(reply.run, partial(fn, *args, **kwargs))
        return reply.wait()

    # --- the publisher, without waiting ----------------------------------------------------

    def publish_snapshot(
        self,
        availability: Availability | str,
        roots: Iterable[RootActivity] | None = None,
        detail: str | None = None,
    ) -> None:
        """Queue :meth:`WorkflowActivityPublisher.publish_snapshot`."""
        state, frozen, said = snapshot_arguments(availability, roots, detail)
        self.call_soon(self._publisher.publish_snapshot, state, frozen, said)

    def publish_changed(self, root: RootActivity) -> None:
        """Queue :meth:`WorkflowActivityPublisher.publish_changed`."""
        self.call_soon(self._publisher.publish_changed, _check_root(root, "root"))

    def publish_removed(self, root_run_id: str) -> None:
        """Queue :meth:`WorkflowActivityPublisher.publish_removed`."""
        self.call_soon(self._publisher.publish_removed, check_str(root_run_id, "root_run_id"))

    def publish_lifecycle(self, event: LifecycleInput) -> None:
        """Queue :meth:`WorkflowActivityPublisher.publish_lifecycle`."""
        self.call_soon(self._publisher.publish_lifecycle, _check_lifecycle(event, "event"))

    def publish_heartbeat(self, event: HeartbeatEvent) -> None:
        """Queue :meth:`WorkflowActivityPublisher.publish_heartbeat`."""
        self.call_soon(self._publisher.publish_heartbeat, _check_heartbeat(event, "event"))

    def dispose(self) -> None:
        """Queue :meth:`WorkflowActivityPublisher.dispose`."""
        self.call_soon(self._publisher.dispose)

    # --- the publisher, waiting for the cursor ---------------------------------------------

    def publish_snapshot_blocking(
        self,
        availability: Availability | str,
        roots: Iterable[RootActivity] | None = None,
        detail: str | None = None,
    ) -> Cursor | None:
        """:meth:`publish_snapshot`, then wait: the assigned cursor (None when fenced)."""
        state, frozen, said = snapshot_arguments(availability, roots, detail)
        return self.call_blocking(self._publisher.publish_snapshot, state, frozen, said)

    def publish_changed_blocking(self, root: RootActivity) -> Cursor | None:
        """:meth:`publish_changed`, then wait: the assigned cursor (None when fenced)."""
        return self.call_blocking(self._publisher.publish_changed, _check_root(root, "root"))

    def publish_removed_blocking(self, root_run_id: str) -> Cursor | None:
        """:meth:`publish_removed`, then wait: the assigned cursor (None when fenced)."""
        checked = check_str(root_run_id, "root_run_id")
        return self.call_blocking(self._publisher.publish_removed, checked)

    def publish_lifecycle_blocking(self, event: LifecycleInput) -> Cursor | None:
        """:meth:`publish_lifecycle`, then wait: the assigned cursor (None when fenced)."""
        checked = _check_lifecycle(event, "event")
        return self.call_blocking(self._publisher.publish_lifecycle, checked)

    # --- internals -------------------------------------------------------------------------

    def _report(self, error: Exception) -> None:
        try:
            self._on_error(error)
        except Exception:
            logger.exception("ThreadPublisher on_error callback failed")

    def _refuse_trio_thread(self) -> None:
        refuse_trio_thread(
            self._token, "a *_blocking call", "call the publisher (or tracker) directly there"
        )


# The package root exports ThreadPublisher lazily; it says workflow_hub however it is loaded.
claim_root_names(globals())
