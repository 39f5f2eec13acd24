"""``watch_airflow``: poll an Airflow deployment's REST API and report what changed to a tracker.

Each poll reads the health check (is a scheduler alive), the DAGs (paused or not; the tasks of
a DAG the bridge has not seen), then only the DAG runs and task instances updated since the
previous poll (``updated_at_gte``, on Airflow's own clock less an overlap, so a change is never
missed between two polls and re-reading one is harmless). The number of requests per poll does
not grow with the number of running DAG runs; a DAG run seen for the first time costs one more
(its task instances). Until the first poll succeeds, and whenever a poll fails or finds no
scheduler alive, the source is ``recovering``: unknown, never idle.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import trio

from ..tracker import SchedulerFacts
from ._api import AirflowApi, AirflowUnreachable
from ._bridge import AirflowBridge, DagShape

__all__ = ["DEFAULT_INTERVAL", "watch_airflow"]

logger = logging.getLogger("workflow_hub.airflow")

DEFAULT_INTERVAL = 2.0
"""Seconds between two polls of the API."""

# Re-read what changed this long before the previous poll began: Airflow's processes stamp
# ``updated_at`` with their own clocks, and a transaction may commit after the poll read.
_OVERLAP = timedelta(seconds=5)


async def watch_airflow(
    tracker: SchedulerFacts,
    api: AirflowApi,
    *,
    interval: float = DEFAULT_INTERVAL,
    keep_ended: float = 300.0,
    labels: Mapping[str, str] | None = None,
    label_conf: Iterable[str] = (),
    tag_labels: bool = True,
    heartbeat_interval_minutes: float | None = None,
    task_status: trio.TaskStatus[AirflowBridge] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Report ``api``'s DAG runs to ``tracker`` until cancelled: ``bridge = await
    nursery.start(watch_airflow, tracker, api)`` returns once the first poll was tried (the
    source is ``ready`` if it succeeded, ``recovering`` if not). ``interval`` is the time between
    polls; ``keep_ended`` how long an ended run stays on show; ``labels`` go on every root,
    with the DAG's tags as ``tags`` (unless ``tag_labels`` is false) and the run's ``conf``
    values of the keys in ``label_conf``."""
    if interval <= 0:
        raise ValueError(f"interval: must be positive, not {interval!r}")
    bridge = AirflowBridge(
        tracker,
        keep_ended=keep_ended,
        labels=labels,
        label_conf=label_conf,
        tag_labels=tag_labels,
        heartbeat_interval_minutes=heartbeat_interval_minutes,
    )
    poller = _Poller(api, bridge, tracker, keep_ended)
    bridge.unknown("not read yet", say=False)
    started = False
    try:
        while True:
            # Polls start every ``interval`` (a poll's own time is not added to the wait): a
            # change waits at most one interval for the poll that reads it.
            began = trio.current_time()
            await poller.poll()
            if not started:
                task_status.started(bridge)
                started = True
            await trio.sleep_until(began + interval)
    finally:
        bridge.close()


class _Poller:
    def __init__(
        self, api: AirflowApi, bridge: AirflowBridge, tracker: SchedulerFacts, keep: float
    ) -> None:
        self._api = api
        self._bridge = bridge
        self._tracker = tracker
        self._keep = keep
        self._since: datetime | None = None  # None: read everything still worth showing

    async def poll(self) -> None:
        try:
            health = await self._api.health()
            began = self._api.server_time
            scheduler = (health.get("scheduler") or {}).get("status")
            dags = await self._api.dags()
            for dag in dags:
                if not self._bridge.knows_dag(str(dag["dag_id"])):
                    tasks = await self._api.tasks(str(dag["dag_id"]))
                    tags = [str(tag.get("name")) for tag in dag.get("tags") or ()]
                    self._bridge.dag(DagShape.from_tasks(str(dag["dag_id"]), tasks, tags))
            runs, instances = await self._changes(began)
            for dag_id in self._bridge.new_tasks(instances):
                # The DAG changed while runs of it are on show: its tasks again (new ones
                # become stages of the runs that have instances of them).
                tasks = await self._api.tasks(dag_id)
                shape = DagShape.from_tasks(dag_id, tasks, self._bridge.tags_of(dag_id))
                self._bridge.dag(shape)
            questions = await self._api.open_questions() if self._awaiting(instances) else None
            # Who changed it by hand (the audit log), read only in a poll where a run or task
            # instance ended or ran again: never on the first read, whose changes are old news.
            since = self._since
            asks = since is not None and self._bridge.asks_who(runs, instances)
            marks = await self._api.marks(after=since) if since is not None and asks else []
        except AirflowUnreachable as error:
            self._since = None  # read in full when it answers again
            self._bridge.unknown(f"Airflow unreachable: {error}")
            return
        now = trio.current_time()
        with self._tracker.batch():
            self._bridge.marks(marks)
            for dag in dags:
                self._bridge.paused(str(dag["dag_id"]), bool(dag.get("is_paused")))
            for run in runs:
                if self._bridge.knows_dag(str(run["dag_id"])):
                    self._bridge.run(run, now)
            for instance in instances:
                self._bridge.task_instance(instance)
            if questions is not None:
                self._bridge.questions(questions)
            self._bridge.tick(now)
        if began is not None:
            self._since = began - _OVERLAP
        if scheduler != "healthy":
            # Queued runs would wait for ever and running ones may be orphaned: not "working".
            self._bridge.unknown(f"no Airflow scheduler is alive (health: {scheduler})")
        else:
            self._bridge.known()

    async def _changes(
        self, began: datetime | None
    ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        api = self._api
        if self._since is None:
            recent = None if began is None else began - timedelta(seconds=self._keep)
            runs = await api.dag_runs(states=("queued", "running"))
            if recent is not None:
                runs += await api.dag_runs(updated_since=recent)
            instances: list[Mapping[str, Any]] = []
        else:
            runs = await api.dag_runs(updated_since=self._since)
            instances = await api.task_instances(updated_since=self._since)
        runs = list({(str(r["dag_id"]), str(r["dag_run_id"])): r for r in runs}.values())
        for run in runs:
            dag_id, run_id = str(run["dag_id"]), str(run["dag_run_id"])
            if self._since is None or not self._bridge.knows_run(dag_id, run_id):
                instances += await api.task_instances(dag_id=dag_id, dag_run_id=run_id)
        return runs, instances

    def _awaiting(self, instances: list[Mapping[str, Any]]) -> bool:
        return self._bridge.awaiting_input() or any(
            i.get("state") == "awaiting_input" for i in instances
        )
