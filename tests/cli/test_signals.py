"""Issue 36: Ctrl-C or SIGTERM ends ``serve`` as ``--duration`` does, and a fleet never cries wolf.

Real ``workflow-hub`` processes against a real redis-server: ``serve --redis`` is sent SIGINT or
SIGTERM; its source must be declared unavailable before it exits (the last entry in Redis is its
``unavailable`` snapshot), a fleet server's ``/v1/sources`` and a ``watch redis://`` must say
"declared unavailable" at once, and still say it (with the time it stopped, never "crashed?")
once its mirror is stale. Plain ``serve`` and ``serve --fleet`` end quickly and quietly too.

The command line is not an API: the tests run it as a user does and read what it prints.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import httpx
import pytest
import trio

from tests.support.redis_server import RedisServer

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "WORKFLOW_HUB_DEBUG": ""}
DEADLINE = 60.0
"""A safety net for what each step waits for (an event: a line, an answer, an exit)."""

T = TypeVar("T")


@contextmanager
def running(*args: str) -> Iterator[subprocess.Popen[str]]:
    """A command in its own process group, killed (the group) on every way out of the test."""
    process = subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=DEADLINE)
        reader = _readers.pop(process.pid, None)
        if reader is not None:
            reader.join(timeout=DEADLINE)  # at the end of its stdout, now that it exited
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


_readers: dict[int, threading.Thread] = {}


def first_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line.startswith("http://127.0.0.1:"), (line, process.stderr and process.stderr.read())
    return line


def lines_of(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The lines ``process`` prints, as they come (read by a thread until its stdout closes)."""
    lines: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    assert stdout is not None

    def read() -> None:
        for line in stdout:
            lines.put(line.rstrip("\n"))

    reader = _readers[process.pid] = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines


def wait_for(what: Callable[[], T | bool | None], description: str) -> T:
    """What ``what`` returns once it is true: polled, bounded by :data:`DEADLINE`."""
    deadline = time.monotonic() + DEADLINE
    while True:
        found = what()
        if found:
            return found  # type: ignore[return-value]
        assert time.monotonic() < deadline, f"never: {description}"
        time.sleep(0.05)


def described(fleet_url: str, source: str) -> dict[str, Any] | None:
    """``source`` as the fleet server's ``/v1/sources`` lists it (``None`` before it does)."""
    body = httpx.get(f"{fleet_url}/v1/sources", timeout=DEADLINE).json()
    return next((entry for entry in body["sources"] if entry["source"] == source), None)


def last_frame(redis_url: str, key: str) -> dict[str, Any]:
    """The frame of the last entry of a source's stream in Redis."""

    async def read() -> dict[str, Any]:
        import coredis

        async with coredis.Redis.from_url(redis_url, decode_responses=True) as redis:
            [entry] = await redis.xrevrange(key, count=1)
            frame: dict[str, Any] = json.loads(entry.field_values["frame"])
            return frame

    return trio.run(read)


def ended(process: subprocess.Popen[str], sent: signal.Signals) -> tuple[int, str, str, float]:
    """Send ``sent`` to ``process``; its exit status, stdout, stderr and how long it took."""
    started = time.monotonic()
    process.send_signal(sent)
    out, err = process.communicate(timeout=DEADLINE)
    return process.returncode, out, err, time.monotonic() - started


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_serve_redis_is_declared_unavailable_at_once_and_never_crashed(
    redis_server: RedisServer, sent: signal.Signals
) -> None:
    """N5, issue 36: Ctrl-C or SIGTERM of ``serve --redis`` ends it as ``--duration`` does: the
    source's ``unavailable`` frame is in Redis when the command exits (status 0, nothing but its
    start-up lines on stderr), the fleet says "declared unavailable" at once, and once the
    mirror is stale (``stale_after``, 5 s) it says "declared unavailable (stopped at …)",
    never "crashed?"."""
    prefix = f"sig-{uuid.uuid4().hex[:8]}"
    source = f"sched-{sent.name.lower()}"
    with (
        running("serve", "--fleet", redis_server.url, "--prefix", prefix, "--port", "0") as fleet,
        running("watch", redis_server.url, "--prefix", prefix) as watch,
    ):
        fleet_url = first_line(fleet)
        watched = lines_of(watch)
        with running(
            *("serve", "--redis", redis_server.url, "--source", source, "--prefix", prefix),
            *("--port", "0", "--seed", "1"),
        ) as serve:
            first_line(serve)
            wait_for(
                lambda: (described(fleet_url, source) or {}).get("availability") == "ready" or None,
                "the source is served as ready",
            )
            status, _, err, took = ended(serve, sent)
        assert status == 0, err
        assert not re.search(r"Traceback|Error|Exception", err), err
        assert [line.split(":")[0] for line in err.splitlines()] == ["workflow-hub serve"] * 2, err
        # Declared before it exited: the last entry is the scheduler's goodbye.
        frame = last_frame(redis_server.url, f"{prefix}:{source}:frames")
        assert (frame["kind"], frame["availability"]) == ("snapshot", "unavailable")
        assert took < 15, f"{took:.1f} s to stop (a generous bound: 2 s of grace at most)"
        at_once = wait_for(
            lambda: (entry := described(fleet_url, source)) and entry["declared"] and entry,
            "the fleet server says the source declared itself unavailable",
        )
        assert (at_once["availability"], at_once["state"]) == ("unavailable", "unknown")
        # Once its mirror is stale it stays declared (never crashed).
        later = wait_for(
            lambda: (entry := described(fleet_url, source)) and entry["stale"] and entry,
            "the source goes stale",
        )
        assert later["declared"] is True
        stopped_at = time.strftime("%H:%M:%S", time.localtime(later["last_seen"]))
        # watch's lines: the same words, as soon as each is true.
        expected = f"{source}: declared unavailable (stopped at {stopped_at})"
        lines: list[str] = []
        deadline = time.monotonic() + DEADLINE
        while expected not in lines:
            remaining = deadline - time.monotonic()
            assert remaining > 0, lines
            with suppress(queue.Empty):
                lines.append(watched.get(timeout=remaining))
        mine = [line for line in lines if line.startswith(f"{source}: ")]
        assert f"{source}: declared unavailable" in mine, mine
        assert not any("crashed" in line for line in lines), lines


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("mode", ["demo", "fleet"])
def test_serve_ends_quickly_and_quietly_on_ctrl_c_and_sigterm(
    redis_server: RedisServer, mode: str, sent: signal.Signals
) -> None:
    """Issue 36: plain ``serve`` and ``serve --fleet`` end on SIGINT or SIGTERM with status 0,
    without a traceback or a word more than their start-up lines."""
    args = ("--fleet", redis_server.url) if mode == "fleet" else ("--seed", "1")
    with running("serve", *args, "--port", "0") as serve:
        url = first_line(serve)
        assert httpx.get(f"{url}/livez" if mode == "fleet" else f"{url}/healthz").is_success
        status, out, err, took = ended(serve, sent)
    assert status == 0, err
    assert out == ""
    assert not re.search(r"Traceback|Error|Exception", err), err
    assert all(line.startswith("workflow-hub") for line in err.splitlines()), err
    assert took < 15, f"{took:.1f} s to stop (a generous bound: 2 s of grace at most)"
