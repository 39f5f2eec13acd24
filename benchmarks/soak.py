"""``make soak``: the promises under minutes of attack (issue 37), on loopback only.

For ``--seconds`` (``SOAK_SECONDS``, default 180) it runs, all at once:

- a served hub (``serve_hub``, in a process of its own so that its RSS is its own) with a
  ``RunTracker`` holding ``--roots`` roots (default 5 000), ``--rate`` of them changing a second;
- against it: rounds of ``--stalled`` clients (half SSE, half WebSocket) that send their request
  and never read, held ``--hold`` seconds and then dropped; a churn of clients that connect, read
  a little and drop; one live SSE reader; and ``workflow-hub watch`` (the console script);
- a Redis pair: ``workflow-hub serve --redis … --no-http`` mirroring the demo scheduler and
  ``workflow-hub serve --fleet …`` serving it, with ``workflow-hub watch redis://…``, while
  redis-server (no persistence) is stopped for ``--outage`` seconds (8) and started again every
  ``--redis-period`` seconds: every restart loses the data, so every source resyncs.

It prints the served hub's RSS and open sockets over time, the cost of a stalled client, what is
left after they leave, and how long the fleet took to come back after each restart; and exits 1
when a promise broke: a process died or said "internal error", RSS after the clients left kept
growing round after round (or a stalled client cost more than ``--max-per-client`` KiB), the live
reader or a ``watch`` went silent for ``--stall`` seconds, sockets stayed open after every client
left, or the fleet did not come back within ``--recover`` seconds of a restart.

``python benchmarks/soak.py --seconds 60 --roots 2000`` for a short run; docs/performance.md
("The soak") says what each number means.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

MiB = 2**20

_HUB = """
import sys, time, trio
from functools import partial
from workflow_hub import open_hub
from workflow_hub.server import serve_hub
from workflow_hub.tracker import RunTracker

async def main(count, rate):
    async with open_hub() as hub, trio.open_nursery() as nursery:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="soak", clock=lambda: time.time() * 1000
        )
        with tracker.hydrating():
            for index in range(count):
                tracker.add_run(f"run-{{index}}", status="running", labels={{"team": f"t{{index % 7}}"}})
        print(await nursery.start(partial(serve_hub, hub, host="127.0.0.1", port=0)), flush=True)
        index = 0
        while True:
            await trio.sleep(1 / rate)
            run = f"run-{{index % count}}"
            tracker.set_run_status(run, "paused" if (index // count) % 2 == 0 else "running")
            index += 1

trio.run(main, {roots}, {rate})
"""

_SSE = b"GET /v1/activity HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
_WS = (
    b"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


# --- the processes: every one in its own group, stopped on every path ------------------------


class Processes:
    """The soak's processes; each one's stderr goes to a file (read when it fails)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: dict[str, subprocess.Popen[str]] = {}
        self.expected_end: set[str] = set()

    def start(
        self, name: str, args: list[str], *, stdout: int | IO[str] = subprocess.PIPE
    ) -> subprocess.Popen[str]:
        log = (self.folder / f"{name}.err").open("w")
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=log,
            text=True,
            start_new_session=True,
        )
        log.close()
        self.started[name] = process
        return process

    def errors(self, name: str) -> str:
        path = self.folder / f"{name}.err"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, name: str) -> None:
        process = self.started.pop(name, None)
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def stop_all(self) -> None:
        for name in reversed(list(self.started)):
            self.stop(name)

    def dead(self) -> list[str]:
        return [
            f"{name} exited ({process.returncode}): {self.errors(name)[-600:]!r}"
            for name, process in self.started.items()
            if process.poll() is not None and name not in self.expected_end
        ]


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _sockets(pid: int) -> int:
    count = 0
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return count


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("workflow-hub")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workflow_hub._cli"]


# --- the clients ------------------------------------------------------------------------------


class Silence:
    """When something last said anything, and the longest it stayed silent (a stalled observer)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.last = time.monotonic()
        self.longest = 0.0
        self.count = 0
        self.lock = threading.Lock()

    def heard(self, amount: int = 1) -> None:
        with self.lock:
            now = time.monotonic()
            self.longest = max(self.longest, now - self.last)
            self.last = now
            self.count += amount

    def quiet_for(self) -> float:
        with self.lock:
            return time.monotonic() - self.last


def _read_lines(stream: IO[str], silence: Silence) -> None:
    with contextlib.suppress(ValueError, OSError):
        for _ in stream:
            silence.heard()


def _live_reader(port: int, silence: Silence, stop: threading.Event) -> None:
    """One SSE client that keeps up; it reconnects (and says so) if the server closes it."""
    while not stop.is_set():
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), 10) as sock,
        ):
            sock.sendall(_SSE)
            sock.settimeout(1.0)
            while not stop.is_set():
                try:
                    data = sock.recv(1 << 20)
                except TimeoutError:
                    continue
                if not data:
                    break
                silence.heard(data.count(b"\n\n"))
        stop.wait(0.5)


def _churn(port: int, counter: list[int], stop: threading.Event) -> None:
    """Clients that connect, read a little (or nothing) and drop, one after another."""
    index = 0
    while not stop.is_set():
        index += 1
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), 10) as sock,
        ):
            sock.sendall(_WS if index % 2 else _SSE)
            if index % 3:
                sock.settimeout(5.0)
                with contextlib.suppress(OSError):
                    sock.recv(65536)
            counter[0] += 1
        stop.wait(0.02)


def _stall(port: int, clients: int) -> list[socket.socket]:
    sockets = []
    for index in range(clients):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(_WS if index % 2 else _SSE)
        except OSError:
            sock.close()
            continue
        sockets.append(sock)
    return sockets


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


# --- the Redis pair ----------------------------------------------------------------------------


class RedisPair:
    """redis-server (no persistence), the mirror, the fleet's server and a ``watch`` of it."""

    def __init__(self, processes: Processes, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server is not installed (make redis-server installs it)")
        self.binary = binary
        self.processes = processes
        self.folder = folder
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.fleet_url = ""
        self.watch = Silence("watch redis://")
        self.recoveries: list[float] = []

    def start_redis(self) -> None:
        self.processes.start(
            "redis-server",
            [
                self.binary,
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.folder)),
            ],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 1) as sock,
            ):
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def start(self) -> None:
        self.start_redis()
        cli = _cli()
        self.processes.start(
            "serve --redis",
            [*cli, "serve", "--redis", self.url, "--source", "soak", "--no-http"],
            stdout=subprocess.DEVNULL,
        )
        fleet = self.processes.start(
            "serve --fleet", [*cli, "serve", "--fleet", self.url, "--port", "0"]
        )
        assert fleet.stdout is not None
        self.fleet_url = fleet.stdout.readline().strip()
        if not self.fleet_url.startswith("http://"):
            raise RuntimeError(
                f"serve --fleet printed no URL: {self.processes.errors('serve --fleet')}"
            )
        watch = self.processes.start("watch redis", [*cli, "watch", self.url])
        assert watch.stdout is not None
        threading.Thread(target=_read_lines, args=(watch.stdout, self.watch), daemon=True).start()

    def source_state(self) -> str | None:
        """The state ``/v1/sources`` of the fleet server gives the mirrored source, if listed."""
        try:
            listed = _get_json(f"{self.fleet_url}/v1/sources")
        except (OSError, ValueError, urllib.error.URLError):
            return None
        sources = listed.get("sources", listed) if isinstance(listed, dict) else listed
        for entry in sources if isinstance(sources, list) else []:
            if isinstance(entry, dict) and entry.get("source") == "soak":
                state = entry.get("state")
                return state if isinstance(state, str) else None
        return None

    def restart(self, outage: float, recover: float, failures: list[str]) -> None:
        """Redis stops for ``outage`` seconds and comes back empty; the fleet must come back."""
        self.processes.stop("redis-server")
        time.sleep(outage)
        self.start_redis()
        started = time.monotonic()
        while time.monotonic() - started < recover:
            state = self.source_state()
            if state not in (None, "unknown"):
                self.recoveries.append(time.monotonic() - started)
                return
            time.sleep(0.5)
        failures.append(f"the fleet did not show the source again within {recover:g}s of a restart")


# --- the run ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 180)))
    parser.add_argument("--roots", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=50.0, help="root changes a second")
    parser.add_argument("--stalled", type=int, default=100, help="never-reading clients a round")
    parser.add_argument("--hold", type=float, default=10.0, help="seconds they stay connected")
    parser.add_argument("--outage", type=float, default=8.0, help="seconds Redis stays down")
    parser.add_argument("--redis-period", type=float, default=45.0)
    parser.add_argument("--recover", type=float, default=60.0)
    parser.add_argument("--stall", type=float, default=30.0, help="longest silence allowed")
    parser.add_argument("--max-per-client", type=float, default=1024.0, metavar="KIB")
    parser.add_argument("--max-growth", type=float, default=32.0, metavar="MIB")
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="workflow-hub-soak-"))
    processes = Processes(folder)
    failures: list[str] = []
    stop = threading.Event()
    started = time.monotonic()

    def say(text: str) -> None:
        print(f"{time.monotonic() - started:6.1f}s  {text}", flush=True)

    try:
        hub = processes.start(
            "hub", [sys.executable, "-c", _HUB.format(roots=args.roots, rate=args.rate)]
        )
        assert hub.stdout is not None
        hub_url = hub.stdout.readline().strip()
        if not hub_url.startswith("http://"):
            raise RuntimeError(f"the hub printed no URL: {processes.errors('hub')}")
        port = int(hub_url.rpartition(":")[2])
        time.sleep(2)
        base_rss, base_sockets = _rss(hub.pid), _sockets(hub.pid)
        say(
            f"hub at {hub_url}: {args.roots:,} roots, {args.rate:g} changes/s; "
            f"RSS {base_rss / MiB:.1f} MiB, {base_sockets} sockets"
        )

        live = Silence("the live SSE reader")
        watch = Silence("watch http://")
        churned = [0]
        threads = [
            threading.Thread(target=_live_reader, args=(port, live, stop), daemon=True),
            threading.Thread(target=_churn, args=(port, churned, stop), daemon=True),
        ]
        watcher = processes.start("watch http", [*_cli(), "watch", hub_url])
        assert watcher.stdout is not None
        threads.append(
            threading.Thread(target=_read_lines, args=(watcher.stdout, watch), daemon=True)
        )
        pair = RedisPair(processes, folder)
        pair.start()
        say(f"redis-server at {pair.url}; fleet at {pair.fleet_url}")
        for thread in threads:
            thread.start()

        fleet_rss: list[int] = []  # the fleet server's, every 10 s

        def sample() -> None:
            while not stop.wait(10):
                fleet = processes.started.get("serve --fleet")
                if fleet is not None:
                    fleet_rss.append(_rss(fleet.pid))
                say(
                    f"hub RSS {_rss(hub.pid) / MiB:7.1f} MiB, {_sockets(hub.pid):4d} sockets; "
                    f"fleet server RSS {fleet_rss[-1] / MiB if fleet_rss else 0:6.1f} MiB; "
                    f"churned {churned[0]}, live events {live.count}, watch lines {watch.count}, "
                    f"watch redis:// lines {pair.watch.count}"
                )

        threading.Thread(target=sample, daemon=True).start()

        def restarts() -> None:
            while not stop.wait(args.redis_period):
                say(f"redis-server stops for {args.outage:g}s (and loses its data)")
                pair.restart(args.outage, args.recover, failures)
                if pair.recoveries:
                    say(
                        f"the fleet shows the source again {pair.recoveries[-1]:.1f}s after "
                        f"({pair.source_state()})"
                    )

        restarter = threading.Thread(target=restarts, daemon=True)
        restarter.start()

        rounds: list[tuple[int, int, int, int]] = []  # before, stalled, after RSS; sockets after
        deadline = started + args.seconds
        while time.monotonic() + args.hold + 8 < deadline:
            before = _rss(hub.pid)
            held = _stall(port, args.stalled)
            # The peak while they are held: the budget closes most of them within seconds.
            stalled, held_sockets = before, _sockets(hub.pid)
            until = time.monotonic() + args.hold
            while time.monotonic() < until:
                stalled, held_sockets = max(stalled, _rss(hub.pid)), _sockets(hub.pid)
                time.sleep(0.25)
            for sock in held:
                sock.close()
            time.sleep(5)
            after, after_sockets = _rss(hub.pid), _sockets(hub.pid)
            rounds.append((before, stalled, after, after_sockets))
            say(
                f"round {len(rounds)}: {len(held)} stalled clients: RSS {before / MiB:.1f} -> "
                f"{stalled / MiB:.1f} MiB ({(stalled - before) / max(1, len(held)) / 1024:.0f} KiB "
                f"a client at the peak; {held_sockets} sockets at the end: the budget closed the others); "
                f"{after / MiB:.1f} MiB and {after_sockets} sockets after they left"
            )
            for problem in processes.dead():
                failures.append(problem)
            if failures:
                break
            for silence in (live, watch, pair.watch):
                if silence.quiet_for() > args.stall:
                    failures.append(f"{silence.name} heard nothing for {silence.quiet_for():.0f}s")
            if failures:
                break

        stop.set()
        restarter.join(args.outage + args.recover + 15)
        failures.extend(processes.dead())
        for name in ("serve --fleet", "watch redis", "serve --redis"):
            if "internal error" in processes.errors(name):
                failures.append(f"{name} said: {processes.errors(name)[-400:]!r}")
        for silence in (live, watch, pair.watch):
            if silence.longest > args.stall:
                failures.append(f"{silence.name} was silent for {silence.longest:.0f}s at a time")

        # Every client leaves: the hub's sockets go back to what it had before any came.
        processes.expected_end.add("watch http")
        processes.stop("watch http")
        waited = time.monotonic()
        while _sockets(hub.pid) > base_sockets and time.monotonic() - waited < 30:
            time.sleep(0.5)
        left = _sockets(hub.pid)
        final_rss = _rss(hub.pid)
        say(
            f"every client gone: {left} sockets (before any came: {base_sockets}), "
            f"RSS {final_rss / MiB:.1f} MiB (before any came: {base_rss / MiB:.1f} MiB)"
        )
        if left > base_sockets:
            failures.append(
                f"{left - base_sockets} sockets still open 30 s after every client left"
            )

        print()
        print("summary")
        if rounds:
            per = [(s - b) / max(1, args.stalled) / 1024 for b, s, _, _ in rounds]
            afters = [a for _, _, a, _ in rounds]
            growth = (max(afters[1:] or afters) - afters[0]) / MiB
            print(f"  rounds of {args.stalled} stalled clients: {len(rounds)}")
            print(
                f"  cost of a stalled client ((peak RSS while held - before) / clients): "
                f"{min(per):.0f}-{max(per):.0f} KiB (goal <= 256 KiB of its own; fail above "
                f"{args.max_per_client:g})"
            )
            print(
                f"  RSS after they left: {afters[0] / MiB:.1f} MiB after round 1, "
                f"{afters[-1] / MiB:.1f} MiB after round {len(rounds)} "
                f"(growth {growth:+.1f} MiB; fail above {args.max_growth:g})"
            )
            if max(per) > args.max_per_client:
                failures.append(f"a stalled client cost {max(per):.0f} KiB")
            if growth > args.max_growth:
                failures.append(
                    f"RSS after the clients left grew by {growth:.1f} MiB over the rounds"
                )
        else:
            failures.append("no round of stalled clients ran: give more --seconds")
        if len(fleet_rss) > 1:
            fleet_growth = (fleet_rss[-1] - fleet_rss[0]) / MiB
            print(
                f"  the fleet server's RSS: {fleet_rss[0] / MiB:.1f} MiB at the first sample, "
                f"{fleet_rss[-1] / MiB:.1f} MiB at the last ({fleet_growth:+.1f} MiB through "
                f"{len(pair.recoveries)} Redis restarts; fail above {args.max_growth:g})"
            )
            if fleet_growth > args.max_growth:
                failures.append(f"the fleet server's RSS grew by {fleet_growth:.1f} MiB")
        print(f"  connect/drop clients: {churned[0]}")
        print(
            f"  longest silence: live reader {live.longest:.1f}s, watch {watch.longest:.1f}s, "
            f"watch redis:// {pair.watch.longest:.1f}s (fail above {args.stall:g})"
        )
        print(
            "  fleet back after each Redis restart: "
            + (", ".join(f"{seconds:.1f}s" for seconds in pair.recoveries) or "no restart ran")
        )
        print(f"  sockets of the hub after every client left: {left} (before any: {base_sockets})")
    except BaseException:
        stop.set()
        raise
    finally:
        stop.set()
        processes.stop_all()
        shutil.rmtree(folder, ignore_errors=True)

    if failures:
        print("\nBROKEN PROMISES:")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print("\nall promises held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
