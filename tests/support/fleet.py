"""A mirrored hub for fleet tests: a running hub whose frames a real mirror appends to Redis."""

from __future__ import annotations

import functools

import coredis
import trio

from tests.support.builders import root
from workflow_hub import WorkflowActivityHub, open_hub
from workflow_hub.redis import mirror_hub


async def mirrored(
    nursery: trio.Nursery, redis: coredis.Redis[bytes], prefix: str, source: str
) -> WorkflowActivityHub:
    hub: WorkflowActivityHub = await nursery.start(_run_hub)
    mirror = await nursery.start(
        functools.partial(
            mirror_hub, hub, redis, source=source, prefix=prefix, refresh_interval=0.05
        )
    )
    await mirror.wait_claimed()
    return hub


async def _run_hub(*, task_status: trio.TaskStatus[WorkflowActivityHub]) -> None:
    async with open_hub() as hub:
        task_status.started(hub)
        await trio.sleep_forever()


class HangingProxy:
    """Forwards loopback connections to a port; ``hang()`` makes every connection open at that
    moment stop passing bytes in both directions while staying open (a half-open connection after
    a partition), while connections opened afterwards pass bytes normally. ``stop()`` refuses
    new connections and hangs the open ones (a server that is gone without a word)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.connections = 0
        self.hung = 0
        self._open: set[trio.Event] = set()
        self._accepting = True

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._handle, listeners)

    def hang(self) -> None:
        for flowing in list(self._open):
            flowing.set()  # set = hung
        self.hung += len(self._open)

    def stop(self) -> None:
        self._accepting = False
        self.hang()

    def resume(self) -> None:
        self._accepting = True

    async def _handle(self, client: trio.SocketStream) -> None:
        if not self._accepting:
            client.socket.close()
            return
        self.connections += 1
        hung = trio.Event()
        self._open.add(hung)
        upstream: trio.SocketStream | None = None
        try:
            upstream = await trio.open_tcp_stream("127.0.0.1", self.target_port)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, client, upstream, hung, nursery.cancel_scope)
                nursery.start_soon(self._pump, upstream, client, hung, nursery.cancel_scope)
        except OSError:
            pass
        finally:
            self._open.discard(hung)
            if upstream is not None:
                upstream.socket.close()
            client.socket.close()

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        hung: trio.Event,
        scope: trio.CancelScope,
    ) -> None:
        try:
            while data := await source.receive_some(65536):
                if hung.is_set():
                    await trio.sleep_forever()  # held open, never forwarded
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        scope.cancel()


async def stopped_source(
    redis: coredis.Redis[bytes], prefix: str, name: str, *, declare: bool
) -> None:
    """A source that mirrored one root, then stopped: declaring itself unavailable first (a
    clean shutdown, its goodbye in Redis) or not (killed)."""
    async with open_hub() as hub, trio.open_nursery() as nursery:
        mirror = await nursery.start(
            functools.partial(mirror_hub, hub, redis, source=name, prefix=prefix)
        )
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("r")])
        if declare:
            publisher.dispose()
        while mirror.appended_cursor != hub.cursor:  # noqa: ASYNC110
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
