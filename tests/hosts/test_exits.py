"""Ctrl-C of a program that hosts the hub ends it within the host's shutdown grace, quietly,
and the final ``unavailable`` frame still reaches every observer (issue 36).

Real processes and real signals: the program of docs/hosts.md that mounts the hub's app in a
Starlette app under uvicorn, run as printed (on a free port), with a real ``workflow-hub watch``,
an SSE client and a WebSocket client attached; programs on the thread host and the asyncio host
with an SSE client; and the signal masks of the hosts' threads, read from /proc. Each child
starts with SIGINT at its default (a shell's background job would ignore it), in a process
group of its own, stopped on every path.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TextIO

import httpx
import pytest
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, TextMessage
from wsproto.events import Request as WsRequest

from workflow_hub import Frame, SnapshotFrame
from workflow_hub.asyncio import open_hub as open_asyncio_hub
from workflow_hub.sync import open_hub as open_sync_hub
from workflow_hub.wire import loads

from .support import run

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
# A generous net for a loaded machine: the waits below end on events, never on this.
NET = 60.0
# The host's shutdown grace (2 s by default) plus the time a loaded machine takes to tear a
# Python process down; far below the 20 s and more it took before.
EXIT_BOUND = 10.0


# Run a command with SIGINT at its default, whatever this process was started with (a shell's
# background job ignores it, and an ignored signal stays ignored across exec): in a small Python
# that resets it and execs the command (no preexec_fn: this process has threads).
_WITH_DEFAULT_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


class Child:
    """A process in a group of its own, with SIGINT at its default; its output read line by
    line by two threads, so that every wait for a line is bounded."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [*_WITH_DEFAULT_SIGINT, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            cwd=ROOT,
            start_new_session=True,
        )
        self.stdout: queue.Queue[str | None] = queue.Queue()
        self.stderr: queue.Queue[str | None] = queue.Queue()
        self._readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in (
                (self.process.stdout, self.stdout),
                (self.process.stderr, self.stderr),
            )
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: TextIO, lines: queue.Queue[str | None]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for reader in self._readers:
            reader.join()
        for stream in (self.process.stdout, self.process.stderr):
            assert stream is not None
            stream.close()

    def interrupt(self) -> tuple[float, int, str]:
        """SIGINT, as Ctrl-C sends it; the seconds the process took to exit, its exit code, and
        what it wrote to stderr from then on."""
        start = time.monotonic()
        os.kill(self.process.pid, signal.SIGINT)
        try:
            code = self.process.wait(timeout=NET)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {NET} s after SIGINT") from None
        elapsed = time.monotonic() - start
        return elapsed, code, "".join(iter(partial(self.stderr.get, timeout=NET), None))


@contextmanager
def child(args: list[str]) -> Iterator[Child]:
    """A :class:`Child`, stopped (its group killed) on every path."""
    process = Child(args)
    try:
        yield process
    finally:
        process.stop()


def read_until(lines: queue.Queue[str | None], pattern: str) -> tuple[str, re.Match[str]]:
    """Lines up to the first that matches ``pattern``: what came, and the match."""
    seen: list[str] = []
    deadline = time.monotonic() + NET
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no {pattern!r} in {NET} s:\n{''.join(seen)}") from None
        if line is None:
            raise AssertionError(f"the output ended before {pattern!r}:\n{''.join(seen)}")
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return "".join(seen), match


def mounting_program() -> str:
    """The mounting example of docs/hosts.md, as printed, on a free port."""
    text = (ROOT / "docs" / "hosts.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "uvicorn" in b]
    assert len(blocks) == 1, "docs/hosts.md shows one program under uvicorn"
    program: str = blocks[0]
    assert "port=8000" in program
    return program.replace("port=8000", "port=0")


def _frames(lines: str) -> list[SnapshotFrame]:
    """The snapshot frames of an SSE stream's lines."""
    frames = [loads(Frame, line[6:]) for line in lines.splitlines() if line.startswith("data: ")]
    return [frame for frame in frames if isinstance(frame, SnapshotFrame)]


class WebSocketClient:
    """A blocking WebSocket client on wsproto (the server's own library): the messages of
    ``/v1/ws`` as they come, then the close code."""

    def __init__(self, url: str) -> None:
        address = httpx.URL(url)
        assert address.port is not None
        self._socket = socket.create_connection((address.host, address.port), timeout=NET)
        self._ws = WSConnection(ConnectionType.CLIENT)
        target = WsRequest(host=f"{address.host}:{address.port}", target=address.raw_path.decode())
        self._socket.sendall(self._ws.send(target))
        self.close_code: int | None = None
        self._text = ""

    def __enter__(self) -> WebSocketClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._socket.close()

    def messages(self) -> Iterator[str]:
        """Each text message, until the server closes (its code in ``close_code``)."""
        while self.close_code is None:
            data = self._socket.recv(65536)
            self._ws.receive_data(data or None)
            for event in self._ws.events():
                if isinstance(event, TextMessage):
                    self._text += event.data
                    if event.message_finished:
                        yield self._text
                        self._text = ""
                elif isinstance(event, CloseConnection):
                    self.close_code = event.code
                    self._socket.sendall(self._ws.send(event.response()))
                else:
                    assert isinstance(event, AcceptConnection), event
            if not data:
                break


def test_ctrl_c_of_the_uvicorn_program_in_the_docs_is_quick_and_quiet(tmp_path: Path) -> None:
    """H1: Ctrl-C of the docs' Starlette app under uvicorn, with ``workflow-hub watch``, an SSE
    client and a WebSocket client attached: it exits within the grace, with no traceback, and
    each saw the source become unavailable before its stream ended (the WebSocket with 1001)."""
    path = tmp_path / "hub_app.py"
    path.write_text(mounting_program(), encoding="utf-8")
    with child([sys.executable, str(path)]) as server:
        _, running = read_until(server.stderr, r"Uvicorn running on (http://\S+)")
        url = f"{running.group(1)}/hub"
        watch_command = [str(Path(sys.executable).parent / "workflow-hub"), "watch", url]
        ws_url = url.replace("http://", "ws://") + "/v1/ws"
        with (
            child(watch_command) as watch,
            httpx.Client(timeout=NET) as client,
            # An SSE client of our own on /v1/activity, beside the watch (which reads
            # /v1/activity and /v1/events), and a WebSocket client.
            client.stream("GET", f"{url}/v1/activity") as response,
            WebSocketClient(ws_url) as websocket,
        ):
            lines = response.iter_lines()
            next(line for line in lines if line.startswith("data: "))
            messages = websocket.messages()
            next(messages)
            read_until(watch.stdout, r"connection live")
            elapsed, code, stderr = server.interrupt()
            rest = "\n".join(lines)  # to the end of the stream: the server ended it
            last_message = list(messages)[-1:]
            seen, _ = read_until(watch.stdout, r"frame snapshot \S+ unavailable")
    assert elapsed < EXIT_BOUND, f"{elapsed:.1f} s to exit"
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert [frame.availability for frame in _frames(rest)][-1:] == ["unavailable"], rest
    assert "unavailable" in seen
    frames = [loads(Frame, json.dumps(json.loads(text)["frame"])) for text in last_message]
    assert [getattr(frame, "availability", None) for frame in frames] == ["unavailable"]
    assert websocket.close_code == 1001


QUIET_THREAD_HOST = """
import sys, time
from workflow_hub.sync import open_hub

try:
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="s")
        tracker.start()
        tracker.add_run("r1", status="running")
        print(hub.serve(port=0), flush=True)
        while True:
            time.sleep(3600)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""

QUIET_ASYNCIO_HOST = """
import asyncio
import workflow_hub.asyncio

async def main():
    async with workflow_hub.asyncio.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="s")
        tracker.start()
        tracker.add_run("r1", status="running")
        print(await hub.serve(port=0), flush=True)
        await asyncio.Event().wait()

try:
    asyncio.run(main())
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.parametrize(
    "program", [QUIET_THREAD_HOST, QUIET_ASYNCIO_HOST], ids=["thread host", "asyncio host"]
)
def test_ctrl_c_of_a_host_program_is_quick_and_quiet(program: str) -> None:
    """H1: Ctrl-C of a program on the thread host (trio in a thread of its own) or the asyncio
    host (trio's I/O thread beside the loop), with an SSE client attached: the program gets its
    KeyboardInterrupt promptly, the client gets the final frame, nothing else is printed."""
    with child([sys.executable, "-c", textwrap.dedent(program)]) as host:
        _, served = read_until(host.stdout, r"^(http://\S+)$")
        url = served.group(1)
        with (
            httpx.Client(timeout=NET) as client,
            client.stream("GET", f"{url}/v1/activity") as response,
        ):
            lines = response.iter_lines()
            next(line for line in lines if line.startswith("data: "))
            elapsed, code, stderr = host.interrupt()
            rest = "\n".join(lines)
    assert elapsed < EXIT_BOUND, f"{elapsed:.1f} s to exit"
    assert (code, stderr) == (0, "")
    assert [frame.availability for frame in _frames(rest)][-1:] == ["unavailable"], rest


def _blocked(thread: threading.Thread) -> set[signal.Signals]:
    """The signals ``thread`` blocks, as the kernel reports them (Linux)."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text(encoding="ascii")
    mask = int(re.search(r"^SigBlk:\s*([0-9a-f]+)$", status, flags=re.M).group(1), 16)  # type: ignore[union-attr]
    return {sig for sig in (signal.SIGINT, signal.SIGTERM) if mask & (1 << (sig - 1))}


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="reads thread signal masks from /proc (Linux)"
)


@needs_proc
def test_the_thread_host_leaves_ctrl_c_to_the_main_thread() -> None:
    """H1: the thread host's trio thread blocks SIGINT and SIGTERM, so the kernel hands them
    to the main thread, where Python runs signal handlers (issue 35 saw a bridge thread swallow
    them); the main thread's mask is as it was."""
    before = _blocked(threading.main_thread())
    with open_sync_hub() as hub:
        hub.serve(port=0)
        # The host's own thread (other threads of this process may be other tests' leftovers,
        # trio's thread cache among them).
        [thread] = [t for t in threading.enumerate() if t.name == "workflow-hub"]
        assert _blocked(thread) == {signal.SIGINT, signal.SIGTERM}
    assert _blocked(threading.main_thread()) == before


@needs_proc
def test_a_process_started_after_the_asyncio_host_can_be_stopped() -> None:
    """A process the program starts through trio after the asyncio host ran inherits no blocked
    SIGINT/SIGTERM from trio's thread cache (trio spawns in a cached worker thread; a worker
    left with both blocked made every later child deaf to SIGTERM, and hung make test)."""

    async def host() -> None:
        async with open_asyncio_hub() as hub:
            hub.register_publisher().publish_snapshot("ready", [])

    run(host)

    async def spawn() -> set[signal.Signals]:
        process = await trio.lowlevel.open_process(["sleep", "30"])
        try:
            status = await trio.Path(f"/proc/{process.pid}/status").read_text(encoding="ascii")
            mask = int(re.search(r"^SigBlk:\s*([0-9a-f]+)$", status, flags=re.M).group(1), 16)  # type: ignore[union-attr]
            return {sig for sig in (signal.SIGINT, signal.SIGTERM) if mask & (1 << (sig - 1))}
        finally:
            process.kill()
            await process.wait()

    for _ in range(8):  # whichever cached worker spawns it
        assert trio.run(spawn) == set()
