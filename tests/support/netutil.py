"""Helpers for network tests: a served hub on a free loopback port, and a raw SSE reader.

The SSE reader parses the bytes itself (not with the client library under test), so the wire
format is checked as a client in another language would see it.
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import attrs
import httpx
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState as WsState
from wsproto.events import AcceptConnection, CloseConnection, TextMessage
from wsproto.events import Request as WsRequest

from workflow_hub import HookRunner, WorkflowActivityHub
from workflow_hub.server import serve_hub


@attrs.frozen
class Served:
    hub: WorkflowActivityHub
    url: str
    nursery: trio.Nursery


@asynccontextmanager
async def served(hub: WorkflowActivityHub, **options: Any) -> AsyncIterator[str]:
    """Serve ``hub`` on 127.0.0.1, port 0, for the duration of the block; yields the URL."""
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(functools.partial(serve_hub, hub, port=0, **options))
        try:
            yield url
        finally:
            nursery.cancel_scope.cancel()


@attrs.frozen
class SseEvent:
    fields: tuple[tuple[str, str], ...]

    def get(self, name: str) -> str | None:
        values = [value for key, value in self.fields if key == name]
        return values[-1] if values else None

    @property
    def comment(self) -> bool:
        return all(key == "" for key, _ in self.fields)


def parse_block(block: str) -> SseEvent:
    fields = []
    for line in block.split("\n"):
        name, _, value = line.partition(":")
        fields.append((name, value[1:] if value.startswith(" ") else value))
    return SseEvent(tuple(fields))


class SseReader:
    """Reads SSE blocks (separated by a blank line) from an httpx streaming response."""

    def __init__(self, response: httpx.Response, chunks: AsyncIterator[bytes]) -> None:
        self.response = response
        self._chunks = chunks
        self._buffer = b""
        self.writes = 0
        self.ended = False
        self.retry: str | None = None

    async def next(self) -> SseEvent:
        while b"\n\n" not in self._buffer:
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                self.ended = True
                raise
            self.writes += 1
            self._buffer += chunk
        block, _, self._buffer = self._buffer.partition(b"\n\n")
        event = parse_block(block.decode())
        if event.fields and event.fields[0][0] == "retry":
            # The server's reconnection delay, in front of the first event: kept aside, so that
            # the event reads as every other one.
            self.retry = event.fields[0][1]
            event = SseEvent(event.fields[1:])
        return event

    async def events(self, count: int) -> list[SseEvent]:
        return [await self.next() for _ in range(count)]


@asynccontextmanager
async def sse(client: httpx.AsyncClient, url: str, **kwargs: Any) -> AsyncIterator[SseReader]:
    async with (
        client.stream("GET", url, **kwargs) as response,
        aclosing(response.aiter_bytes()) as chunks,
    ):
        yield SseReader(response, chunks)


def hooks_for(hub: WorkflowActivityHub) -> HookRunner:
    runner = HookRunner(hub)
    runner.bind()
    return runner


class WsClosed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"closed with code {code}")
        self.code = code


class WsClient:
    """A minimal WebSocket client over wsproto (the library hypercorn itself uses).

    Written for the tests because trio-websocket leaves its socket open when the server closes.
    """

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._events: list[Any] = []
        self._text: list[str] = []

    async def _next_event(self) -> Any:
        while not self._events:
            data = await self._stream.receive_some(65536)
            self._ws.receive_data(data or None)
            self._events.extend(self._ws.events())
        return self._events.pop(0)

    async def handshake(self, target: str) -> None:
        await self._stream.send_all(self._ws.send(WsRequest(host="127.0.0.1", target=target)))
        event = await self._next_event()
        if not isinstance(event, AcceptConnection):
            raise WsClosed(getattr(event, "status_code", 0))

    async def send(self, event: Any) -> None:
        """Send a wsproto event (a message, a fragment of one, a ping)."""
        await self._stream.send_all(self._ws.send(event))

    async def get_message(self) -> str:
        while True:
            event = await self._next_event()
            if isinstance(event, TextMessage):
                self._text.append(event.data)
                if event.message_finished:
                    text = "".join(self._text)
                    self._text.clear()
                    return text
            elif isinstance(event, CloseConnection):
                if self._ws.state is WsState.REMOTE_CLOSING:
                    await self._stream.send_all(self._ws.send(event.response()))
                raise WsClosed(event.code)


@asynccontextmanager
async def websocket(url: str, path: str) -> AsyncIterator[WsClient]:
    host, _, port = url.removeprefix("http://").rpartition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        client = WsClient(stream)
        await client.handshake(path)
        yield client


class CuttingProxy:
    """A TCP proxy that cuts each connection after a random number of bytes from the server.

    The cut closes both sides at once, wherever it falls: between events, mid-event, inside a
    chunk header. ``cuts`` counts them.
    """

    def __init__(self, upstream_port: int, *, seed: int, max_bytes: int) -> None:
        self._upstream_port = upstream_port
        self._rng = random.Random(seed)
        self._max_bytes = max_bytes
        self.cuts = 0
        self.connections = 0

    async def run(self, *, task_status: trio.TaskStatus[int]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(functools.partial(trio.serve_listeners, self._handle, listeners))
            task_status.started(port)

    async def _handle(self, downstream: trio.SocketStream) -> None:
        self.connections += 1
        budget = self._rng.randint(1, self._max_bytes)
        try:
            await self._pipe(downstream, budget)
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # either side went away first: the connection is over all the same

    async def _pipe(self, downstream: trio.SocketStream, budget: int) -> None:
        up = await trio.open_tcp_stream("127.0.0.1", self._upstream_port)
        async with downstream, up, trio.open_nursery() as nursery:

            async def to_server() -> None:
                async for data in downstream:
                    await up.send_all(data)
                nursery.cancel_scope.cancel()

            async def to_client() -> None:
                nonlocal budget
                async for data in up:
                    if len(data) >= budget:
                        await downstream.send_all(data[:budget])
                        self.cuts += 1
                        break
                    budget -= len(data)
                    await downstream.send_all(data)
                nursery.cancel_scope.cancel()

            nursery.start_soon(to_server)
            nursery.start_soon(to_client)
