"""Hook events for remote clients: the server is one extension of the host's ``HookRunner``.

Hook events are notifications, not state: there is no snapshot to fall back to and no resume.
Each client gets a bounded buffer; when it is full the oldest event is dropped and counted, and
the client is told how many it missed (``event: dropped``) before the next event it receives.
"""

from __future__ import annotations

from collections import deque
from typing import Final, final

import anyio

from .._contract import WorkflowEvent
from .._core import HOOK_EVENT_TYPES, HookRunner
from ._encode import encode_hook_event, sse_event

__all__ = ["EXTENSION_NAME", "HookEventClient", "HookEventFanout"]

EXTENSION_NAME: Final = "workflow_hub.server"
"""The name the server registers its handlers under in the host's ``HookRunner``."""


@final
class HookEventClient:
    """The hook events waiting for one client, oldest first, bounded."""

    __slots__ = ("_ended", "_events", "_limit", "_wakeup", "dropped")

    def __init__(self, limit: int) -> None:
        self._events: deque[bytes] = deque()
        self._limit = limit
        self._wakeup = anyio.Event()
        self._ended = False
        self.dropped = 0

    def end(self) -> None:
        """No more events will come (the hub is gone): :meth:`take` returns what is left, then
        ``b""``."""
        self._ended = True
        self._wakeup.set()

    def push(self, data: bytes) -> None:
        if len(self._events) >= self._limit:
            self._events.popleft()
            self.dropped += 1
        self._events.append(data)
        self._wakeup.set()

    async def take(self) -> bytes:
        """Everything pending as one chunk (one write), a ``dropped`` notice first if needed;
        ``b""`` once :meth:`end` was called and nothing is left."""
        while not self._events:
            if self._ended:
                return b""
            self._wakeup = anyio.Event()
            await self._wakeup.wait()
        chunks: list[bytes] = []
        if self.dropped:
            chunks.append(sse_event("dropped", f'{{"count":{self.dropped}}}'))
            self.dropped = 0
        chunks.extend(self._events)
        self._events.clear()
        return b"".join(chunks)


@final
class HookEventFanout:
    """Registers with a ``HookRunner`` and copies each event, encoded once, to every client."""

    __slots__ = ("_clients", "encodings")

    def __init__(self, runner: HookRunner) -> None:
        self._clients: dict[HookEventClient, None] = {}
        self.encodings = 0
        extension = runner.extension(EXTENSION_NAME)
        for event_type in HOOK_EVENT_TYPES:
            extension.on(event_type, self._publish)

    def _publish(self, event: WorkflowEvent) -> None:
        # A plain function: the runner calls it synchronously, in hub order, and it never waits.
        if not self._clients:
            return
        data = encode_hook_event(event)
        self.encodings += 1
        for client in self._clients:
            client.push(data)

    def attach(self, limit: int) -> HookEventClient:
        client = HookEventClient(limit)
        self._clients[client] = None
        return client

    def detach(self, client: HookEventClient) -> None:
        self._clients.pop(client, None)
