"""The publisher handle a scheduler holds: validates arguments, checks fencing, asks the hub to act.

A publisher is *current* while it is not disposed, its hub is not disposed and the hub's epoch is
still the one it started (P2): exactly when it is the hub's ``_current_publisher``, which the hub
sets on ``register_publisher()`` and clears on disposal, so the check on every call is one
identity test. Every call on a publisher that is not current records
``PublisherFenced`` and changes nothing, so a scheduler that lost its slot (a reload, a second
instance) can never overwrite its successor's picture.

Arguments are validated before the fencing check: a bad argument is a bug in the caller and is
raised as :class:`ContractError` whatever the publisher's state, and it changes nothing (C1).

The two calls made once per fact, ``publish_changed`` and the lifecycle path, do the hub's work
here themselves, written out (issue 29: each call saved is a few percent of a publish); the
other operations ask the hub to act (``_apply_snapshot``, ``_apply_removed`` ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from threading import get_ident
from typing import TYPE_CHECKING, final

from .._contract import (
    Attribution,
    Availability,
    ChangedFrame,
    Cursor,
    Delivery,
    DiagnosticKind,
    HeartbeatEvent,
    LifecycleEvent,
    LifecycleInput,
    LifecycleTarget,
    RootActivity,
    StageStatus,
    StageTarget,
    Timestamp,
    check_str,
    instance_check,
    snapshot_arguments,
)
from .._public import NoPublicConstructor
from ._build import (
    cursor_epoch,
    cursor_revision,
    frame_cursor,
    frame_root,
    lifecycle_attribution,
    lifecycle_cursor,
    lifecycle_delivery,
    lifecycle_event_id,
    lifecycle_observed_at,
    lifecycle_occurred_at,
    lifecycle_owner_session_id,
    lifecycle_root_run_id,
    lifecycle_run_id,
    lifecycle_target,
    new,
)

if TYPE_CHECKING:
    from ._hub import WorkflowActivityHub

__all__ = ["WorkflowActivityPublisher"]

_check_root = instance_check(RootActivity)
_check_lifecycle = instance_check(LifecycleInput)
_check_heartbeat = instance_check(HeartbeatEvent)

_FENCED = DiagnosticKind.PUBLISHER_FENCED
_COMPLETED = StageStatus.COMPLETED


@final
class WorkflowActivityPublisher(metaclass=NoPublicConstructor):
    """Publishes one source's workflow activity into a hub. Get one from ``hub.register_publisher()``.

    Every method is synchronous, never blocks and never waits for a consumer (P9). The methods
    that advance the hub's cursor return the cursor they were assigned, or ``None`` when fenced.
    """

    __slots__ = ("_dispose_called", "_epoch", "_hub")

    def __init__(self, hub: WorkflowActivityHub, epoch: str | None) -> None:
        self._hub = hub
        # None marks an inert publisher (registered on a disposed hub): never current.
        self._epoch = epoch
        self._dispose_called = False

    @property
    def current(self) -> bool:
        """True while this publisher may publish: not disposed, not replaced, hub not disposed."""
        return self._hub._current_publisher is self

    def _is_current(self) -> bool:
        # The zero-argument callable a hook dispatcher receives as ``is_current``.
        return self._hub._current_publisher is self

    def _record_if_fenced(self) -> bool:
        """True when this publisher is no longer current, having recorded ``PublisherFenced``."""
        if self._hub._current_publisher is self:
            return False
        self._hub._record(DiagnosticKind.PUBLISHER_FENCED)
        return True

    def _require_hub_thread(self, call: str) -> None:
        """Raise unless called in the hub's thread: a tracker asks before it folds a fact, so
        a refused fact leaves no trace in its record either (issue 37)."""
        hub = self._hub
        if hub._thread != get_ident():
            hub._refuse_foreign_thread(call)

    def publish_snapshot(
        self,
        availability: Availability | str,
        roots: Iterable[RootActivity] | None = None,
        detail: str | None = None,
    ) -> Cursor | None:
        """Replace everything known (P3). ``ready`` needs ``roots``; the other states take none,
        and may say why the source is unknown in ``detail`` (C3: one printable line of at most
        200 characters, e.g. ``"broker unreachable: ConnectionError: …"``).

        Roots are keyed by ``root_run_id``: a duplicate keeps the last value at the first position.
        """
        self._hub._check_thread("publisher.publish_snapshot()")
        state, checked, said = snapshot_arguments(availability, roots, detail)
        keyed = None if checked is None else {root.root_run_id: root for root in checked}
        if self._record_if_fenced():
            return None
        return self._hub._apply_snapshot(state, keyed, said)

    def publish_changed(self, root: RootActivity) -> Cursor | None:
        """Store or replace one whole root and tell observers and hooks (P4)."""
        # The hottest call there is, so the whole path is written out here: the checks of
        # _check_root and _record_if_fenced, the hub's _advance, _broadcast (ObserverQueue.push
        # per queue) and _emit_hook, and the frame's builder.
        hub = self._hub
        if hub._thread != get_ident():
            hub._refuse_foreign_thread("publisher.publish_changed()")
        if type(root) is not RootActivity:
            _check_root(root, "root")  # raises unless it is an instance of a subclass
        if hub._current_publisher is not self:
            hub._record(_FENCED)
            return None
        # <copy-of WorkflowActivityHub._advance self=hub>
        revision = hub._revision = hub._revision + 1
        cursor = new(Cursor)
        cursor_epoch(cursor, hub._epoch)
        cursor_revision(cursor, revision)
        hub._cursor = cursor
        hub._snapshot = None
        # </copy-of>
        hub._roots[root.root_run_id] = root
        frame = new(ChangedFrame)
        frame_cursor(frame, cursor)
        frame_root(frame, root)
        hub._record_change(frame)
        if hub._metrics is not None:
            hub._deliver_measured(frame)
        elif hub._observers:
            for queue in hub._observers:
                # <copy-of ObserverQueue.push self=queue>
                frames = queue._frames
                if len(frames) < queue._limit:
                    frames.append(frame)
                    if queue._waiter is not None:
                        queue._wake()
                else:
                    queue._push_full(frame)
                # </copy-of>
        # Its ActivityChangedEvent, when dispatched, is the frame's (the same cursor and root).
        # <copy-of WorkflowActivityHub._emit_hook self=hub event=frame publisher=self>
        events = hub._hook_events
        if len(events) >= hub._hook_buffer_limit:
            events.popleft()
            hub._hook_events_dropped += 1
            if hub._metrics is not None:
                hub._metrics.hook_events_dropped(1)
        events.append((frame, self))
        # Without a dispatcher the event only waits in the buffer: binding one wakes the task.
        # (Waking it for nothing costs a task switch in trio, and a trip through the guest's
        # I/O thread when the hub is a guest of asyncio: once per lifecycle event.)
        if hub._hook_waiter is not None and hub._dispatcher is not None:
            hub._wake_hooks()
        # </copy-of>
        return cursor

    def publish_removed(self, root_run_id: str) -> Cursor | None:
        """Delete one root; an id the hub does not know is allowed (P5)."""
        self._hub._check_thread("publisher.publish_removed()")
        checked = check_str(root_run_id, "root_run_id")
        if self._record_if_fenced():
            return None
        return self._hub._apply_removed(checked)

    def publish_lifecycle(self, event: LifecycleInput) -> Cursor | None:
        """Stamp a lifecycle event with the next cursor and hand it to the hooks (P6). No frame."""
        if type(event) is not LifecycleInput:
            _check_lifecycle(event, "event")  # raises unless it is an instance of a subclass
        # The input was validated when it was built: its fields are checked values.
        return self._publish_checked_lifecycle(
            event.event_id,
            event.run_id,
            event.root_run_id,
            event.owner_session_id,
            event.occurred_at,
            event.observed_at,
            event.delivery,
            event.target,
            event.attribution,
        )

    def _publish_checked_lifecycle(
        self,
        event_id: str,
        run_id: str,
        root_run_id: str,
        owner_session_id: str,
        occurred_at: Timestamp,
        observed_at: Timestamp,
        delivery: Delivery,
        target: LifecycleTarget,
        attribution: Attribution | None,
    ) -> Cursor | None:
        """``publish_lifecycle`` of the ``LifecycleInput`` of these fields, which the caller
        has checked as that constructor would (nothing is checked here): the hub's own paths,
        and a ``RunTracker``'s facts, whose fields are checked values (docs/decisions.md, "A
        private entry for the tracker's lifecycle events"). Fenced as every call is (P2)."""
        hub = self._hub
        if hub._thread != get_ident():
            hub._refuse_foreign_thread("publisher.publish_lifecycle()")
        if hub._current_publisher is not self:
            hub._record(_FENCED)
            return None
        # The hub's _advance and _emit_hook, and the event's builder, written out (both events
        # are queued before the hook task is woken, which changes nothing: it runs later anyway).
        # <copy-of WorkflowActivityHub._advance self=hub>
        revision = hub._revision = hub._revision + 1
        cursor = new(Cursor)
        cursor_epoch(cursor, hub._epoch)
        cursor_revision(cursor, revision)
        hub._cursor = cursor
        hub._snapshot = None
        # </copy-of>
        stamped = new(LifecycleEvent)
        lifecycle_event_id(stamped, event_id)
        lifecycle_cursor(stamped, cursor)
        lifecycle_run_id(stamped, run_id)
        lifecycle_root_run_id(stamped, root_run_id)
        lifecycle_owner_session_id(stamped, owner_session_id)
        lifecycle_occurred_at(stamped, occurred_at)
        lifecycle_observed_at(stamped, observed_at)
        lifecycle_delivery(stamped, delivery)
        lifecycle_target(stamped, target)
        lifecycle_attribution(stamped, attribution)
        events = hub._hook_events
        events.append((stamped, self))
        if type(target) is StageTarget and target.status is _COMPLETED:
            # The one condition StageCompletedEvent's own check tests: this 1-tuple stands for
            # that event (the same envelope and cursor), built only if it is dispatched.
            events.append(((stamped,), self))
        over = len(events) - hub._hook_buffer_limit
        if over > 0:
            # The oldest go first, so this is what dropping one before each append leaves (a
            # full buffer, no dispatcher bound, is the steady state of a tracker without hooks).
            for _ in range(over):
                events.popleft()
            hub._hook_events_dropped += over
            if hub._metrics is not None:
                hub._metrics.hook_events_dropped(over)
        if hub._hook_waiter is not None and hub._dispatcher is not None:
            hub._wake_hooks()
        return cursor

    def publish_heartbeat(self, event: HeartbeatEvent) -> None:
        """Hand a heartbeat to the hooks as given (P7): no cursor, no frame."""
        self._hub._check_thread("publisher.publish_heartbeat()")
        checked = _check_heartbeat(event, "event")
        if self._record_if_fenced():
            return
        self._hub._emit_hook(checked, self)

    def dispose(self) -> None:
        """Retire this publisher (P8). Idempotent.

        Disposing the current publisher makes the source unavailable. Disposing one that was
        already replaced (or whose hub is disposed) records ``PublisherFenced`` once.
        """
        self._hub._check_thread("publisher.dispose()")
        if self._dispose_called:
            return
        was_current = self.current
        self._dispose_called = True
        if was_current:
            self._hub._current_publisher = None
            self._hub._apply_publisher_disposed()
        else:
            self._hub._record(DiagnosticKind.PUBLISHER_FENCED)
