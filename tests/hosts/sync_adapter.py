"""The conformance kit's adapter for a hub hosted by ``workflow_hub.sync`` (the thread host).

The harness is a trio program in the main thread; the hub under test runs in the host's own
trio thread (``with open_hub() as hub``). Every operation is run *in* that thread by one
*control* call (``hub.call(control)``) that blocks it between two reads of the next command: while
the harness thinks, the hub's thread runs nothing, so nothing is delivered (the adapter
protocol's determinism rule). :meth:`settle` ends the control call and waits in the hub's thread
until all its tasks are blocked; the next operation starts a new control call.

The threads profile goes through the host's own thread-safe :class:`workflow_hub.sync.Publisher`,
whose calls are queued to the hub's thread in the host's portal. While the harness's threads
publish, the control call holds the hub's thread, so their calls wait in the portal, behind it;
:meth:`flush_threads` ends the control call, and the portal applies every queued call in one
round before the hub's tasks run (the whole burst is applied before anything of it is
delivered). A publisher is registered in the hub's thread, so its thread-safe face is made from
the raw publisher with the host's portal (``Publisher._create``: the one seam this test support
reaches through, as nothing public turns a raw publisher into a host handle).

Callback observers only (the sync host's streams are iterated by threads: a different idiom).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

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
from workflow_hub.sync import Hub, Publisher, open_hub
from workflow_hub.testing.conformance import AdapterConfig, ObserverStyle, ThreadSafePublisher

_TIMEOUT = 10.0
_T = TypeVar("_T")


class ConsumerFailure(RuntimeError):
    """What a failing test consumer raises, on purpose."""


class _Consumer:
    """Records a frame as it starts it; may fail; may stall (a trio gate in the hub's thread)."""

    def __init__(self, *, failing: bool) -> None:
        self.received: list[Frame] = []
        self.failing = failing
        self._gate: trio.Event | None = None

    def stall(self) -> None:
        if self._gate is None:
            self._gate = trio.Event()

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


class _Reply(Generic[_T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: _T | None = None
        self.error: BaseException | None = None


class SyncHostAdapter:
    """:class:`~workflow_hub.testing.conformance.ThreadsAdapter` for ``workflow_hub.sync``."""

    profiles = ("source", "resume", "threads")

    def __init__(self, config: AdapterConfig) -> None:
        self._config = config
        self._host: AbstractContextManager[Hub] | None = None
        self._hub: Hub | None = None
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], _Reply[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._holder: threading.Thread | None = None
        self._publishers: list[WorkflowActivityPublisher] = []
        self._consumers: list[_Consumer] = []
        self._leases: list[ObserverLease] = []
        self._events: list[WorkflowEvent] = []

    @property
    def hub(self) -> Hub:
        assert self._hub is not None
        return self._hub

    # --- holding the hub's thread ----------------------------------------------------------

    def _control(self) -> None:
        """In the hub's thread: run commands until told to let go."""
        while (command := self._commands.get()) is not None:
            call, reply = command
            try:
                reply.value = call()
            except BaseException as error:
                reply.error = error
            reply.done.set()

    async def _run(self, call: Callable[[], _T]) -> _T:
        if self._holder is None:
            self._holder = threading.Thread(target=self.hub.call, args=(self._control,))
            self._holder.start()
        reply: _Reply[_T] = _Reply()
        self._commands.put((call, reply))
        await trio.to_thread.run_sync(reply.done.wait, _TIMEOUT, abandon_on_cancel=True)
        if not reply.done.is_set():
            raise TimeoutError("the hub's thread did not run a command")
        if reply.error is not None:
            raise reply.error
        return reply.value  # type: ignore[return-value]  # set when no error

    async def _let_go(self) -> None:
        holder, self._holder = self._holder, None
        if holder is not None:
            self._commands.put(None)
            await trio.to_thread.run_sync(holder.join, _TIMEOUT, abandon_on_cancel=True)

    # --- the protocol ----------------------------------------------------------------------

    async def start(self) -> None:
        self._host = open_hub(
            queue_limit=self._config.queue_limit,
            diagnostics_limit=self._config.diagnostics_limit,
            history_limit=self._config.history_limit,
            shutdown_grace=0,
        )
        self._hub = await trio.to_thread.run_sync(self._host.__enter__)

    async def close(self) -> None:
        if self._host is None:
            return
        if self._hub is not None:
            await self._run(self._release_all)
        await self._let_go()
        await trio.to_thread.run_sync(self._host.__exit__, None, None, None)

    def _release_all(self) -> None:
        for consumer in self._consumers:
            consumer.release()

    async def register_publisher(self) -> None:
        raw = await self._run(self.hub.trio_hub.register_publisher)
        self._publishers.append(raw)

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

    def _observe(self, failing: bool, since: Cursor | None) -> bool:
        consumer = _Consumer(failing=failing)
        lease = self.hub.trio_hub.observe(consumer, since=since)
        self._consumers.append(consumer)
        self._leases.append(lease)
        return lease.resumed

    async def observe(self, style: ObserverStyle, failing: bool, since: Cursor | None) -> bool:
        if style != "callback":
            raise ValueError("this adapter attaches callback observers only")
        result: bool = await self._run(lambda: self._observe(failing, since))
        return result

    async def stall(self, observer: int) -> None:
        await self._run(lambda: self._consumers[observer].stall())

    async def release(self, observer: int) -> None:
        await self._run(lambda: self._consumers[observer].release())

    async def dispose_observer(self, observer: int) -> None:
        await self._run(lambda: self._leases[observer].dispose())

    async def _dispatch(self, event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        self._events.append(event)

    async def bind_dispatcher(self) -> None:
        await self._run(lambda: self.hub.trio_hub.bind_dispatcher(self._dispatch))

    async def dispose_hub(self) -> None:
        await self._run(lambda: self.hub.trio_hub.dispose())

    async def settle(self) -> None:
        await self._let_go()
        token = self.hub.trio_token
        await trio.to_thread.run_sync(
            lambda: trio.from_thread.run(trio.testing.wait_all_tasks_blocked, trio_token=token)
        )

    async def frames(self, observer: int) -> Sequence[Frame]:
        return await self._run(lambda: tuple(self._consumers[observer].received))

    async def pending(self, observer: int) -> int:
        return await self._run(lambda: self._leases[observer].pending)

    async def snapshot(self) -> SnapshotFrame:
        return await self._run(lambda: self.hub.trio_hub.snapshot_frame())

    async def diagnostics(self) -> Sequence[Diagnostic]:
        return await self._run(lambda: self.hub.trio_hub.diagnostics())

    async def hook_events(self) -> Sequence[WorkflowEvent]:
        return await self._run(lambda: tuple(self._events))

    # --- the threads profile -----------------------------------------------------------------

    async def thread_publisher(self, publisher: int) -> ThreadSafePublisher:
        raw = self._publishers[publisher]
        # The one private seam (see the module's text).
        return Publisher._create(raw, self.hub._portal)

    async def hold_threads(self) -> None:
        # A command that returns at once: the control call then holds the hub's thread.
        await self._run(lambda: None)

    async def flush_threads(self) -> None:
        await self._let_go()
        # The portal is first in, first out: this call returns after every thread's call.
        await trio.to_thread.run_sync(self.hub.call, lambda: None)
