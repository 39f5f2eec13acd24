"""The publisher handle a scheduler holds: validates arguments, checks fencing, asks the hub to act.

A publisher is *current* while it is not disposed, its hub is not disposed and the hub's epoch is
still the one it started (P2): exactly when it is the hub's ``_current_publisher``, which the hub
sets on ``register_publisher()`` and clears on disposal, so the check on every call is one
identity test. Every call on a publisher that is not current records
``PublisherFenced`` and changes nothing, so a scheduler that lost its slot (a reload, a second
instance) can never overwrite its successor's picture.

Arguments are validated before the fencing check: a bad argument is a bug in the caller and is
raised as :class:`ContractError` whatever the publisher's state, and it changes nothing (C1).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, final

from .._contract import (
    Availability,
    Cursor,
    DiagnosticKind,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
    check_str,
    instance_check,
    snapshot_arguments,
)
from .._public import NoPublicConstructor

if TYPE_CHECKING:
    from ._hub import WorkflowActivityHub

__all__ = ["WorkflowActivityPublisher"]

_check_root = instance_check(RootActivity)
_check_lifecycle = instance_check(LifecycleInput)
_check_heartbeat = instance_check(HeartbeatEvent)


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

    def publish_snapshot(
        self, availability: Availability | str, roots: Iterable[RootActivity] | None = None
    ) -> Cursor | None:
        """Replace everything known (P3). ``ready`` needs ``roots``; the other states take none.

        Roots are keyed by ``root_run_id``: a duplicate keeps the last value at the first position.
        """
        state, checked = snapshot_arguments(availability, roots)
        keyed = None if checked is None else {root.root_run_id: root for root in checked}
        if self._record_if_fenced():
            return None
        return self._hub._apply_snapshot(state, keyed)

    def publish_changed(self, root: RootActivity) -> Cursor | None:
        """Store or replace one whole root and tell observers and hooks (P4)."""
        # The hottest call there is: the checks of _check_root and _record_if_fenced, inline.
        if type(root) is not RootActivity:
            _check_root(root, "root")  # raises unless it is an instance of a subclass
        hub = self._hub
        if hub._current_publisher is not self:
            hub._record(DiagnosticKind.PUBLISHER_FENCED)
            return None
        return hub._apply_changed(root, self)

    def publish_removed(self, root_run_id: str) -> Cursor | None:
        """Delete one root; an id the hub does not know is allowed (P5)."""
        checked = check_str(root_run_id, "root_run_id")
        if self._record_if_fenced():
            return None
        return self._hub._apply_removed(checked)

    def publish_lifecycle(self, event: LifecycleInput) -> Cursor | None:
        """Stamp a lifecycle event with the next cursor and hand it to the hooks (P6). No frame."""
        # Called once per fact by a tracker: the checks written out as in publish_changed.
        if type(event) is not LifecycleInput:
            _check_lifecycle(event, "event")  # raises unless it is an instance of a subclass
        hub = self._hub
        if hub._current_publisher is not self:
            hub._record(DiagnosticKind.PUBLISHER_FENCED)
            return None
        return hub._apply_lifecycle(event, self)

    def publish_heartbeat(self, event: HeartbeatEvent) -> None:
        """Hand a heartbeat to the hooks as given (P7): no cursor, no frame."""
        checked = _check_heartbeat(event, "event")
        if self._record_if_fenced():
            return
        self._hub._emit_hook(checked, self)

    def dispose(self) -> None:
        """Retire this publisher (P8). Idempotent.

        Disposing the current publisher makes the source unavailable. Disposing one that was
        already replaced (or whose hub is disposed) records ``PublisherFenced`` once.
        """
        if self._dispose_called:
            return
        was_current = self.current
        self._dispose_called = True
        if was_current:
            self._hub._current_publisher = None
            self._hub._apply_publisher_disposed()
        else:
            self._hub._record(DiagnosticKind.PUBLISHER_FENCED)
