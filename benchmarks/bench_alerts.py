"""``workflow-hub alert`` against ``workflow-hub watch``: latency and CPU (issue 40).

This process serves a hub (``serve_hub``) holding ``--roots`` working roots and changes
``--rate`` of them a second; every ``--mark-every`` seconds one root turns blocked (waiting for
input), and turns back to working a second later. A real ``workflow-hub alert URL --webhook …
--needs-attention-for 0`` process and a real ``workflow-hub watch URL`` on a pipe follow it; the
webhook's receiver is a threaded HTTP server in this process. Printed: for the roots that
turned blocked, p50 and p99 of the time from the publication to the receiver's request (the
alert) and to the watch's line (the same change on a terminal), their ratio (goal: <= 2), and
the CPU (user + system) each process spent over the run.

    .venv/bin/python benchmarks/bench_alerts.py [--roots 1000] [--rate 100] [--seconds 20]

A plain script, not a row of ``make bench``: it starts two programs and takes half a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trio

from workflow_hub import Availability, RootActivity, WorkflowActivityHub
from workflow_hub.server import serve_hub

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "workflow_hub._cli"]


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a live process (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _root(root_run_id: str, *, blocked: bool = False, tick: int = 0) -> RootActivity:
    return RootActivity(
        root_run_id=root_run_id,
        owner_session_id="bench",
        state="blocked" if blocked else "working",
        reason="awaiting_input" if blocked else "executing",
        active_execution_count=0 if blocked else 1 + tick % 3,
        actionable_block_count=1 if blocked else 0,
        needs_attention=blocked,
    )


class _Arrivals:
    """When each marked root was first seen blocked, by whom."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.alert: dict[str, float] = {}
        self.watch: dict[str, float] = {}


def _receiver(arrivals: _Arrivals) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            now = time.monotonic()
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()
            event = json.loads(body)
            if event["type"].endswith(".firing"):
                with arrivals.lock:
                    arrivals.alert.setdefault(event["subject"], now)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _read_watch(process: subprocess.Popen[bytes], arrivals: _Arrivals) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if b" blocked/awaiting_input" not in line:
            continue
        now = time.monotonic()
        words = line.split()
        # "frame changed  EPOCH:REV  mark-3 blocked/awaiting_input …"
        root_id = words[3].decode()
        with arrivals.lock:
            arrivals.watch.setdefault(root_id, now)


async def _publish(
    hub: WorkflowActivityHub, args: argparse.Namespace, marked: dict[str, float]
) -> None:
    publisher = hub.register_publisher()
    ids = [f"root-{index}" for index in range(args.roots)]
    publisher.publish_snapshot(Availability.READY, [_root(root_id) for root_id in ids])
    await trio.sleep(2.0)  # both followers attach and take the snapshot
    period = 1.0 / args.rate
    started = trio.current_time()
    next_mark = started + args.mark_every
    tick = 0
    unblock: list[tuple[float, str]] = []
    while trio.current_time() - started < args.seconds:
        tick += 1
        now = trio.current_time()
        if now >= next_mark:
            root_id = ids[tick % len(ids)]
            marked[root_id] = time.monotonic()
            publisher.publish_changed(_root(root_id, blocked=True))
            unblock.append((now + 1.0, root_id))
            next_mark += args.mark_every
        elif unblock and unblock[0][0] <= now:
            publisher.publish_changed(_root(unblock.pop(0)[1], tick=tick))
        else:
            candidate = ids[(tick * 7919) % len(ids)]
            if candidate not in marked:
                publisher.publish_changed(_root(candidate, tick=tick))
        await trio.sleep(period)


def _start(args: list[str], env: dict[str, str], *, pipe: bool) -> subprocess.Popen[bytes]:
    """A ``workflow-hub`` process (started before the run is measured: blocking is fine)."""
    output = subprocess.PIPE if pipe else subprocess.DEVNULL
    return subprocess.Popen([*CLI, *args], stdout=output, env=env)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def _main(args: argparse.Namespace) -> None:
    arrivals = _Arrivals()
    receiver = _receiver(arrivals)
    receiver_url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    marked: dict[str, float] = {}
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "WORKFLOW_HUB_WEBHOOK_SECRET": "whsec_YmVuY2g="}
    async with WorkflowActivityHub() as hub, trio.open_nursery() as nursery:
        url = await nursery.start(partial(serve_hub, hub, port=0))
        alert = _start(
            ["alert", url, "--webhook", receiver_url, "--needs-attention-for", "0"], env, pipe=False
        )
        watch = _start(["watch", url], env, pipe=True)
        threading.Thread(target=_read_watch, args=(watch, arrivals), daemon=True).start()
        try:
            await trio.sleep(1.0)
            cpu = {"alert": _cpu_of(alert.pid), "watch": _cpu_of(watch.pid)}
            await _publish(hub, args, marked)
            await trio.sleep(2.0)  # the last ones arrive
            spent = {
                "alert": _cpu_of(alert.pid) - cpu["alert"],
                "watch": _cpu_of(watch.pid) - cpu["watch"],
            }
        finally:
            for process in (alert, watch):
                process.terminate()
                process.wait(10)
            receiver.shutdown()
            nursery.cancel_scope.cancel()
    with arrivals.lock:
        alert_latency = [arrivals.alert[r] - t for r, t in marked.items() if r in arrivals.alert]
        watch_latency = [arrivals.watch[r] - t for r, t in marked.items() if r in arrivals.watch]
    print(f"{args.roots} roots, {args.rate} changes/s, {len(marked)} roots turned blocked")
    for name, latency in (("alert (webhook)", alert_latency), ("watch (pipe)", watch_latency)):
        if not latency:
            print(f"{name}: nothing arrived")
            continue
        print(
            f"{name}: {len(latency)} arrived, p50 {statistics.median(latency) * 1000:.1f} ms, "
            f"p99 {_percentile(latency, 0.99) * 1000:.1f} ms"
        )
    if alert_latency and watch_latency:
        ratio = _percentile(alert_latency, 0.99) / _percentile(watch_latency, 0.99)
        print(f"p99 alert / p99 watch: {ratio:.2f} (goal <= 2)")
    print(
        f"CPU over {args.seconds:g} s: alert {spent['alert']:.2f} s, watch {spent['watch']:.2f} s"
        f" (alert / watch {spent['alert'] / max(spent['watch'], 1e-9):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roots", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--mark-every", type=float, default=0.2)
    trio.run(_main, parser.parse_args())


if __name__ == "__main__":
    main()
