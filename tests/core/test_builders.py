"""The hub's unchecked builders make exactly what the validating constructors make (C1, §2).

The hub builds its cursors, frames, hook events and diagnostics with generated builders that
validate nothing (issue 29: validation of values already valid was most of the publish cost).
These properties hold them to the attrs constructors on every valid input the public strategies
draw: same type, equal, same hash, same repr, every field the same object (or an equal tuple).
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workflow_hub import (
    ActivityChangedEvent,
    Availability,
    ChangedFrame,
    Cursor,
    Diagnostic,
    DiagnosticKind,
    LifecycleEvent,
    LifecycleInput,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    StageCompletedEvent,
    StageStatus,
    StageTarget,
)
from workflow_hub._core import _build
from workflow_hub.testing.strategies import (
    cursors,
    ids,
    lifecycle_inputs,
    root_activities,
    stage_targets,
)


def assert_same_value(built: object, validated: object) -> None:
    assert type(built) is type(validated)
    assert built == validated
    assert hash(built) == hash(validated)
    assert repr(built) == repr(validated)
    for field in attrs.fields(type(validated)):
        mine, theirs = getattr(built, field.name), getattr(validated, field.name)
        # The constructor copies a tuple field into a tuple of its own; anything else it keeps.
        assert mine == theirs if type(theirs) is tuple else mine is theirs, field.name


@given(epoch=ids(), revision=st.integers(min_value=0, max_value=2**70))
def test_cursor(epoch: str, revision: int) -> None:
    """C1: a built cursor is the validated cursor of the same fields."""
    assert_same_value(_build.cursor(epoch, revision), Cursor(epoch=epoch, revision=revision))


@given(cursor=cursors(), root=root_activities())
def test_changed_frame_and_its_hook_event(cursor: Cursor, root: RootActivity) -> None:
    """P4: the changed frame and its ActivityChangedEvent twin."""
    assert_same_value(_build.changed_frame(cursor, root), ChangedFrame(cursor=cursor, root=root))
    assert_same_value(
        _build.activity_changed_event(cursor, root),
        ActivityChangedEvent(cursor=cursor, root=root),
    )


@given(cursor=cursors(), root_run_id=ids())
def test_removed_frame(cursor: Cursor, root_run_id: str) -> None:
    """P5."""
    assert_same_value(
        _build.removed_frame(cursor, root_run_id),
        RemovedFrame(cursor=cursor, root_run_id=root_run_id),
    )


@given(
    cursor=cursors(),
    availability=st.sampled_from(Availability),
    roots=st.lists(root_activities(), max_size=3).map(tuple),
)
def test_snapshot_frame(
    cursor: Cursor, availability: Availability, roots: tuple[RootActivity, ...]
) -> None:
    """P3: the hub passes roots exactly when it is ready, as the constructor requires."""
    held = roots if availability is Availability.READY else None
    assert_same_value(
        _build.snapshot_frame(cursor, availability, held),
        SnapshotFrame(cursor=cursor, availability=availability, roots=held),
    )


@given(kind=st.sampled_from(DiagnosticKind), cursor=cursors())
def test_diagnostic(kind: DiagnosticKind, cursor: Cursor) -> None:
    """L3."""
    assert_same_value(_build.diagnostic(kind, cursor), Diagnostic(kind=kind, cursor=cursor))


def _envelope(event: LifecycleInput) -> dict[str, Any]:
    return attrs.asdict(event, recurse=False)


@given(event=lifecycle_inputs(), cursor=cursors())
def test_lifecycle_event(event: LifecycleInput, cursor: Cursor) -> None:
    """P6: the stamped event is the input's envelope with the hub's cursor."""
    assert_same_value(
        _build.lifecycle_event(event, cursor), LifecycleEvent(cursor=cursor, **_envelope(event))
    )


@given(
    event=lifecycle_inputs(),
    target=stage_targets(statuses=st.just(StageStatus.COMPLETED)),
    cursor=cursors(),
)
def test_stage_completed_event(event: LifecycleInput, target: StageTarget, cursor: Cursor) -> None:
    """P6: a completed stage's event, built only when the constructor's own check holds."""
    completed = attrs.evolve(event, target=target)
    assert_same_value(
        _build.stage_completed_event(completed, cursor),
        StageCompletedEvent(cursor=cursor, **_envelope(completed)),
    )


@given(
    event=lifecycle_inputs(),
    target=stage_targets(statuses=st.just(StageStatus.COMPLETED)),
    cursor=cursors(),
)
def test_stage_completed_event_of_the_stamped_event(
    event: LifecycleInput, target: StageTarget, cursor: Cursor
) -> None:
    """K1: the event the hook task builds when it dispatches a completed stage's second event
    is the one the hub would have built at publication, from the same input and cursor."""
    completed = attrs.evolve(event, target=target)
    assert_same_value(
        _build.stage_completed_event_of(_build.lifecycle_event(completed, cursor)),
        StageCompletedEvent(cursor=cursor, **_envelope(completed)),
    )


def test_a_builder_must_set_every_field() -> None:
    """A builder that forgot a field (the contract grew one) refuses to exist."""
    with pytest.raises(TypeError, match="epoch"):
        _build.generate_builder(Cursor, "revision", {"revision": "revision"})
