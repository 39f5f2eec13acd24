"""Builders of the values the hub makes on every publication, from values already valid.

The hub builds a cursor, a frame and a hook event per publication, always from its own state and
from contract values that were validated when they were constructed. The publish paths write
their builders out (below: the stores they use); every other builder here is made by
the contract's one generator of unchecked builders (:func:`~workflow_hub._contract.generate_builder`:
one ``object.__new__`` and one slot store per field); the values it makes are equal to, and of the
same type as, what the validating constructor makes from the same fields
(``tests/core/test_builders.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from .._contract import (
    ActivityChangedEvent,
    Availability,
    ChangedFrame,
    Cursor,
    Diagnostic,
    DiagnosticKind,
    LifecycleEvent,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    StageCompletedEvent,
    generate_builder,
    slot_stores,
)

__all__ = [
    "activity_changed_event",
    "cursor_epoch",
    "cursor_revision",
    "diagnostic",
    "frame_cursor",
    "frame_root",
    "lifecycle_attribution",
    "lifecycle_cursor",
    "lifecycle_delivery",
    "lifecycle_event_id",
    "lifecycle_observed_at",
    "lifecycle_occurred_at",
    "lifecycle_owner_session_id",
    "lifecycle_root_run_id",
    "lifecycle_run_id",
    "lifecycle_target",
    "new",
    "removed_frame",
    "snapshot_frame",
    "stage_completed_event_of",
]


def _same_names(names: str) -> dict[str, str]:
    return {name.strip(): name.strip() for name in names.split(",")}


removed_frame: Callable[[Cursor, str], RemovedFrame] = generate_builder(
    RemovedFrame, "cursor, root_run_id", _same_names("cursor, root_run_id")
)
snapshot_frame: Callable[
    [Cursor, Availability, tuple[RootActivity, ...] | None, str | None], SnapshotFrame
] = generate_builder(
    # SnapshotFrame's post-init check ("ready" has roots and no detail, the others no roots)
    # holds by construction: the hub passes roots exactly when it is ready, a detail only when
    # it is not (a checked one).
    SnapshotFrame,
    "cursor, availability, roots, detail",
    _same_names("cursor, availability, roots, detail"),
)
activity_changed_event: Callable[[Cursor, RootActivity], ActivityChangedEvent] = generate_builder(
    ActivityChangedEvent, "cursor, root", _same_names("cursor, root")
)
diagnostic: Callable[[DiagnosticKind, Cursor], Diagnostic] = generate_builder(
    Diagnostic, "kind, cursor", _same_names("kind, cursor")
)
stage_completed_event_of: Callable[[LifecycleEvent], StageCompletedEvent] = (
    # The same event from the stamped lifecycle event of a completed stage (the envelope and
    # the cursor are the same fields): the hook task builds it when it dispatches it.
    generate_builder(
        StageCompletedEvent,
        "event",
        {field.name: f"event.{field.name}" for field in attrs.fields(StageCompletedEvent)},
    )
)

# What the publish paths build written out (``object.__new__`` and one slot store per field, as a
# builder does, without the builder's call; tests/core/test_builders.py holds the values to the
# constructors): the stores unpacked one name per field, so a class that gains one fails here.
new = object.__new__
cursor_epoch, cursor_revision = slot_stores(Cursor)
frame_cursor, frame_root = slot_stores(ChangedFrame)
(
    lifecycle_event_id,
    lifecycle_cursor,
    lifecycle_run_id,
    lifecycle_root_run_id,
    lifecycle_owner_session_id,
    lifecycle_occurred_at,
    lifecycle_observed_at,
    lifecycle_delivery,
    lifecycle_target,
    lifecycle_attribution,
) = slot_stores(LifecycleEvent)
