"""A real redis-server for the tests, and a TCP proxy whose connections a test can cut.

The server runs on a free loopback port without persistence (``--save '' --appendonly no``), so
a restart loses everything, exactly the failure the follower must detect. With ``CI=true`` a
missing ``redis-server`` fails the tests instead of skipping them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio

from tests.support.processes import stop_group


async def eventually(predicate: Callable[[], bool], *, every: float = 0.01) -> None:
    """Poll ``predicate`` under the caller's ``fail_after``: what a Redis test waits for happens
    in another process (redis-server) and over sockets, so there is no event to wait on."""
    while not predicate():  # noqa: ASYNC110
        await trio.sleep(every)


def require_redis_server() -> str:
    path = shutil.which("redis-server")
    if path is None:
        message = "redis-server is not installed (make test installs Debian's redis-server)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process on a loopback port; ``restart()`` keeps the port, loses the data."""

    def __init__(self) -> None:
        self._binary = require_redis_server()
        self._dir = Path(tempfile.mkdtemp(prefix="workflow-hub-redis-"))
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log(self) -> str:
        path = self._dir / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self) -> None:
        self._process = subprocess.Popen(
            [
                self._binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self._dir),
                "--logfile",
                str(self._dir / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own group, stopped as one (tests/support/processes.py)
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        """Until the server answers PING (or exits); 60 s is only a safety net for a loaded machine."""
        assert self._process is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited:\n{self.log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not start:\n{self.log}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_group(process)

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


class CuttableProxy:
    """Forwards loopback connections to a port; ``cut()`` drops every open connection at once.

    ``stall()`` stops forwarding (in both directions, new connections included) without closing
    anything, until ``release()``: a client that is merely slow, which no timeout gives away.
    It lets a test make a follower fall behind by as much as it likes, deterministically.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.cuts = 0
        self.connections = 0
        self.stalls = 0
        self._scopes: set[trio.CancelScope] = set()
        self._flowing = trio.Event()
        self._flowing.set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._handle, listeners)

    def cut(self) -> None:
        self.cuts += 1
        for scope in list(self._scopes):
            scope.cancel()

    def stall(self) -> None:
        if self._flowing.is_set():
            self.stalls += 1
            self._flowing = trio.Event()

    def release(self) -> None:
        self._flowing.set()

    async def _handle(self, client: trio.SocketStream) -> None:
        self.connections += 1
        upstream: trio.SocketStream | None = None
        try:
            with trio.CancelScope() as scope:
                self._scopes.add(scope)
                upstream = await trio.open_tcp_stream("127.0.0.1", self.target_port)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._pump, client, upstream, nursery.cancel_scope)
                    nursery.start_soon(self._pump, upstream, client, nursery.cancel_scope)
        except OSError:
            pass  # the server is down: the client sees its connection closed
        finally:
            self._scopes.discard(scope)
            # Plain closes: nothing here may be interrupted before both sockets are closed.
            if upstream is not None:
                upstream.socket.close()
            client.socket.close()

    async def _pump(
        self, source: trio.SocketStream, sink: trio.SocketStream, scope: trio.CancelScope
    ) -> None:
        try:
            while data := await source.receive_some(65536):
                # Read during a stall, held until the release: nothing passes meanwhile.
                while not self._flowing.is_set():
                    await self._flowing.wait()
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        scope.cancel()


@contextmanager
def running_redis_server() -> Iterator[RedisServer]:
    """A started :class:`RedisServer`, closed (its process stopped) on every way out."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()
