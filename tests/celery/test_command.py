"""``workflow-hub celery``, as a user runs it: a real process, a real worker, its dashboard.

The command serves the hub from the sync host (token required here), mirrors it into a Redis
fleet with its hook events, shows a task's root ending, and stops on SIGINT with exit status 0 after its source's
final ``unavailable`` frame reached the fleet (SPEC H1).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

import redis
from tests.support.processes import owned_process
from tests.support.redis_server import RedisServer
from workflow_hub import LifecycleEvent, SnapshotFrame, StageTarget, WorkflowEvent
from workflow_hub.wire import loads

from .app import add
from .support import REPO, CeleryWorker

TOKEN = "s3cret"


def snapshot(url: str) -> SnapshotFrame:
    response = httpx.get(
        f"{url}/v1/snapshot", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5
    )
    response.raise_for_status()
    return loads(SnapshotFrame, response.text)


def wait_snapshot(url: str, predicate, what: str, within: float = 20.0) -> SnapshotFrame:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within
    while True:
        frame = snapshot(url)
        if predicate(frame):
            return frame
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}; last {frame}")
        time.sleep(0.1)  # an HTTP poll of another process: nothing to wait on here


def test_the_command_serves_the_roots_mirrors_them_and_stops_on_sigint(
    broker: RedisServer, worker: CeleryWorker
) -> None:
    env = dict(os.environ, WORKFLOW_HUB_TEST_BROKER=broker.url, PYTHONUNBUFFERED="1")
    with owned_process(
        [
            sys.executable,
            "-m",
            "workflow_hub._cli",
            "celery",
            "--app",
            "tests.celery.app:app",
            "--port",
            "0",
            "--token",
            TOKEN,
            "--redis",
            broker.url,
            "--prefix",
            "cmdtest",
            "--settle",
            "0.3",
            "--label",
            "env=ci",
            "--label-from",
            "queue,worker",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as command:
        try:
            assert command.stdout is not None
            url = command.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), (
                command.stderr.read() if command.stderr else ""
            )
            assert httpx.get(f"{url}/v1/snapshot", timeout=5).status_code == 401
            wait_snapshot(url, lambda f: f.availability == "ready", "ready")
            result = add.delay(20, 22)
            frame = wait_snapshot(
                url,
                lambda f: any(
                    r.root_run_id == result.id and r.state == "idle" for r in f.roots or ()
                ),
                "the task's root ended",
            )
            assert frame.roots is not None
            [root] = [r for r in frame.roots if r.root_run_id == result.id]
            assert root.labels == {"env": "ci", "queue": "celery", "worker": worker.name}
            client = redis.Redis.from_url(broker.url)
            assert client.xlen("cmdtest:celery:frames") > 0
            assert httpx.get(f"{url}/", timeout=5).status_code == 200  # the dashboard page
            # The tracker's lifecycle events are served (``watch``'s hook pane, the dashboard)
            # and mirrored into the fleet: the task's stage events are there.
            auth = {"Authorization": f"Bearer {TOKEN}"}
            with httpx.stream("GET", f"{url}/v1/events", headers=auth, timeout=5) as events:
                assert events.status_code == 200
            mirrored = [
                loads(WorkflowEvent, fields[b"event"].decode())
                for _id, fields in client.xrange("cmdtest:celery:events")
            ]
            moves = [
                (event.target.previous_status, event.target.status)
                for event in mirrored
                if isinstance(event, LifecycleEvent)
                and isinstance(event.target, StageTarget)
                and event.root_run_id == result.id
            ]
            assert ("running", "completed") in moves, mirrored
        finally:
            command.send_signal(signal.SIGINT)
            command.wait(timeout=20)
    assert command.returncode == 0
    # H1: leaving the host, the source ends with an unavailable frame, mirrored into the fleet.
    [(_id, fields)] = client.xrevrange("cmdtest:celery:frames", count=1)
    last = loads(SnapshotFrame, fields[b"frame"].decode())
    assert last.availability == "unavailable"


def test_a_bad_label_is_one_line_and_exit_status_2() -> None:
    """``--label`` without ``=``, a label the contract refuses (naming the key) and an unknown
    ``--label-from`` are usage errors, before anything starts (no broker is needed)."""
    for args, says in [
        (["--label", "env"], "expected KEY=VALUE"),
        (["--label", "9env=x"], "9env"),
        (["--label-from", "queue,pool"], "'pool'"),
    ]:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "workflow_hub._cli",
                "celery",
                "--broker",
                "redis://127.0.0.1:1/0",
                *args,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        [line] = result.stderr.splitlines()
        assert (result.returncode, result.stdout) == (2, ""), line
        assert says in line
