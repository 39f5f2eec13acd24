"""``with serve_celery(app) as served``: a Celery app's canvases on the dashboard, from threads.

The composition ``workflow-hub celery`` runs, as one call a program can make: the sync host
(``workflow_hub.sync``: trio in a background thread), a :class:`~workflow_hub.tracker.RunTracker`
in the hub's thread with a :class:`~workflow_hub.HookRunner` bound (so the tracker's lifecycle
events reach ``/v1/events`` and the fleet), the HTTP server, an optional Redis mirror, and the
bridge's own threads (:func:`watch_celery`) handing each batch of facts to the hub's thread.
Celery's code never runs trio, and trio never waits on Celery: the bridge only listens.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from typing import Any, final

import attrs
import trio

from .. import HookRunner, WorkflowActivityHub
from .._contract import RootActivity
from .._defaults import DEFAULT_PORT
from .._threads import signals_to_the_main_thread
from ..sync import HostClosedError, Hub, open_hub
from ..tracker import RunTracker
from ._events import check_label_options
from ._restore import restore_from
from ._runner import DEFAULT_INSPECT_TIMEOUT, CeleryWatch, watch_celery

__all__ = ["CeleryServer", "serve_celery"]

logger = logging.getLogger("workflow_hub.celery")

# How long leaving the block waits for the mirror's thread once the host has closed (its last
# append is done by then: the host's close waits for it).
_MIRROR_JOIN = 5.0


@final
@attrs.frozen
class CeleryServer:
    """What :func:`serve_celery` serves, while its block runs."""

    url: str
    """The server's base URL (``http://127.0.0.1:8765``): the dashboard and the streams."""
    hub: Hub
    """The sync host's hub: subscribe to its frames, or serve it once more, from any thread."""
    watch: CeleryWatch
    """The bridge's threads: ``watch.ready.wait(10)``, ``watch.statistics()``, ``watch.workers()``."""


@contextmanager
def serve_celery(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    insecure: bool = False,
    cors_origins: Sequence[str] | None = None,
    redis_url: str | None = None,
    source: str = "celery",
    prefix: str | None = None,
    settle: float = 1.0,
    keep_ended: float = 300.0,
    inspect_timeout: float = DEFAULT_INSPECT_TIMEOUT,
    labels: Mapping[str, str] | None = None,
    labels_from: Iterable[str] = (),
) -> Iterator[CeleryServer]:
    """Serve the canvases of Celery ``app`` live while the block runs: ``with serve_celery(app,
    port=8765) as served: print(served.url)``.

    A sync host starts in a background thread; its hub is served over HTTP at ``host:port``
    (``port=0`` picks a free one; :func:`workflow_hub.server.serve_hub`'s rules for ``token``,
    ``insecure`` and ``cors_origins``), and :func:`watch_celery` reports the app's events to a
    tracker in the hub's thread, one hand-over per batch. With ``redis_url`` the hub and its
    hook events are also mirrored into that Redis as ``source`` under ``prefix`` (default
    ``workflow-hub``; :func:`workflow_hub.redis.mirror_hub`, needs the ``redis`` extra), and a
    restart continues from what that source last showed as ready: its canvases, names and ended
    stages (docs/celery.md, "Restarts").
    ``settle``, ``keep_ended``, ``inspect_timeout``, ``labels`` (on every root:
    ``{"env": "prod"}``) and ``labels_from`` (``("queue", "worker")``: labels from the tasks'
    events) are :func:`watch_celery`'s.

    The source is ``recovering`` until the workers' inspection is in (``served.watch.ready``).
    Nothing here raises into Celery or waits on it: the bridge only listens, and a fact the hub
    refuses is logged on ``workflow_hub.celery`` and counted (``served.watch.errors``). A server
    that cannot start (a port in use: :class:`OSError`) or a bad option raises from the
    ``with``, with everything started so far stopped. Leaving the block stops the bridge, ends
    the source (every client and the fleet get its final ``unavailable`` frame: H1 in
    docs/contract.md), closes the server and ends the host's thread, in about a second.
    """
    check_label_options(labels, labels_from)  # a bad label is refused before anything starts
    mirrors: list[threading.Thread] = []
    with ExitStack() as stack:
        stack.callback(_join, mirrors)  # last: once the host has closed
        # The host's thread, the mirror's and the bridge's (and theirs) leave Ctrl-C to the
        # main thread.
        with signals_to_the_main_thread():
            hub = stack.enter_context(open_hub())
            # One tracker in the hub's thread, reached with ``hub.call`` once per batch: the
            # thread-safe ``hub.tracker()`` would cost one hand-over per fact.
            tracker = hub.call(_tracker, hub.trio_hub)
            stack.callback(_end_source, hub, tracker)
            runner = hub.call(_runner, hub.trio_hub)
            url = hub.serve(
                host=host,
                port=port,
                token=token,
                insecure=insecure,
                cors_origins=cors_origins,
                runner=runner,
            )
            restored: tuple[RootActivity, ...] = ()
            if redis_url is not None:
                from ..redis import DEFAULT_PREFIX

                mirrors.append(_start_mirror(hub, runner, redis_url, source=source, prefix=prefix))
                # After the mirror's start (a bad source is refused first): the new instance
                # has appended nothing ready yet, so the stream's last ready state is the
                # previous instance's (docs/celery.md, "Restarts").
                restored = trio.from_thread.run(
                    functools.partial(
                        restore_from,
                        redis_url,
                        source=source,
                        prefix=DEFAULT_PREFIX if prefix is None else prefix,
                    ),
                    trio_token=hub.trio_token,
                )
            watch = stack.enter_context(
                watch_celery(
                    app,
                    tracker,
                    call=hub.call,
                    settle=settle,
                    keep_ended=keep_ended,
                    inspect_timeout=inspect_timeout,
                    labels=labels,
                    labels_from=labels_from,
                    restore=restored,
                )
            )
        yield CeleryServer(url=url, hub=hub, watch=watch)


def _end_source(hub: Hub, tracker: RunTracker) -> None:
    """Every observer, local or remote, sees this source end (H1, P8 in docs/contract.md). A
    host whose thread failed raises its own error from its ``with``."""
    with suppress(HostClosedError):
        hub.call(tracker.publisher.dispose)


def _join(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(_MIRROR_JOIN)


def _tracker(hub: WorkflowActivityHub) -> RunTracker:
    return RunTracker(hub.register_publisher(), owner_session_id="celery", include_graph=True)


def _runner(hub: WorkflowActivityHub) -> HookRunner:
    runner = HookRunner(hub)
    runner.bind()
    return runner


@final
class _Started:
    """The mirror's start, handed from its thread to the caller: its ``task_status``, or the
    error that stopped it first."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None

    def started(self, value: object = None) -> None:
        self.done.set()

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.done.set()


def _start_mirror(
    hub: Hub, runner: HookRunner, url: str, *, source: str, prefix: str | None
) -> threading.Thread:
    """Mirror the hub into Redis from a thread of its own (it waits on the mirror's task in the
    hub's thread until the host closes); return once the mirror is subscribed, or raise what
    stopped it from starting (a bad URL, source or prefix; the ``redis`` extra missing)."""
    status = _Started()

    def run() -> None:
        try:
            trio.from_thread.run(
                _mirror,
                hub.trio_hub,
                runner,
                url,
                source,
                prefix,
                status,
                trio_token=hub.trio_token,
            )
        except BaseException as error:
            if not status.done.is_set():
                status.fail(_leaf(error))
            elif not isinstance(error, trio.Cancelled | trio.RunFinishedError):
                logger.exception("the Redis mirror stopped")

    thread = threading.Thread(target=run, name="workflow-hub-mirror", daemon=True)
    thread.start()
    status.done.wait()
    if status.error is not None:
        thread.join()
        raise status.error
    return thread


def _leaf(error: BaseException) -> BaseException:
    """The one error inside nested groups of one (the Redis client's task group wraps what the
    mirror raised as it started), or ``error`` itself."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


async def _mirror(
    hub: WorkflowActivityHub,
    runner: HookRunner,
    url: str,
    source: str,
    prefix: str | None,
    status: _Started,
) -> None:
    from ..redis import DEFAULT_PREFIX, mirror_hub_at

    await mirror_hub_at(
        hub,
        url,
        source=source,
        prefix=DEFAULT_PREFIX if prefix is None else prefix,
        runner=runner,
        task_status=status,
    )
