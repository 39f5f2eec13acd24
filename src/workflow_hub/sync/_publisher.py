"""A publisher any thread may call: checked in the caller, queued in order to the hub's thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, final

from .. import (
    Availability,
    ContractError,
    Cursor,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
    SnapshotFrame,
    WorkflowActivityPublisher,
)
from .._public import NoPublicConstructor
from ._portal import Portal

__all__ = ["Publisher"]

# SnapshotFrame's own checks are publish_snapshot's (roots iff ready, each a RootActivity).
_PROBE: Final = Cursor(epoch="probe", revision=0)


def _snapshot_arguments(
    availability: Availability | str, roots: Iterable[RootActivity] | None
) -> tuple[Availability, tuple[RootActivity, ...] | None]:
    if roots is not None and not isinstance(roots, Iterable):
        raise ContractError("roots", f"expected an iterable of RootActivity, got {roots!r}")
    frozen = None if roots is None else tuple(roots)
    frame = SnapshotFrame(cursor=_PROBE, availability=availability, roots=frozen)
    return frame.availability, frame.roots


def _check(value: object, expected: type, path: str) -> None:
    if not isinstance(value, expected):
        raise ContractError(path, f"expected {expected.__name__}, got {type(value).__name__}")


@final
class Publisher(metaclass=NoPublicConstructor):
    """The thread-safe face of a :class:`~workflow_hub.WorkflowActivityPublisher`.

    Get it from ``hub.register_publisher()``. Share it with any number of threads. Each
    ``publish_*`` checks its arguments in the calling thread (a bad one raises
    :class:`~workflow_hub.ContractError` there, and nothing is queued), queues the call for the
    hub's thread and returns at once: calls from one thread take effect in the order it made
    them, and nothing is lost. The ``*_blocking`` variants wait until the hub has applied the
    call and return the cursor it assigned (None when the publisher is fenced, P9).
    """

    __slots__ = ("_portal", "_publisher")

    def __init__(self, publisher: WorkflowActivityPublisher, portal: Portal) -> None:
        self._publisher = publisher
        self._portal = portal

    @property
    def current(self) -> bool:
        """Whether the publisher is current (P2), as the hub's thread sees it now."""
        return self._portal.call(lambda: self._publisher.current)

    def publish_snapshot(
        self, availability: Availability | str, roots: Iterable[RootActivity] | None = None
    ) -> None:
        state, frozen = _snapshot_arguments(availability, roots)
        publish = self._publisher.publish_snapshot
        self._portal.submit(lambda: publish(state, frozen))

    def publish_changed(self, root: RootActivity) -> None:
        _check(root, RootActivity, "root")
        publish = self._publisher.publish_changed
        self._portal.submit(lambda: publish(root))

    def publish_removed(self, root_run_id: str) -> None:
        _check(root_run_id, str, "root_run_id")
        publish = self._publisher.publish_removed
        self._portal.submit(lambda: publish(root_run_id))

    def publish_lifecycle(self, event: LifecycleInput) -> None:
        _check(event, LifecycleInput, "event")
        publish = self._publisher.publish_lifecycle
        self._portal.submit(lambda: publish(event))

    def publish_heartbeat(self, event: HeartbeatEvent) -> None:
        _check(event, HeartbeatEvent, "event")
        publish = self._publisher.publish_heartbeat
        self._portal.submit(lambda: publish(event))

    def dispose(self) -> None:
        """Queue ``dispose()`` (P8): the source becomes unavailable. Idempotent."""
        self._portal.submit(self._publisher.dispose)

    def publish_snapshot_blocking(
        self, availability: Availability | str, roots: Iterable[RootActivity] | None = None
    ) -> Cursor | None:
        state, frozen = _snapshot_arguments(availability, roots)
        return self._portal.call(self._publisher.publish_snapshot, state, frozen)

    def publish_changed_blocking(self, root: RootActivity) -> Cursor | None:
        _check(root, RootActivity, "root")
        return self._portal.call(self._publisher.publish_changed, root)

    def publish_removed_blocking(self, root_run_id: str) -> Cursor | None:
        _check(root_run_id, str, "root_run_id")
        return self._portal.call(self._publisher.publish_removed, root_run_id)

    def publish_lifecycle_blocking(self, event: LifecycleInput) -> Cursor | None:
        _check(event, LifecycleInput, "event")
        return self._portal.call(self._publisher.publish_lifecycle, event)

    def dispose_blocking(self) -> None:
        """``dispose()``, then wait until the hub has applied it."""
        self._portal.call(self._publisher.dispose)
