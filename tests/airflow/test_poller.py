"""The poller's requests, against an API answered from memory (what Airflow answers is not the
point here: which requests the poller makes for what it finds is; tests/airflow/test_dag_runs.py
has the real Airflow)."""

from __future__ import annotations

import functools
from typing import Any

import httpx
import trio
import trio.testing

from workflow_hub import StageNode, open_hub
from workflow_hub.airflow import AirflowApi, AirflowBridge, watch_airflow
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


async def test_polls_start_every_interval_however_long_each_takes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A change waits at most one interval for the poll that reads it: polls start every
    ``interval`` (2 s), a poll's own time (1.5 s here, an API server under load) is not added
    to the wait; one that takes longer than the interval is followed by the next at once."""
    deployment = _Deployment()
    starts: list[float] = []
    slow = [1.5]

    async def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v2/monitor/health":
            starts.append(trio.current_time())
            await trio.sleep(slow[0])
        return deployment.handle(request)

    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="airflow")
        transport = httpx.MockTransport(handle)
        async with (
            AirflowApi("http://airflow", token="t", transport=transport) as api,
            trio.open_nursery() as nursery,
        ):
            await nursery.start(functools.partial(watch_airflow, tracker, api, interval=2.0))
            await trio.sleep_until(starts[0] + 9.0)
            slow[0] = 2.5  # from the poll at 10 s on
            await trio.sleep_until(starts[0] + 13.0)
            nursery.cancel_scope.cancel()
    began = starts[0]
    assert [round(t - began, 1) for t in starts] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.5]
