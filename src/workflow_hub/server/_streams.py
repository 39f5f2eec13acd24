"""Open event streams of an application, so that closing it ends every one of them cleanly;
and what every event stream starts with (its headers, the ``retry:`` field) or, for ``HEAD``,
ends with at once.

Written with anyio (Starlette's own), so the streams run on trio and, for a hub hosted by
``workflow_hub.asyncio``, on asyncio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Final, final

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["RETRY_FIELD", "SSE_HEADERS", "SSE_RETRY", "StreamHead", "StreamTracker"]

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
