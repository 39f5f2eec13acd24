"""`workflow-hub serve`, `watch` and `snapshot`, and `demo --serve` (issue 15), as users run them.

Each command runs as a real process on loopback with a port of its own choosing (port 0), bounded
by a timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.support.processes import lines_until, owned_process
from workflow_hub import SnapshotFrame
from workflow_hub.wire import loads

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def command(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, env=ENV, check=False
    )


def test_serve_prints_its_url_and_snapshot_and_watch_read_it() -> None:
    # Both commands run until their events are seen, then Ctrl-C (no --duration to guess).
    with owned_process(
        [*CLI, "serve", "--port", "0", "--seed", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
    ) as server:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        snapshot = command("snapshot", url)
        with owned_process(
            [*CLI, "watch", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
        ) as watch:
            lines = lines_until(
                watch,
                lambda lines: (
                    "connection live" in lines
                    and any(line.startswith("frame snapshot") for line in lines)
                    and any(line.startswith("hook ") for line in lines)
                ),
            )
            watch.send_signal(signal.SIGINT)
            _, err = watch.communicate(timeout=60)
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
    assert snapshot.returncode == 0, snapshot.stderr
    assert isinstance(loads(SnapshotFrame, snapshot.stdout), SnapshotFrame)
    assert watch.returncode in (0, 130), err  # ended by Ctrl-C
    assert "Traceback" not in err
    assert "connection live" in lines
    assert any(line.startswith("frame snapshot") for line in lines)
    assert any(line.startswith("hook ") for line in lines)  # serve passes its HookRunner


def test_serve_refuses_a_public_address_without_a_token() -> None:
    result = command("serve", "--host", "0.0.0.0", "--port", "0", "--duration", "1")
    assert result.returncode == 2
    assert "token" in result.stderr
    assert "Traceback" not in result.stderr


def test_snapshot_of_a_server_that_wants_a_token_says_so() -> None:
    with owned_process(
        # Long enough for two commands to start on a loaded machine; ended when they are done.
        [*CLI, "serve", "--port", "0", "--duration", "60", "--token", "s3cret"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
    ) as server:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        refused = command("snapshot", url, "--token", "wrong")
        allowed = command("snapshot", url, "--token", "s3cret")
        server.terminate()
        server.wait(timeout=30)
    assert refused.returncode == 1
    assert "401" in refused.stderr
    assert allowed.returncode == 0, allowed.stderr


def test_demo_serve_prints_the_url_beside_the_view() -> None:
    result = command("demo", "--serve", "127.0.0.1:0", "--duration", "2", "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert "serving at http://127.0.0.1:" in result.stderr
    assert result.stdout.startswith("frame snapshot")


def test_watch_says_why_it_reconnects_when_the_hub_goes_away() -> None:
    """Issue 24: the picture is marked stale, with the reason (plain output: a line)."""
    with owned_process(
        [*CLI, "serve", "--port", "0", "--duration", "3", "--seed", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
    ) as server:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        watched = command("watch", url, "--duration", "8")
        server.wait(timeout=30)
    assert watched.returncode == 0, watched.stderr
    lines = watched.stdout.splitlines()
    assert "connection live" in lines
    assert "connection reconnecting (connection refused)" in lines, lines[-5:]
    assert lines.index("connection live") < lines.index(
        "connection reconnecting (connection refused)"
    )


def test_the_served_demo_prints_the_watch_and_status_commands() -> None:
    result = command("serve", "--port", "0", "--duration", "1")
    assert result.returncode == 0, result.stderr
    url = result.stdout.splitlines()[0]
    assert f"workflow-hub watch {url}" in result.stderr
    assert f"workflow-hub status {url}" in result.stderr
