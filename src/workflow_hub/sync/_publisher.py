"""A publisher any thread may call: checked in the caller, queued in order to the hub's thread."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import final

import attrs

from .. import (
    Availability,
    Cursor,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
    WorkflowActivityPublisher,
)
from .._contract import check_str, instance_check, snapshot_arguments
from .._public import NoPublicConstructor
from ._portal import Portal

__all__ = ["Publisher"]

# The checks of every publishing front (the trio publisher's and ThreadPublisher's own).
_check_root = instance_check(RootActivity)
_check_lifecycle = instance_check(LifecycleInput)
_check_heartbeat = instance_check(HeartbeatEvent)


@final
@attrs.define(eq=False)
class Publisher(metaclass=NoPublicConstructor):
    """The thread-safe face of a :class:`~workflow_hub.WorkflowActivityPublisher`.

    Get it from ``hub.register_publisher()``. Share it with any number of threads. Each
    ``publish_*`` checks its arguments in the calling thread (a bad one raises
    :class:`~workflow_hub.ContractError` there, and nothing is queued), queues the call for the
    hub's thread and returns at once: calls from one thread take effect in the order it made
    them, and nothing is lost. The ``*_blocking`` variants wait until the hub has applied the
    call and return the cursor it assigned (None when the publisher is fenced, P9).
    """

    _publisher: WorkflowActivityPublisher
    _portal: Portal

    @property
    def current(self) -> bool:
        """Whether the publisher is current (P2), as the hub's thread sees it now."""
        return self._portal.call(lambda: self._publisher.current)

    def publish_snapshot(
        self,
        availability: Availability | str,
        roots: Iterable[RootActivity] | None = None,
        detail: str | None = None,
    ) -> None:
        state, frozen, said = snapshot_arguments(availability, roots, detail)
        self._portal.submit(partial(self._publisher.publish_snapshot, state, frozen, said))

    def publish_changed(self, root: RootActivity) -> None:
        _check_root(root, "root")
        self._portal.submit(partial(self._publisher.publish_changed, root))

    def publish_removed(self, root_run_id: str) -> None:
        check_str(root_run_id, "root_run_id")
        self._portal.submit(partial(self._publisher.publish_removed, root_run_id))

    def publish_lifecycle(self, event: LifecycleInput) -> None:
        _check_lifecycle(event, "event")
        self._portal.submit(partial(self._publisher.publish_lifecycle, event))

    def publish_heartbeat(self, event: HeartbeatEvent) -> None:
        _check_heartbeat(event, "event")
        self._portal.submit(partial(self._publisher.publish_heartbeat, event))

    def dispose(self) -> None:
        """Queue ``dispose()`` (P8): the source becomes unavailable. Idempotent."""
        self._portal.submit(self._publisher.dispose)

    def publish_snapshot_blocking(
        self,
        availability: Availability | str,
        roots: Iterable[RootActivity] | None = None,
        detail: str | None = None,
    ) -> Cursor | None:
        state, frozen, said = snapshot_arguments(availability, roots, detail)
        return self._portal.call(self._publisher.publish_snapshot, state, frozen, said)

    def publish_changed_blocking(self, root: RootActivity) -> Cursor | None:
        _check_root(root, "root")
        return self._portal.call(self._publisher.publish_changed, root)

    def publish_removed_blocking(self, root_run_id: str) -> Cursor | None:
        check_str(root_run_id, "root_run_id")
        return self._portal.call(self._publisher.publish_removed, root_run_id)

    def publish_lifecycle_blocking(self, event: LifecycleInput) -> Cursor | None:
        _check_lifecycle(event, "event")
        return self._portal.call(self._publisher.publish_lifecycle, event)

    def dispose_blocking(self) -> None:
        """``dispose()``, then wait until the hub has applied it."""
        self._portal.call(self._publisher.dispose)
