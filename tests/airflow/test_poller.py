"""The poller's requests, against an API answered from memory (what Airflow answers is not the
point here: which requests the poller makes for what it finds is; tests/airflow/test_dag_runs.py
has the real Airflow)."""

from __future__ import annotations

from typing import Any

import httpx

from workflow_hub import StageNode, open_hub
from workflow_hub.airflow import AirflowApi, AirflowBridge
from workflow_hub.airflow._watch import _Poller
from workflow_hub.tracker import RunTracker

DATE = {"date": "Wed, 02 Dec 2026 10:00:00 GMT"}


class _Deployment:
    """One DAG ``etl`` with one running run ``r1``; ``tasks`` and ``changed`` (the task
    instances the next poll finds updated) are set by the test. Keeps the paths asked for."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = [
            {"task_id": "first", "downstream_task_ids": ["second"]},
            {"task_id": "second", "downstream_task_ids": []},
        ]
        self.changed: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.paths.append(path)
        body: Any
        if path == "/api/v2/monitor/health":
            body = {"scheduler": {"status": "healthy"}}
        elif path == "/api/v2/dags":
            body = {"dags": [{"dag_id": "etl", "is_paused": False, "tags": []}]}
        elif path == "/api/v2/dags/etl/tasks":
            body = {"tasks": self.tasks}
        elif path == "/api/v2/dags/~/dagRuns":
            running = "state" in request.url.params
            runs = [{"dag_id": "etl", "dag_run_id": "r1", "state": "running"}] if running else []
            body = {"dag_runs": runs, "total_entries": len(runs)}
        elif path.endswith("/taskInstances"):
            body = {"task_instances": self.changed, "total_entries": len(self.changed)}
        else:
            return httpx.Response(404, headers=DATE)
        return httpx.Response(200, json=body, headers=DATE)


def instance(task_id: str, state: str) -> dict[str, Any]:
    return {"dag_id": "etl", "dag_run_id": "r1", "task_id": task_id, "state": state}


async def test_a_dag_that_gained_a_task_is_read_again_once() -> None:
    """Limits of docs/airflow.md: an instance of a task the bridge does not know makes the
    poll read the DAG's tasks again (one request, that poll only); the new task is a stage
    of its run from then on."""
    deployment = _Deployment()
    async with open_hub() as hub:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="airflow", include_graph=True
        )
        bridge = AirflowBridge(tracker)
        transport = httpx.MockTransport(deployment.handle)
        async with AirflowApi("http://airflow", token="t", transport=transport) as api:
            poller = _Poller(api, bridge, tracker, 300.0)
            bridge.unknown("not read yet", say=False)
            await poller.poll()
            deployment.tasks = [
                *deployment.tasks[:1],
                {"task_id": "second", "downstream_task_ids": ["third"]},
                {"task_id": "third", "downstream_task_ids": []},
            ]
            deployment.changed = [instance("third", "running")]
            deployment.paths.clear()
            await poller.poll()
            again = deployment.paths.count("/api/v2/dags/etl/tasks")
            deployment.changed = [instance("third", "running"), instance("second", "running")]
            deployment.paths.clear()
            await poller.poll()
            after = deployment.paths.count("/api/v2/dags/etl/tasks")
        (root,) = hub.snapshot_frame().roots or ()
    assert (again, after) == (1, 0)
    assert root.graph is not None
    statuses = {n.node_id: n.status for n in root.graph.nodes if isinstance(n, StageNode)}
    assert statuses == {"first": "pending", "second": "running", "third": "running"}
