"""The Celery bridge: 1 000 tasks in 50 canvases through one real worker, against Celery's own
event receiver doing nothing with the same events.

One run: a redis-server (broker and result backend), one worker (``--pool=solo``), a sender
process and a bare listener process (``_celery_app.py``). This process runs the bridge
(``watch_celery`` into a RunTracker on a hub, an observer timing frames); the listener is
Celery's ``Receiver`` with a handler that only counts. Both consume the same events at the same
time, so the two figures come from one stream:

- **CPU per event**: this process's CPU time (receiver thread, forwarder, hub, tracker; the
  timing observer's own bookkeeping subtracted) divided by the events it received, against the
  listener's. Goal from issue 28: at
  most 2x. Every root must end correct (20 stages completed, idle/quiescent) or no figure.
- **lag**: from a ``task-succeeded``'s worker timestamp to the hub frame that shows the stage
  completed, p50 and p99; the reference is the same events' transit from the worker to the bare
  listener (its ``local_received``), so the difference is what the bridge adds.

Usage: ``python benchmarks/bench_celery.py [--quick | --smoke]`` (needs ``redis-server``).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import trio

import _celery_app
from _harness import BENCH_DIR, BenchmarkError, Goal, HubFactory, Row, Scale, run_script, run_trio
from bench_redis import redis_server
from workflow_hub import ChangedFrame, RootActivity, SnapshotFrame, StageNode, WorkflowActivityHub
from workflow_hub.celery import watch_celery
from workflow_hub.tracker import RunTracker

_CANVASES = {"full": 50, "quick": 50, "smoke": 3}
_TIMEOUT = 120.0


def _env(url: str) -> dict[str, str]:
    return dict(os.environ, BENCH_CELERY_BROKER=url, PYTHONPATH=str(BENCH_DIR))


def _script(url: str, *args: str, stdout: Any = subprocess.DEVNULL) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(BENCH_DIR / "_celery_app.py"), *args],
        cwd=BENCH_DIR,
        env=_env(url),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        text=True,
    )


def _start_worker(url: str) -> subprocess.Popen[bytes]:
    worker = subprocess.Popen(
        [
            *(sys.executable, "-m", "celery", "-A", "_celery_app", "worker", "-E"),
            *("--pool=solo", "-n", "bench@workflow-hub", "--without-gossip", "--without-mingle"),
            "--loglevel=WARNING",
        ],
        cwd=BENCH_DIR,
        env=_env(url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not _celery_app.app.control.ping(destination=["bench@workflow-hub"], timeout=0.5):
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise BenchmarkError("the celery worker did not start")
    return worker


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _one_run(url: str, canvases: int, hub_factory: HubFactory) -> dict[str, Any]:
    tasks = canvases * _celery_app.STEPS
    token = trio.lowlevel.current_trio_token()

    def call(function: Callable[[], None]) -> None:
        trio.from_thread.run_sync(function, trio_token=token)

    listener = _script(url, "listen", str(tasks), stdout=subprocess.PIPE)
    assert listener.stdout is not None
    line = await trio.to_thread.run_sync(listener.stdout.readline)
    if line.strip() != "listening":
        raise BenchmarkError(f"the bare listener did not start: {line!r}")
    seen: dict[str, float] = {}
    harness = [0.0]  # CPU of this observer's own bookkeeping: the measurement's, not the bridge's
    done = trio.Event()
    ended: set[str] = set()
    async with hub_factory() as hub, trio.open_nursery() as nursery:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="bench", include_graph=True)

        async def observe() -> None:
            async with hub.subscribe() as frames:
                async for frame in frames:
                    started = time.thread_time()
                    if isinstance(frame, ChangedFrame):
                        note(frame.root, time.time())
                    elif isinstance(frame, SnapshotFrame):  # an overflow resnapshot, or the first
                        at = time.time()
                        for root in frame.roots or ():
                            note(root, at)
                    harness[0] += time.thread_time() - started

        def note(root: RootActivity, at: float) -> None:
            if root.graph is None:
                return
            complete = 0
            for node in root.graph.nodes:
                if isinstance(node, StageNode) and node.status == "completed":
                    complete += 1
                    seen.setdefault(node.node_id, at)
            if complete == _celery_app.STEPS and root.state == "idle":
                ended.add(root.root_run_id)
                if len(ended) == canvases:
                    done.set()

        nursery.start_soon(observe)
        manager = watch_celery(_celery_app.app, tracker, call=call, settle=0.2, inspect_timeout=0.5)
        watch = manager.__enter__()
        try:
            await trio.to_thread.run_sync(watch.ready.wait, 10)
            if not watch.ready.is_set():
                raise BenchmarkError("the bridge did not become ready")
            events_before = watch.statistics().events
            cpu_before = time.process_time()
            sender = _script(url, "send", str(canvases))
            with trio.move_on_after(_TIMEOUT):
                await done.wait()
            cpu = time.process_time() - cpu_before - harness[0]
            events = watch.statistics().events - events_before
            await trio.to_thread.run_sync(sender.wait)
            if not done.is_set():
                raise BenchmarkError(
                    f"only {len(ended)} of {canvases} roots ended in {_TIMEOUT} s: "
                    f"{[(r.root_run_id, r.state, r.reason) for r in tracker.activities()]}"
                )
            for root in tracker.activities():
                if (root.state, root.reason, root.needs_attention) != ("idle", "quiescent", False):
                    raise BenchmarkError(f"a root ended wrong: {root}")
        finally:
            await trio.to_thread.run_sync(manager.__exit__, None, None, None)
            nursery.cancel_scope.cancel()
    output, _ = await trio.to_thread.run_sync(functools.partial(listener.communicate, timeout=60))
    bare = json.loads(output)
    succeeded: dict[str, list[float]] = bare["succeeded"]
    missing = set(succeeded) - set(seen)
    if len(succeeded) != tasks or missing:
        raise BenchmarkError(f"{len(missing)} succeeded tasks never showed completed on the hub")
    return {
        "cpu": cpu / events,
        "bare": bare["cpu"] / bare["events"],
        "lags": [seen[task] - stamp for task, (stamp, _) in succeeded.items()],
        "transit": [arrived - stamp for stamp, arrived in succeeded.values()],
    }


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the bridge is measured once; hub variants are measured elsewhere
    canvases = _CANVASES.get(scale.name, _CANVASES["quick"])
    with redis_server() as url:
        _celery_app.app.conf.broker_url = url
        _celery_app.app.conf.result_backend = url
        worker = _start_worker(url)
        try:
            runs = [
                run_trio(_one_run, url, canvases, hub_factory)
                for _ in range(max(1, min(scale.repeats, 3)))
            ]
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    best = min(runs, key=lambda r: r["cpu"])
    bare = min(r["bare"] for r in runs)
    tasks = canvases * _celery_app.STEPS
    rows = [
        Row(
            benchmark="celery",
            case=f"CPU per event, {tasks} tasks in {canvases} canvases",
            variant=label,
            value=best["cpu"] * 1e9,
            unit="ns",
            reference="Celery's receiver, no-op",
            reference_value=bare * 1e9,
            goal=Goal(op="<=", threshold=2.0),
        )
    ]
    lags = [lag for r in runs for lag in r["lags"]]
    transit = [value for r in runs for value in r["transit"]]
    for name, fraction in (("p50", 0.5), ("p99", 0.99)):
        rows.append(
            Row(
                benchmark="celery",
                case=f"lag task-succeeded→frame {name}",
                variant=label,
                value=_percentile(lags, fraction) * 1e9,
                unit="ns",
                reference="worker→receiver",
                reference_value=_percentile(transit, fraction) * 1e9,
            )
        )
    return rows


if __name__ == "__main__":
    run_script(run)
