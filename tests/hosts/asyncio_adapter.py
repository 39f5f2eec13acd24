"""The conformance kit's adapter for a hub hosted by ``workflow_hub.asyncio`` (issue 26).

The harness is a trio program; the hub under test is hosted by asyncio, in a thread of its own
(``asyncio.run`` there, trio as its guest). Every operation is handed to that thread and run by
one *control* coroutine between two blocking reads of the next command: while the harness
thinks, the asyncio thread is blocked, so neither asyncio nor the guest delivers anything
(the adapter protocol's determinism rule). Only :meth:`settle` awaits, and so lets the loop,
the guest and the asyncio consumers run until nothing changes any more.

Consumers are asyncio code: callback observers are ``async def`` callbacks
(``hub.observe``), stream observers are asyncio tasks iterating ``hub.subscribe()``, and the
hook dispatcher is an ``async def`` too.
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any

import trio
import trio.testing

from workflow_hub import (
    Availability,
    Cursor,
    Diagnostic,
    Frame,
    HeartbeatEvent,
    LifecycleInput,
    ObserverLease,
    RootActivity,
    SnapshotFrame,
    WorkflowActivityPublisher,
    WorkflowEvent,
)
from workflow_hub.asyncio import FrameStream, Hub, open_hub
from workflow_hub.testing.conformance import AdapterConfig, ObserverStyle

_STABLE_ROUNDS = 2


class ConsumerFailure(RuntimeError):
    """What a failing test consumer raises, on purpose."""


class _Consumer:
    """Records a frame as it starts it; may fail; may stall (an asyncio gate)."""

    def __init__(self, *, failing: bool) -> None:
        self.received: list[Frame] = []
        self.failing = failing
        self._gate: asyncio.Event | None = None

    def stall(self) -> None:
        if self._gate is None:
            self._gate = asyncio.Event()

    def release(self) -> None:
        if self._gate is not None:
            self._gate.set()
            self._gate = None

    async def __call__(self, frame: Frame) -> None:
        self.received.append(frame)
        if self.failing:
            raise ConsumerFailure("a failing test consumer")
        gate = self._gate
        if gate is not None:
            await gate.wait()


async def _consume(stream: FrameStream, consumer: _Consumer) -> None:
    async for frame in stream:
        await consumer(frame)


class AsyncioHostAdapter:
    """:class:`~workflow_hub.testing.conformance.ConformanceAdapter` for the asyncio host."""

    def __init__(self, config: AdapterConfig) -> None:
        self._config = config
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], _Reply] | None] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._hub: Hub | None = None
        self._stack = AsyncExitStack()
        self._publishers: list[WorkflowActivityPublisher] = []
        self._consumers: list[_Consumer] = []
        self._leases: list[ObserverLease] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._events: list[WorkflowEvent] = []

    # --- the harness's side (trio) ---------------------------------------------------------

    async def _run(self, command: Callable[[], Any]) -> Any:
        reply = _Reply()
        self._commands.put((command, reply))
        await trio.to_thread.run_sync(reply.done.wait, abandon_on_cancel=True)
        if reply.error is not None:
            raise reply.error
        return reply.value

    async def start(self) -> None:
        started = _Reply()
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._control(started),), daemon=True
        )
        self._thread.start()
        await trio.to_thread.run_sync(started.done.wait, abandon_on_cancel=True)
        if started.error is not None:
            raise started.error

    async def close(self) -> None:
        self._commands.put(None)
        if self._thread is not None:
            await trio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)

    # --- the asyncio thread ----------------------------------------------------------------

    async def _control(self, started: _Reply) -> None:
        try:
            host = open_hub(
                queue_limit=self._config.queue_limit,
                diagnostics_limit=self._config.diagnostics_limit,
                history_limit=self._config.history_limit,
                shutdown_grace=0,
            )
            async with host as hub, self._stack:
                self._hub = hub
                started.finish(None, None)
                while True:
                    # Blocking on purpose: nothing runs in this thread until the next command.
                    command = self._commands.get()
                    if command is None:
                        break
                    call, reply = command
                    try:
                        result = call()
                        if inspect.isawaitable(result):
                            result = await result
                    except BaseException as error:
                        reply.finish(None, error)
                    else:
                        reply.finish(result, None)
                for task in self._tasks:
                    task.cancel()
        except BaseException as error:
            started.finish(None, error)
            raise

    @property
    def hub(self) -> Hub:
        assert self._hub is not None
        return self._hub

    async def _settle(self) -> None:
        """Until a whole round changes nothing: the guest's tasks all blocked, then the loop's."""
        last: object = None
        stable = 0
        while stable < _STABLE_ROUNDS:
            await self._guest_blocked()
            for _ in range(3):
                await asyncio.sleep(0)
            now = (
                tuple(len(consumer.received) for consumer in self._consumers),
                tuple(lease.pending for lease in self._leases),
                len(self._events),
                self.hub.statistics().hook_events_pending,
            )
            stable = stable + 1 if now == last else 0
            last = now

    async def _guest_blocked(self) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def wait() -> None:
            await trio.testing.wait_all_tasks_blocked()
            done.set_result(None)

        # Host code may spawn into the guest: its run is this thread's trio run.
        trio.lowlevel.spawn_system_task(wait)
        await done

    async def _observe(self, style: ObserverStyle, failing: bool, since: Cursor | None) -> bool:
        consumer = _Consumer(failing=failing)
        if style == "stream":
            stream = await self._stack.enter_async_context(self.hub.subscribe(since=since))
            self._tasks.append(asyncio.create_task(_consume(stream, consumer)))
            lease = stream.lease
        else:
            lease = self.hub.observe(consumer, since=since)
        self._consumers.append(consumer)
        self._leases.append(lease)
        return lease.resumed

    async def _dispatch(self, event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        self._events.append(event)

    # --- the protocol ----------------------------------------------------------------------

    async def register_publisher(self) -> None:
        await self._run(lambda: self._publishers.append(self.hub.register_publisher()))

    async def publish_snapshot(
        self,
        publisher: int,
        availability: Availability,
        roots: tuple[RootActivity, ...] | None,
        detail: str | None = None,
    ) -> Cursor | None:
        return await self._run(
            lambda: self._publishers[publisher].publish_snapshot(availability, roots, detail)
        )

    async def publish_changed(self, publisher: int, root: RootActivity) -> Cursor | None:
        return await self._run(lambda: self._publishers[publisher].publish_changed(root))

    async def publish_removed(self, publisher: int, root_run_id: str) -> Cursor | None:
        return await self._run(lambda: self._publishers[publisher].publish_removed(root_run_id))

    async def publish_lifecycle(self, publisher: int, event: LifecycleInput) -> Cursor | None:
        return await self._run(lambda: self._publishers[publisher].publish_lifecycle(event))

    async def publish_heartbeat(self, publisher: int, event: HeartbeatEvent) -> None:
        await self._run(lambda: self._publishers[publisher].publish_heartbeat(event))

    async def dispose_publisher(self, publisher: int) -> None:
        await self._run(lambda: self._publishers[publisher].dispose())

    async def observe(self, style: ObserverStyle, failing: bool, since: Cursor | None) -> bool:
        if failing and style != "callback":
            raise ValueError("only callback observers fail (O5)")
        result: bool = await self._run(lambda: self._observe(style, failing, since))
        return result

    async def stall(self, observer: int) -> None:
        await self._run(lambda: self._consumers[observer].stall())

    async def release(self, observer: int) -> None:
        await self._run(lambda: self._consumers[observer].release())

    async def dispose_observer(self, observer: int) -> None:
        await self._run(lambda: self._leases[observer].dispose())

    async def bind_dispatcher(self) -> None:
        await self._run(lambda: self.hub.bind_dispatcher(self._dispatch))

    async def dispose_hub(self) -> None:
        await self._run(lambda: self.hub.dispose())

    async def settle(self) -> None:
        await self._run(self._settle)

    async def frames(self, observer: int) -> Sequence[Frame]:
        return await self._run(lambda: tuple(self._consumers[observer].received))

    async def pending(self, observer: int) -> int:
        return await self._run(lambda: self._leases[observer].pending)

    async def snapshot(self) -> SnapshotFrame:
        return await self._run(lambda: self.hub.snapshot_frame())

    async def diagnostics(self) -> Sequence[Diagnostic]:
        return await self._run(lambda: self.hub.diagnostics())

    async def hook_events(self) -> Sequence[WorkflowEvent]:
        return await self._run(lambda: tuple(self._events))


class _Reply:
    """A command's outcome, handed from the asyncio thread to the harness's."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def finish(self, value: Any, error: BaseException | None) -> None:
        self.value = value
        self.error = error
        self.done.set()
