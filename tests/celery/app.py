"""The Celery app the tests' worker runs: small tasks that succeed, fail, retry, sleep or wait.

The broker comes from ``WORKFLOW_HUB_TEST_BROKER`` (a loopback redis-server the test started);
no result backend is needed except for chords, which use the same Redis.
"""

from __future__ import annotations

import os
import time
from typing import Any

from celery import Celery, chord, group

BROKER = os.environ.get("WORKFLOW_HUB_TEST_BROKER", "redis://127.0.0.1:1/0")

app = Celery("workflow_hub_tests", broker=BROKER, backend=BROKER)
app.conf.update(
    worker_send_task_events=True,
    task_send_sent_event=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    # One worker process, fetching one message at a time: the tests' timings are the tasks'.
    worker_prefetch_multiplier=1,
    result_expires=600,
)
if os.environ.get("WORKFLOW_HUB_TEST_EXTENDED"):
    # The result backend keeps each task's name (and arguments): what a bridge that first sees
    # a task at its end looks its name up in.
    app.conf.result_extended = True
if os.environ.get("WORKFLOW_HUB_TEST_NO_CONTROL"):
    # A worker that answers no remote control (no ping, no inspect: some deployments turn it
    # off, and some brokers have none): a bridge learns of its tasks from events only.
    app.conf.worker_enable_remote_control = False
if os.environ.get("WORKFLOW_HUB_TEST_VISIBILITY"):
    # A worker that takes back, when it starts, the unacknowledged messages of a killed one
    # older than this many seconds (Redis's visibility timeout: one hour by default).
    app.conf.broker_transport_options = {
        "visibility_timeout": float(os.environ["WORKFLOW_HUB_TEST_VISIBILITY"]),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }


@app.task
def add(x: int, y: int) -> int:
    return x + y


@app.task
def total(values: list[int]) -> int:
    return sum(values)


@app.task
def boom(message: str = "boom") -> None:
    raise RuntimeError(message)


@app.task
def invalid(value: str) -> None:
    raise ValueError(f"not a number: {value!r}")


@app.task
def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@app.task(bind=True, max_retries=2, default_retry_delay=0.05)
def flaky(self: Any, fail_times: int) -> int:
    """Fails (and retries) ``fail_times`` times, then succeeds with the attempt number."""
    if self.request.retries < fail_times:
        raise self.retry(exc=RuntimeError("flaky"), countdown=0.05)
    return int(self.request.retries)


@app.task
def launch(kind: str) -> str:
    """Starts a canvas from inside a task, so that all of it shares this task's root_id (a
    canvas sent by a client gives each group member a root of its own: docs/celery.md)."""
    if kind == "group":
        group(add.s(i, i) for i in range(3)).apply_async()
    elif kind == "naps":
        group(nap.s(30), nap.s(30)).apply_async()
    elif kind == "chord":
        chord([add.s(1, 1), add.s(2, 2), nap.s(0.3)], total.s()).apply_async()
    elif kind == "chord-failing":
        chord([add.s(1, 1), boom.s("header")], total.s()).apply_async()
    else:
        raise ValueError(kind)
    return kind
