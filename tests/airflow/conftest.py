"""One real Airflow for the session, every test DAG triggered at once, and one recording bridge.

Airflow takes a minute to start on two cores and each of its tasks a few seconds, so the tests
share one deployment and run their DAGs side by side: the session's first Airflow test starts
it, the recorder (a hub fed by ``watch_airflow``) starts watching, and every DAG run the tests
look at is triggered in one go; each test then waits for what it expects of its own run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import attrs
import pytest

from workflow_hub.airflow import root_id_of

from .support import Airflow, Recorder

TRIGGERED = ("parallel", "retries", "failing", "mapped", "paused", "approval", "deferred", "marked")
CONF = {"parallel": {"team": "data", "rows": 3}}
"""Each DAG run's ``conf`` (the recorder copies ``team`` into a label)."""


@attrs.frozen
class Session:
    airflow: Airflow
    recorder: Recorder
    roots: dict[str, str]
    """DAG id -> the root id of its triggered run."""
    run_ids: dict[str, str]
    """DAG id -> its triggered run's ``dag_run_id``."""
    timings: dict[str, float]


@pytest.fixture(scope="session")
def airflow_session() -> Iterator[Session]:
    airflow = Airflow()
    recorder: Recorder | None = None
    try:
        airflow.start()
        began = time.monotonic()
        airflow.wait_dags(set(TRIGGERED))
        airflow.timings["DAGs parsed"] = time.monotonic() - began
        recorder = Recorder(airflow)
        recorder.start()
        roots: dict[str, str] = {}
        run_ids: dict[str, str] = {}
        with airflow.client() as client:
            client.patch("/api/v2/dags/paused", json={"is_paused": True}).raise_for_status()
            for dag_id in TRIGGERED:
                response = client.post(
                    f"/api/v2/dags/{dag_id}/dagRuns",
                    json={"logical_date": None, "conf": CONF.get(dag_id, {})},
                )
                response.raise_for_status()
                run_ids[dag_id] = response.json()["dag_run_id"]
                roots[dag_id] = root_id_of(dag_id, run_ids[dag_id])
        yield Session(airflow, recorder, roots, run_ids, airflow.timings)
    finally:
        try:
            if recorder is not None:
                recorder.stop()
        finally:
            airflow.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.failed:
        session = getattr(item, "funcargs", {}).get("airflow_session")
        if isinstance(session, Session):
            for component in ("scheduler", "api-server"):
                report.sections.append((f"airflow {component} log", session.airflow.log(component)))
    return report
