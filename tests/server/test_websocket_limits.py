"""The WebSocket cap holds on the wire and after decompression (issue 37; N1).

hypercorn accepts ``permessage-deflate`` whenever a client offers it, and wsproto inflates with
no bound: a 254 KiB message that inflated to 256 MiB raised the server by hundreds of MiB. The
server now refuses every extension, and reads no incoming frame beyond the cap (a 16 MiB
message is dropped as it arrives after the 1009 close, never buffered).
"""

from __future__ import annotations

import contextlib
import socket as stdlib_socket

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate

from tests.support.netutil import served
from workflow_hub import open_hub
from workflow_hub.server._serve import WS_MAX_MESSAGE
from workflow_hub.server._worker import _Inbound

WAIT = 20
UPGRADE = (
    b"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


class RawClient:
    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.events: list[Event] = []

    async def next_event(self) -> Event:
        while not self.events:
            data = await self.sock.recv(1 << 16)
            self.ws.receive_data(data or None)
            self.events.extend(self.ws.events())
        return self.events.pop(0)


async def send_all(sock: trio.socket.SocketType, data: bytes) -> None:
    """Send until done or until the server closes the connection under it."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[await sock.send(view) :]


async def open_client(url: str) -> RawClient:
    sock = trio.socket.socket()
    await sock.connect(("127.0.0.1", int(url.rpartition(":")[2])))
    client = RawClient(sock)
    request = Request(host="127.0.0.1", target="/v1/ws", extensions=[PerMessageDeflate()])
    await sock.send(client.ws.send(request))
    return client


async def test_a_websocket_handshake_never_accepts_compression() -> None:
    """N1: a client that offers permessage-deflate (every browser does) gets a WebSocket with
    no extension, so that nothing it sends is inflated by the server."""
    async with open_hub() as hub, served(hub) as url:
        hub.register_publisher().publish_snapshot("ready", [])
        with trio.fail_after(WAIT):
            client = await open_client(url)
            with client.sock:
                accepted = await client.next_event()
                assert isinstance(accepted, AcceptConnection)
                assert accepted.extensions == []
                assert isinstance(await client.next_event(), TextMessage)  # the snapshot


async def test_a_large_message_closes_with_1009_and_is_not_read_beyond_the_cap() -> None:
    """N1: a 1 MiB message in one frame gets close code 1009 (message too big); the rest of
    it is dropped as it arrives."""
    async with open_hub() as hub, served(hub) as url:
        hub.register_publisher().publish_snapshot("ready", [])
        with trio.fail_after(WAIT):
            client = await open_client(url)
            with client.sock:
                assert isinstance(await client.next_event(), AcceptConnection)
                assert isinstance(await client.next_event(), TextMessage)
                data = client.ws.send(BytesMessage(data=b"\0" * (1 << 20)))
                client.sock.setsockopt(stdlib_socket.SOL_SOCKET, stdlib_socket.SO_SNDBUF, 1 << 16)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send_all, client.sock, data)
                    event = await client.next_event()
                    while isinstance(event, Ping | TextMessage):  # keep-alive pings, frames
                        event = await client.next_event()
                    assert isinstance(event, CloseConnection)
                    assert event.code == 1009
                    nursery.cancel_scope.cancel()


def frame(payload: bytes, *, mask: bool = True) -> bytes:
    """One binary frame, as a client sends it."""
    head = bytes((0x82, (0x80 if mask else 0) | 127)) + len(payload).to_bytes(8, "big")
    key = b"\x01\x02\x03\x04" if mask else b""
    body = bytes(b ^ key[i % 4] for i, b in enumerate(payload)) if mask else payload
    return head + key + body


def test_the_inbound_guard_passes_at_most_the_cap_of_a_frame_and_what_follows_intact() -> None:
    """N1: after the upgrade, a frame longer than the cap reaches hypercorn as cap + 1 bytes
    (enough for its 1009), fed in small reads; the next frame passes whole; the extensions
    header of the handshake is dropped."""
    inbound = _Inbound(WS_MAX_MESSAGE)
    head = inbound.feed(UPGRADE[:50]) + inbound.feed(UPGRADE[50:])
    assert b"permessage-deflate" not in head
    assert head.endswith(b"\r\n\r\n")
    big = frame(b"a" * 100_000)
    small = frame(b"bye", mask=True)
    passed = b"".join(inbound.feed(big[i : i + 1000]) for i in range(0, len(big), 1000))
    assert len(passed) == 2 + 2 + 4 + WS_MAX_MESSAGE + 1
    assert inbound.feed(small) == small
