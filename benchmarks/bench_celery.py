"""The Celery bridge (issues 28 and 38): canvases through one real worker, against Celery's own
event receiver doing nothing with the same events, with a real ``workflow-hub watch`` attached.

One run: a redis-server (broker and result backend), one worker (``--pool=solo``), a sender
process and a bare listener process (``_celery_app.py``). The bridge's process runs
``watch_celery`` into a RunTracker (with graphs) on a hub that it serves over HTTP, with an
observer timing frames; a ``workflow-hub watch`` of that server runs in a pseudo-terminal of its
own (80x24, the live view). The listener is Celery's ``Receiver`` with a handler that only
counts. Both consume the same events at the same time, so the figures come from one stream:

- **CPU per event**: the bridge process's CPU time (receiver thread, forwarder, hub, tracker,
  the server writing to the watch; the timing observer's own bookkeeping subtracted) divided by
  the events it received, against the listener's. Goal (issues 28, 38): at most 2x on every
  shape, cold and warm, with the watch attached. Every root must end correct (all its stages
  completed, idle/quiescent) or no figure.
- **watch CPU**: the watch process's CPU over the same events (until it drew the end), against
  the bridge's. Goal (issue 38): less than the bridge it watches.
- **lag**: from a ``task-succeeded``'s worker timestamp to the hub frame that shows the stage
  completed, p50 and p99; the reference is the same events' transit from the worker to the bare
  listener (its ``local_received``), so the difference is what the bridge adds.

Shapes: 100 canvases of 100 tasks (10 000 tasks; 30 of 50 with ``--quick``) and 50 of 20 (1 000
tasks). *Cold* is the first run of the big shape in a new process (the bridge's first canvases,
every cache empty: ``--cold`` runs it); *warm* is the best of the runs after it in this process.

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
from functools import partial
from pathlib import Path
from typing import Any

import trio

import _celery_app
from _harness import BENCH_DIR, BenchmarkError, Goal, HubFactory, Row, Scale, run_script, run_trio
from bench_redis import redis_server
from bench_watch_cpu import cpu_of, start_watch, stop_watch
from workflow_hub import ChangedFrame, RootActivity, SnapshotFrame, StageNode, WorkflowActivityHub
from workflow_hub.celery import watch_celery
from workflow_hub.server import serve_hub
from workflow_hub.tracker import RunTracker

SHAPES: dict[str, tuple[tuple[int, int], ...]] = {
    "full": ((100, 100), (50, 20)),
    "quick": ((30, 50), (50, 20)),
    "smoke": ((3, 20),),
}
"""(canvases, tasks per canvas) by scale; the first is the one measured cold."""
_TIMEOUT = 300.0
_WATCH_SIZE = (80, 24)


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


async def _one_run(
    url: str, canvases: int, steps: int, hub_factory: HubFactory = WorkflowActivityHub
) -> dict[str, Any]:
    tasks = canvases * steps
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
        served = await nursery.start(partial(serve_hub, hub, port=0))

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
            if complete == steps and root.state == "idle":
                ended.add(root.root_run_id)
                if len(ended) == canvases:
                    done.set()

        nursery.start_soon(observe)
        process, screen = start_watch(served, plain=False, size=_WATCH_SIZE, profile=None)
        manager = watch_celery(_celery_app.app, tracker, call=call, settle=0.2, inspect_timeout=0.5)
        watch = manager.__enter__()
        try:
            shown = screen.expect("live")
            if not await trio.to_thread.run_sync(shown.wait, 30):
                raise BenchmarkError(f"watch showed nothing in 30 s: {screen.tail()!r}")
            await trio.to_thread.run_sync(watch.ready.wait, 10)
            if not watch.ready.is_set():
                raise BenchmarkError("the bridge did not become ready")
            events_before = watch.statistics().events
            cpu_before, watch_before = time.process_time(), cpu_of(process.pid)
            sender = _script(url, "send", str(canvases), str(steps))
            with trio.move_on_after(_TIMEOUT):
                await done.wait()
            cpu = time.process_time() - cpu_before - harness[0]
            events = watch.statistics().events - events_before
            # The watch's CPU once it drew the last change: its redraws are a quarter of a
            # second apart, and a lagging one catches up with conflated frames.
            await trio.sleep(1.0)
            watch_cpu = cpu_of(process.pid) - watch_before
            await trio.to_thread.run_sync(sender.wait)
            if not done.is_set():
                raise BenchmarkError(
                    f"only {len(ended)} of {canvases} roots ended in {_TIMEOUT} s: "
                    f"{[(r.root_run_id, r.state, r.reason) for r in tracker.activities()]}"
                )
            for root in tracker.activities():
                if (root.state, root.reason, root.needs_attention) != ("idle", "quiescent", False):
                    raise BenchmarkError(f"a root ended wrong: {root}")
            if process.poll() is not None:
                raise BenchmarkError(f"the watch ended: {screen.tail()!r}")
        finally:
            stop_watch(process)
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
        "watch": watch_cpu / events,
        "lags": [seen[task] - stamp for task, (stamp, _) in succeeded.items()],
        "transit": [arrived - stamp for stamp, arrived in succeeded.values()],
    }


def _cold_run(url: str, canvases: int, steps: int) -> dict[str, Any]:
    """:func:`_one_run` in a new process: the bridge's first canvases, nothing warmed up."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__)), "--cold", url, str(canvases), str(steps)],
        cwd=BENCH_DIR,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(BENCH_DIR), *sys.path])),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT + 120,
        check=False,
    )
    if done.returncode:
        raise BenchmarkError(f"the cold run failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _shape_rows(
    label: str, canvases: int, steps: int, cold: dict[str, Any] | None, warm: list[dict[str, Any]]
) -> list[Row]:
    tasks = canvases * steps
    shape = f"{tasks} tasks in {canvases} canvases of {steps}, watch attached"
    runs = [("first run (cold)", cold)] if cold is not None else []
    runs.append(("warm", min(warm, key=lambda r: r["cpu"] / r["bare"])))
    rows = []
    for when, result in runs:
        assert result is not None
        rows.append(
            Row(
                benchmark="celery",
                case=f"CPU per event, {shape}, {when}",
                variant=label,
                value=result["cpu"] * 1e9,
                unit="ns",
                reference="Celery's receiver, no-op",
                reference_value=result["bare"] * 1e9,
                goal=Goal(op="<=", threshold=2.0),
            )
        )
    for when, result in runs:
        assert result is not None
        rows.append(
            Row(
                benchmark="celery",
                case=f"watch CPU per event, {tasks} tasks in {canvases} canvases of {steps}, {when}",
                variant=label,
                value=result["watch"] * 1e9,
                unit="ns",
                reference="the bridge it watches",
                reference_value=result["cpu"] * 1e9,
                goal=Goal(op="<=", threshold=1.0),
            )
        )
    return rows


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the bridge is measured once; hub variants are measured elsewhere
    shapes = SHAPES.get(scale.name, SHAPES["quick"])
    rows: list[Row] = []
    lags: list[float] = []
    transit: list[float] = []
    with redis_server() as url:
        _celery_app.app.conf.broker_url = url
        _celery_app.app.conf.result_backend = url
        worker = _start_worker(url)
        try:
            for index, (canvases, steps) in enumerate(shapes):
                cold = _cold_run(url, canvases, steps) if index == 0 else None
                warm = [
                    run_trio(_one_run, url, canvases, steps, hub_factory)
                    for _ in range(1 if index == 0 or scale.name == "smoke" else 2)
                ]
                rows += _shape_rows(label, canvases, steps, cold, warm)
                for result in warm:
                    lags += result["lags"]
                    transit += result["transit"]
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    for name, fraction in (("p50", 0.5), ("p99", 0.99)):
        rows.append(
            Row(
                benchmark="celery",
                case=f"lag task-succeeded→frame {name}, warm runs",
                variant=label,
                value=_percentile(lags, fraction) * 1e9,
                unit="ns",
                reference="worker→receiver",
                reference_value=_percentile(transit, fraction) * 1e9,
            )
        )
    return rows


def _cold_main(url: str, canvases: int, steps: int) -> None:
    _celery_app.app.conf.broker_url = url
    _celery_app.app.conf.result_backend = url
    result = run_trio(_one_run, url, canvases, steps)
    print(json.dumps(result))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--cold"]:
        _cold_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        run_script(run)
