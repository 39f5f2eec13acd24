"""Open event streams of an application, so that closing it ends every one of them cleanly.

Written with anyio (Starlette's own), so the streams run on trio and, for a hub hosted by
``workflow_hub.asyncio``, on asyncio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio
from starlette.types import Receive, Send

__all__ = ["StreamTracker"]


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
