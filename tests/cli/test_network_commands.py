"""`workflow-hub serve`, `watch` and `snapshot`, and `demo --serve` (issue 15), as users run them.

Each command runs as a real process on loopback with a port of its own choosing (port 0), bounded
by a timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable

from workflow_hub import SnapshotFrame
from workflow_hub.wire import loads

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def command(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, env=ENV, check=False
    )


def test_serve_prints_its_url_and_snapshot_and_watch_read_it() -> None:
    """Driven by events: watch runs until it showed a snapshot and a hook event, then Ctrl-C; the
    server then ends on SIGTERM with status 0 (no guess at how long either takes to start)."""
    with subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--seed", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
    ) as server:
        try:
            url = _url_of(server)
            assert url.startswith("http://127.0.0.1:")
            snapshot = command("snapshot", url)
            with subprocess.Popen(
                [*CLI, "watch", url, "--duration", "60"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=ENV,
            ) as watch:
                try:
                    lines = _lines_until(watch, lambda line: line.startswith("hook "))
                    if "connection live" not in lines:
                        lines += _lines_until(watch, "connection live")
                    watch.send_signal(signal.SIGINT)
                    _, err = watch.communicate(timeout=30)
                finally:
                    if watch.poll() is None:
                        watch.kill()
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
    assert server.returncode == 0
    assert snapshot.returncode == 0, snapshot.stderr
    assert isinstance(loads(SnapshotFrame, snapshot.stdout), SnapshotFrame)
    assert watch.returncode == 0, err
    assert "connection live" in lines
    assert any(line.startswith("frame snapshot") for line in lines)
    assert any(line.startswith("hook ") for line in lines)  # serve passes its HookRunner


def test_serve_refuses_a_public_address_without_a_token() -> None:
    result = command("serve", "--host", "0.0.0.0", "--port", "0", "--duration", "1")
    assert result.returncode == 2
    assert "token" in result.stderr
    assert "Traceback" not in result.stderr


def test_snapshot_of_a_server_that_wants_a_token_says_so() -> None:
    with subprocess.Popen(
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
    """Issue 24: the picture is marked stale, with the reason (plain output: a line). Driven by
    events (the server is stopped once watch is live), not by the two commands' start-up times."""
    with (
        subprocess.Popen(
            [*CLI, "serve", "--port", "0", "--seed", "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=ENV,
        ) as server,
        subprocess.Popen(
            [*CLI, "watch", _url_of(server), "--duration", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        ) as watch,
    ):
        try:
            lines = _lines_until(watch, "connection live")
            server.send_signal(signal.SIGTERM)  # the hub goes away
            server.wait(timeout=30)
            lines += _lines_until(watch, "connection reconnecting (connection refused)")
            watch.send_signal(signal.SIGINT)
            _, err = watch.communicate(timeout=30)
        finally:
            for process in (server, watch):
                if process.poll() is None:
                    process.kill()
    assert watch.returncode == 0, err
    assert lines.index("connection live") < lines.index(
        "connection reconnecting (connection refused)"
    )


def _url_of(server: subprocess.Popen[str]) -> str:
    assert server.stdout is not None
    return server.stdout.readline().strip()


def _lines_until(process: subprocess.Popen[str], wanted: str | Callable[[str], bool]) -> list[str]:
    """Lines ``process`` prints up to ``wanted`` (that line, or the first that satisfies it);
    its ``--duration`` bounds the wait."""
    assert process.stdout is not None
    found = wanted if callable(wanted) else wanted.__eq__
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if found(lines[-1]):
            return lines
    raise AssertionError(f"never printed {wanted!r}: {lines[-5:]}")


def test_the_served_demo_prints_the_watch_and_status_commands() -> None:
    result = command("serve", "--port", "0", "--duration", "1")
    assert result.returncode == 0, result.stderr
    url = result.stdout.splitlines()[0]
    assert f"workflow-hub watch {url}" in result.stderr
    assert f"workflow-hub status {url}" in result.stderr
