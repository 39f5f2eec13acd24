"""A webhook receiver on loopback: a real HTTP/1.1 server (trio sockets), told how to answer.

Small on purpose: it reads a request line, headers and a ``Content-Length`` body, keeps the
connection alive, and answers each request as its ``answers`` say (a status, or ``"hang"``: never
answer). Every request it read is kept, with its headers and body, for the test to check.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio


@attrs.frozen
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@attrs.define
class Receiver:
    url: str = ""
    requests: list[Request] = attrs.field(factory=list)
    # What to answer next, first in first out; once empty, ``default``.
    answers: deque[int | str] = attrs.field(factory=deque)
    default: int | str = 200
    arrived: trio.Event = attrs.field(factory=trio.Event)

    def answered(self) -> list[Request]:
        return self.requests

    async def wait_for(self, count: int) -> None:
        while len(self.requests) < count:
            await self.arrived.wait()

    def _note(self, request: Request) -> None:
        self.requests.append(request)
        self.arrived.set()
        self.arrived = trio.Event()


async def _serve_connection(receiver: Receiver, stream: trio.SocketStream) -> None:
    buffer = b""
    async with stream:
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                buffer += chunk
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            while len(buffer) < length:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                buffer += chunk
            body, buffer = buffer[:length], buffer[length:]
            receiver._note(Request(method=method, path=path, headers=headers, body=body))
            answer = receiver.answers.popleft() if receiver.answers else receiver.default
            if answer == "hang":
                await trio.sleep_forever()
            reply = b"{}" if answer == 200 else b""
            await stream.send_all(
                b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (int(answer), len(reply), reply)
            )


@asynccontextmanager
async def receiving(*, port: int = 0) -> AsyncIterator[Receiver]:
    """A receiver on 127.0.0.1 (``port`` 0: a free one) for the duration of the block."""
    receiver = Receiver()
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    bound = listeners[0].socket.getsockname()[1]
    receiver.url = f"http://127.0.0.1:{bound}/hook"
    async with trio.open_nursery() as nursery:

        async def handler(stream: trio.SocketStream) -> None:
            # The client may go away mid-request (a timeout it gave up on, its end).
            with contextlib.suppress(trio.BrokenResourceError):
                await _serve_connection(receiver, stream)

        nursery.start_soon(trio.serve_listeners, handler, listeners)
        try:
            yield receiver
        finally:
            nursery.cancel_scope.cancel()
