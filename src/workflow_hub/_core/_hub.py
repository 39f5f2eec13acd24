"""The hub: one source of workflow activity, many observers, one hook dispatcher.

State is a cursor ``{epoch, revision}``, an availability, the roots in insertion order, the observer
queues, a ring of diagnostics and a queue of hook events. Every mutation is synchronous and costs
O(observers) at most; everything that waits for a consumer happens in tasks of the hub's own
nursery, so the scheduler that publishes never waits for anyone (P9, O2).
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from types import CoroutineType, TracebackType
from typing import TYPE_CHECKING, Any, Self, final

import attrs
import trio

from .._contract import (
    Availability,
    ChangedFrame,
    ContractError,
    Cursor,
    Diagnostic,
    DiagnosticKind,
    Frame,
    LifecycleEvent,
    RootActivity,
    SnapshotFrame,
    WorkflowEvent,
    epoch_text_problem,
)
from ._build import (
    activity_changed_event,
    cursor_epoch,
    cursor_revision,
    diagnostic,
    new,
    removed_frame,
    snapshot_frame,
    stage_completed_event_of,
)
from ._history import FrameHistory
from ._instruments import HubInstruments, Instrumentation
from ._observers import (
    FrameCallback,
    FrameStream,
    ObserverLease,
    ObserverQueue,
    deliver_to_callback,
)
from ._publisher import WorkflowActivityPublisher

if TYPE_CHECKING:
    from ._hooks import HookRunner

__all__ = [
    "Dispatch",
    "HubStatistics",
    "WorkflowActivityHub",
    "check_hub_thread",
    "host_hub",
    "open_hub",
]

logger = logging.getLogger("workflow_hub")

Dispatch = Callable[[WorkflowEvent, Callable[[], bool]], Awaitable[object]]
"""A hook dispatcher: ``await dispatch(event, is_current)``.

``is_current()`` tells, at any moment, whether the publisher that produced ``event`` is still
current; a dispatcher checks it before each handler (K4).
"""

# A queued hook event: the event itself; or a changed frame, standing for its
# ActivityChangedEvent (the same cursor and root); or a 1-tuple of a completed stage's stamped
# LifecycleEvent, standing for its StageCompletedEvent (the same envelope and cursor). Those two
# are built only if they are dispatched, from immutable values: the same payloads (K1).
_HookItem = tuple[WorkflowEvent | ChangedFrame | tuple[LifecycleEvent], WorkflowActivityPublisher]

DEFAULT_QUEUE_LIMIT = 256
DEFAULT_DIAGNOSTICS_LIMIT = 256
DEFAULT_HOOK_BUFFER_LIMIT = 10_000
DEFAULT_HISTORY_LIMIT = 1024
# The hook task checkpoints after at most HOOK_YIELD_EVERY events, and after at most
# HOOK_YIELD_AFTER seconds of dispatching (the clock read once every HOOK_CLOCK_EVERY events).
HOOK_YIELD_EVERY = 256
HOOK_YIELD_AFTER = 0.001
HOOK_CLOCK_EVERY = 16

_FOREIGN_THREAD_ADVICE = (
    "hand the call to the hub's thread (workflow_hub.ThreadPublisher for a publisher, "
    "trio.from_thread.run_sync for anything else), or run the hub with "
    "workflow_hub.sync.open_hub(), whose handles any thread may call"
)

_NOT_RUNNING = (
    "the hub is not running: use `async with open_hub() as hub:` "
    "(or `async with WorkflowActivityHub() as hub:`) to deliver to observers"
)


def _random_epoch() -> str:
    return uuid.uuid4().hex


def _check_limit(value: object, name: str) -> int:
    if type(value) is not int or value < 1:
        raise ContractError(name, f"expected an int >= 1, got {value!r}")
    return value


def _check_history_limit(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ContractError("history_limit", f"expected an int >= 0, got {value!r}")
    return value


def _check_since(since: object) -> Cursor | None:
    if since is not None and not isinstance(since, Cursor):
        raise ContractError("since", f"expected a Cursor or None, got {type(since).__name__}")
    return since


@attrs.frozen(kw_only=True)
class HubStatistics:
    """A point-in-time summary of a hub, for dashboards, metrics and tests."""

    epoch: str
    """The current epoch."""
    revision: int
    """The current revision within the epoch."""
    availability: Availability
    """Whether the current source is ready, recovering or unavailable."""
    roots: int
    """Roots currently known."""
    observers: int
    """Observer leases (callbacks and streams) attached and not disposed."""
    pending_frames: int
    """Frames waiting in all observer queues together (frames in flight do not count)."""
    deepest_queue: int
    """Frames waiting in the fullest observer queue."""
    hook_events_pending: int
    """Hook events buffered or queued, not yet dispatched."""
    hook_events_dropped: int
    """Hook events dropped, oldest first, because the hook buffer was full."""
    epochs_started: int
    """Epochs this hub has started, the first one included."""
    history_frames: int = 0
    """Frames the resume history holds (R1): at most ``history_limit``, none before the latest
    broadcast snapshot."""
    history_oldest_revision: int | None = None
    """The oldest revision of the current epoch a resume can start from without a snapshot
    (``observe(since=...)``, R2); None when history is off (``history_limit=0``)."""
    running: bool
    """Whether the hub's tasks are running (inside ``async with``)."""
    disposed: bool
    """Whether the hub has been disposed."""


@final
class WorkflowActivityHub:
    """The hub between workflow publishers and the observers and hook handlers that watch them.

    Run it with ``async with WorkflowActivityHub() as hub:`` or ``async with open_hub() as hub:``:
    delivery happens in tasks the hub owns, and leaving the block disposes the hub (L1, L2).
    Publishing and reading state work whether or not the hub is running.

    ``queue_limit`` bounds each observer's pending frames (O4); ``diagnostics_limit`` bounds the
    retained diagnostics (L3); ``hook_buffer_limit`` bounds hook events waiting for a dispatcher
    (the oldest are dropped past it, and counted). ``history_limit`` bounds the frames kept so
    an observer can resume from a cursor (R1; 0 turns resuming off). ``epoch_factory`` makes
    epoch strings; each must be new to this hub and have a text form (non-empty, no surrounding
    whitespace, no line break: transports carry it in text). ``metrics`` (a :class:`~workflow_hub.metrics.HubMetrics`) turns on
    Prometheus metrics; without it the hub does no metric work at all. (The hub takes any
    ``Instrumentation``; it never imports prometheus-client itself.)
    """

    def __init__(
        self,
        *,
        queue_limit: int = DEFAULT_QUEUE_LIMIT,
        diagnostics_limit: int = DEFAULT_DIAGNOSTICS_LIMIT,
        hook_buffer_limit: int = DEFAULT_HOOK_BUFFER_LIMIT,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        epoch_factory: Callable[[], str] | None = None,
        metrics: Instrumentation | None = None,
    ) -> None:
        if metrics is not None and not isinstance(metrics, Instrumentation):
            raise ContractError("metrics", f"expected HubMetrics, got {type(metrics).__name__}")
        self._queue_limit = _check_limit(queue_limit, "queue_limit")
        self._metrics: HubInstruments | None = None
        self._diagnostics: deque[Diagnostic] = deque(
            maxlen=_check_limit(diagnostics_limit, "diagnostics_limit")
        )
        self._hook_buffer_limit = _check_limit(hook_buffer_limit, "hook_buffer_limit")
        self._history = FrameHistory(_check_history_limit(history_limit))
        if epoch_factory is not None and not callable(epoch_factory):
            raise ContractError("epoch_factory", f"expected a callable, got {epoch_factory!r}")
        self._epoch_factory = epoch_factory or _random_epoch
        self._used_epochs: set[str] = set()
        self._epoch = self._new_epoch()
        self._revision = 0
        self._cursor = Cursor(epoch=self._epoch, revision=0)
        self._availability = Availability.UNAVAILABLE
        self._detail: str | None = None  # why the source is not ready (C3), if it said
        self._roots: dict[str, RootActivity] = {}
        self._snapshot: SnapshotFrame | None = None
        # The one publisher that is current (P2), or None: fencing is one identity test.
        self._current_publisher: WorkflowActivityPublisher | None = None
        # Records a changed or removed frame in the history: the deque's own append (R1).
        self._record_change = self._history.record_change
        # Insertion-ordered set of live observer queues.
        self._observers: dict[ObserverQueue, None] = {}
        # Hook events in publication order, each with its publisher. A changed frame stands for
        # its ActivityChangedEvent (the same cursor and root), built only if it is dispatched.
        self._hook_events: deque[_HookItem] = deque()
        self._hook_events_dropped = 0
        # Where hook events go: a dispatch callable, or a bound HookRunner, whose chains the hook
        # task runs itself (_run_hooks).
        self._dispatcher: Dispatch | HookRunner | None = None
        self._hook_waiter: trio.lowlevel.Task | None = None
        self._nursery: trio.Nursery | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._entered = False
        self._disposed = False
        # The thread the hub runs in, from entering it (H1): its publishers, observers and hooks
        # are called there only. One comparison of thread idents on every entry point; a call
        # from another thread is refused before it changes anything (_refuse_foreign_thread).
        self._thread = threading.get_ident()
        self._thread_name = ""
        self._thread_advice = _FOREIGN_THREAD_ADVICE
        if metrics is not None:
            # Last: a scrape on another thread may read the hub as soon as metrics follow it.
            self._metrics = metrics.instrument(self, queue_limit=self._queue_limit)
            self._metrics.epoch_started()  # the first one, started above

    # --- lifetime --------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if not trio.lowlevel.in_trio_run():
            raise RuntimeError(
                "a WorkflowActivityHub runs in trio (H1): from asyncio code use "
                "workflow_hub.asyncio.open_hub(), from plain threads workflow_hub.sync.open_hub()"
            )
        if self._entered:
            raise RuntimeError("a WorkflowActivityHub can be run only once")
        self._entered = True
        self._thread = threading.get_ident()
        self._thread_name = threading.current_thread().name
        stack = AsyncExitStack()
        self._nursery = await stack.enter_async_context(trio.open_nursery())
        self._exit_stack = stack
        self._nursery.start_soon(self._run_hooks)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.dispose()
        assert self._nursery is not None
        assert self._exit_stack is not None
        # Leaving the block ends the hub's tasks, including a callback still awaiting: the hub's
        # lifetime is over. (dispose() alone never cancels a running callback.)
        self._nursery.cancel_scope.cancel()
        nursery_stack, self._exit_stack = self._exit_stack, None
        # The body's own exception is not handed to the nursery, so it propagates unwrapped.
        await nursery_stack.aclose()
        self._nursery = None

    def _hosted_by(self, advice: str) -> None:
        """A host runs this hub: a call from a foreign thread is told ``advice`` (which thread
        to call from, and how to get there) instead of the plain trio hub's."""
        self._thread_advice = advice

    def _check_thread(self, call: str) -> None:
        """Refuse ``call`` unless it is made in the hub's thread (or the hub is not running)."""
        if self._thread != threading.get_ident():
            self._refuse_foreign_thread(call)

    def _refuse_foreign_thread(self, call: str) -> None:
        """Called when the calling thread is not the hub's: raise, unless the hub is not
        running (then it is no trio run's yet, or any more: set it up or read it anywhere).

        The hub and its publishers are not thread-safe: a publish from another thread would
        advance the cursor and then fail to wake the observers parked in trio, which would
        never see a frame again (issue 37). Nothing has changed when this raises.
        """
        if self._nursery is None:
            return
        raise RuntimeError(
            f"{call} was called from thread {threading.current_thread().name!r}, but this hub "
            f"runs in thread {self._thread_name!r} and is called from there only (nothing was "
            f"changed): {self._thread_advice}"
        )

    @property
    def running(self) -> bool:
        return self._nursery is not None and not self._disposed

    @property
    def disposed(self) -> bool:
        return self._disposed

    def dispose(self) -> None:
        """Dispose every lease, drop the dispatcher and queued hooks, fence every publisher (L2).

        No final frame is published: ``snapshot_frame()`` keeps the last state. Idempotent.
        """
        self._check_thread("hub.dispose()")
        if self._disposed:
            return
        self._disposed = True
        self._current_publisher = None
        for queue in list(self._observers):
            self._dispose_observer(queue)
        self._dispatcher = None
        self._hook_events.clear()
        self._wake_hooks()

    # --- reading state ---------------------------------------------------------------------

    @property
    def cursor(self) -> Cursor:
        return self._cursor

    @property
    def availability(self) -> Availability:
        return self._availability

    @property
    def queue_limit(self) -> int:
        """The most frames an observer may have pending (O4): one more overflows its queue."""
        return self._queue_limit

    def snapshot_frame(self) -> SnapshotFrame:
        """The current state as one frame. Built at most once per revision and shared."""
        if self._thread != threading.get_ident():
            self._refuse_foreign_thread("hub.snapshot_frame()")
        snapshot = self._snapshot
        if snapshot is None:
            ready = self._availability is Availability.READY
            snapshot = self._snapshot = snapshot_frame(
                self._cursor,
                self._availability,
                tuple(self._roots.values()) if ready else None,
                self._detail,
            )
            if self._metrics is not None:
                # Attach and overflow snapshots are published when built: lag counts from here.
                self._metrics.frame_built(snapshot)
        return snapshot

    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Retained diagnostics, oldest first (L3)."""
        return tuple(self._diagnostics)

    def statistics(self) -> HubStatistics:
        # A copy first: a metrics scrape reads this from its own thread while leases come and go.
        depths = [queue.pending for queue in list(self._observers)]
        return HubStatistics(
            epoch=self._epoch,
            revision=self._revision,
            availability=self._availability,
            roots=len(self._roots),
            observers=len(self._observers),
            pending_frames=sum(depths),
            deepest_queue=max(depths, default=0),
            hook_events_pending=len(self._hook_events),
            hook_events_dropped=self._hook_events_dropped,
            history_frames=len(self._history),
            history_oldest_revision=self._history.floor,
            epochs_started=len(self._used_epochs),
            running=self.running,
            disposed=self._disposed,
        )

    # --- publishers ------------------------------------------------------------------------

    def register_publisher(self) -> WorkflowActivityPublisher:
        """Start a new source (P1): new epoch, revision 0, unavailable, no roots.

        The previous publisher is fenced from now on. Observers receive the unavailable snapshot
        after the frames already queued for them. On a disposed hub, the publisher is inert.
        """
        self._check_thread("hub.register_publisher()")
        if self._disposed:
            return WorkflowActivityPublisher._create(self, None)
        epoch = self._new_epoch()
        self._epoch = epoch
        self._revision = 0
        self._cursor = Cursor(epoch=epoch, revision=0)
        self._availability = Availability.UNAVAILABLE
        self._detail = None
        self._roots = {}
        self._snapshot = None
        self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
        self._broadcast(self.snapshot_frame())
        # R1: a new epoch starts an empty history (revision 0 is never resumed *from* before).
        self._history.clear()
        publisher = self._current_publisher = WorkflowActivityPublisher._create(self, epoch)
        return publisher

    def _new_epoch(self) -> str:
        epoch = self._epoch_factory()
        if not isinstance(epoch, str):
            raise ContractError("epoch_factory", f"returned {type(epoch).__name__}, not a str")
        problem = epoch_text_problem(epoch)
        if problem is not None:
            # Transports carry the cursor as text (SSE ids, Redis fields): it must survive that.
            raise ContractError("epoch_factory", f"returned epoch {epoch!r}, which {problem}")
        if epoch in self._used_epochs:
            raise ContractError("epoch_factory", f"returned epoch {epoch!r} a second time")
        self._used_epochs.add(epoch)
        if self._metrics is not None:
            self._metrics.epoch_started()
        return epoch

    def _advance(self) -> Cursor:
        """The next cursor, now the hub's: written out on the publish paths, with the cursor's
        builder written out too."""
        # <copy-source WorkflowActivityHub._advance>
        revision = self._revision = self._revision + 1
        cursor = new(Cursor)
        cursor_epoch(cursor, self._epoch)
        cursor_revision(cursor, revision)
        self._cursor = cursor
        self._snapshot = None
        # </copy-source>
        return cursor

    def _apply_snapshot(
        self,
        availability: Availability,
        roots: dict[str, RootActivity] | None,
        detail: str | None = None,
    ) -> Cursor:
        if availability is Availability.RECOVERING:
            self._record(DiagnosticKind.SOURCE_RECOVERING)
        elif availability is Availability.UNAVAILABLE:
            self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
        cursor = self._advance()
        self._availability = availability
        self._detail = detail
        self._roots = roots if roots is not None else {}
        self._broadcast(self.snapshot_frame())
        return cursor

    def _apply_removed(self, root_run_id: str) -> Cursor:
        cursor = self._advance()
        self._roots.pop(root_run_id, None)
        frame = removed_frame(cursor, root_run_id)
        self._record_change(frame)
        if self._metrics is None:
            for queue in self._observers:
                queue.push(frame)
        else:
            self._deliver_measured(frame)
        return cursor

    def _apply_publisher_disposed(self) -> None:
        self._advance()
        self._availability = Availability.UNAVAILABLE
        self._detail = None
        self._roots = {}
        self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
        self._broadcast(self.snapshot_frame())

    def _broadcast(self, frame: Frame) -> None:
        self._history.append(frame)  # R1: every broadcast frame, for observers that resume
        if self._metrics is None:
            for queue in self._observers:
                queue.push(frame)
        else:
            self._deliver_measured(frame)

    def _deliver_measured(self, frame: Frame) -> None:
        """Queue ``frame`` for every observer, telling the metrics (which are on)."""
        metrics = self._metrics
        assert metrics is not None
        metrics.frame_built(frame)
        for queue in self._observers:
            # <copy-of ObserverQueue.push self=queue>
            frames = queue._frames
            if len(frames) < queue._limit:
                frames.append(frame)
                if queue._waiter is not None:
                    queue._wake()
            else:
                queue._push_full(frame)
            # </copy-of>
        # Counted once the queues hold it: a scrape from another thread then never counts a
        # frame as queued that no queue holds yet (frames_delivered_total is derived).
        metrics.frame_published(frame, len(self._observers))

    def _record(self, kind: DiagnosticKind) -> None:
        self._diagnostics.append(diagnostic(kind, self._cursor))
        if self._metrics is not None:
            self._metrics.record_diagnostic(kind)

    # --- observers -------------------------------------------------------------------------

    def observe(self, callback: FrameCallback, *, since: Cursor | None = None) -> ObserverLease:
        """Attach a callback (sync or async) that receives the current snapshot, then every frame.

        Delivery is asynchronous, one callback at a time, in order (O1, O2). A callback that raises
        records ``ObserverDeliveryFailed`` and delivery goes on (O5).

        ``since`` resumes from a cursor seen earlier (R2): when the history still holds every frame
        broadcast after it in the current epoch, the callback receives exactly those frames and no
        snapshot first (``lease.resumed`` is true); otherwise it starts with a snapshot.
        """
        self._check_thread("hub.observe()")
        if not callable(callback):
            raise ContractError("callback", f"expected a callable, got {type(callback).__name__}")
        queue, lease = self._attach(_check_since(since))
        if not queue.disposed:
            assert self._nursery is not None
            self._nursery.start_soon(deliver_to_callback, self, queue, callback)
        return lease

    @asynccontextmanager
    async def subscribe(
        self, *, since: Cursor | None = None, conflate: bool = False
    ) -> AsyncIterator[FrameStream]:
        """``async with hub.subscribe() as stream: async for frame in stream:`` (O9).

        ``since`` resumes as for :meth:`observe` (R2); ``stream.lease.resumed`` says whether it did.

        ``conflate=True`` is for consumers that may fall behind and only need to catch up (a
        transport to a slow client): :meth:`FrameStream.receive_all` then returns, of a backlog,
        only each root's latest changed or removed frame (after the latest snapshot in it), and a
        full queue conflates its backlog instead of overflowing into a snapshot, as long as that
        frees at least half of it. Folding what such a stream yields gives the same roots, at
        the same cursor, as folding every frame would.
        """
        if type(conflate) is not bool:
            raise ContractError("conflate", f"expected a bool, got {type(conflate).__name__}")
        self._check_thread("hub.subscribe()")
        queue, lease = self._attach(_check_since(since))
        queue.conflate = conflate
        try:
            yield FrameStream._create(lease, queue)
        finally:
            lease.dispose()

    def _attach(self, since: Cursor | None = None) -> tuple[ObserverQueue, ObserverLease]:
        if self._disposed:
            # O7: an inert lease; nothing is ever delivered to it.
            queue = ObserverQueue(self, (self.snapshot_frame(),), self._queue_limit)
            queue.dispose()
            self._record(DiagnosticKind.OBSERVER_DISPOSED)
            return queue, ObserverLease._create(self, queue)
        if self._nursery is None:
            raise RuntimeError(_NOT_RUNNING)
        if self._availability is Availability.RECOVERING:
            self._record(DiagnosticKind.SOURCE_RECOVERING)
        elif self._availability is Availability.UNAVAILABLE:
            self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
        first, resumed = self._first_frames(since)
        queue = ObserverQueue(self, first, self._queue_limit, self._metrics)
        queue.resumed = resumed
        self._observers[queue] = None
        if self._metrics is not None:
            self._metrics.frames_queued(len(first))
        return queue, ObserverLease._create(self, queue)

    def _first_frames(self, since: Cursor | None) -> tuple[tuple[Frame, ...], bool]:
        """What a new observer starts with, and whether it resumed (R2) rather than snapshotted."""
        if since is not None and since.epoch == self._epoch:
            missed = self._history.replay(since.revision, self._revision)
            if missed is not None:
                if len(missed) <= self._queue_limit:
                    return tuple(missed), True
                # R3: more than the queue holds is an overflow (O4), never a gap.
                self._record(DiagnosticKind.OBSERVER_OVERFLOW)
        return (self.snapshot_frame(),), False

    def _dispose_observer(self, queue: ObserverQueue) -> None:
        if queue.dispose():
            self._observers.pop(queue, None)
            self._record(DiagnosticKind.OBSERVER_DISPOSED)

    # --- hooks -----------------------------------------------------------------------------

    def bind_dispatcher(self, dispatch: Dispatch) -> None:
        """Deliver hook events to ``dispatch``, one at a time, in publication order (K1).

        Events published before binding were buffered and are delivered first, with their original
        payloads and cursors. Binding again replaces the dispatcher. On a disposed hub: nothing.
        """
        self._check_thread("hub.bind_dispatcher()")
        if self._disposed:
            return
        if not callable(dispatch):
            raise ContractError("dispatch", f"expected a callable, got {type(dispatch).__name__}")
        self._bind(dispatch)

    def _bind_runner(self, runner: HookRunner) -> None:
        """Deliver hook events to ``runner``'s chains (``HookRunner.bind``): as
        :meth:`bind_dispatcher` does, the chains run by the hook task itself."""
        self._check_thread("runner.bind()")
        if not self._disposed:
            self._bind(runner)

    def _bind(self, dispatcher: Dispatch | HookRunner) -> None:
        self._dispatcher = dispatcher
        self._wake_hooks()

    def _emit_hook(self, event: WorkflowEvent, publisher: WorkflowActivityPublisher) -> None:
        """Queue a hook event; a full buffer drops its oldest, counted. Written out in
        ``publish_changed`` (a full buffer, no dispatcher bound, is the steady state of a hub
        without hooks: a call there costs a quarter of one observer's fan-out)."""
        # <copy-source WorkflowActivityHub._emit_hook>
        events = self._hook_events
        if len(events) >= self._hook_buffer_limit:
            events.popleft()
            self._hook_events_dropped += 1
            if self._metrics is not None:
                self._metrics.hook_events_dropped(1)
        events.append((event, publisher))
        # Without a dispatcher the event only waits in the buffer: binding one wakes the task.
        # (Waking it for nothing costs a task switch in trio, and a trip through the guest's
        # I/O thread when the hub is a guest of asyncio: once per lifecycle event.)
        if self._hook_waiter is not None and self._dispatcher is not None:
            self._wake_hooks()
        # </copy-source>

    def _wake_hooks(self) -> None:
        waiter = self._hook_waiter
        if waiter is not None:
            self._hook_waiter = None
            trio.lowlevel.reschedule(waiter)

    async def _next_hook_event(self) -> _HookItem | None:
        while self._dispatcher is None or not self._hook_events:
            if self._disposed:
                return None
            self._hook_waiter = trio.lowlevel.current_task()

            def abort(_: object) -> trio.lowlevel.Abort:
                self._hook_waiter = None
                return trio.lowlevel.Abort.SUCCEEDED

            await trio.lowlevel.wait_task_rescheduled(abort)
        return self._hook_events.popleft()

    def _handler_failed(self) -> None:
        """A hook handler raised: ``HookRunner`` reports it here, for the hub's metrics."""
        if self._metrics is not None:
            self._metrics.handler_failed()

    async def _run_hooks(self) -> None:
        """The hub's one hook task: events strictly one after another (K6).

        It checkpoints after at most ``HOOK_YIELD_EVERY`` events or ``HOOK_YIELD_AFTER`` seconds
        of dispatching, whichever comes first: a dispatcher that never awaits (a sync handler,
        or one that publishes into this hub and so keeps the queue full) must not keep every
        other task, and cancellation, waiting.

        A bound :class:`HookRunner`'s chains are run here, the one place they run (K4, K5):
        without a coroutine of the runner's per event, which would cost more than the event.
        """
        from ._hooks import HookRunner

        events = self._hook_events
        popleft = events.popleft
        clock = time.perf_counter
        until_checkpoint = HOOK_YIELD_EVERY
        checkpointed = clock()
        while True:
            if not until_checkpoint:
                await trio.lowlevel.checkpoint()
                until_checkpoint = HOOK_YIELD_EVERY
                checkpointed = clock()
            dispatcher = self._dispatcher
            if events and dispatcher is not None:
                # A backlog: the next event without a coroutine of _next_hook_event's.
                queued, publisher = popleft()
            else:
                item = await self._next_hook_event()
                if item is None:
                    return
                queued, publisher = item
                dispatcher = self._dispatcher
                # It waited: other tasks ran, and cancellation could be delivered.
                until_checkpoint = HOOK_YIELD_EVERY
                checkpointed = clock()
            until_checkpoint -= 1
            if (
                not until_checkpoint % HOOK_CLOCK_EVERY
                and clock() - checkpointed >= HOOK_YIELD_AFTER
            ):
                until_checkpoint = 0  # after this event
            if self._current_publisher is not publisher:
                continue  # K2: retirement fences buffered and queued events.
            if type(queued) is ChangedFrame:
                event: WorkflowEvent = activity_changed_event(queued.cursor, queued.root)
            elif type(queued) is tuple:
                event = stage_completed_event_of(queued[0])
            else:
                event = queued  # type: ignore[assignment]  # neither of the two: an event
            if self._metrics is not None:
                self._metrics.hook_dispatched(event.type)
            try:
                if type(dispatcher) is not HookRunner:
                    assert dispatcher is not None
                    result: Any = dispatcher(event, publisher._is_current)
                    if result is not None and (
                        type(result) is CoroutineType or inspect.isawaitable(result)
                    ):
                        await result
                    continue
                # The runner's chain for this hook, captured now: registrations made by a
                # handler of this event apply from the next one.
                chain = dispatcher._chains.get(event.type) or dispatcher._chain(event.type)
                for extension, handler in chain:
                    # K4: checked before every handler, because the previous one may have
                    # awaited across a reload or a publisher replacement (or, sync, replaced it
                    # itself).
                    if dispatcher._retired or self._current_publisher is not publisher:
                        break
                    try:
                        result = handler(event)
                        # An async handler returns a coroutine, a sync one (usually) None:
                        # neither needs the general, much slower, inspect.isawaitable.
                        if result is not None and (
                            type(result) is CoroutineType or inspect.isawaitable(result)
                        ):
                            await result
                    except Exception as exc:
                        dispatcher._handler_raised(extension, event, exc)  # K5
            except Exception:
                logger.warning("workflow hook dispatcher failed", exc_info=True)
                self._record(DiagnosticKind.OBSERVER_DELIVERY_FAILED)


def host_hub(hub: WorkflowActivityHub, advice: str) -> None:
    """A host runs ``hub``: a call from a thread other than the hub's is told ``advice`` (the
    host, the thread to call from and how to get there) instead of the plain trio hub's."""
    hub._hosted_by(advice)


def check_hub_thread(hub: WorkflowActivityHub, call: str) -> None:
    """Refuse ``call`` (RuntimeError) unless it is made in the thread ``hub`` runs in (H1), as
    the hub's own entry points do; for a host's entry points that reach the hub later."""
    hub._check_thread(call)


@asynccontextmanager
async def open_hub(
    *,
    queue_limit: int = DEFAULT_QUEUE_LIMIT,
    diagnostics_limit: int = DEFAULT_DIAGNOSTICS_LIMIT,
    hook_buffer_limit: int = DEFAULT_HOOK_BUFFER_LIMIT,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
    epoch_factory: Callable[[], str] | None = None,
    metrics: Instrumentation | None = None,
) -> AsyncIterator[WorkflowActivityHub]:
    """Run a :class:`WorkflowActivityHub` for the duration of the block, then dispose it."""
    async with WorkflowActivityHub(
        queue_limit=queue_limit,
        diagnostics_limit=diagnostics_limit,
        hook_buffer_limit=hook_buffer_limit,
        history_limit=history_limit,
        epoch_factory=epoch_factory,
        metrics=metrics,
    ) as hub:
        yield hub
