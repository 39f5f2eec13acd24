"""Clients that misbehave at the socket level: they connect, send a request, and never read.

A stalled client is a raw socket with a tiny receive buffer, so that the server's writes to it
block after a few kilobytes, as they do for a laptop that went to sleep with the dashboard open.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import trio

WS_HANDSHAKE = (
    "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def port_of(url: str) -> int:
    return int(url.rpartition(":")[2])


def http_get(target: str, **headers: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def ws_handshake(target: str) -> bytes:
    return WS_HANDSHAKE.format(target=target).encode()


async def stalled_socket(port: int, request: bytes) -> trio.socket.SocketType:
    sock = trio.socket.socket()
    # Set before connecting: the window the server sees stays tiny.
    sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4096)
    await sock.connect(("127.0.0.1", port))
    await sock.send(request)
    return sock


@asynccontextmanager
async def stalled_clients(port: int, requests: list[bytes]) -> AsyncIterator[None]:
    """One stalled socket per request, open for the duration of the block."""
    async with AsyncExitStack() as stack:
        for request in requests:
            sock = await stalled_socket(port, request)
            stack.enter_context(sock)
        yield
