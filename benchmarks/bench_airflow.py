"""The Airflow bridge (issue 42): its CPU per 1 000 task-instance transitions, without an Airflow.

What one poll of ``/api/v2`` hands the bridge is a JSON body of task instances that changed
(``updated_at_gte``). The benchmark builds those bodies for DAG runs of a ten-task DAG (a start,
eight tasks side by side, a join) going through ``scheduled``, ``queued``, ``running`` and
``success`` (four transitions a task instance, every one a state change the bridge reports):
each record has the fields of Airflow 3.3's ``TaskInstanceResponse`` with values like a
LocalExecutor run's, so decoding costs what it costs on the wire. The runs are added first
(not timed); each timed poll decodes its body and applies every record inside one
``tracker.batch()``, into a :class:`RunTracker` with graphs on a hub, as ``watch_airflow`` does.

References, measured in the same run: decoding the same bodies alone (``json.loads``: what any
client of the API pays), and the same bodies decoded with the tracker given the stage statuses
that changed directly (the facts without the bridge's mapping: ``scheduled`` and ``queued`` are
both ``pending``, which a stage is when declared, so only ``running`` and ``success`` are facts).
The difference between the bridge and that reference is the mapping's own cost. The issue sets no goal for this figure; the rows say what a
transition costs. Requests per poll and lag need a live API and are measured against a real
Airflow by tests/airflow (docs/airflow.md), not here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
import trio

from _harness import BenchmarkError, Goal, HubFactory, Row, Scale, best_of, run_script, run_trio
from workflow_hub import StageNode, WorkflowActivityHub
from workflow_hub.airflow import AirflowApi, AirflowBridge, DagShape, root_id_of
from workflow_hub.airflow._watch import _Poller
from workflow_hub.tracker import RunTracker

DAG_ID = "etl_nightly"
_MIDDLE = [f"transform_{i}" for i in range(8)]
TASKS: list[dict[str, Any]] = [
    {"task_id": "extract", "downstream_task_ids": _MIDDLE},
    *({"task_id": task_id, "downstream_task_ids": ["load"]} for task_id in _MIDDLE),
    {"task_id": "load", "downstream_task_ids": []},
]
STATES = ("scheduled", "queued", "running", "success")
_STATUS = {
    "scheduled": "pending",
    "queued": "pending",
    "running": "running",
    "success": "completed",
}


def _instance(run_id: str, task_id: str, state: str, number: int) -> dict[str, Any]:
    """A ``TaskInstanceResponse`` as Airflow 3.3 returns it (every field)."""
    at = "2026-12-02T10:00:00.123456Z"
    ended = state == "success"
    return {
        "id": f"0193a1b2-{number:04x}-7c3d-9e8f-{number:012x}",
        "task_id": task_id,
        "dag_id": DAG_ID,
        "dag_run_id": run_id,
        "map_index": -1,
        "logical_date": None,
        "run_after": at,
        "start_date": at if state in ("running", "success") else None,
        "end_date": at if ended else None,
        "duration": 1.234 if ended else None,
        "state": state,
        "try_number": 1,
        "max_tries": 0,
        "task_display_name": task_id,
        "dag_display_name": DAG_ID,
        "hostname": "worker-1.example.internal" if state != "scheduled" else "",
        "unixname": "airflow",
        "pool": "default_pool",
        "pool_slots": 1,
        "queue": "default",
        "priority_weight": 1,
        "operator": "_PythonDecoratedOperator",
        "operator_name": "@task",
        "queued_when": at if state != "scheduled" else None,
        "scheduled_when": at,
        "pid": 4242 if state == "running" else None,
        "executor": None,
        "executor_config": "{}",
        "note": None,
        "rendered_map_index": None,
        "rendered_fields": {"op_args": "[]", "op_kwargs": "{}", "templates_dict": None},
        "trigger": None,
        "triggerer_job": None,
        "dag_version": {
            "id": "0193a1b2-0000-7c3d-9e8f-000000000001",
            "version_number": 1,
            "dag_id": DAG_ID,
            "bundle_name": "dags-folder",
            "bundle_version": None,
            "created_at": at,
            "dag_display_name": DAG_ID,
            "bundle_url": None,
        },
    }


def _run_ids(transitions: int) -> list[str]:
    runs = max(1, transitions // (len(TASKS) * len(STATES)))
    return [f"scheduled__2026-12-02T{n // 60:02d}:{n % 60:02d}:00+00:00" for n in range(runs)]


def _bodies(run_ids: list[str]) -> list[bytes]:
    """One poll's body per state: every task instance of every run moved to that state."""
    bodies = []
    for state in STATES:
        items = [
            _instance(run_id, task["task_id"], state, n * len(TASKS) + t)
            for n, run_id in enumerate(run_ids)
            for t, task in enumerate(TASKS)
        ]
        bodies.append(json.dumps({"task_instances": items, "total_entries": len(items)}).encode())
    return bodies


async def _run(hub_factory: HubFactory, variant: str, bodies: list[bytes], runs: list[str]) -> int:
    async with hub_factory() as hub:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="airflow", include_graph=True
        )
        bridge = AirflowBridge(tracker)
        bridge.dag(DagShape.from_tasks(DAG_ID, TASKS, tags=["nightly"]))
        bridge.paused(DAG_ID, False)
        with tracker.hydrating():
            pass
        with tracker.batch():
            for run_id in runs:
                bridge.run({"dag_id": DAG_ID, "dag_run_id": run_id, "state": "running"}, 0.0)
        start = time.process_time_ns()
        for body in bodies:
            records = json.loads(body)["task_instances"]
            if variant == "bridge":
                with tracker.batch():
                    for record in records:
                        bridge.task_instance(record)
            elif variant == "tracker":
                with tracker.batch():
                    for record in records:
                        status = _STATUS[record["state"]]
                        if status != "pending":  # a stage is declared pending: no change
                            tracker.set_stage_status(
                                root_id_of(DAG_ID, record["dag_run_id"]), record["task_id"], status
                            )
        elapsed = time.process_time_ns() - start
        if variant != "decode":
            _check(hub, runs)
    return elapsed


def _check(hub: WorkflowActivityHub, runs: list[str]) -> None:
    """No figure unless every root ended with every stage completed."""
    roots = {root.root_run_id: root for root in hub.snapshot_frame().roots or ()}
    for run_id in runs:
        root = roots[root_id_of(DAG_ID, run_id)]
        assert root.graph is not None
        statuses = {n.status for n in root.graph.nodes if isinstance(n, StageNode)}
        if statuses != {"completed"}:
            raise BenchmarkError(f"{root.root_run_id}: stages {statuses}, not all completed")


RUNNING = (10, 500)
CHANGING = 20
"""Task instances that change between two polls, whatever the number of running runs."""
POLLS = 5


class _Deployment:
    """An Airflow's answers from memory: ``runs`` running DAG runs of one DAG; each poll sees
    ``CHANGING`` task instances move on. Counts the requests it answers."""

    def __init__(self, runs: int) -> None:
        self.run_ids = [f"manual__{n}" for n in range(runs)]
        self.poll = 0
        self.requests = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        path, params = request.url.path, request.url.params
        headers = {"date": "Wed, 02 Dec 2026 10:00:00 GMT"}
        body: Any
        if path == "/api/v2/monitor/health":
            body = {"scheduler": {"status": "healthy"}}
        elif path == "/api/v2/dags":
            dag = {"dag_id": DAG_ID, "is_paused": False, "tags": [{"name": "nightly"}]}
            body = {"dags": [dag], "total_entries": 1}
        elif path == f"/api/v2/dags/{DAG_ID}/tasks":
            body = {"tasks": TASKS}
        elif path == "/api/v2/dags/~/dagRuns":
            listed = self.run_ids if "state" in params else []  # running: none changed
            body = _page("dag_runs", [_dag_run(r) for r in listed], params)
        elif path.endswith("/taskInstances"):
            run_id = path.split("/")[-2]
            if run_id == "~":  # what changed since the last poll
                n = self.poll * CHANGING
                items = [
                    _instance(self.run_ids[(n + i) % len(self.run_ids)], "extract", "running", i)
                    for i in range(CHANGING)
                ]
            else:
                items = [_instance(run_id, t["task_id"], "scheduled", 0) for t in TASKS]
            body = _page("task_instances", items, params)
        else:
            return httpx.Response(404, headers=headers)
        return httpx.Response(200, json=body, headers=headers)


def _dag_run(run_id: str) -> dict[str, Any]:
    return {"dag_id": DAG_ID, "dag_run_id": run_id, "state": "running", "conf": {}}


def _page(key: str, items: list[Any], params: httpx.QueryParams) -> dict[str, Any]:
    offset, limit = int(params.get("offset", 0)), int(params.get("limit", 100))
    return {key: items[offset : offset + limit], "total_entries": len(items)}


async def _requests_per_poll(runs: int) -> float:
    deployment = _Deployment(runs)
    async with WorkflowActivityHub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="airflow")
        bridge = AirflowBridge(tracker)
        transport = httpx.MockTransport(deployment.handle)
        async with AirflowApi("http://airflow", token="t", transport=transport) as api:
            poller = _Poller(api, bridge, tracker, 300.0)
            bridge.unknown("not read yet", say=False)  # as watch_airflow starts
            await poller.poll()  # the first full read: one more request per run, once
            if len(bridge.roots()) != runs or not bridge.ready:
                raise BenchmarkError(f"{len(bridge.roots())} roots after the first poll")
            before = deployment.requests
            for poll in range(1, POLLS + 1):
                deployment.poll = poll
                await poller.poll()
                await trio.lowlevel.checkpoint()
        return (deployment.requests - before) / POLLS


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    runs = _run_ids(scale.hook_events)
    bodies = _bodies(runs)
    transitions = len(runs) * len(TASKS) * len(STATES)
    candidates: dict[str, Callable[[], float]] = {
        variant: partial(run_trio, _run, hub_factory, variant, bodies, runs)
        for variant in ("decode", "tracker", "bridge")
    }
    best = best_of(scale, candidates)
    per = 1_000 / transitions
    bridge = best["bridge"] * per / 1e6
    case = f"{len(runs)} runs x {len(TASKS)} tasks x {len(STATES)} states"
    rows = [
        Row(
            benchmark="airflow",
            case=f"bridge vs JSON decoding, {case}",
            variant=label,
            value=bridge,
            unit="ms CPU/1k transitions",
            reference="json.loads of the same poll bodies",
            reference_value=best["decode"] * per / 1e6,
        ),
        Row(
            benchmark="airflow",
            case=f"bridge vs tracker facts, {case}",
            variant=label,
            value=bridge,
            unit="ms CPU/1k transitions",
            reference="decode + the changed statuses as facts",
            reference_value=best["tracker"] * per / 1e6,
        ),
    ]
    if label != "hub":  # the requests do not depend on the hub's variant
        return rows
    few, many = (run_trio(_requests_per_poll, runs) for runs in RUNNING)
    return [
        *rows,
        Row(
            benchmark="airflow",
            case=f"requests per poll, {RUNNING[1]} running runs, {CHANGING} changes a poll",
            variant=label,
            value=many,
            unit="requests",
            reference=f"{RUNNING[0]} running runs",
            reference_value=few,
            goal=Goal(op="<=", threshold=1.0),
        ),
    ]


if __name__ == "__main__":
    run_script(run)
