"""What the Celery bridge learns besides events: inspections, the result backend, a restart.

Events from before the bridge listened are gone, so it recovers: ``recovering`` from the
bridge's ``begin()``, then what the workers' inspection reports (``active``, ``reserved``,
``scheduled``), then ``ready``; after a lost broker connection the in-flight tasks no worker
reports any more are lost and settled from the result backend; a lost worker that comes back is
resynchronised; a restarted bridge is seeded with its previous instance's roots and looks up
the names its events did not carry. This is the base of
:class:`~workflow_hub.celery.CeleryBridge` (one room per concept: the bridge maps events, this
recovers); both move the records of ``_model.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

from .._contract import ContractError, FailureDetail, RootActivity
from ..tracker import SchedulerFacts as Facts
from ._events import check_text
from ._model import ENDED, FAILED, LOST, PENDING, REVOKED, RUNNING, SUCCEEDED, Root, Task
from ._workers import Roster

__all__ = ["Inspection", "Recovery"]

Inspection = Mapping[str, Mapping[str, Iterable[Mapping[str, Any]]]]
"""What the workers hold, as Celery's remote control reports it: per worker hostname, per kind
(``"active"``, ``"reserved"``, ``"scheduled"``), the request dicts of ``app.control.inspect()``'s
method of that name (each with at least ``id`` and ``name``; ``scheduled`` wraps each in
``{"eta": …, "request": {…}}``). :meth:`CeleryBridge.recovered` and
:meth:`CeleryBridge.resynchronised` take one."""

# Failures the bridge infers (no task-failed event carries them).
GONE: Final = FailureDetail(message="lost: its worker came back without it")
FROM_RESULTS: Final = FailureDetail(message="failed while the broker was unreachable")

NAME_GRACE: Final = 0.5
"""Seconds an unnamed task waits for the event that names it before its name is looked up."""

# A restored stage's status, for the stages that had ended (the others were in flight).
_RESTORED: Final = {"completed": SUCCEEDED, "failed": FAILED, "skipped": REVOKED}

# Result backend states (celery.states) a lost task can be settled with.
RESULT_STATES: Final = {
    "SUCCESS": SUCCEEDED,
    "FAILURE": FAILED,
    "REVOKED": REVOKED,
    "STARTED": RUNNING,
    "RETRY": PENDING,
}


class Recovery:
    """Recovery, as a base class of the bridge: it reads the bridge's records and moves them
    with the bridge's own ``_task`` and ``_set`` (declared here, defined there)."""

    _tracker: Facts
    _tasks: dict[str, Task]
    _roots: dict[str, Root]
    _roster: Roster
    _hydration: AbstractContextManager[None] | None
    _ready: bool
    _reported: set[str]  # task ids in the last inspection
    _suspects: set[str]  # in flight when the connection went: unknown until told again
    _quiet: dict[str, None]  # roots waiting out their settle time
    _unnamed: dict[str, float]  # task ids first seen without a name, and when

    def _task(self, task_id: str, event: Mapping[str, Any], now: float) -> Task:
        raise NotImplementedError

    def _set(
        self,
        task: Task,
        state: str,
        *,
        retries: int | None = None,
        error: FailureDetail | None = None,
    ) -> None:
        raise NotImplementedError

    def _settle_roots(self, now: float) -> None:
        raise NotImplementedError

    def _check_served(self) -> None:
        raise NotImplementedError

    def _end(self, root: Root, now: float) -> None:
        raise NotImplementedError

    def _rehome(self, task: Task, event: Mapping[str, Any], now: float) -> Task:
        raise NotImplementedError

    # --- lifecycle -------------------------------------------------------------------------

    def recovered(self, inspection: Inspection, now: float) -> list[str]:
        """Add the in-flight tasks the workers reported (``active`` running, ``reserved`` and
        ``scheduled`` pending) that no event has told of yet, then publish ``ready``.

        After a lost broker connection (a second :meth:`begin`), an open task that no worker
        reports any more may have ended unseen: it is lost (needs attention) and its id is
        returned, for :meth:`settle_from_results` to settle from the result backend.
        """
        with self._tracker.batch():
            self._apply_inspection(inspection, now, resync=None)
            unreported = [
                task
                for task_id in self._suspects - self._reported
                if (task := self._tasks.get(task_id)) is not None
                and task.state in (PENDING, RUNNING, LOST)
            ]
            self._suspects = set()
            for task in unreported:
                if task.state != LOST:
                    self._set(task, LOST)
        hydration, self._hydration = self._hydration, None
        if hydration is not None:
            hydration.__exit__(None, None, None)
        self._ready = True
        with self._tracker.batch():
            self._check_served()
        return [task.task_id for task in unreported]

    def restore(self, roots: Iterable[RootActivity], now: float) -> None:
        """Seed the bridge with what a previous instance last showed (a restart: see
        docs/celery.md, "Restarts"), between :meth:`begin` and :meth:`recovered`: each root's
        tasks, names, parents and ended stages. Restored history never counts as working on
        its own (SPEC §5): a task that was in flight is lost until a worker's inspection or
        event tells of it again (then it is in flight in its old root), and settled from the
        result backend when it ended meanwhile. Nothing here publishes a lifecycle event: it
        all happens while the source is ``recovering``. Roots the bridge already knows are kept
        as they are."""
        with self._tracker.batch():
            for activity in roots:
                self._restore_root(activity, now)

    def _restore_root(self, activity: RootActivity, now: float) -> None:
        root_id = activity.root_run_id
        nodes = [n for n in (activity.graph.nodes if activity.graph else ()) if n.kind == "stage"]
        if root_id in self._roots or not nodes or any(n.node_id in self._tasks for n in nodes):
            return
        self._roots[root_id] = Root(root_id, labels=activity.labels)
        self._tracker.add_run(root_id, status="running", labels=activity.labels)
        prefix = f"{root_id}:"
        for node in nodes:
            parents = [p.removeprefix(prefix) for p in node.parent_ids if p.startswith(prefix)]
            fields = {"name": node.name, "root_id": root_id, "parent_id": next(iter(parents), None)}
            task = self._task(node.node_id, fields, now)
            state = _RESTORED.get(node.status)
            if state is None:  # in flight then: unknown now (the inspection may revive it)
                task.restored = True
                self._suspects.add(task.task_id)
                self._set(task, LOST)
            else:
                task.final, task.phase = True, 2
                self._set(task, state, error=node.error)
        root = self._roots[root_id]
        if root.open == 0 and activity.state != "working":  # it had ended: history, ended
            self._quiet.pop(root_id, None)
            self._end(root, now)

    def take_name_requests(self, now: float) -> list[str]:
        """Tasks still unnamed ``NAME_GRACE`` seconds after they were first seen (an event that
        names them usually follows within milliseconds): the runner looks each up once, where
        Celery keeps names (the workers' ``query_task``, the result backend), and hands what
        it found to :meth:`named`."""
        due = [task_id for task_id, seen in self._unnamed.items() if now - seen >= NAME_GRACE]
        for task_id in due:
            del self._unnamed[task_id]
        return due

    def named(self, found: Mapping[str, Mapping[str, Any]], now: float) -> None:
        """Names found for unnamed tasks (``{task_id: {"name": …, "parent_id": …}}``): each
        takes its name, and joins its parent's root under it when the parent is known, as if
        the event that names it had come (docs/celery.md, "Restarts")."""
        with self._tracker.batch():
            for task_id, fields in found.items():
                task = self._tasks.get(task_id)
                name = fields.get("name")
                if task is None or not task.provisional or not isinstance(name, str) or not name:
                    continue
                try:
                    check_text(name, "name")  # before the guessed root is taken down
                except ContractError:
                    continue
                parent = self._tasks.get(str(fields.get("parent_id")))
                event = {
                    "name": name,
                    "root_id": task_id if parent is None else parent.root_id,
                    "parent_id": None if parent is None else parent.task_id,
                }
                self._rehome(task, event, now)
            self._settle_roots(now)

    def settle_from_results(self, states: Mapping[str, str], now: float) -> None:
        """Lost tasks whose result backend state is final (``SUCCESS``, ``FAILURE``,
        ``REVOKED``) or in flight (``STARTED``, ``RETRY``) take that state; others stay lost.
        A task known only from a restored state takes a final state only."""
        with self._tracker.batch():
            for task_id, state in states.items():
                task = self._tasks.get(task_id)
                if task is None or task.state != LOST or state not in RESULT_STATES:
                    continue
                new = RESULT_STATES[state]
                if task.restored and new not in ENDED:
                    continue  # only a worker's word makes restored history live (SPEC §5)
                task.final = new in ENDED
                task.phase = {RUNNING: 2, PENDING: 0}.get(new, task.phase)
                error = FROM_RESULTS if new == FAILED else None
                self._set(task, new, retries=task.retries + (state == "RETRY"), error=error)
            self._settle_roots(now)

    def resynchronised(self, hostname: str, inspection: Inspection, now: float) -> None:
        """A lost worker came back and reported what it holds: those tasks are in flight again,
        the ones it no longer holds are failed (their messages are gone, unless redelivered)."""
        with self._tracker.batch():
            self._apply_inspection(inspection, now, resync=hostname)
            self._check_served()

    # --- inspection ------------------------------------------------------------------------

    def _apply_inspection(self, inspection: Inspection, now: float, resync: str | None) -> None:
        held = self._reported = set()
        for hostname, lists in inspection.items():
            self._roster.heard(hostname, now)
            for key, state in (("active", RUNNING), ("reserved", PENDING), ("scheduled", PENDING)):
                for request in lists.get(key, ()):
                    # scheduled() wraps each request: {"eta": ..., "request": {...}}
                    body = request.get("request", request)
                    task_id = body.get("id")
                    if not isinstance(task_id, str):
                        continue
                    held.add(task_id)
                    known = task_id in self._tasks
                    task = self._task(task_id, body, now)
                    if not known or task.state == LOST:
                        task.worker = hostname
                        task.phase = 2 if state == RUNNING else 1
                        self._set(task, state)
        if resync is not None:
            for task in list(self._tasks.values()):
                if task.worker == resync and task.state == LOST and task.task_id not in held:
                    self._set(task, FAILED, error=GONE)
        self._settle_roots(now)
