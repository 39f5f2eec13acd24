"""Open event streams of an application, so that closing it ends every one of them cleanly;
and what every event stream starts with (its headers, the ``retry:`` field) or, for ``HEAD``,
ends with at once.

Written with anyio (Starlette's own), so the streams run on trio and, for a hub hosted by
``workflow_hub.asyncio``, on asyncio.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Final, final

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .._contract import Frame
from .._core import ObserverLease
from .._exceptions import WorkflowHubError
from ._encode import FrameEncoder

__all__ = [
    "CLIENT_BUDGET",
    "CUT_EXTENSION",
    "RETRY_FIELD",
    "SSE_HEADERS",
    "SSE_RETRY",
    "WRITE_SLICE",
    "ClientWriter",
    "ClosedOverBudget",
    "StreamHead",
    "StreamTracker",
    "WriteBudget",
]

logger = logging.getLogger("workflow_hub.server")

WRITE_SLICE: Final = 64 * 1024
"""Bytes handed to the ASGI server in one ``send`` at most: the server (h11 frames each chunk
into a new string) copies at most this much of a body per client, whatever its size."""

CLIENT_BUDGET: Final = 256 * 1024
"""Bytes a client that does not read may hold on its own (beyond the snapshots' encodings the
clients share): a client stalled past it is closed (see :class:`WriteBudget`)."""

CUT_EXTENSION: Final = "workflow_hub.cut"
"""The ASGI scope extension through which ``serve_hub``'s server lets the app close a
connection under a write that cannot finish (``{"cut": callable}``)."""

SSE_RETRY: Final = 2000
"""Milliseconds an EventSource waits before it reconnects: the server paces reconnections, not
each client's default."""

RETRY_FIELD: Final = f"retry: {SSE_RETRY}\n".encode()
"""The ``retry:`` line each stream puts in front of its first event (a block of its own would
be an empty event to some clients, httpx-sse among them)."""

SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    # nginx and some other proxies buffer responses unless told not to.
    (b"x-accel-buffering", b"no"),
    # A stream is never kept: every byte of it is already stale for the next reader.
    (b"cache-control", b"no-store"),
]
"""The response headers of every event stream."""


@final
class StreamHead(Response):
    """The answer to ``HEAD`` on an event stream: its headers, then the end, without
    subscribing (a HEAD that held the stream open would hold a hub observer with it)."""

    def __init__(self) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = list(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class StreamTracker:
    """Open event streams, so that :meth:`close` can end them all (shared by the hub's and the
    fleet's applications)."""

    def __init__(self) -> None:
        self._streams: set[anyio.CancelScope] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """End every open stream now and every stream opened later at once. Idempotent."""
        self._closed = True
        for scope in list(self._streams):
            scope.cancel()

    @contextmanager
    def _tracked(self) -> Iterator[anyio.CancelScope]:
        scope = anyio.CancelScope()
        if self._closed:
            scope.cancel()
        self._streams.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._streams.discard(scope)

    async def stream_until_done(
        self, receive: Receive, send: Send, produce: Callable[[], Awaitable[None]]
    ) -> None:
        """Run ``produce`` until it returns (hub disposed), the app closes or the client leaves.

        Unless the client left, the response then ends properly (the last chunk), so the
        client sees the stream end rather than a broken connection.
        """
        gone = False
        async with anyio.create_task_group() as nursery:

            async def watch_disconnect() -> None:
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_disconnect)
            with self._tracked():
                await produce()
            nursery.cancel_scope.cancel()
        if not gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class ClosedOverBudget(WorkflowHubError):
    """The client went over its budget: its stream ends (its connection is cut)."""


@final
class ClientWriter:
    """What one stream is writing to its client. An SSE body goes out in slices of at most
    :data:`WRITE_SLICE` bytes and is held here only (never in the caller's frame), so that
    closing the client over budget drops it even while the ASGI server's write to it cannot
    finish; a WebSocket message is one send (ASGI cannot fragment it), whose copy the server
    holds until the write ends."""

    __slots__ = (
        "_budget",
        "_cut",
        "_send",
        "body",
        "lease",
        "mark",
        "message_size",
        "offset",
        "over",
        "sending",
    )

    def __init__(self, budget: WriteBudget, scope: Scope, send: Send) -> None:
        self._budget = budget
        self._send = send
        cut = scope.get("extensions", {}).get(CUT_EXTENSION, {}).get("cut")
        self._cut: Callable[[], object] | None = cut if callable(cut) else None
        self.lease: ObserverLease | None = None
        """The client's hub subscription, ended when it goes over budget."""
        self.body = b""
        self.offset = 0
        self.message_size = 0
        self.mark = 0
        """The encoder's ``snapshots_dropped`` when the current slice was handed over."""
        self.sending = False
        self.over = False

    def held(self) -> int:
        """Bytes of the current write this client alone holds (a kept snapshot's: none)."""
        if not self.sending:
            return 0
        if self.message_size:
            return self.message_size
        body = self.body
        if self._budget.encoder.is_kept(body):
            return min(len(body) - self.offset, WRITE_SLICE)
        return len(body) - self.offset + min(len(body), WRITE_SLICE)

    def close_over_budget(self) -> None:
        """Drop what this client holds, end its subscription and cut its connection (where
        the server lets us: ``serve_hub``'s does)."""
        self.over = True
        self.body = b""
        if self.lease is not None:
            self.lease.dispose()
        if self._cut is not None:
            self._cut()

    async def write(self, body: bytes) -> None:
        """Send ``body`` as HTTP body chunks; raises :class:`ClosedOverBudget` once over."""
        self.body = body
        del body
        await self._drain()

    async def write_frames(
        self, encode: Callable[[list[Frame]], bytes], frames: list[Frame]
    ) -> None:
        """Send ``frames`` encoded as one body; the list is emptied first, so that nothing of
        the write is held but by this writer."""
        body = encode(frames)
        if len(body) <= WRITE_SLICE:
            # The common case, one slice: within any budget, so nothing to account for.
            await self._send({"type": "http.response.body", "body": body, "more_body": True})
            return
        self.body = body
        del body
        frames.clear()
        await self._drain()

    async def _drain(self) -> None:
        self.offset = 0
        self.sending = True
        try:
            while not self.over and self.offset < len(self.body):
                piece = self.body[self.offset : self.offset + WRITE_SLICE]
                self.offset += len(piece)
                self.mark = self._budget.encoder.snapshots_dropped
                await self._send({"type": "http.response.body", "body": piece, "more_body": True})
        finally:
            self.sending = False
            self.body = b""
        if self.over:
            raise ClosedOverBudget

    async def message(self, send_text: Callable[[str], Awaitable[None]], text: str) -> None:
        """Send one WebSocket message; raises :class:`ClosedOverBudget` once over."""
        self.message_size = len(text)
        self.mark = self._budget.encoder.snapshots_dropped
        self.sending = True
        try:
            await send_text(text)
        finally:
            self.sending = False
            self.message_size = 0
        if self.over:
            raise ClosedOverBudget


@final
class WriteBudget:
    """The app's client writers, and the rule that bounds what a stalled client costs.

    A client's write is checked each time a snapshot's encoding leaves the encoder's cache (a
    clock that runs as fast as clients attach or overflow at new revisions, never on a timer):
    a writer that has not finished a single slice since the drop before this one, and holds
    more than :data:`CLIENT_BUDGET` bytes of its own, is closed. Its hub subscription ends and
    its body is dropped at once; under ``serve_hub`` its connection is cut, and the client
    resumes from the last event it received (N2, R2): an ``EventSource`` on its own with
    ``Last-Event-ID``, a WebSocket client with ``?since=``.
    """

    __slots__ = ("_writers", "closed", "encoder")

    def __init__(self, encoder: FrameEncoder) -> None:
        self.encoder = encoder
        self._writers: set[ClientWriter] = set()
        self.closed = 0
        """Clients closed over budget so far."""
        encoder.on_snapshot_dropped = self._check

    def held(self) -> int:
        """Bytes the open writers hold on their own, together."""
        return sum(writer.held() for writer in self._writers)

    @contextmanager
    def writer(self, scope: Scope, send: Send) -> Iterator[ClientWriter]:
        writer = ClientWriter(self, scope, send)
        self._writers.add(writer)
        try:
            yield writer
        finally:
            self._writers.discard(writer)

    def _check(self) -> None:
        clock = self.encoder.snapshots_dropped
        for writer in list(self._writers):
            if writer.sending and not writer.over and writer.mark < clock - 1:
                held = writer.held()
                if held > CLIENT_BUDGET:
                    self.closed += 1
                    logger.info(
                        "closed a client that read nothing while %d snapshots were sent to "
                        "others: it held %d bytes (budget %d); it resumes from its last event",
                        clock - writer.mark,
                        held,
                        CLIENT_BUDGET,
                    )
                    writer.close_over_budget()
