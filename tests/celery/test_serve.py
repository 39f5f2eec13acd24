"""``serve_celery``: the command's composition as a program makes it, with a real worker.

The sync host, the HTTP server, the Redis mirror and the bridge start in one ``with`` and stop
when it ends: every thread it started has ended, the port is closed, and the source's final
``unavailable`` frame reached the fleet first (H1, P8 in docs/contract.md). A start that fails
leaves nothing running; the page's example runs as a user's program and stops on Ctrl-C.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

import redis
from tests.support.processes import owned_process
from tests.support.redis_server import RedisServer
from workflow_hub import ContractError, RootActivity, SnapshotFrame
from workflow_hub.celery import CeleryServer, serve_celery
from workflow_hub.reporting import ActivityView
from workflow_hub.wire import loads

from .app import add, app
from .support import REPO, CeleryWorker, check_root, ended

TOKEN = "s3cret"


@contextmanager
def no_thread_left() -> Iterator[None]:
    """Every thread started inside the block has ended when it ends (joined, not abandoned)."""
    before = set(threading.enumerate())
    yield
    left = [thread.name for thread in threading.enumerate() if thread not in before]
    assert not left, f"threads still running: {left}"


def wait_ended(served: CeleryServer, root_id: str, within: float = 20.0) -> RootActivity:
    """Fold the hub's frames (each root checked against §5) until ``root_id`` has ended."""
    view = ActivityView()
    deadline = time.monotonic() + within
    with served.hub.subscribe() as frames:
        while (root := view.get(root_id)) is None or not ended(root):
            assert time.monotonic() < deadline, f"{root_id} did not end: {view.roots}"
            frame = frames.receive(timeout=max(0.0, deadline - time.monotonic()))
            assert view.apply(frame).applied
            for each in view.roots:
                check_root(each)
    return root


def test_serve_celery_serves_mirrors_and_stops_cleanly(
    broker: RedisServer, worker: CeleryWorker
) -> None:
    """One task's root, live on the served hub and in the fleet; leaving the block ends the
    source (its final frame mirrored: H1, P8), closes the port and ends every thread."""
    client = redis.Redis.from_url(broker.url)
    with no_thread_left():
        with serve_celery(
            app,
            port=0,
            token=TOKEN,
            redis_url=broker.url,
            source="served",
            prefix="servetest",
            settle=0.3,
            inspect_timeout=0.5,
        ) as served:
            assert served.watch.ready.wait(15), "the bridge did not become ready"
            root = wait_ended(served, add.delay(2, 3).id)
            assert (root.state, root.needs_attention) == ("idle", False)
            assert httpx.get(f"{served.url}/v1/snapshot", timeout=5).status_code == 401
            response = httpx.get(
                f"{served.url}/v1/snapshot",
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=5,
            )
            served_frame = loads(SnapshotFrame, response.text)
            assert root.root_run_id in {each.root_run_id for each in served_frame.roots or ()}
            assert served.watch.errors == 0
            url = served.url
            leaving = time.monotonic()
        took = time.monotonic() - leaving
    assert took < 5.0, f"leaving the block took {took:.2f} s"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/v1/snapshot", timeout=5)
    [(_id, fields)] = client.xrevrange("servetest:served:frames", count=1)
    assert loads(SnapshotFrame, fields[b"frame"].decode()).availability == "unavailable"


def blocked_signals() -> dict[int, set[int]]:
    """Every thread of this process (its Linux task id) and the signals it blocks."""
    found: dict[int, set[int]] = {}
    for task in Path("/proc/self/task").iterdir():
        with suppress(FileNotFoundError):  # a thread that ended meanwhile
            status = (task / "status").read_text()
            [mask] = re.findall(r"^SigBlk:\s*([0-9a-f]+)$", status, flags=re.M)
            bits = int(mask, 16)
            found[int(task.name)] = {n for n in range(1, 65) if bits >> (n - 1) & 1}
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_ctrl_c_is_left_to_the_main_thread(broker: RedisServer, worker: CeleryWorker) -> None:
    """Every thread ``serve_celery`` starts (the host's, trio's, the mirror's, the bridge's)
    blocks SIGINT and SIGTERM, so they reach the main thread, where Python handles them; the
    caller's own mask is as it was, inside the block and after it."""
    before = blocked_signals()
    mine = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with serve_celery(app, port=0, redis_url=broker.url, prefix="masktest") as served:
        assert served.watch.ready.wait(15)
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mine
        started = {tid: mask for tid, mask in blocked_signals().items() if tid not in before}
    assert len(started) >= 4, started  # host, mirror, receiver, forwarder at least
    leaking = {tid for tid, mask in started.items() if not {signal.SIGINT, signal.SIGTERM} <= mask}
    assert not leaking, started
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mine


def test_an_error_in_the_block_propagates_after_everything_stopped(
    broker: RedisServer, worker: CeleryWorker
) -> None:
    """The program's own exception leaves the block as it came, with nothing left running."""
    urls: list[str] = []

    def program() -> None:
        with serve_celery(app, port=0, inspect_timeout=0.5) as served:
            urls.append(served.url)
            raise LookupError("the program's")

    with no_thread_left(), pytest.raises(LookupError, match="the program's"):
        program()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{urls[0]}/v1/snapshot", timeout=5)


def test_a_mirror_that_cannot_start_raises_and_leaves_nothing_running(
    broker: RedisServer,
) -> None:
    """A bad mirror source raises its ContractError from the ``with``, before the block runs,
    with the host, its server and every thread stopped."""
    entered: list[CeleryServer] = []

    def program() -> None:
        with serve_celery(app, port=0, redis_url=broker.url, source="") as served:
            entered.append(served)

    with no_thread_left(), pytest.raises(ContractError, match="source"):
        program()
    assert not entered


def test_the_command_says_a_port_in_use_in_one_line(broker: RedisServer) -> None:
    """A port in use: the command's one line and status 1, the library's OSError under it.
    (In a process of its own: hypercorn leaves the socket it could not bind to the collector.)"""
    env = dict(os.environ, WORKFLOW_HUB_TEST_BROKER=broker.url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "workflow_hub._cli",
                "celery",
                "--app",
                "tests.celery.app:app",
                "--port",
                str(port),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    # What plain serve says (issue 36: one message for every command, never the errno alone).
    assert line.startswith(f"workflow-hub celery: cannot serve at 127.0.0.1:{port}: "), line
    assert "Address already in use" in line


def snapshot(url: str) -> SnapshotFrame:
    return loads(SnapshotFrame, httpx.get(f"{url}/v1/snapshot", timeout=5).text)


def page_example() -> str:
    """docs/celery.md's ``serve_celery`` program, as printed."""
    page = (REPO / "docs" / "celery.md").read_text(encoding="utf-8")
    [program] = [
        block
        for block in re.findall(r"```python\n(.*?)```", page, flags=re.S)
        if "serve_celery(" in block
    ]
    return program


def test_the_page_s_program_runs_and_stops_on_ctrl_c(
    broker: RedisServer, worker: CeleryWorker
) -> None:
    """The example a user copies, pointed at the test's broker and a free port: it serves the
    dashboard, its source becomes ready, and Ctrl-C ends it with status 0 after printing the
    bridge's statistics."""
    program = page_example()
    assert '"redis://127.0.0.1:6379/0"' in program
    assert "port=8765" in program
    program = program.replace('"redis://127.0.0.1:6379/0"', repr(broker.url))
    program = program.replace("port=8765", "port=0")
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
    with owned_process(
        [sys.executable, "-c", program],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as user:
        try:
            assert user.stdout is not None
            first = user.stdout.readline()
            assert first.startswith("dashboard: http://127.0.0.1:"), first
            url = first.split()[-1]
            assert httpx.get(f"{url}/", timeout=5).status_code == 200  # the dashboard page
            deadline = time.monotonic() + 15
            while snapshot(url).availability != "ready":
                assert time.monotonic() < deadline, "the program's source never became ready"
                time.sleep(0.1)  # an HTTP poll of another process: nothing to wait on here
        finally:
            user.send_signal(signal.SIGINT)
            try:
                out, err = user.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                user.send_signal(signal.SIGABRT)  # faulthandler: every thread's stack
                _, err = user.communicate(timeout=10)
                pytest.fail(f"the program did not stop on Ctrl-C:\n{err}")
    assert user.returncode == 0, err
    assert "ready=True" in out, out
