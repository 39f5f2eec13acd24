"""The Airflow bridge's lag against a live Airflow (issue 42): from a task instance's change in
Airflow to the change of its root in the hub, p50 and p99, against the polling interval.

The benchmark starts a real Airflow (tests/airflow's deployment: ``.venv-airflow``, SQLite, the
LocalExecutor, its DAGs folder pointed at ``benchmarks/airflow_dags``), triggers the ``lag``
DAG's runs (a chain of tasks of 3 s each, all runs at once) and follows them with
``watch_airflow`` at the default interval (2 s) into a hub whose observer stamps every frame
with the wall clock. Once every run ended, Airflow's own time of each task instance's success
(``end_date``) is read from the API; the lag is the first frame that showed the stage
``completed``, less that time (why not the start: see ``_SEEN``). The
reference is the interval: polls start every interval, so a change waits for the next poll
(at most one interval) and then for that poll's requests.

Run alone: ``.venv/bin/python benchmarks/bench_airflow_lag.py [--quick | --smoke]``; it needs
``make airflow-venv``. Airflow's start (its database migration, four processes) takes a minute
or two on the two-core machine and is not measured.
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import trio

from _harness import BenchmarkError, Goal, HubFactory, Row, Scale, run_script, run_trio
from workflow_hub import (
    ChangedFrame,
    RootActivity,
    SnapshotFrame,
    StageNode,
    WorkflowActivityHub,
    open_hub,
)
from workflow_hub.airflow import AirflowApi, root_id_of, watch_airflow
from workflow_hub.airflow._watch import DEFAULT_INTERVAL
from workflow_hub.tracker import RunTracker

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.airflow.support: the tests' Airflow deployment
from tests.airflow.support import PASSWORD, USER, Airflow  # noqa: E402

DAGS = Path(__file__).resolve().parent / "airflow_dags"
RUNS: dict[str, int] = {"full": 4, "quick": 2, "smoke": 1}
# The change measured: a task instance's success, against its ``end_date``, which the worker
# stamps as it reports the end. Not its start: ``start_date`` is stamped when the worker's
# process starts, before its start-up (imports, the DAG parsed again) reports ``running``:
# seen 6 s early for a run's first task on the two-core machine, a lag that is not the hub's.
_SEEN = {"completed": "end_date"}


class _Seen:
    """When each (root, stage) was first shown in each status, by the wall clock."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str, str], float] = {}
        self.roots: dict[str, RootActivity] = {}
        self.wanted: list[str] = []
        self.ended = trio.Event()

    def wait_for(self, roots: list[str]) -> None:
        """Set :attr:`ended` once every root in ``roots`` is shown idle (its run ended)."""
        self.wanted = roots
        self._check()

    def _check(self) -> None:
        if self.wanted and all(
            (root := self.roots.get(root_id)) is not None and root.state == "idle"
            for root_id in self.wanted
        ):
            self.ended.set()

    def frame(self, frame: object) -> None:
        now = time.time()
        if isinstance(frame, SnapshotFrame):
            roots = list(frame.roots or ())
        elif isinstance(frame, ChangedFrame):
            roots = [frame.root]
        else:
            return
        for root in roots:
            self.roots[root.root_run_id] = root
            for node in root.graph.nodes if root.graph is not None else ():
                if isinstance(node, StageNode):
                    self.first.setdefault((root.root_run_id, node.node_id, node.status), now)
        self._check()


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def _measure(airflow: Airflow, runs: int) -> list[float]:
    seen = _Seen()
    async with open_hub() as hub:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="airflow", include_graph=True
        )
        hub.observe(seen.frame)
        async with (
            AirflowApi(airflow.url, username=USER, password=PASSWORD) as api,
            trio.open_nursery() as nursery,
        ):
            await nursery.start(
                lambda task_status: watch_airflow(tracker, api, task_status=task_status)
            )
            roots = await trio.to_thread.run_sync(_trigger, airflow, runs)
            seen.wait_for(roots)
            with trio.fail_after(600):
                await seen.ended.wait()
            nursery.cancel_scope.cancel()
    instances = await trio.to_thread.run_sync(_instances, airflow, roots)
    lags: list[float] = []
    for record in instances:
        root_id = root_id_of(str(record["dag_id"]), str(record["dag_run_id"]))
        for status, field in _SEEN.items():
            shown = seen.first.get((root_id, str(record["task_id"]), status))
            if shown is None or not record.get(field):
                raise BenchmarkError(f"{root_id} {record['task_id']}: never shown {status}")
            lags.append(shown - _epoch(str(record[field])))
    return lags


def _trigger(airflow: Airflow, runs: int) -> list[str]:
    roots = []
    with airflow.client() as client:
        for _ in range(runs):
            response = client.post("/api/v2/dags/lag/dagRuns", json={"logical_date": None})
            response.raise_for_status()
            roots.append(root_id_of("lag", response.json()["dag_run_id"]))
    return roots


def _instances(airflow: Airflow, roots: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    with airflow.client() as client:
        for root in roots:
            dag_id, run_id = root.split("/", 1)
            response = client.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
            response.raise_for_status()
            found += response.json()["task_instances"]
    return found


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # one Airflow, one measurement: the hub's variant is not what is measured
    airflow = Airflow()
    airflow.env["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS)
    try:
        airflow.start()
        airflow.wait_dags({"lag"})
        lags = run_trio(_measure, airflow, RUNS.get(scale.name, RUNS["full"]))
    finally:
        airflow.stop()
    case = f"a task's success to its root's change, {len(lags)} tasks, Airflow 3 on loopback"
    return [
        Row(
            benchmark="airflow_lag",
            case=f"{case}, p50",
            variant=label,
            value=statistics.median(lags),
            unit="s",
            reference="polling interval",
            reference_value=DEFAULT_INTERVAL,
        ),
        Row(
            benchmark="airflow_lag",
            case=f"{case}, p99",
            variant=label,
            value=_percentile(lags, 0.99),
            unit="s",
            reference="polling interval",
            reference_value=DEFAULT_INTERVAL,
            goal=Goal(op="<=", threshold=1.5),
            note="a change waits for the next poll, then for its requests",
        ),
    ]


if __name__ == "__main__":
    run_script(run)
