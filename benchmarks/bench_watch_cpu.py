"""``workflow-hub watch`` CPU against the CPU of the process it watches (issue 38).

This process is the publisher a Celery bridge would be, without Celery: a served hub
(``serve_hub``) and a ``RunTracker`` with graphs, fed the facts the bridge makes for ~10 000
task lifecycles (roots of ``--per-root`` tasks, each task added pending, then running, then
completed, each root ended when its last task is), at ``--rate`` tasks a second. A real
``workflow-hub watch`` process follows it, in a pseudo-terminal of ``--size`` (the live view) or,
with ``--plain``, on a pipe (one line per frame). Printed: the CPU (user + system) each process
spent from the first task to the moment the watch had shown the last root ended, and their
ratio; then the watch's CPU a second while the hub is quiet (all those roots, nothing changing). Goal (issue 38): the watch costs less CPU than the process it watches (ratio < 1).

    .venv/bin/python benchmarks/bench_watch_cpu.py [--tasks 10000] [--plain] [--size 80x24]

``make bench`` (``run_all.py``) runs a shorter form: the live view at 80x24, 5 000 tasks (2 000
with ``--quick``), best of two runs, CPU per task against the publisher's (goal <= 1).
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
import uuid
from fcntl import ioctl
from functools import partial
from pathlib import Path

import trio

import workflow_hub
from _harness import Goal, HubFactory, Row, Scale
from workflow_hub import WorkflowActivityHub
from workflow_hub.server import serve_hub
from workflow_hub.tracker import RunTracker

# The watch runs the package this process imported (a before/after comparison sets PYTHONPATH).
SOURCE = Path(workflow_hub.__file__).resolve().parents[1]
_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a live process (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Reader:
    """Drains the watch's output in a thread (a terminal that is not read blocks its writer) and
    notes when a marker appeared in it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._tail = b""
        self.bytes = 0
        self.lock = threading.Lock()
        self._wanted: tuple[bytes, threading.Event] | None = None
        self.cpu = 0.0
        """CPU this thread spent (the bench's own, not the publisher's)."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def tail(self) -> str:
        with self.lock:
            return self._tail[-2000:].decode(errors="replace")

    def expect(self, marker: str) -> threading.Event:
        event = threading.Event()
        with self.lock:
            self._wanted = (marker.encode(), event)
            if marker.encode() in _ESCAPES.sub(b"", self._tail):
                event.set()
        return event

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self._fd], [], [], 0.5)
            if not ready:
                continue
            started = time.thread_time()
            try:
                chunk = os.read(self._fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.bytes += len(chunk)
                self._tail = (self._tail + chunk)[-(1 << 13) :]
                if self._wanted is not None and self._wanted[0] in _ESCAPES.sub(b"", self._tail):
                    self._wanted[1].set()
            self.cpu += time.thread_time() - started


def start_watch(
    url: str, *, plain: bool, size: tuple[int, int], profile: str | None
) -> tuple[subprocess.Popen[bytes], _Reader]:
    program = shutil.which("workflow-hub", path=str(Path(sys.executable).parent))
    command = [program or "workflow-hub", "watch", url]
    if profile:  # the main thread only (rich draws the live view from a thread of its own)
        command = [sys.executable, "-m", "cProfile", "-o", profile, "-m", "workflow_hub._cli"]
        command += ["watch", url]
    env = {**os.environ, "PYTHONPATH": str(SOURCE)}
    if plain:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        assert process.stdout is not None
        return process, _Reader(process.stdout.fileno())
    master, slave = pty.openpty()
    columns, lines = size
    ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    env.update(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines))
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    return process, _Reader(master)


def stop_watch(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


async def _feed(tracker: RunTracker, tasks: int, per_root: int, rate: float) -> list[str]:
    """The facts of ``tasks`` task lifecycles, ``per_root`` to a root, at ``rate`` tasks/s."""
    roots: list[str] = []
    started = trio.current_time()
    done = 0
    while done < tasks:
        root_id = str(uuid.uuid4())
        roots.append(root_id)
        tracker.add_run(root_id, status="running")
        count = min(per_root, tasks - done)
        for index in range(count):
            task_id = root_id if index == 0 else str(uuid.uuid4())
            parents = (root_id,) if index else ()
            tracker.add_stage(root_id, task_id, f"proj.tasks.step_{index % 7}", parent_ids=parents)
            tracker.set_stage_status(root_id, task_id, "running")
            tracker.set_stage_status(root_id, task_id, "completed")
            done += 1
            # Paced as a bridge is, by the events that arrive: never ahead of ``rate``.
            await trio.sleep_until(started + done / rate)
        tracker.set_run_status(root_id, "completed", executor_ended=True)
    return roots


async def _main(args: argparse.Namespace) -> dict[str, float]:
    async with WorkflowActivityHub() as hub, trio.open_nursery() as nursery:
        url = await nursery.start(partial(serve_hub, hub, port=0))
        tracker = RunTracker(hub.register_publisher(), owner_session_id="bench", include_graph=True)
        tracker.start()
        process, reader = start_watch(url, plain=args.plain, size=args.size, profile=args.profile)
        try:
            shown = reader.expect("live")
            if not await trio.to_thread.run_sync(shown.wait, 30):
                raise SystemExit(f"watch showed nothing in 30 s: {reader.tail()!r}")
            await trio.sleep(1.0)
            watch_before, own_before = cpu_of(process.pid), _own_cpu() - reader.cpu
            wall_before = time.monotonic()
            tracker.add_run("the-end", status="running")  # ended last: the watch caught up
            roots = await _feed(tracker, args.tasks, args.per_root, args.rate)
            end = reader.expect("the-end idle" if args.plain else "watch  idle")
            tracker.set_run_status("the-end", "completed", executor_ended=True)
            if not await trio.to_thread.run_sync(end.wait, 120):
                raise SystemExit(f"watch did not show the end in 120 s: {reader.tail()!r}")
            if not args.plain:
                await trio.sleep(0.5)  # the last redraw of the live view
            own = _own_cpu() - reader.cpu - own_before
            watch = cpu_of(process.pid) - watch_before
            wall = time.monotonic() - wall_before
            # Then a quiet hub (all those roots, nothing changing): what watching it costs.
            quiet_before = cpu_of(process.pid)
            await trio.sleep(args.quiet)
            quiet = (cpu_of(process.pid) - quiet_before) / args.quiet if args.quiet else 0.0
        finally:
            stop_watch(process)
            nursery.cancel_scope.cancel()
    return {
        "roots": float(len(roots)),
        "wall": wall,
        "publisher": own,
        "watch": watch,
        "bytes": float(reader.bytes),
        "quiet": quiet,
    }


TASKS: dict[str, int] = {"full": 5_000, "quick": 2_000, "smoke": 200}
"""Task lifecycles fed in ``make bench`` (``run_all.py``), 100 to a root, 1 000 a second."""


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    """The live view at 80x24, best of two runs (one at smoke scale), against the publisher."""
    if label != "hub":
        return []  # the served hub is the default one: one variant is the measurement
    tasks = TASKS.get(scale.name, TASKS["full"])
    args = argparse.Namespace(
        tasks=tasks, per_root=100, rate=1_000.0, plain=False, size=(80, 24), quiet=0.0, profile=None
    )
    runs = [_main_sync(args) for _ in range(1 if scale.name == "smoke" else 2)]
    best = min(runs, key=lambda result: result["watch"] / result["publisher"])
    return [
        Row(
            benchmark="watch_cpu",
            case=f"watch CPU per task, live view 80x24, {tasks} tasks in {int(best['roots'])} roots",
            variant=label,
            value=best["watch"] / tasks * 1e9,
            unit="ns",
            reference="publisher CPU per task (hub, server, tracker)",
            reference_value=best["publisher"] / tasks * 1e9,
            goal=Goal(op="<=", threshold=1.0),
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--per-root", type=int, default=100)
    parser.add_argument("--rate", type=float, default=1_000.0, help="tasks a second")
    parser.add_argument("--plain", action="store_true", help="watch on a pipe (plain lines)")
    parser.add_argument(
        "--size",
        type=lambda text: tuple(int(part) for part in text.split("x")),
        default=(80, 24),
        help="the pseudo-terminal's COLUMNSxLINES (default 80x24)",
    )
    parser.add_argument(
        "--quiet", type=float, default=5.0, help="seconds of a quiet hub measured after the feed"
    )
    parser.add_argument("--profile", metavar="PATH", help="cProfile the watch into PATH")
    args = parser.parse_args()
    result = _main_sync(args)
    kind = "plain" if args.plain else f"{args.size[0]}x{args.size[1]}"
    print(
        f"watch ({kind}) {result['watch']:.2f} s CPU · publisher (hub, server, tracker) "
        f"{result['publisher']:.2f} s CPU · ratio {result['watch'] / result['publisher']:.2f}"
        f" · {args.tasks} tasks in {int(result['roots'])} roots, {result['wall']:.1f} s wall,"
        f" {result['bytes'] / 1e6:.1f} MB drawn · quiet hub: watch {result['quiet'] * 1000:.0f} ms"
        " CPU a second"
    )


def _main_sync(args: argparse.Namespace) -> dict[str, float]:
    return trio.run(_main, args)


if __name__ == "__main__":
    main()
