"""One connection's protocol error never ends the server (issue 37; N1).

hypercorn's per-connection protocol can raise out of its connection task: upgrade requests it
refuses (403 for a path that is no WebSocket, 400 without a key), each with ``Connection: close``,
with more bytes sent after them, made h11 raise ``LocalProtocolError`` at an error response. That
task runs in the server's handler nursery, so one hostile client ended the whole server and every
stream of every other client with it. A connection's failure now ends that connection only.
"""

from __future__ import annotations

import contextlib
import logging

import httpx
import pytest
import trio

from tests.support.netutil import served
from workflow_hub import open_hub

WAIT = 20
NO_KEY = (
    b"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
)
REFUSED = (
    b"GET /v1/activity HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)
PLAIN = b"GET /v1/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def received_until_closed(sock: trio.socket.SocketType) -> bytes:
    got = b""
    while data := await sock.recv(1 << 16):
        got += data
    return got


async def test_a_refused_upgrade_and_more_bytes_end_that_connection_not_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """N1: a client that breaks hypercorn's protocol state (refused upgrades, then more bytes)
    loses its own connection; the server goes on answering new requests."""
    caplog.set_level(logging.WARNING, logger="workflow_hub.server")
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        port = int(url.rpartition(":")[2])
        with trio.fail_after(WAIT):
            for request in (REFUSED, NO_KEY, REFUSED, NO_KEY):
                sock = trio.socket.socket()
                with sock:
                    await sock.connect(("127.0.0.1", port))
                    await sock.send(request)
                    head = await sock.recv(1 << 16)
                    assert head.startswith((b"HTTP/1.1 400", b"HTTP/1.1 403")), head
                    # More bytes on a connection the server said it closes.
                    with contextlib.suppress(OSError), trio.move_on_after(1):
                        await sock.send(PLAIN)
                        await received_until_closed(sock)
            async with httpx.AsyncClient() as client:
                answer = await client.get(f"{url}/v1/snapshot")
        assert answer.status_code == 200
        assert answer.json()["availability"] == "ready"
    # Logged once with its traceback, then counted (never a traceback per connection).
    tracebacks = [record for record in caplog.records if record.exc_info]
    assert [record.getMessage() for record in tracebacks] == ["a client connection failed"]
