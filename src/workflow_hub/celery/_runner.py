"""Threads around the bridge core: Celery's own event receiver, a forwarder, inspections.

* The receiver thread runs ``app.events.Receiver`` (kombu) on a connection of its own and only
  queues what it receives, so a slow tracker never stalls the broker connection.
* The forwarder thread is the only caller of the :class:`CeleryBridge`: it takes everything
  queued so far in one batch (one ``tracker.batch()``, each changed root published once), ticks
  the bridge's clock, and starts inspections. Each call goes through ``call`` (default: call it
  here): a tracker that lives in a trio thread is reached with ``trio.from_thread.run_sync``.
* Inspections (``active``, ``reserved``, ``scheduled``, run side by side) give the start-up
  state and resynchronise a worker that comes back.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, final

import attrs

from .._contract import RootActivity
from .._exceptions import WorkflowHubError
from .._threads import signals_to_the_main_thread
from ..tracker import SchedulerFacts as Facts
from ._bridge import BridgeStatistics, CeleryBridge, Inspection, WorkerStatus
from ._broker import BrokerHealth

__all__ = ["CeleryWatch", "watch_celery"]

Call = Callable[[Callable[[], None]], None]

logger = logging.getLogger("workflow_hub.celery")

DEFAULT_INSPECT_TIMEOUT = 1.0
"""Seconds the bridge waits for the workers' replies to an inspection (``active``, ``reserved``,
``scheduled``), at start-up and when a lost worker comes back; ``inspect_timeout`` of
:func:`watch_celery` and :func:`serve_celery`, ``--inspect-timeout`` of ``workflow-hub celery``."""
RECONNECT_INTERVAL_MAX = 2.0
"""Seconds between the receiver's attempts to reach a broker that does not answer, at most (0.5,
1, 1.5, 2, 2 …; kombu's own default grows to 30 s): how soon a broker that is back is seen."""
DEFAULT_TICK = 0.25
DEFAULT_LINGER = 0.02
"""Seconds the forwarder lets events gather after the first of a batch (``linger`` of
:func:`watch_celery`). Each batch costs the bridge's process a hand-over to the hub's thread and
a publication of every root it changed, whatever its size: 20 ms (a fifth of a view's redraw
interval) makes a busy stream's batches about four times as large as 5 ms did (issue 38)."""
_DRAIN_SLICE = 0.25


class _Stopping(WorkflowHubError):
    """Raised out of kombu's retry loop when the bridge stops."""


def _call_here(function: Callable[[], None]) -> None:
    function()


@final
@attrs.define(eq=False, repr=False)
class CeleryWatch:
    """A running bridge, made by :func:`watch_celery`: ``ready`` is set once the first ready
    snapshot is published."""

    _app: Any
    bridge: CeleryBridge
    """The mapping the forwarder thread feeds (read it from another thread through
    :meth:`statistics` and :meth:`workers`)."""
    _call: Call
    _inspect_timeout: float
    _tick: float
    _linger: float
    _clock: Callable[[], float]
    _restore: tuple[RootActivity, ...] = ()
    ready: threading.Event = attrs.field(init=False, factory=threading.Event)
    """Set once the bridge published its first ready snapshot (cleared while it recovers)."""
    consuming: threading.Event = attrs.field(init=False, factory=threading.Event)
    """Set while the receiver consumes from a broker connection."""
    _stopping: threading.Event = attrs.field(init=False, factory=threading.Event)
    _wake: threading.Condition = attrs.field(init=False, factory=threading.Condition)
    _events: list[Mapping[str, Any]] = attrs.field(init=False, factory=list)
    _jobs: list[Callable[[float], None]] = attrs.field(init=False, factory=list)
    _receiver: Any = attrs.field(init=False, default=None)
    _threads: list[threading.Thread] = attrs.field(init=False, factory=list)
    _spawning: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _naming: threading.Thread | None = attrs.field(init=False, default=None)
    _errors: int = attrs.field(init=False, default=0)
    _failure: tuple[type[BaseException], str] | None = attrs.field(init=False, default=None)
    _connections: int = attrs.field(init=False, default=0)  # broker connections consumed from
    _broker: BrokerHealth = attrs.field(init=False, factory=BrokerHealth)

    # --- public ----------------------------------------------------------------------------

    def statistics(self) -> BridgeStatistics:
        """The bridge's counts (read from another thread: a consistent enough snapshot)."""
        return self.bridge.statistics()

    def workers(self) -> tuple[WorkerStatus, ...]:
        """The workers the bridge knows (read from another thread, as :meth:`statistics`)."""
        return self.bridge.workers()

    @property
    def broker_unreachable(self) -> str | None:
        """``"broker unreachable: <reason>"`` while the receiver cannot read the broker (at
        start-up as after a lost connection; the source is ``recovering`` meanwhile), else
        None. The first failure of each outage is one warning on ``workflow_hub.celery``."""
        return self._broker.unreachable

    @property
    def broker_failures(self) -> int:
        """Failed connection attempts and lost connections to the broker since the start."""
        return self._broker.failures

    @property
    def errors(self) -> int:
        """Calls into the tracker that raised (each distinct failure logged once on
        ``workflow_hub.celery``, with its traceback, until a call succeeds again)."""
        return self._errors

    def start(self) -> None:
        with signals_to_the_main_thread():
            self._spawn(self._receive, "celery-events")
            self._spawn(self._forward, "celery-forwarder")

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        receiver = self._receiver
        if receiver is not None:
            receiver.should_stop = True
        with self._wake:
            self._wake.notify_all()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # again for any started while it waited
            with self._spawning:
                left = [thread for thread in self._threads if thread.is_alive()]
            if not left:
                break
            for thread in left:
                thread.join(max(0.0, deadline - time.monotonic()))

    # --- threads ---------------------------------------------------------------------------

    def _spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        with self._spawning:  # the receiver's and the forwarder's threads both start some
            # Ended ones are dropped: a bridge that runs for months starts one now and then.
            self._threads = [each for each in self._threads if each.is_alive()]
            self._threads.append(thread)
            thread.start()
        return thread

    def _receive(self) -> None:
        watch = self

        class Receiver(self._app.events.Receiver):  # type: ignore[misc,name-defined]
            def on_consume_ready(self, *args: Any, **kwargs: Any) -> None:
                super().on_consume_ready(*args, **kwargs)
                watch._consuming()

            def on_connection_error(self, exc: BaseException, interval: float) -> None:
                watch._connection_lost(exc)

            def _receive(self, body: Any, message: Any) -> None:
                # Kombu's callback, in place of Celery's: the bridge reads no event's clock or
                # timestamp, so ``event_from_message`` (the Lamport clock, the localised
                # timestamp, ``local_received``) is work the bridge would throw away (issue 38:
                # about 1.7 us of the receiver's ~60 an event). A message is one event or a
                # list of them; anything but a mapping is dropped here.
                if isinstance(body, dict):
                    watch._queue_event(body)
                elif isinstance(body, list):
                    watch._queue_events([each for each in body if isinstance(each, dict)])

            @contextmanager
            def establish_connection(self) -> Iterator[Any]:
                with self.create_connection() as connection:
                    connection.ensure_connection(
                        self.on_connection_error,
                        self.connect_max_retries,
                        interval_start=0.5,
                        interval_step=0.5,
                        interval_max=RECONNECT_INTERVAL_MAX,
                    )
                    yield connection

        while not self._stopping.is_set():
            try:
                with self._app.connection_for_read() as connection:
                    # Reached here, with every failed attempt reported as it happens (the
                    # receiver's own first connection retries silently for seconds).
                    connection.ensure_connection(
                        self._attempt_failed,
                        None,
                        interval_start=0.5,
                        interval_step=0.5,
                        interval_max=RECONNECT_INTERVAL_MAX,
                        callback=self._raise_if_stopping,
                    )
                    receiver = Receiver(connection, handlers={"*": self._queue_event})
                    self._receiver = receiver
                    if self._stopping.is_set():
                        return
                    # kombu drains in slices of ``safety_interval``: the stop latency.
                    for _ in receiver.consume(
                        limit=None, timeout=None, safety_interval=_DRAIN_SLICE, wakeup=True
                    ):
                        pass
                return
            except Exception as error:
                if self._stopping.is_set() or isinstance(error, _Stopping):
                    return
                self._connection_lost(error)
                self._stopping.wait(1.0)

    def _attempt_failed(self, error: BaseException, interval: float) -> None:
        self._raise_if_stopping()
        self._connection_lost(error)

    def _raise_if_stopping(self) -> None:
        if self._stopping.is_set():
            raise _Stopping

    def _consuming(self) -> None:
        # The receiver's queue is bound before the inspection, so nothing falls in between.
        self._connections += 1
        self._broker.consuming()
        self.consuming.set()
        self._spawn(functools.partial(self._inspect, None, self._connections), "celery-inspect")

    def _connection_lost(self, error: BaseException) -> None:
        """The broker went away (or never answered): the bridge does not know, so the source is
        recovering; the first failure of an outage is logged with its reason."""
        first = self._broker.failed(error)
        if not self.consuming.is_set():
            # Not consuming yet (a broker down from the start), or already recovering: the
            # views learn the reason with the outage's first failure (issue 38).
            if first:
                detail = self._broker.unreachable
                self._queue_job(lambda now: self.bridge.begin(detail))
            return
        self.consuming.clear()
        self.ready.clear()
        # The views say why it is unknown (C3's detail), not only "recovering" (issue 38).
        detail = self._broker.unreachable
        self._queue_job(lambda now: self.bridge.begin(detail))

    def _queue_event(self, event: Mapping[str, Any]) -> None:
        with self._wake:
            self._events.append(event)
            if len(self._events) == 1:
                self._wake.notify()  # the forwarder waits only for a first event

    def _queue_events(self, events: list[Mapping[str, Any]]) -> None:
        if events:
            with self._wake:
                first = not self._events
                self._events += events
                if first:
                    self._wake.notify()

    def _queue_job(self, job: Callable[[float], None]) -> None:
        with self._wake:
            self._jobs.append(job)
            self._wake.notify()

    def _inspect(self, destination: str | None, connection: int = 0) -> None:
        lists: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
        kinds = ("active", "reserved", "scheduled")
        replies: dict[str, Any] = {}

        def one(kind: str) -> None:
            inspect = self._app.control.inspect(
                timeout=self._inspect_timeout,
                destination=None if destination is None else [destination],
            )
            try:
                replies[kind] = getattr(inspect, kind)() or {}
            except Exception:
                logger.exception("celery inspect %s failed", kind)
                replies[kind] = {}

        threads = [threading.Thread(target=one, args=(kind,), daemon=True) for kind in kinds]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(self._inspect_timeout + 10.0)
        for kind in kinds:
            for hostname, requests in replies.get(kind, {}).items():
                lists.setdefault(hostname, {})[kind] = list(requests or ())
        if destination is None:
            self._queue_job(functools.partial(self._recovered, lists, connection))
        else:
            self._queue_job(functools.partial(self.bridge.resynchronised, destination, lists))

    def _recovered(self, lists: Inspection, connection: int, now: float) -> None:
        if connection != self._connections or not self.consuming.is_set():
            return  # the connection it was made on is gone: the next one inspects again
        unreported = self.bridge.recovered(lists, now)
        self.ready.set()
        if unreported:
            self._spawn(functools.partial(self._look_up, unreported), "celery-results")

    def _look_up(self, task_ids: list[str]) -> None:
        """Ask the result backend how tasks that ended unseen (during an outage) ended."""
        try:
            backend = self._app.backend
            if type(backend).__name__ == "DisabledBackend":
                return
            states = {task_id: str(backend.get_state(task_id)) for task_id in task_ids}
        except Exception:
            logger.exception("could not read the result backend")
            return
        self._queue_job(functools.partial(self.bridge.settle_from_results, states))

    def _look_up_names(self, task_ids: list[str]) -> None:
        """Names of tasks first seen without one, where Celery keeps them: the workers that
        still hold them (``query_task``), then the result backend (``result_extended`` stores
        the name; any backend the parent's id)."""
        found: dict[str, dict[str, Any]] = {}
        try:
            inspect = self._app.control.inspect(timeout=self._inspect_timeout)
            for held in (inspect.query_task(task_ids) or {}).values():
                for task_id, (_state, info) in (held or {}).items():
                    found[task_id] = {"name": info.get("name")}
        except Exception:
            logger.exception("celery inspect query_task failed")
        missing = [task_id for task_id in task_ids if not found.get(task_id, {}).get("name")]
        try:
            backend = self._app.backend
            if missing and type(backend).__name__ != "DisabledBackend":
                for task_id in missing:
                    meta = backend.get_task_meta(task_id)
                    found[task_id] = {"name": meta.get("name"), "parent_id": meta.get("parent_id")}
        except Exception:
            logger.exception("could not read the result backend")
        if found:
            self._queue_job(functools.partial(self.bridge.named, found))

    def _forward(self) -> None:
        self._guarded(self.bridge.begin)
        if self._restore:
            self._guarded(functools.partial(self.bridge.restore, self._restore, self._clock()))
            self._restore = ()
        next_tick = self._clock() + self._tick
        while not self._stopping.is_set():
            with self._wake:
                if not self._events and not self._jobs:
                    self._wake.wait(max(0.0, next_tick - self._clock()))
                if self._events and self._linger > 0:
                    # Events come in bursts (received, started, succeeded, the next task ...):
                    # a moment's wait turns many small batches into one.
                    self._wake.wait(self._linger)
                events, self._events = self._events, []
                jobs, self._jobs = self._jobs, []
            now = self._clock()
            bridge = self.bridge
            if events:
                self._guarded(functools.partial(bridge.apply, events, now))
            for job in jobs:
                self._guarded(functools.partial(job, now))
            if now >= next_tick:
                self._guarded(functools.partial(bridge.tick, now))
                next_tick = now + self._tick
                # One look-up at a time; the tasks due meanwhile wait for the next one.
                if self._naming is None or not self._naming.is_alive():
                    unnamed = bridge.take_name_requests(now)
                    if unnamed:
                        lookup = functools.partial(self._look_up_names, unnamed)
                        self._naming = self._spawn(lookup, "celery-names")
            for hostname in bridge.take_resync_requests():
                self._spawn(functools.partial(self._inspect, hostname), "celery-resync")

    def _guarded(self, function: Callable[[], None]) -> None:
        # Never raised into the threads (nor into the host, whose tracker raised): counted,
        # and logged once per distinct failure, not once per batch, while it lasts.
        try:
            self._call(function)
        except Exception as error:
            self._errors += 1
            failure = (type(error), str(error))
            if failure != self._failure:
                self._failure = failure
                logger.exception("the celery bridge could not report to its tracker")
        else:
            self._failure = None


def _acks_late(app: Any) -> Callable[[str], bool]:
    """Whether a task's message is acknowledged after it ran: its own ``acks_late`` when the
    app knows the task, else the app's ``task_acks_late``."""
    default = bool(app.conf.task_acks_late)

    def acks_late(name: str) -> bool:
        task = app.tasks.get(name)
        return default if task is None else bool(getattr(task, "acks_late", default))

    return acks_late


@contextmanager
def watch_celery(
    app: Any,
    tracker: Facts,
    *,
    call: Call | None = None,
    inspect_timeout: float = DEFAULT_INSPECT_TIMEOUT,
    tick: float = DEFAULT_TICK,
    linger: float = DEFAULT_LINGER,
    settle: float = 1.0,
    keep_ended: float = 300.0,
    max_ended: int = 1000,
    labels: Mapping[str, str] | None = None,
    labels_from: Iterable[str] = (),
    clock: Callable[[], float] = time.monotonic,
    restore: Iterable[RootActivity] = (),
) -> Iterator[CeleryWatch]:
    """Bridge a Celery app's events to ``tracker`` while the block runs (threads of its own).

    The tracker is published ``recovering`` at once and ``ready`` after the workers' inspection
    (``watch.ready`` is set then). ``call(function)`` runs each batch of facts where the tracker
    lives (default: in the forwarder thread, right for a thread-safe tracker). ``linger``
    (seconds) is how long the forwarder lets events gather after the first of a batch: less
    CPU per event for at most that much more lag. ``tick`` is how often time-based rules (lost
    workers, settled roots, retention) are checked. ``settle``,
    ``keep_ended``, ``max_ended``, ``labels`` (on every root) and ``labels_from`` (``"queue"``,
    ``"worker"``: labels from the tasks' events) are :class:`CeleryBridge`'s. ``restore`` is a
    previous instance's last roots (:meth:`CeleryBridge.restore`: a restart keeps its canvases;
    ``serve_celery`` reads them from its Redis source). Leaving the block stops the
    threads (within about a quarter of a second: kombu's drain slice).
    """
    bridge = CeleryBridge(
        tracker,
        settle=settle,
        keep_ended=keep_ended,
        max_ended=max_ended,
        labels=labels,
        labels_from=labels_from,
        acks_late=_acks_late(app),
    )
    watch = CeleryWatch(
        app,
        bridge,
        call=call or _call_here,
        inspect_timeout=inspect_timeout,
        tick=tick,
        linger=linger,
        clock=clock,
        restore=tuple(restore),
    )
    watch.start()
    try:
        yield watch
    finally:
        watch.stop()
