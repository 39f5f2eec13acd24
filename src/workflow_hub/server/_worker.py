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
from typing import Any, cast

import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import parse_socket_addr, repr_socket_addr
from starlette.types import ASGIApp, Receive, Scope, Send

from ._streams import CUT_EXTENSION

__all__ = ["serve_connections"]

logger = logging.getLogger("workflow_hub.server")


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
            await TCPServer(wrapped, config, context, ConnectionState({}), cast(Any, stream))
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
