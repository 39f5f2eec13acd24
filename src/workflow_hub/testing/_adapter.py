"""The adapter protocol of the conformance kit, and the adapter for this package's own hub.

An *adapter* is the small piece of glue between the conformance harness and one implementation of
the contract: the harness says "register a publisher", "publish this root with publisher 0",
"attach a callback observer", "settle", and then reads back what each observer received, the
snapshot, the diagnostics and the hook events. It compares all of that with the reference model.

Everything the harness needs from an implementation is in :class:`ConformanceAdapter`; nothing in
it mentions this package's hub, so any hub (or a host in another language, through the
JSON-lines protocol of ``_jsonl``) can be tested with the same suite.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Literal, Protocol, final

import attrs
import trio
import trio.testing

from .._contract import (
    Availability,
    Cursor,
    Diagnostic,
    Frame,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
    SnapshotFrame,
    WorkflowEvent,
)
from .._core import FrameStream, ObserverLease, WorkflowActivityHub, WorkflowActivityPublisher
from .._exceptions import WorkflowHubError
from .._threads import ThreadPublisher

__all__ = [
    "AdapterConfig",
    "AdapterFactory",
    "ConformanceAdapter",
    "HubAdapter",
    "ObserverStyle",
    "ThreadSafePublisher",
    "ThreadsAdapter",
    "offers_threads",
]

ObserverStyle = Literal["callback", "stream"]
"""How an observer consumes frames: a callback the hub calls, or a stream the consumer pulls."""


@final
@attrs.frozen(kw_only=True)
class AdapterConfig:
    """How the hub under test must be configured for one scenario."""

    queue_limit: int = 256
    """The per-observer bound on pending frames (O4)."""
    diagnostics_limit: int = 256
    """How many diagnostics the hub retains (L3)."""
    history_limit: int = 1024
    """How many broadcast frames the hub keeps for resuming observers (R1); 0 is off."""


class ConformanceAdapter(Protocol):
    """What an implementation offers to be tested. Every method is a coroutine.

    The harness makes one adapter per scenario (``factory(config)``), awaits :meth:`start`, calls
    the operations and readers from the same task, and finally awaits :meth:`close`.

    *Numbering.* Publishers are numbered 0, 1, 2 … in the order :meth:`register_publisher` was
    called, observers 0, 1, 2 … in the order :meth:`observe` was called, including the inert ones
    a disposed hub hands out. Operations name them by these numbers.

    *Determinism.* Nothing may be delivered except while :meth:`settle` runs: the operation
    methods return without letting the implementation's delivery tasks run (for a trio hub this
    means they never checkpoint). ``settle`` then returns once every observer has taken all the
    frames it can and the hook dispatcher has handled every event it can: once the
    implementation is quiescent.

    *Test consumers.* Each observer is consumed by a recording consumer that appends a frame to
    its record as it *starts* processing it. A *failing* consumer raises as it starts every frame
    (only callback observers fail: a stream consumer's exception is the caller's own business). A
    *stalled* consumer blocks inside each frame it starts until it is released (stalling it again
    changes nothing); releasing lets the frame in flight finish, and the consumer takes further
    frames at the next settle. The
    dispatcher bound by :meth:`bind_dispatcher` records every event it is handed, in order.
    """

    async def start(self) -> None:
        """Create and run a fresh hub configured by the adapter's :class:`AdapterConfig`."""
        ...

    async def close(self) -> None:
        """Stop the hub and free everything the adapter holds."""
        ...

    async def register_publisher(self) -> None:
        """``hub.register_publisher()`` (P1); the new publisher gets the next number."""
        ...

    async def publish_snapshot(
        self,
        publisher: int,
        availability: Availability,
        roots: tuple[RootActivity, ...] | None,
    ) -> Cursor | None:
        """``publish_snapshot`` (P3); ``roots`` is a tuple exactly when ``availability`` is ready.

        An adapter whose method also takes a keyword ``detail`` (a str or None) is given C3's
        ``detail`` of non-ready snapshots too, and checked for it (see :class:`HubAdapter`)."""
        ...

    async def publish_changed(self, publisher: int, root: RootActivity) -> Cursor | None:
        """``publish_changed`` (P4): the cursor assigned, or None when the publisher is fenced."""
        ...

    async def publish_removed(self, publisher: int, root_run_id: str) -> Cursor | None:
        """``publish_removed`` (P5)."""
        ...

    async def publish_lifecycle(self, publisher: int, event: LifecycleInput) -> Cursor | None:
        """``publish_lifecycle`` (P6)."""
        ...

    async def publish_heartbeat(self, publisher: int, event: HeartbeatEvent) -> None:
        """``publish_heartbeat`` (P7)."""
        ...

    async def dispose_publisher(self, publisher: int) -> None:
        """``publisher.dispose()`` (P8)."""
        ...

    async def observe(self, style: ObserverStyle, failing: bool, since: Cursor | None) -> bool:
        """Attach a recording consumer (O1, O9); the observer gets the next number.

        ``since`` (R2) is passed on to the hub (``observe(..., since=since)``); the answer is
        the lease's ``resumed``: true when the observer got the frames it missed instead of a
        snapshot. ``since`` carries the implementation's own epoch strings, or one it never had.
        """
        ...

    async def stall(self, observer: int) -> None:
        """Make the observer's consumer block inside every frame it starts from now on."""
        ...

    async def release(self, observer: int) -> None:
        """Unblock the observer's consumer: the frame in flight finishes, stalling ends."""
        ...

    async def dispose_observer(self, observer: int) -> None:
        """``lease.dispose()`` (O6)."""
        ...

    async def bind_dispatcher(self) -> None:
        """Bind the recording dispatcher (K1). Binding again binds the same recorder again."""
        ...

    async def dispose_hub(self) -> None:
        """``hub.dispose()`` (L2)."""
        ...

    async def settle(self) -> None:
        """Let the implementation deliver until it is quiescent."""
        ...

    async def frames(self, observer: int) -> Sequence[Frame]:
        """Every frame the observer's consumer started processing, in order."""
        ...

    async def pending(self, observer: int) -> int:
        """Frames waiting in the observer's queue (the one in flight does not count, O4)."""
        ...

    async def snapshot(self) -> SnapshotFrame:
        """``hub.snapshot_frame()`` (L3)."""
        ...

    async def diagnostics(self) -> Sequence[Diagnostic]:
        """``hub.diagnostics()``, oldest first (L3)."""
        ...

    async def hook_events(self) -> Sequence[WorkflowEvent]:
        """Every event the recording dispatcher was handed, in order (K1, K2)."""
        ...


class ThreadSafePublisher(Protocol):
    """The thread-safe entry point of one publisher: what plain threads call (H1).

    Every method is synchronous, may be called from any thread at any time (several threads at
    once), checks its argument in the calling thread (a bad one raises
    :class:`~workflow_hub.ContractError` naming the field there, and nothing is queued) and
    returns without waiting for the hub. Calls one thread makes take effect in its order, and
    none is lost. What they return is ignored.
    """

    def publish_changed(self, root: RootActivity) -> object:
        """``publish_changed`` (P4), from a plain thread."""
        ...

    def publish_removed(self, root_run_id: str) -> object:
        """``publish_removed`` (P5), from a plain thread."""
        ...

    def dispose(self) -> object:
        """``dispose`` (P8), from a plain thread."""
        ...


class ThreadsAdapter(ConformanceAdapter, Protocol):
    """An adapter that offers the ``threads`` profile (H1): the three methods below as well.

    For a burst of publishes from threads the harness awaits :meth:`thread_publisher` and
    :meth:`hold_threads`, starts real OS threads that call the handle at once (a barrier), joins
    them *without* yielding to its own trio loop, then awaits :meth:`flush_threads` and settles.
    """

    async def thread_publisher(self, publisher: int) -> ThreadSafePublisher:
        """The thread-safe handle of publisher ``publisher`` (the same publisher the other
        operations name); the harness shares it between its threads."""
        ...

    async def hold_threads(self) -> None:
        """Before the threads start: apply nothing they publish until :meth:`flush_threads`.

        A hub that runs in the harness's own trio thread needs nothing here (the harness does
        not yield while its threads run); a hub with a thread of its own must keep that thread
        from applying and delivering, so that the whole burst is applied before anything of it
        is delivered (the determinism rule of :class:`ConformanceAdapter`).
        """
        ...

    async def flush_threads(self) -> None:
        """After the threads ended: apply every call they made, in the order they were queued,
        and return once all of them were applied (delivery is then up to :meth:`settle`)."""
        ...


def offers_threads(adapter_factory: object) -> bool:
    """Whether an adapter factory offers the thread entry point (:class:`ThreadsAdapter`'s
    methods as attributes of the factory: a class that defines them)."""
    return all(
        callable(getattr(adapter_factory, name, None))
        for name in ("thread_publisher", "hold_threads", "flush_threads")
    )


def takes_details(adapter_factory: object) -> bool:
    """Whether an adapter factory's adapters take C3's ``detail``: a class whose
    ``publish_snapshot`` has a ``detail`` parameter, or a factory whose ``details`` attribute
    says so (a :class:`JsonLinesProcess`: its ``hello`` lists the ``detail`` extension). Only
    those are given one, so an adapter written before it is checked for everything else."""
    declared = getattr(adapter_factory, "details", None)
    if isinstance(declared, bool):
        return declared
    method = getattr(adapter_factory, "publish_snapshot", None)
    if not callable(method):
        return False
    try:
        return "detail" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


AdapterFactory = Callable[[AdapterConfig], ConformanceAdapter]
"""Makes one fresh adapter per scenario; a class whose constructor takes the config will do."""


class ConsumerFailure(WorkflowHubError, RuntimeError):
    """What a failing test consumer raises (only ever on purpose)."""


def _not_a_test_consumer_failure(record: logging.LogRecord) -> bool:
    # The hub logs every failing callback with its traceback (O5); a failing test consumer fails
    # on purpose, and hundreds of tracebacks would bury the harness's own report.
    return not (record.exc_info is not None and isinstance(record.exc_info[1], ConsumerFailure))


@final
class _Consumer:
    """A recording consumer: records a frame as it starts it, may fail, may stall."""

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


async def _consume_stream(stream: FrameStream, consumer: _Consumer) -> None:
    async for frame in stream:
        await consumer(frame)


@final
class HubAdapter:
    """The adapter for :class:`workflow_hub.WorkflowActivityHub`, with both observer styles.

    ``HubAdapter`` is itself an :data:`AdapterFactory`: ``check_conformance(HubAdapter)``.
    Callback observers use ``hub.observe(consumer)``; stream observers run
    ``async for frame in stream`` in a task of the adapter's own nursery. Threads publish through
    :class:`workflow_hub.ThreadPublisher` (the ``threads`` profile, :class:`ThreadsAdapter`).
    """

    def __init__(self, config: AdapterConfig) -> None:
        self._config = config
        self._stack = AsyncExitStack()
        self._hub: WorkflowActivityHub | None = None
        self._nursery: trio.Nursery | None = None
        self._publishers: list[WorkflowActivityPublisher] = []
        self._consumers: list[_Consumer] = []
        self._leases: list[ObserverLease] = []
        self._events: list[WorkflowEvent] = []

    @property
    def hub(self) -> WorkflowActivityHub:
        """The hub under test (after :meth:`start`)."""
        if self._hub is None:
            raise RuntimeError("the adapter has not been started")
        return self._hub

    async def start(self) -> None:
        logging.getLogger("workflow_hub").addFilter(_not_a_test_consumer_failure)
        hub = WorkflowActivityHub(
            queue_limit=self._config.queue_limit,
            diagnostics_limit=self._config.diagnostics_limit,
            history_limit=self._config.history_limit,
        )
        self._hub = await self._stack.enter_async_context(hub)
        self._nursery = await self._stack.enter_async_context(trio.open_nursery())

    async def close(self) -> None:
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
        await self._stack.aclose()

    async def register_publisher(self) -> None:
        self._publishers.append(self.hub.register_publisher())

    async def publish_snapshot(
        self,
        publisher: int,
        availability: Availability,
        roots: tuple[RootActivity, ...] | None,
        detail: str | None = None,
    ) -> Cursor | None:
        return self._publishers[publisher].publish_snapshot(availability, roots, detail)

    async def publish_changed(self, publisher: int, root: RootActivity) -> Cursor | None:
        return self._publishers[publisher].publish_changed(root)

    async def publish_removed(self, publisher: int, root_run_id: str) -> Cursor | None:
        return self._publishers[publisher].publish_removed(root_run_id)

    async def publish_lifecycle(self, publisher: int, event: LifecycleInput) -> Cursor | None:
        return self._publishers[publisher].publish_lifecycle(event)

    async def publish_heartbeat(self, publisher: int, event: HeartbeatEvent) -> None:
        self._publishers[publisher].publish_heartbeat(event)

    async def dispose_publisher(self, publisher: int) -> None:
        self._publishers[publisher].dispose()

    async def thread_publisher(self, publisher: int) -> ThreadSafePublisher:
        return ThreadPublisher(self._publishers[publisher])

    async def hold_threads(self) -> None:
        # The hub runs in the harness's trio thread, which does not run while the threads do:
        # their calls wait in trio's queue of calls from other threads.
        pass

    async def flush_threads(self) -> None:
        # That queue is first in, first out: a marker queued now runs after every thread's call.
        flushed = trio.Event()
        trio.lowlevel.current_trio_token().run_sync_soon(flushed.set)
        await flushed.wait()

    async def observe(self, style: ObserverStyle, failing: bool, since: Cursor | None) -> bool:
        if failing and style != "callback":
            raise ValueError("only callback observers fail (O5)")
        consumer = _Consumer(failing=failing)
        if style == "stream":
            # Entering subscribe() never checkpoints, so nothing is delivered before settle().
            stream = await self._stack.enter_async_context(self.hub.subscribe(since=since))
            assert self._nursery is not None
            self._nursery.start_soon(_consume_stream, stream, consumer)
            lease = stream.lease
        else:
            lease = self.hub.observe(consumer, since=since)
        self._consumers.append(consumer)
        self._leases.append(lease)
        return lease.resumed

    async def stall(self, observer: int) -> None:
        self._consumers[observer].stall()

    async def release(self, observer: int) -> None:
        self._consumers[observer].release()

    async def dispose_observer(self, observer: int) -> None:
        self._leases[observer].dispose()

    async def bind_dispatcher(self) -> None:
        self.hub.bind_dispatcher(self._dispatch)

    async def _dispatch(self, event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        self._events.append(event)

    async def dispose_hub(self) -> None:
        self.hub.dispose()

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()

    async def frames(self, observer: int) -> Sequence[Frame]:
        return tuple(self._consumers[observer].received)

    async def pending(self, observer: int) -> int:
        return self._leases[observer].pending

    async def snapshot(self) -> SnapshotFrame:
        return self.hub.snapshot_frame()

    async def diagnostics(self) -> Sequence[Diagnostic]:
        return self.hub.diagnostics()

    async def hook_events(self) -> Sequence[WorkflowEvent]:
        return tuple(self._events)
