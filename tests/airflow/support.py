"""A real Airflow 3 for the tests, and a hub in a thread that records what the bridge reports.

:class:`Airflow` runs ``airflow db migrate`` and then the api-server, the scheduler, the
dag-processor and the triggerer from ``.venv-airflow`` (``make airflow-venv``: Airflow's own
virtualenv, so its pins never meet the project's), on SQLite with the LocalExecutor, with an
AIRFLOW_HOME of its own in a temporary directory and the api-server on a free loopback port.
Each process is in its own session and stopped with its group on every path.

:class:`Recorder` runs a trio hub in a thread with a :class:`RunTracker` that
``watch_airflow`` reports to, and keeps every root it was shown, in order, per root id: the
tests ask it whether a root was ever (or is now) in some state, waiting on a condition.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.support.processes import signal_group, stop_group
from tests.support.redis_server import free_port
from workflow_hub import (
    ChangedFrame,
    LifecycleEvent,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    WorkflowEvent,
    open_hub,
)
from workflow_hub.airflow import AirflowApi, AirflowBridge, watch_airflow
from workflow_hub.tracker import RunTracker

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-airflow"
DAGS = Path(__file__).resolve().parent / "dags"
USER, PASSWORD = "hub-tests", "not-a-secret"
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")


def require_airflow() -> Path:
    airflow = VENV / "bin" / "airflow"
    if not airflow.exists():
        message = f"{airflow} is missing: `make airflow-venv` installs Airflow into its own venv"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return airflow


class Airflow:
    """One Airflow deployment: ``start()``, ``stop()``; ``kill(component)`` and ``run(component)``
    stop and start one of its processes (the scheduler, say)."""

    def __init__(self) -> None:
        self.airflow = require_airflow()
        self.home = Path(tempfile.mkdtemp(prefix="workflow-hub-airflow-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.timings: dict[str, float] = {}
        (self.home / "passwords.json").write_text(json.dumps({USER: PASSWORD}))
        self.env = {
            **os.environ,
            "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "8",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": "workflow-hub-tests-only-secret-"
            + "0123456789abcdef" * 3,
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            # A killed scheduler is reported unhealthy after this many seconds (default 30); a
            # live one on two loaded cores can miss its 5-second heartbeat by a few seconds.
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "15",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        }
        self.env.pop("PYTHONPATH", None)  # Airflow's venv, never the project's sources

    def log(self, component: str) -> str:
        path = self.home / f"{component}.log"
        return path.read_text(errors="replace")[-6000:] if path.exists() else ""

    def start(self, within: float = 300.0) -> None:
        began = time.monotonic()
        subprocess.run(
            [str(self.airflow), "db", "migrate"],
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=within,
        )
        self.timings["db migrate"] = time.monotonic() - began
        for component in COMPONENTS:
            self.run(component)
        self.wait_healthy(within)
        self.timings["healthy"] = time.monotonic() - began

    def run(self, component: str) -> None:
        with open(self.home / f"{component}.log", "ab") as log:
            self.processes[component] = subprocess.Popen(
                [str(self.airflow), component],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self, component: str) -> None:
        process = self.processes.pop(component)
        stop_group(process, grace=0)

    def wait_healthy(self, within: float) -> None:
        deadline = time.monotonic() + within
        while True:
            try:
                health = httpx.get(f"{self.url}/api/v2/monitor/health", timeout=5).json()
                if all(
                    (health.get(part) or {}).get("status") == "healthy"
                    for part in ("metadatabase", "scheduler", "dag_processor", "triggerer")
                ):
                    return
            except (httpx.HTTPError, ValueError):
                pass
            for component, process in self.processes.items():
                assert process.poll() is None, f"{component} exited:\n{self.log(component)}"
            assert time.monotonic() < deadline, "Airflow did not become healthy in time"
            time.sleep(0.5)

    def stop(self) -> None:
        """Every component at once: SIGTERM to each group, then each is waited for (and
        killed, with what is left of its group, when it does not exit in time)."""
        try:
            for process in self.processes.values():
                signal_group(process.pid, signal.SIGTERM)
            while self.processes:
                _, process = self.processes.popitem()
                stop_group(process, grace=5)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)

    # --- the API, as a user of Airflow drives it -------------------------------------------

    def client(self) -> httpx.Client:
        token = httpx.post(
            f"{self.url}/auth/token", json={"username": USER, "password": PASSWORD}, timeout=10
        ).json()["access_token"]
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    def wait_dags(self, dag_ids: set[str], within: float = 120.0) -> None:
        deadline = time.monotonic() + within
        with self.client() as client:
            while True:
                listed = {dag["dag_id"] for dag in client.get("/api/v2/dags").json()["dags"]}
                if dag_ids <= listed:
                    return
                assert time.monotonic() < deadline, f"DAGs not parsed: {dag_ids - listed}"
                time.sleep(0.5)


class Recorder:
    """A hub in a thread, fed by ``watch_airflow``; every root it shows, kept per root id."""

    def __init__(self, airflow: Airflow, *, interval: float = 0.5) -> None:
        self._airflow = airflow
        self._interval = interval
        self._changed = threading.Condition()
        self.history: dict[str, list[RootActivity]] = {}
        self.current: dict[str, RootActivity] = {}
        self.availability: str = "unavailable"
        self.detail: str | None = None
        """The last snapshot's detail (C3): why the source is unknown."""
        self.events: list[LifecycleEvent] = []
        """Every lifecycle event the hub's hooks got, in order."""
        self.availabilities: list[tuple[float, str]] = []
        """Every snapshot's availability, with the seconds since the recorder started."""
        self._began = time.monotonic()
        self.bridge: AirflowBridge | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="airflow-recorder", daemon=True)

    def start(self) -> None:
        self._thread.start()
        assert self._started.wait(120), "the recorder did not start"
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        if self._token is not None and self._cancel is not None:
            cancel = self._cancel
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(cancel.cancel, trio_token=self._token)
        self._thread.join(30)

    def _main(self) -> None:
        try:
            trio.run(self._run)
        except BaseException as error:
            self._error = error
            self._started.set()
        finally:
            with self._changed:
                self._changed.notify_all()

    async def _run(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as self._cancel:
            async with open_hub() as hub:
                tracker = RunTracker(
                    hub.register_publisher(), owner_session_id="airflow", include_graph=True
                )
                hub.observe(self._frame)
                hub.bind_dispatcher(self._event)
                async with (
                    AirflowApi(self._airflow.url, username=USER, password=PASSWORD) as api,
                    trio.open_nursery() as nursery,
                ):
                    self.bridge = await nursery.start(
                        lambda task_status: watch_airflow(
                            tracker,
                            api,
                            interval=self._interval,
                            label_conf=["team"],
                            task_status=task_status,
                        )
                    )
                    self._started.set()

    def _frame(self, frame: Any) -> None:
        with self._changed:
            if isinstance(frame, SnapshotFrame):
                self.availability = str(frame.availability)
                self.detail = frame.detail
                self.availabilities.append(
                    (round(time.monotonic() - self._began, 1), self.availability)
                )
                self.current = {root.root_run_id: root for root in frame.roots or ()}
                for root in frame.roots or ():
                    self.history.setdefault(root.root_run_id, []).append(root)
            elif isinstance(frame, ChangedFrame):
                self.current[frame.root.root_run_id] = frame.root
                self.history.setdefault(frame.root.root_run_id, []).append(frame.root)
            elif isinstance(frame, RemovedFrame):
                self.current.pop(frame.root_run_id, None)
            self._changed.notify_all()

    async def _event(self, event: WorkflowEvent, _is_current: Callable[[], bool]) -> None:
        if isinstance(event, LifecycleEvent):
            with self._changed:
                self.events.append(event)
                self._changed.notify_all()

    def wait(self, condition: Callable[[], Any], within: float = 180.0) -> Any:
        """Wait until ``condition()`` (called under the recorder's lock) is truthy; return it."""
        with self._changed:
            result = self._changed.wait_for(
                lambda: condition() or not self._thread.is_alive(), within
            )
            assert self._error is None, f"the recorder failed: {self._error!r}"
            seen = f"roots now: {self.current}; availabilities: {self.availabilities}"
            assert self._thread.is_alive(), f"the recorder stopped; {seen}"
            assert result, f"not seen within {within} s; {seen}"
            result = condition()
            return result

    def roots_of(self, dag_id: str) -> Iterator[str]:
        return (root for root in self.history if root.startswith(f"{dag_id}/"))
