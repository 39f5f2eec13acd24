"""The bridge core: Celery events in, RunTracker facts out. No I/O, no threads, no clock of its own.

One root per ``root_id`` (a task without one is its own root), one run per root with the same id,
one stage per task (its id is the task id, its name the task name, its parent the task named by
``parent_id`` when that task is in the same root). docs/celery.md has the mapping table; this
module is its executable form. The bridge is not thread-safe: one thread (the runner's forwarder)
calls it, and everything time-dependent takes ``now`` (seconds, any monotonic clock) as an
argument, so tests drive it deterministically.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final, final

import attrs

from .._contract import ContractError, FailureDetail, unknown_detail
from ..tracker import SchedulerFacts as Facts
from ._events import (
    RefusalLog,
    check_label_options,
    check_new_task,
    failure_of,
    labelled,
)
from ._model import BLOCKED as _BLOCKED
from ._model import ENDED as _ENDED
from ._model import FAILED, LOST, PENDING, REVOKED, RUNNING, SUCCEEDED, UNKNOWN_NAME, UNSERVED
from ._model import STOPPED as _STOPPED
from ._model import Root as _Root
from ._model import Task as _Task
from ._recovery import Inspection, Recovery
from ._workers import Roster, Worker, WorkerStatus

__all__ = ["BridgeStatistics", "CeleryBridge", "Inspection", "WorkerStatus"]

logger = logging.getLogger("workflow_hub.celery")


@final
@attrs.frozen
class BridgeStatistics:
    """Counts since the bridge started: what arrived and what became of it."""

    events: int
    """Events received (task and worker events alike, refused ones included)."""
    ignored: int
    """Events of a type the bridge does not map (docs/celery.md lists the mapped ones)."""
    refused: int
    """Events refused whole because a field cannot be shown (a name or id with a lone
    surrogate); the rest of their batch was applied (docs/celery.md, "Bad events")."""
    roots: int
    """Roots tracked now (live and ended ones still kept)."""
    live_roots: int
    """Roots with a task that has not ended."""
    workers_online: int
    """Workers heard from within their heartbeat window."""
    workers_lost: int
    """Workers that stopped answering with tasks in flight, not back yet."""
    ready: bool
    """The bridge has published its first ready snapshot."""


@final
class CeleryBridge(Recovery):
    """Applies Celery events to a tracker (:class:`Facts`): see docs/celery.md for the mapping.

    ``settle`` (seconds): how long a root whose tasks have all ended waits for a continuation
    (the next step of a chain, a chord's body, an errback are sent only after their parent ended)
    before its run ends. ``keep_ended`` (seconds) and ``max_ended`` bound how long and how many
    ended roots stay on show before they are removed. ``labels`` are put on every root (C3);
    ``labels_from`` names what else labels a root from its tasks' events: ``"queue"`` (the
    queue of ``task-sent``) and ``"worker"`` (the hostname of the worker that took its first
    task). A bad label is a ``ContractError`` naming the key, an unknown source a ``ValueError``.
    ``acks_late(task_name)`` says whether a task's message is acknowledged only after it ran
    (Celery's ``acks_late``): a running one whose worker went away is then redelivered, not lost.

    Lifecycle: :meth:`begin` publishes ``recovering``; :meth:`restore` may seed a previous
    instance's roots (a restart); events are applied as they come; then :meth:`recovered` adds
    what the workers' inspection reports and publishes ``ready``. Tasks first seen without a
    name are handed out by :meth:`take_name_requests` and named by :meth:`named`.
    :meth:`tick` ends settled roots, retires old ones and marks silent workers lost.
    """

    def __init__(
        self,
        tracker: Facts,
        *,
        settle: float = 1.0,
        keep_ended: float = 300.0,
        max_ended: int = 1000,
        labels: Mapping[str, str] | None = None,
        labels_from: Iterable[str] = (),
        acks_late: Callable[[str], bool] = lambda name: False,
    ) -> None:
        self._acks_late = acks_late
        self._labels, self._labels_from = check_label_options(labels, labels_from)
        self._refusals = RefusalLog()
        self._tracker = tracker
        self._settle = settle
        self._keep_ended = keep_ended
        self._max_ended = max_ended
        self._roots: dict[str, _Root] = {}
        self._tasks: dict[str, _Task] = {}
        # Ended roots in the order they ended: the oldest is removed first.
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._quiet: dict[str, None] = {}  # roots waiting out their settle time
        self._roster = Roster()
        self._hydration: AbstractContextManager[None] | None = None
        self._ready = False
        self._events = 0
        self._ignored = 0
        self._reported: set[str] = set()  # task ids in the last inspection
        self._suspects: set[str] = set()
        self._unnamed: dict[str, float] = {}  # task ids first seen without a name, and when
        self._serving = True  # a worker is alive (or the bridge cannot tell yet)
        self._unserved_said = False  # the warning of this outage of workers was logged

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self._ready

    def begin(self, detail: str | None = None) -> None:
        """Publish ``recovering`` (``detail``: why, e.g. ``broker unreachable: …``; C3). While
        recovering already (a broker down from the start), only the reason is said."""
        if self._hydration is not None:
            if detail is not None:
                self._tracker.recovering_because(unknown_detail(detail))
            return
        self._ready = False
        # What was in flight when the connection went: suspect until an event or the
        # inspection tells of it again.
        self._suspects = {
            task_id for task_id, task in self._tasks.items() if task.state in (PENDING, RUNNING)
        }
        said = None if detail is None else unknown_detail(detail)
        self._hydration = self._tracker.hydrating(said) if said else self._tracker.hydrating()
        self._hydration.__enter__()

    def take_resync_requests(self) -> list[str]:
        """Workers that came back since the last call: the runner inspects each of them."""
        return self._roster.take_resync_requests()

    def workers(self) -> tuple[WorkerStatus, ...]:
        """Every worker heard from, in the order first heard."""
        return self._roster.statuses()

    def statistics(self) -> BridgeStatistics:
        online, lost = self._roster.counts()
        return BridgeStatistics(
            events=self._events,
            ignored=self._ignored,
            refused=self._refusals.count,
            roots=len(self._roots),
            live_roots=sum(1 for root in self._roots.values() if not root.ended),
            workers_online=online,
            workers_lost=lost,
            ready=self._ready,
        )

    # --- events ----------------------------------------------------------------------------

    def apply(self, events: Iterable[Mapping[str, Any]], now: float) -> None:
        """Apply events (by what they mean: a late event never undoes a later state); the
        tracker publishes each changed root once. An event that cannot be applied is refused
        alone (counted in ``refused``, logged once per reason) and the others are applied."""
        with self._tracker.batch():
            for event in events:
                try:
                    self._apply(event, now)
                except ContractError as error:  # refused by the tracker before it changed
                    self._refusals.refused(event, error.path, str(error))
                except Exception as error:  # a bug: it loses this event only, and says so
                    self._refusals.broke(error)
            self._check_served()
            self._settle_roots(now)

    def tick(self, now: float) -> None:
        """Time passes: silent workers become lost, quiet roots end, old ended roots go."""
        with self._tracker.batch():
            for worker in self._roster.silent(now):
                self._worker_gone(worker)
            self._check_served()
            self._settle_roots(now)
            self._retire(now)

    def _apply(self, event: Mapping[str, Any], now: float) -> None:
        self._events += 1
        kind = event.get("type")
        hostname = event.get("hostname")
        if not isinstance(kind, str):
            self._ignored += 1
            return
        if kind.startswith("worker-"):
            if isinstance(hostname, str):
                worker = self._roster.event(kind, hostname, event, now)
                if not worker.online:
                    self._worker_gone(worker)
            return
        handler = _TASK_HANDLERS.get(kind)
        task_id = event.get("uuid")
        if handler is None or not isinstance(task_id, str):
            self._ignored += 1
            return
        known = self._tasks.get(task_id)
        if known is None or known.provisional:
            check_new_task(event)  # before anything changes: refused whole
        # Any event from a worker shows it alive (task-sent comes from whoever sent the task).
        if isinstance(hostname, str) and kind != "task-sent":
            self._roster.heard(hostname, now)
        self._suspects.discard(task_id)
        task = self._task(task_id, event, now)
        if self._labels_from:
            self._label(self._roots[task.root_id], event, kind)
        handler(self, task, event, hostname if isinstance(hostname, str) else None, now)

    # --- workers ---------------------------------------------------------------------------

    def _worker_gone(self, worker: Worker) -> None:
        for task in self._tasks.values():
            if task.worker != worker.hostname or task.state not in (PENDING, RUNNING):
                continue
            if task.state == PENDING or self._acks_late(task.name or ""):
                # Its message was not acknowledged (prefetched, or acks_late): the broker
                # delivers it again, so it waits for that, as a retry does (docs/celery.md).
                task.worker, task.redelivery, task.phase = None, True, 0
                self._set(task, PENDING)
            else:  # acknowledged when it started: nothing will run it again
                worker.lost = True
                self._set(task, LOST)

    def _check_served(self) -> None:
        """Tasks waiting in the broker are blocked while no worker is alive to run them, and
        pending again when one is (docs/celery.md, "Workers": "No worker alive")."""
        serving = not self._ready or self._roster.any_online()
        if serving == self._serving:
            return
        self._serving = serving
        for task in list(self._tasks.values()):
            if serving and task.state == UNSERVED:
                self._set(task, PENDING)
            elif not serving and task.state == PENDING and task.worker is None:
                self._set(task, UNSERVED)
        if serving and self._unserved_said:
            self._unserved_said = False
            logger.info("a celery worker is alive again: the queued tasks can run")

    # --- tasks -----------------------------------------------------------------------------

    def _task(self, task_id: str, event: Mapping[str, Any], now: float) -> _Task:
        task = self._tasks.get(task_id)
        if task is not None:
            if task.provisional and isinstance(event.get("name"), str):
                return self._rehome(task, event, now)
            return task
        root_id = _root_id(task_id, event)
        root = self._roots.get(root_id)
        if root is None:
            root = self._roots[root_id] = _Root(root_id, labels=self._labels)
            self._tracker.add_run(root_id, status="running", labels=self._labels)
        elif root.ended:
            self._reopen(root)
        name = event.get("name")
        parent_id = event.get("parent_id")
        parents: tuple[str, ...] = ()
        if isinstance(parent_id, str) and parent_id != task_id and parent_id in root.tasks:
            parents = (parent_id,)
        named = isinstance(name, str)
        task = _Task(task_id, root_id, provisional=not named, name=name if named else None)
        self._tracker.add_stage(
            root_id, task_id, name if isinstance(name, str) else UNKNOWN_NAME, parent_ids=parents
        )
        if not named:
            self._unnamed[task_id] = now  # looked up where Celery keeps names, if still unnamed
        self._tasks[task_id] = task
        root.tasks[task_id] = task
        root.open += 1
        self._quiet.pop(root_id, None)
        root.quiet_since = None
        return task

    def _rehome(self, task: _Task, event: Mapping[str, Any], now: float) -> _Task:
        """The first event that names a task first seen without its name (``task-started`` or
        a terminal event that overtook ``task-received``) moves it to the root the event names,
        in the state it has reached: its guessed root (its own id) is removed.

        A move is no status change: what the task reported under its guess (and its guessed
        root's start and end, when the task stays a root of its own) is not reported again
        where it lands. Its state is set there as history, then the landing root is owned
        again (every root of this bridge is live, restored ones too), all inside the caller's
        batch: observers never see the landing root as history."""
        old = self._roots[task.root_id]
        if len(old.tasks) > 1:  # others joined it: it is their root; its name stays unknown
            task.provisional = False
            self._unnamed.pop(task.task_id, None)
            return task
        check_new_task(event)  # the name and root it gives, before anything moves
        task.provisional = False
        self._unnamed.pop(task.task_id, None)
        landing_id = _root_id(task.task_id, event)
        same = landing_id == old.root_id  # a lone task, named: only its name changes
        self._tracker.remove_run(old.root_id)
        del self._roots[old.root_id], self._tasks[task.task_id]
        if not (same and old.ended):
            self._ended.pop(old.root_id, None)  # one named in place keeps its turn to retire
        self._quiet.pop(old.root_id, None)
        history = False  # the landing root is history now: owned again however this ends
        try:
            if same:
                self._tracker.add_run(landing_id, status="running", labels=old.labels, live=False)
                history = True
                self._roots[landing_id] = _Root(landing_id, labels=old.labels)
            new = self._task(task.task_id, event, now)
            for field in _CARRIED:
                setattr(new, field, getattr(task, field))
            if not same:
                self._tracker.release_ownership(landing_id)
                history = True
            self._set(new, task.state, error=task.error)
            if same and old.ended:
                self._quiet.pop(landing_id, None)
                self._end(self._roots[landing_id], old.ended_at)
        except BaseException:
            landing = self._roots.get(landing_id)
            if landing is None:
                self._ended.pop(landing_id, None)
            elif not landing.tasks and not landing.ended:
                self._quiet[landing_id] = None  # left empty by a refused fact: it settles
            raise
        finally:
            if history:
                self._tracker.take_ownership(landing_id)
        return new

    def _label(self, root: _Root, event: Mapping[str, Any], kind: str) -> None:
        labels = labelled(root.labels, self._labels_from, event, kind)
        if labels is not None:
            root.labels = labels
            self._tracker.set_labels(root.root_id, labels)

    def _reopen(self, root: _Root) -> None:
        root.ended = False
        self._ended.pop(root.root_id, None)
        self._tracker.set_run_status(root.root_id, "running")

    def _set(
        self,
        task: _Task,
        state: str,
        *,
        retries: int | None = None,
        error: FailureDetail | None = None,
    ) -> None:
        """Move a task to ``state`` and report the stage (``error`` says why a failed one
        failed); keeps the root's open count."""
        root = self._roots[task.root_id]
        was_open = task.state not in _ENDED
        was_blocked = task.state in _BLOCKED
        if retries is not None:
            task.retries = retries
        root.stopped += (state in _STOPPED) - (task.state in _STOPPED)
        task.state = state
        task.error = error if state == FAILED else None
        is_open = state not in _ENDED
        if was_blocked and state not in _BLOCKED:
            self._tracker.clear_intervention(root.root_id, stage_id=task.task_id)
        if is_open and not was_open:
            root.open += 1
            self._quiet.pop(root.root_id, None)
            root.quiet_since = None
            if root.ended:
                self._reopen(root)
        elif was_open and not is_open:
            root.open -= 1
        retrying = (task.retries > 0 or task.redelivery) and state in (PENDING, RUNNING)
        reported = (_STAGE_STATUS[state], retrying)
        if reported != task.reported:  # a new task is reported pending already
            task.reported = reported
            self._tracker.set_stage_status(
                root.root_id, task.task_id, reported[0], retrying=retrying, error=task.error
            )
        if state in _BLOCKED and not was_blocked:
            self._tracker.require_intervention(root.root_id, stage_id=task.task_id)
            if state == UNSERVED and not self._unserved_said:
                self._unserved_said = True
                logger.warning(
                    "no celery worker is alive: tasks queued in the broker need attention"
                )
        if root.open == 0 and not root.ended and root.root_id not in self._quiet:
            root.quiet_since = None
            self._quiet[root.root_id] = None

    def _on_sent(self, task: _Task, event: Mapping[str, Any], host: str | None, now: float) -> None:
        # Announces the task (``_task`` added it); blocked if no worker is alive to run it.
        if not self._serving and task.state == PENDING and task.worker is None:
            self._set(task, UNSERVED)

    # Events are applied by what they mean, not by arrival (workers' pool processes and clocks
    # differ): a final state (succeeded, failed, revoked, dropped) is never undone, and a late
    # task-received does not take back its attempt's task-started. docs/celery.md, "Order".

    def _on_received(
        self, task: _Task, event: Mapping[str, Any], host: str | None, now: float
    ) -> None:
        task.redelivery = False
        if not task.final or task.worker is None:
            task.worker = host
        retries = event.get("retries")
        count = retries if isinstance(retries, int) and not isinstance(retries, bool) else None
        again = count is not None and count > task.retries  # a new attempt
        stale = count is not None and count < task.retries  # an earlier attempt's
        if task.final or stale or (task.phase > 1 and not again):
            return  # late: what it says is already known, or overtaken
        task.phase = 1
        self._set(task, PENDING, retries=count)

    def _on_started(
        self, task: _Task, event: Mapping[str, Any], host: str | None, now: float
    ) -> None:
        task.redelivery = False
        if not task.final or task.worker is None:
            task.worker = host
        if task.final:
            return
        task.phase = 2
        self._set(task, RUNNING)

    def _on_ended(
        self, task: _Task, event: Mapping[str, Any], host: str | None, now: float
    ) -> None:
        if not task.final:  # task-succeeded or task-failed
            task.final = True
            failed = event.get("type") == "task-failed"
            error = failure_of(event.get("exception")) if failed else None
            self._set(task, FAILED if failed else SUCCEEDED, error=error)

    def _on_retried(
        self, task: _Task, event: Mapping[str, Any], host: str | None, now: float
    ) -> None:
        task.retried += 1
        if task.final or task.retries >= task.retried:
            # The next attempt was already received (its retries count says so): this event
            # comes from another pool process, late, and says nothing newer than that attempt.
            return
        task.phase = 0
        self._set(task, PENDING, retries=task.retries + 1)

    def _on_revoked(
        self, task: _Task, event: Mapping[str, Any], host: str | None, now: float
    ) -> None:
        if task.final:
            return
        task.final = True
        # Terminated: that task is killed, not its root. Its siblings keep their own reason (a
        # group's other members go on executing); the root's kill is recorded when it ends.
        task.terminated = task.terminated or event.get("terminated") is True
        task.expired = event.get("expired") is True
        self._set(task, REVOKED)

    def _on_rejected(
        self, task: _Task, event: Mapping[str, Any], host: str | None, now: float
    ) -> None:
        # Requeued: it waits in the queue for another delivery. Not requeued: dropped (or
        # dead-lettered); nothing will run it, which is a failure of the root.
        if task.final:
            return
        if event.get("requeue") is True:
            task.phase = 0
            self._set(task, PENDING)
        else:
            task.final = True
            self._set(task, FAILED, error=_REJECTED)

    def _on_cancelled(
        self, task: _Task, event: Mapping[str, Any], host: str | None, now: float
    ) -> None:
        # Celery cancels a running task when its worker loses the broker and retries it.
        if not task.final:
            task.phase = 0
            self._set(task, PENDING, retries=task.retries + 1)

    # --- roots -----------------------------------------------------------------------------

    def _settle_roots(self, now: float) -> None:
        for root_id in list(self._quiet):
            root = self._roots[root_id]
            if root.open:
                del self._quiet[root_id]
                continue
            if root.quiet_since is None:
                root.quiet_since = now
            # Only success has continuations (a chain's next step, a chord's body): a failed or
            # revoked task stops its chain, so a root with one ends as soon as nothing runs.
            if root.stopped or now - root.quiet_since >= self._settle:
                del self._quiet[root_id]
                self._end(root, now)

    def _end(self, root: _Root, now: float) -> None:
        states = list(root.tasks.values())
        if any(task.state == FAILED for task in states):
            status = "failed"
        elif any(task.terminated for task in states):
            status = "killed"
        elif any(task.state == REVOKED for task in states):
            status = "cancelled"
        else:
            status = "completed"
        root.ended = True
        root.ended_at = now
        self._ended[root.root_id] = None
        # A failed root says why: the error of its first failed task that has one.
        error = next((task.error for task in states if task.error is not None), None)
        if status == "killed":
            self._tracker.request_control(root.root_id, "kill", attribution="user")
        self._tracker.set_run_status(root.root_id, status, executor_ended=True, error=error)

    def _retire(self, now: float) -> None:
        while self._ended:
            root_id = next(iter(self._ended))
            root = self._roots[root_id]
            if len(self._ended) <= self._max_ended and now - root.ended_at < self._keep_ended:
                break
            del self._ended[root_id]
            del self._roots[root_id]
            for task_id in root.tasks:
                del self._tasks[task_id]
            self._tracker.remove_run(root_id)


# What a moved task keeps of its record (_rehome): all but where it is and its name.
_CARRIED: Final = (
    "retries",
    "retried",
    "worker",
    "terminated",
    "expired",
    "final",
    "phase",
    "redelivery",
)


def _root_id(task_id: str, event: Mapping[str, Any]) -> str:
    """The root an event puts its task in: the one it names, else the task's own id."""
    root_id = event.get("root_id")
    return root_id if isinstance(root_id, str) and root_id else task_id


# Failures the bridge infers (no task-failed event carries them).
_REJECTED: Final = FailureDetail(message="rejected by its worker and not requeued")

_STAGE_STATUS: Final = {
    PENDING: "pending",
    RUNNING: "running",
    SUCCEEDED: "completed",
    FAILED: "failed",
    REVOKED: "skipped",
    LOST: "blocked",
    UNSERVED: "blocked",
}

_TASK_HANDLERS: Final = {
    "task-sent": CeleryBridge._on_sent,
    "task-received": CeleryBridge._on_received,
    "task-started": CeleryBridge._on_started,
    "task-succeeded": CeleryBridge._on_ended,
    "task-failed": CeleryBridge._on_ended,
    "task-retried": CeleryBridge._on_retried,
    "task-revoked": CeleryBridge._on_revoked,
    "task-rejected": CeleryBridge._on_rejected,
    "task-cancelled": CeleryBridge._on_cancelled,
}
