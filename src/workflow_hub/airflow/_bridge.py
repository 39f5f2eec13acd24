"""The bridge core: Airflow's REST API records in, tracker facts out. No I/O, no clock of its own.

One root per DAG run (its id ``"{dag_id}/{dag_run_id}"``), one stage per task of the DAG (its id
the task id, its parents the task's upstream tasks, so the graph is the DAG's). A dynamically
mapped task is a stage that hosts a nested run (``"{root}/{task_id}"``) whose stages are its
mapped instances (``"{task_id}[{map_index}]"``): each instance is a stage of its own, and the
task as a whole completes, fails or waits as its instances do. docs/airflow.md has the mapping
table; this module is its executable form. Everything time-dependent takes ``now`` (seconds,
any monotonic clock), so tests drive it deterministically.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, suppress
from typing import Any, Final, final

import attrs

from .._contract import unknown_detail
from ..tracker import SchedulerFacts
from ._labels import RunLabels
from ._marks import AGAIN, ALL_TASKS, RUN, Mark, read_marks

__all__ = ["AirflowBridge", "DagShape", "root_id_of"]

logger = logging.getLogger("workflow_hub.airflow")

Record = Mapping[str, Any]
"""One JSON object of Airflow's REST API (``DAGRunResponse``, ``TaskInstanceResponse`` …)."""

# A task instance's state (Airflow's TaskInstanceState; None is "no status yet") as a stage
# status and whether it is being retried.
_STAGE: Final[dict[str | None, tuple[str, bool]]] = {
    None: ("pending", False),
    "scheduled": ("pending", False),
    "queued": ("pending", False),
    "running": ("running", False),
    "success": ("completed", False),
    "failed": ("failed", False),
    "up_for_retry": ("pending", True),
    "restarting": ("pending", True),
    # Waits that continue by themselves (a trigger fires, a sensor pokes again): pending with
    # their upstream done, which the contract calls runnable work (automatic continuation).
    "deferred": ("pending", False),
    "up_for_reschedule": ("pending", False),
    "awaiting_input": ("awaiting_input", False),
    "upstream_failed": ("skipped", False),
    "skipped": ("skipped", False),
    "removed": ("skipped", False),
}
# A queued DAG run is running for the contract: the scheduler will start it by itself (a
# continuation), unless no scheduler is alive, which the poller reports as unknown.
_RUN: Final[dict[str, str]] = {
    "queued": "running",
    "running": "running",
    "success": "completed",
    "failed": "failed",
}
_RUN_ENDED: Final = frozenset({"success", "failed"})
_STAGE_ENDED: Final = frozenset({"completed", "failed", "skipped"})
_RUN_STATUS_ENDED: Final = frozenset({"completed", "failed"})


def root_id_of(dag_id: str, dag_run_id: str) -> str:
    """The root's id of a DAG run: ``"{dag_id}/{dag_run_id}"`` (a run id is unique per DAG)."""
    return f"{dag_id}/{dag_run_id}"


@final
@attrs.frozen
class DagShape:
    """A DAG's tasks in an order where every task follows its upstream tasks."""

    dag_id: str
    order: tuple[str, ...]
    upstream: Mapping[str, tuple[str, ...]]
    mapped: frozenset[str]
    tags: tuple[str, ...] = ()

    @classmethod
    def from_tasks(cls, dag_id: str, tasks: Iterable[Record], tags: Iterable[str] = ()) -> DagShape:
        """From ``GET /api/v2/dags/{dag_id}/tasks``'s ``tasks`` (their ``downstream_task_ids``)."""
        listed = list(tasks)
        ids = [str(task["task_id"]) for task in listed]
        upstream: dict[str, list[str]] = {task_id: [] for task_id in ids}
        for task in listed:
            for child in task.get("downstream_task_ids") or ():
                if child in upstream:
                    upstream[child].append(str(task["task_id"]))
        order: list[str] = []
        placed: set[str] = set()
        remaining = list(ids)
        while remaining:  # Kahn's order; a DAG has no cycle, but never loop on bad input
            ready = [t for t in remaining if all(p in placed for p in upstream[t])]
            if not ready:
                ready = remaining[:1]
            for task_id in ready:
                order.append(task_id)
                placed.add(task_id)
                remaining.remove(task_id)
        return cls(
            dag_id=dag_id,
            order=tuple(order),
            upstream={t: tuple(p for p in upstream[t] if p in placed) for t in ids},
            mapped=frozenset(str(t["task_id"]) for t in listed if t.get("is_mapped")),
            tags=tuple(tags),
        )


@attrs.define(slots=True, eq=False)
class _Run:
    root_id: str
    dag_id: str
    state: str
    reported: str = ""
    ended_at: float | None = None
    # stage id -> (status, retrying) as last reported; mapped task -> instance -> (status, retrying)
    stages: dict[str, tuple[str, bool]] = attrs.field(factory=dict)
    instances: dict[str, dict[int, tuple[str, bool]]] = attrs.field(factory=dict)
    prompts: dict[str, str] = attrs.field(factory=dict)  # prompt id -> its run id


@final
class AirflowBridge:
    """Applies Airflow's DAG runs and task instances to a tracker (docs/airflow.md, "Mapping").

    ``keep_ended`` (seconds) is how long an ended DAG run stays on show before its root is
    removed. ``labels`` are put on every root (C3), with the DAG's tags as ``tags`` (unless
    ``tag_labels`` is false) and the run's ``conf`` values of the keys in ``label_conf``. Not
    thread-safe: one task calls it.
    """

    def __init__(
        self,
        tracker: SchedulerFacts,
        *,
        keep_ended: float = 300.0,
        labels: Mapping[str, str] | None = None,
        label_conf: Iterable[str] = (),
        tag_labels: bool = True,
        heartbeat_interval_minutes: float | None = None,
    ) -> None:
        self._tracker = tracker
        self._keep_ended = keep_ended
        # A bad label or conf key is refused here, before anything is read.
        self._labels = RunLabels(labels, conf_keys=label_conf, tags=tag_labels)
        self._heartbeat = heartbeat_interval_minutes
        self._dags: dict[str, DagShape] = {}
        self._paused: dict[str, bool] = {}
        self._runs: dict[str, _Run] = {}
        self._hydration: AbstractContextManager[None] | None = None
        self._unknown_said = False
        self._marked: dict[tuple[str, str], Mark] = {}  # this poll's, by (root, task or RUN)

    # --- what the source knows ----------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The bridge has read Airflow and is not in an outage (its source is ``ready``)."""
        return self._hydration is None

    def unknown(self, why: str, *, say: bool = True) -> None:
        """Airflow cannot be read, or nothing in it schedules (no scheduler alive): the source
        is ``recovering`` (unknown, never idle) until :meth:`known`. Said once in the log (not
        at all with ``say=False``: before the first read, being unknown is no news). Every view
        says ``why``, as the recovering snapshot's detail (C3), e.g. ``Airflow unreachable: …``."""
        if say and not self._unknown_said:
            logger.warning("Airflow's state is unknown: %s", why)
            self._unknown_said = True
        detail = unknown_detail(why) if say else None
        if self._hydration is None:
            self._hydration = self._tracker.hydrating(detail)
            self._hydration.__enter__()
        elif detail is not None:
            self._tracker.recovering_because(detail)

    def known(self) -> None:
        """Airflow was read in full again: publish ``ready`` with everything applied since."""
        if self._unknown_said:
            logger.warning("Airflow's state is known again")
            self._unknown_said = False
        hydration, self._hydration = self._hydration, None
        if hydration is not None:
            hydration.__exit__(None, None, None)

    def close(self) -> None:
        """The bridge stops: an outage in progress ends as ``unavailable`` (nothing is known
        any more), in the caller's thread, the hub's."""
        hydration, self._hydration = self._hydration, None
        if hydration is not None:
            with suppress(GeneratorExit):
                hydration.__exit__(GeneratorExit, GeneratorExit(), None)

    # --- DAGs -------------------------------------------------------------------------------

    def knows_dag(self, dag_id: str) -> bool:
        return dag_id in self._dags

    def knows_run(self, dag_id: str, dag_run_id: str) -> bool:
        return root_id_of(dag_id, dag_run_id) in self._runs

    def dag(self, shape: DagShape) -> None:
        """A DAG's tasks and tags, before its first run is applied; again when its tasks
        changed (:meth:`new_tasks`): the runs on show keep their stages, and a task that is
        new gets its stage in a run when Airflow reports its instance there."""
        self._dags[shape.dag_id] = shape

    def tags_of(self, dag_id: str) -> tuple[str, ...]:
        """The tags the bridge read with a DAG's tasks."""
        return self._dags[dag_id].tags

    def new_tasks(self, instances: Iterable[Record]) -> set[str]:
        """The DAGs with a task instance of a task the bridge does not know: the DAG changed
        since its tasks were read (the poller reads them again)."""
        changed: set[str] = set()
        for record in instances:
            shape = self._dags.get(str(record["dag_id"]))
            if shape is not None and str(record["task_id"]) not in shape.upstream:
                changed.add(shape.dag_id)
        return changed

    def paused(self, dag_id: str, paused: bool) -> None:
        """Whether a DAG is paused: its queued and running runs are paused while it is."""
        if self._paused.get(dag_id) == paused:
            return
        self._paused[dag_id] = paused
        for run in self._runs.values():
            if run.dag_id == dag_id:
                self._report_run(run)

    # --- marks ------------------------------------------------------------------------------

    def marks(self, logs: Iterable[Record]) -> None:
        """This poll's changes by hand from Airflow's audit log (:meth:`AirflowApi.marks`):
        "mark success", "mark failed", "mark skipped", a clear. A change the bridge sees in the
        same poll that a person's mark explains is reported with ``attribution="user"`` on its
        event; a task instance or DAG run marked failed also says who, as its failure's
        message. Replaces the previous poll's (a mark is applied with the change it caused)."""
        self._marked = read_marks(logs)

    def asks_who(self, runs: Iterable[Record], instances: Iterable[Record]) -> bool:
        """Whether a poll's changes may be a person's: a DAG run or task instance that ended,
        or one that had ended and runs again (a clear). The poller reads the audit log then."""
        for record in runs:
            state = record.get("state")
            if state in _RUN_ENDED:
                return True
            run = self._runs.get(root_id_of(str(record["dag_id"]), str(record["dag_run_id"])))
            if run is not None and run.state in _RUN_ENDED:
                return True
        for record in instances:
            status, _ = _STAGE.get(record.get("state"), ("pending", False))
            if status in _STAGE_ENDED:
                return True
            run = self._runs.get(root_id_of(str(record["dag_id"]), str(record["dag_run_id"])))
            if run is not None:
                known = run.stages.get(str(record["task_id"]))
                if known is not None and known[0] in _STAGE_ENDED:
                    return True
        return False

    def _mark(self, root_id: str, task_id: str) -> Mark | None:
        mark = self._marked.get((root_id, task_id))
        if mark is None and task_id != RUN:
            mark = self._marked.get((root_id, ALL_TASKS))
        return mark

    def _by(self, root_id: str, task_id: str, previous: str | None, new: str) -> str | None:
        """``"user"`` when a person's mark explains the change from ``previous`` to ``new``
        (of the task, or of the run: ``task_id`` RUN), else None (the scheduler's own)."""
        mark = self._mark(root_id, task_id)
        if mark is None:
            return None
        ended = _RUN_STATUS_ENDED if task_id == RUN else _STAGE_ENDED
        if mark.result == AGAIN:
            explained = previous in ended and new not in ended
        else:
            explained = new == mark.result
        return "user" if explained else None

    def _failure(self, root_id: str, task_id: str, otherwise: str) -> str:
        mark = self._mark(root_id, task_id)
        if mark is None or mark.result != "failed":
            return otherwise
        return f"marked failed by {mark.owner}"

    # --- runs ---------------------------------------------------------------------------

    def run(self, record: Record, now: float) -> None:
        """A DAG run (``DAGRunResponse``), new or changed. Its DAG must be known (:meth:`dag`)."""
        dag_id, state = str(record["dag_id"]), str(record["state"])
        root_id = root_id_of(dag_id, str(record["dag_run_id"]))
        run = self._runs.get(root_id)
        if run is None:
            shape = self._dags[dag_id]
            run = _Run(root_id=root_id, dag_id=dag_id, state=state)
            self._runs[root_id] = run
            status = self._run_status(run)
            self._tracker.add_run(
                root_id,
                status=status,
                executor_ended=state in _RUN_ENDED,
                heartbeat_interval_minutes=self._heartbeat,
                labels=self._labels.of(shape.tags, record.get("conf")) or None,
            )
            run.reported = status
            self._tracker.take_ownership(root_id)
            for task_id in shape.order:
                self._tracker.add_stage(
                    root_id, task_id, task_id, parent_ids=shape.upstream[task_id]
                )
                run.stages[task_id] = ("pending", False)
        run.state = state
        if state in _RUN_ENDED and run.ended_at is None:
            run.ended_at = now
        elif state not in _RUN_ENDED:
            run.ended_at = None
        self._report_run(run)

    def _run_status(self, run: _Run) -> str:
        status = _RUN.get(run.state, "pending")
        if status in ("pending", "running") and self._paused.get(run.dag_id, False):
            return "paused"
        return status

    def _report_run(self, run: _Run) -> None:
        status = self._run_status(run)
        if status == run.reported:
            return
        previous, run.reported = run.reported, status
        ended = run.state in _RUN_ENDED
        error = (
            self._failure(run.root_id, RUN, "the DAG run failed") if status == "failed" else None
        )
        self._tracker.set_run_status(
            run.root_id,
            status,
            executor_ended=ended,
            error=error,
            attribution=self._by(run.root_id, RUN, previous, status),
        )

    # --- task instances -----------------------------------------------------------------

    def task_instance(self, record: Record) -> None:
        """A task instance (``TaskInstanceResponse``), new or changed. One of a run the bridge
        does not know is ignored (the run's own record comes first)."""
        root_id = root_id_of(str(record["dag_id"]), str(record["dag_run_id"]))
        run = self._runs.get(root_id)
        task_id = str(record["task_id"])
        if run is None:
            return
        if task_id not in run.stages and not self._added(run, task_id):
            return
        raw = record.get("state")
        status, retrying = _STAGE.get(None if raw is None else str(raw), ("pending", False))
        map_index = int(record.get("map_index", -1))
        error = None
        if status == "failed":
            error = self._failure(
                root_id, task_id, f"failed on try {record.get('try_number', '?')}"
            )
        if map_index < 0:
            if task_id in run.instances:  # a mapped task's placeholder, once expanded
                return
            self._stage(run, run.root_id, task_id, status, retrying, error)
            return
        instances = run.instances.get(task_id)
        child = f"{run.root_id}/{task_id}"
        if instances is None:
            instances = run.instances[task_id] = {}
            self._tracker.add_run(child, parent_run_id=run.root_id, host_stage_id=task_id)
        if map_index not in instances:
            self._tracker.add_stage(child, f"{task_id}[{map_index}]", f"{task_id}[{map_index}]")
            instances[map_index] = ("pending", False)
        if instances[map_index] != (status, retrying):
            previous = instances[map_index][0]
            instances[map_index] = (status, retrying)
            self._tracker.set_stage_status(
                child,
                f"{task_id}[{map_index}]",
                status,
                retrying=retrying,
                error=error,
                attribution=self._by(root_id, task_id, previous, status),
            )
        self._mapped(run, task_id, instances)

    def _added(self, run: _Run, task_id: str) -> bool:
        """A task the DAG gained after the run was first seen (its tasks were read again): its
        stage joins the run, under those of its upstream tasks the run has. False for a task
        the DAG does not have."""
        shape = self._dags[run.dag_id]
        upstream = shape.upstream.get(task_id)
        if upstream is None:
            return False
        parents = [parent for parent in upstream if parent in run.stages]
        self._tracker.add_stage(run.root_id, task_id, task_id, parent_ids=parents)
        run.stages[task_id] = ("pending", False)
        return True

    def _mapped(self, run: _Run, task_id: str, instances: Mapping[int, tuple[str, bool]]) -> None:
        """The mapped task as a whole follows its instances: running while one is not ended,
        then failed if one failed, skipped if all were, completed otherwise."""
        statuses = [status for status, _ in instances.values()]
        child = f"{run.root_id}/{task_id}"
        if not all(s in _STAGE_ENDED for s in statuses):
            whole, child_status = "running", "running"
        elif "failed" in statuses:
            whole, child_status = "failed", "failed"
        elif all(s == "skipped" for s in statuses):
            whole, child_status = "skipped", "skipped"
        else:
            whole, child_status = "completed", "completed"
        if run.stages[task_id][0] != whole:
            self._tracker.set_run_status(
                child, child_status, executor_ended=child_status in ("failed", "completed")
            )
        self._stage(run, run.root_id, task_id, whole, False, None)

    def _stage(
        self,
        run: _Run,
        run_id: str,
        stage_id: str,
        status: str,
        retrying: bool,
        error: str | None,
    ) -> None:
        known = run.stages.get(stage_id)
        if known == (status, retrying):
            return
        run.stages[stage_id] = (status, retrying)
        by = (
            None
            if run_id != run.root_id
            else self._by(run.root_id, stage_id, known and known[0], status)
        )
        self._tracker.set_stage_status(
            run_id, stage_id, status, retrying=retrying, error=error, attribution=by
        )

    # --- human-in-the-loop --------------------------------------------------------------

    def awaiting_input(self) -> bool:
        """Some task instance waits for a human: the poller reads its question."""
        return any(
            status == "awaiting_input"
            for run in self._runs.values()
            for status, _ in [*run.stages.values(), *_flat(run.instances)]
        )

    def questions(self, details: Iterable[Record]) -> None:
        """The open human-in-the-loop requests (Airflow's ``HITLDetail`` records without a
        response): each is a prompt on its task's stage; a prompt no longer listed was answered."""
        listed: set[tuple[str, str]] = set()
        for detail in details:
            ti = detail.get("task_instance") or {}
            root_id = root_id_of(str(ti.get("dag_id")), str(ti.get("dag_run_id")))
            run = self._runs.get(root_id)
            task_id = str(ti.get("task_id"))
            if run is None or task_id not in run.stages:
                continue
            map_index = int(ti.get("map_index", -1))
            if map_index < 0:
                run_id, stage_id = root_id, task_id
            else:
                run_id, stage_id = f"{root_id}/{task_id}", f"{task_id}[{map_index}]"
            prompt_id = f"{stage_id}#{ti.get('try_number', 1)}"
            listed.add((root_id, prompt_id))
            if prompt_id in run.prompts:
                continue
            options = [str(option) for option in detail.get("options") or ()]
            subject = str(detail.get("subject") or task_id)
            body = detail.get("body")
            message = f"{subject}\n{body}" if body else subject
            self._tracker.open_prompt(
                run_id,
                prompt_id,
                "select" if options else "confirm",
                message,
                stage_id=stage_id,
                choices=options or None,
            )
            run.prompts[prompt_id] = run_id
        for run in self._runs.values():
            for prompt_id, run_id in list(run.prompts.items()):
                if (run.root_id, prompt_id) not in listed:
                    del run.prompts[prompt_id]
                    self._tracker.answer_prompt(run_id, prompt_id)

    # --- retirement ---------------------------------------------------------------------

    def tick(self, now: float) -> list[str]:
        """Remove the roots of runs that ended ``keep_ended`` seconds ago; return their ids."""
        gone = [
            root_id
            for root_id, run in self._runs.items()
            if run.ended_at is not None and now - run.ended_at >= self._keep_ended
        ]
        for root_id in gone:
            del self._runs[root_id]
            self._tracker.remove_run(root_id)
        return gone

    def roots(self) -> Sequence[str]:
        """The ids of the roots on show."""
        return tuple(self._runs)


def _flat(instances: Mapping[str, Mapping[int, tuple[str, bool]]]) -> list[tuple[str, bool]]:
    return [value for by_index in instances.values() for value in by_index.values()]
