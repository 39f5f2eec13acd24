"""hypercorn's HTTP/1.1 and WebSocket protocol on connections we hold, so that shutdown is bounded.

hypercorn's own trio worker (``hypercorn.trio.serve``) shields every socket write from
cancellation (it must not leave half a frame on the wire). A client that stops reading (a laptop
asleep with the dashboard open) fills its socket buffers, and the write to it then waits, shielded,
until the client goes away: cancelling the server could not end it. Here the listeners and the
accepted connections are ours; hypercorn's per-connection protocol (``TCPServer``) runs on them
unchanged. On shutdown the connections get ``grace`` seconds to finish, then every socket still
open is closed under its writer, which wakes the shielded write with an error that hypercorn
treats as the client leaving.

The application gets no ASGI lifespan events (ours have no startup or shutdown work).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any, Final, cast, final

import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import parse_socket_addr, repr_socket_addr
from starlette.types import ASGIApp, Receive, Scope, Send

from .._failure_log import FailureLog
from ._streams import CUT_EXTENSION

__all__ = ["serve_connections"]

logger = logging.getLogger("workflow_hub.server")


_EXTENSIONS: Final = b"sec-websocket-extensions:"
_UPGRADE: Final = b"upgrade:"


@final
class _Inbound:
    """What one connection receives, made safe before hypercorn parses it: WebSocket
    compression is refused and no incoming WebSocket frame is read beyond ``limit`` bytes.

    hypercorn's WebSocket handshake always accepts ``permessage-deflate`` when a client offers
    it, and wsproto inflates what arrives with no bound: a 254 KiB message that inflates to
    256 MiB costs the server that much before its size is checked (issue 37). So the
    ``Sec-WebSocket-Extensions`` header of a request is dropped here, before the handshake sees
    it: no extension is ever negotiated. Once a request asked for the upgrade, the bytes are
    WebSocket frames: a frame longer than ``limit`` is passed on as ``limit + 1`` bytes (hypercorn
    closes with 1009, message too big, as it does for any message over its size) and the rest
    of its payload is dropped as it arrives, never buffered.
    """

    __slots__ = ("_head", "_limit", "_line", "_payload", "_skip", "_skip_after", "_upgrading")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._line = b""
        """Before the upgrade: the last incomplete line, when it may be a header of ours."""
        self._upgrading = False
        self._head: bytes | None = None
        """After the upgrade: the bytes of a frame header so far (None before the upgrade)."""
        self._payload = 0
        self._skip = 0
        self._skip_after = 0

    def feed(self, data: bytes) -> bytes:
        if self._head is not None:
            return self._frames(data)
        data = self._line + data
        self._line = b""
        out: list[bytes] = []
        start = 0
        while (end := data.find(b"\r\n", start)) >= 0:
            line = data[start : end + 2]
            start = end + 2
            lower = line.lower()
            if lower.startswith(_EXTENSIONS):
                continue  # refused: the handshake offers no extension
            out.append(line)
            if lower.startswith(_UPGRADE) and b"websocket" in lower:
                self._upgrading = True
            elif line == b"\r\n" and self._upgrading:
                self._head = b""
                out.append(self._frames(data[start:]))
                return b"".join(out)
        rest = data[start:]
        lower = rest.lower()
        if len(rest) < 1024 and any(
            name.startswith(lower) or lower.startswith(name) for name in (_EXTENSIONS, _UPGRADE)
        ):
            self._line = rest  # may yet be one of our headers: held until its line ends
        else:
            out.append(rest)
        return b"".join(out)

    def _frames(self, data: bytes) -> bytes:
        out: list[bytes] = []
        while data:
            if self._skip:
                dropped = min(self._skip, len(data))
                self._skip -= dropped
                data = data[dropped:]
            elif self._payload:
                passed = min(self._payload, len(data))
                out.append(data[:passed])
                data = data[passed:]
                self._payload -= passed
                if not self._payload:
                    self._skip, self._skip_after = self._skip_after, 0
            else:
                assert self._head is not None
                head = self._head + data
                size = _header_size(head)
                if size is None or len(head) < size:
                    self._head = head
                    break
                self._head = b""
                head, data = head[:size], head[size:]
                length = _payload_length(head)
                if length > self._limit:
                    # Declared as limit + 1 bytes: enough for hypercorn to close with 1009.
                    kept = self._limit + 1
                    masked = head[1] & 0x80
                    head = bytes((head[0], masked | 126)) + kept.to_bytes(2, "big") + head[-4:]
                    if not masked:
                        head = head[:4]
                    self._payload, self._skip_after = kept, length - kept
                else:
                    self._payload = length
                out.append(head)
        return b"".join(out)


def _header_size(head: bytes) -> int | None:
    if len(head) < 2:
        return None
    length = head[1] & 0x7F
    extended = 2 if length == 126 else 8 if length == 127 else 0
    return 2 + extended + (4 if head[1] & 0x80 else 0)


def _payload_length(head: bytes) -> int:
    length = head[1] & 0x7F
    if length == 126:
        return int.from_bytes(head[2:4], "big")
    if length == 127:
        return int.from_bytes(head[2:10], "big")
    return length


@final
class _GuardedStream:
    """A connection's socket stream as hypercorn's ``TCPServer`` uses it, with what it receives
    passed through :class:`_Inbound`."""

    __slots__ = ("_inbound", "_stream", "aclose", "send_all", "send_eof", "socket")

    def __init__(self, stream: trio.SocketStream, limit: int) -> None:
        self._stream = stream
        self._inbound = _Inbound(limit)
        # The stream's own methods, not wrappers: a write costs what it did (a hot path).
        self.socket = stream.socket
        self.send_all = stream.send_all
        self.send_eof = stream.send_eof
        self.aclose = stream.aclose

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        while True:
            data = await self._stream.receive_some(max_bytes)
            if not data:
                return b""
            passed = self._inbound.feed(bytes(data))
            if passed:
                return passed
            # Everything was held back or dropped: read on (an empty result would be EOF).


class _Connections:
    """The open connections, and an event for "none left" once the server is stopping."""

    def __init__(self) -> None:
        self.open: set[trio.SocketStream] = set()
        # By the client's address as the ASGI scope gives it, so that the app can cut one.
        self.by_client: dict[tuple[str, int], trio.SocketStream] = {}
        self.none_left = trio.Event()
        self.stopping = False

    def add(self, stream: trio.SocketStream) -> None:
        self.open.add(stream)

    def discard(self, stream: trio.SocketStream) -> None:
        self.open.discard(stream)
        for client, held in list(self.by_client.items()):
            if held is stream:
                del self.by_client[client]
        if self.stopping and not self.open:
            self.none_left.set()

    def stop(self) -> None:
        self.stopping = True
        if not self.open:
            self.none_left.set()

    def cut(self) -> int:
        """Close every socket still open, waking any task blocked on it; how many there were."""
        streams = list(self.open)
        for stream in streams:
            # A trio socket's close() notifies every task waiting on it (ClosedResourceError).
            stream.socket.close()
        return len(streams)


async def serve_connections(
    app: ASGIApp,
    config: Config,
    *,
    stopping: trio.Event,
    grace: float,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``config.bind`` until ``stopping`` is set; returns within ``grace`` (and
    a few milliseconds) after that, whatever the clients do. ``task_status`` gets the URLs bound.
    """
    sockets = config.create_sockets()
    listeners: list[trio.SocketListener] = []
    binds: list[str] = []
    for sock in sockets.insecure_sockets:
        sock.listen(config.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))
        binds.append(f"http://{repr_socket_addr(sock.family, sock.getsockname())}")
    context = WorkerContext(None)
    connections = _Connections()
    failures = FailureLog(logger, "a client connection")

    async def with_cut(scope: Scope, receive: Receive, send: Send) -> None:
        # The app may close this connection under a write that cannot finish (a client over
        # its budget, see _streams.WriteBudget): hypercorn's own writes are shielded.
        client = scope.get("client")
        stream = connections.by_client.get(tuple(client)) if client else None
        if stream is not None:
            extensions = dict(scope.get("extensions") or {})
            extensions[CUT_EXTENSION] = {"cut": stream.socket.close}
            scope["extensions"] = extensions
        await app(scope, receive, send)

    wrapped = ASGIWrapper(cast(Any, with_cut))

    async def handle(stream: trio.SocketStream) -> None:
        connections.add(stream)
        try:
            peer = parse_socket_addr(stream.socket.family, stream.socket.getpeername())
        except OSError:
            peer = None
        if peer is not None:
            connections.by_client[peer] = stream
        try:
            # hypercorn types the stream as an SSLStream; a plain SocketStream is what it also
            # accepts (it tells them apart itself).
            guarded = _GuardedStream(stream, config.websocket_max_message_size)
            await TCPServer(wrapped, config, context, ConnectionState({}), cast(Any, guarded))
        except Exception as error:
            # hypercorn's protocol can raise out of a connection's task (h11 refuses a second
            # error response on a refused upgrade the client kept writing to): this task runs
            # in the handlers' nursery, so one hostile client ended the server (issue 37). It
            # ends that connection only.
            failures.failed(error)
            stream.socket.close()
        finally:
            connections.discard(stream)

    async with trio.open_nursery() as handlers:
        async with trio.open_nursery() as accepting:
            accepting.start_soon(
                partial(trio.serve_listeners, handle, listeners, handler_nursery=handlers)
            )
            task_status.started(binds)
            await stopping.wait()
            accepting.cancel_scope.cancel()  # closes the listeners: no new connection
        # Idle keep-alive connections close at once; responses in flight get the grace period.
        await context.terminated.set()
        connections.stop()
        with trio.move_on_after(grace):
            await connections.none_left.wait()
        cut = connections.cut()
        if cut:
            logger.info(
                "closed %d connection(s) still open %.1f s after the server stopped", cut, grace
            )
        # Every task left was blocked on a socket that is now closed: each ends at once.
        handlers.cancel_scope.deadline = trio.current_time() + 0.1
    failures.close()
