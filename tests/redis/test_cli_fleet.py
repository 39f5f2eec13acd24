"""The Redis side of the command line: ``serve --redis``, ``serve --fleet`` and ``watch redis://``.

Issue 25 item 1: the documented ``serve --redis`` runs for as long as asked (round after round of
the demo's script, never "already tracked"), mirrored and served over HTTP; every flag works in
the mode given or is refused with one line. Real subprocesses against a real redis-server.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid

import httpx
import pytest

from tests.support.processes import lines_until
from tests.support.redis_server import RedisServer
from workflow_hub._cli import main

COMMAND = [sys.executable, "-m", "workflow_hub._cli"]


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        (["serve", "--redis", "redis://127.0.0.1:1/0"], "--redis needs --source NAME"),
        (["serve", "--source", "s"], "--source names the mirrored demo scheduler"),
        (["serve", "--prefix", "p"], "--prefix needs --redis or --fleet"),
        (["serve", "--no-http"], "--no-http needs --redis"),
        (
            ["serve", "--redis", "redis://h/0", "--fleet", "redis://h/0", "--source", "s"],
            "two modes",
        ),
        (["serve", "--fleet", "redis://h/0", "--seed", "1"], "--seed is for the demo"),
        (
            ["serve", "--redis", "redis://h/0", "--source", "s", "--no-http", "--token", "t"],
            "--token is for the HTTP server",
        ),
        (
            ["serve", "--redis", "redis://h/0", "--source", "s", "--no-http", "--port", "1"],
            "--host and --port are for the HTTP server",
        ),
        (["serve", "--fleet", "redis://h/abc"], "the database is a number"),
        (["serve", "--redis", "redis://h/0", "--source", "s", "--duration", "0"], "--duration"),
        (["watch", "redis://h/abc"], "the database is a number"),
        (["watch", "redis://h/0", "--token", "t"], "--token is for http:// URLs"),
    ],
)
def test_a_flag_that_cannot_work_in_its_mode_is_refused_in_one_line(
    arguments: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 1, 6: nothing is silently ignored; the refusal is one line, exit status 2 (argparse's
    own refusals, such as ``--duration 0``, exit through SystemExit, as on the command line)."""
    try:
        status = main(arguments)
    except SystemExit as exit:
        status = exit.code
    assert status == 2
    error = capsys.readouterr().err
    assert complaint in error
    assert error.count("\n") == 1, error


def last_of_sched_1(lines: list[str]) -> str:
    return next((line for line in reversed(lines) if line.startswith("sched-1")), "")


def test_serve_redis_runs_for_a_minute_mirrored_and_served_while_watch_follows(
    redis_server: RedisServer,
) -> None:
    """Item 1: ``serve --redis`` plays the demo's 20-second script three times in 60 s (each
    round on a fresh tracker), mirrors it, serves it over HTTP on ``--port``, and exits 0; a
    ``watch redis://`` running meanwhile shows it working, and unavailable once it ended (the
    scheduler declared it, before the command returned)."""
    prefix = f"cli-{uuid.uuid4().hex[:8]}"
    serve = subprocess.Popen(
        [
            *COMMAND,
            *("serve", "--redis", redis_server.url, "--source", "sched-1", "--prefix", prefix),
            *("--port", "0", "--duration", "60", "--seed", "1"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watch = subprocess.Popen(
        [*COMMAND, "watch", redis_server.url, "--prefix", prefix],  # until it shows the end
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        url = serve.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        # Served over HTTP as well, through the rounds (the second starts at 20 s).
        snapshots = []
        for _ in range(3):
            response = httpx.get(f"{url}/v1/snapshot", timeout=5)
            assert response.status_code == 200
            snapshots.append(response.json())
            time.sleep(12)
        assert all(snapshot["availability"] == "ready" for snapshot in snapshots)
        _, serve_err = serve.communicate(timeout=40)
        # serve has ended: the watch runs until it shows the source unavailable, then Ctrl-C.
        shown = lines_until(watch, lambda lines: "unavailable" in last_of_sched_1(lines))
        watch.send_signal(signal.SIGINT)
        rest, watch_err = watch.communicate(timeout=60)
        watch_out = "\n".join([*shown, rest])
    finally:
        for process in (serve, watch):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert serve.returncode == 0, serve_err
    assert "already tracked" not in serve_err
    assert "Traceback" not in serve_err
    assert watch.returncode in (0, 130), watch_err  # ended by Ctrl-C
    lines = [line for line in watch_out.splitlines() if line.startswith("sched-1")]
    assert any("working" in line for line in lines), watch_out
    assert "unavailable" in lines[-1], watch_out


def _redis(server: RedisServer, *command: str) -> str:
    """One command through redis-cli (installed with redis-server)."""
    done = subprocess.run(
        ["redis-cli", "-p", str(server.port), *command],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def test_watch_redis_outlives_redis_stopping_while_a_source_waits_to_resync() -> None:
    """Issue 37 (N4): ``watch redis://`` follows a fleet one of whose sources waits for a usable
    checkpoint (its checkpoint is malformed) when Redis stops for 8 s. The fleet's resyncs
    failed together as an exception group, which escaped ``follow_fleet``: ``watch`` exited
    with "internal error: ConnectionError". Now it keeps running through the outage and after
    it, and exits 0 when its ``--duration`` is up."""
    server = RedisServer()
    server.start()
    watch = None
    try:
        prefix = f"cli-{uuid.uuid4().hex[:8]}"
        _redis(server, "HSET", f"{prefix}:ghost:checkpoint", "id", "1-0", "seq", "1", "frame", "x")
        _redis(server, "ZADD", f"{prefix}:sources", str(time.time() * 1000 + 3_600_000), "ghost")
        watch = subprocess.Popen(
            [*COMMAND, "watch", server.url, "--prefix", prefix, "--duration", "25"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # The watch has tried the ghost's checkpoint twice (it keeps trying: it waits).
        while "cmdstat_hgetall:calls=" not in (stats := _redis(server, "INFO", "commandstats")) or (
            int(stats.split("cmdstat_hgetall:calls=")[1].split(",")[0]) < 2
        ):
            assert watch.poll() is None, watch.communicate()
            time.sleep(0.1)
        server.stop()
        with pytest.raises(subprocess.TimeoutExpired):
            watch.wait(timeout=8)  # Redis away for 8 s: the watch goes on
        server.start()
        _, watch_err = watch.communicate(timeout=60)
        assert watch.returncode == 0, watch_err
        assert "internal error" not in watch_err
    finally:
        if watch is not None and watch.poll() is None:
            watch.kill()
            watch.wait()
        server.close()
