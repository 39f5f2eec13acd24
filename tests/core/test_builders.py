"""The hub's unchecked builders make exactly what the validating constructors make (C1, §2).

The hub builds its cursors, frames, hook events and diagnostics with generated builders that
validate nothing (issue 29: validation of values already valid was most of the publish cost),
or, on the publish paths, with the same stores written out (``publisher.py``).
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
    WorkflowActivityHub,
)
from workflow_hub._contract import generate_builder
from workflow_hub._core import _build
from workflow_hub.testing.strategies import (
    cursors,
    ids,
    lifecycle_inputs,
    root_activities,
    stage_targets,
    unknown_details,
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


@given(
    epoch=st.from_regex(r"[a-z0-9]{1,12}", fullmatch=True),  # an epoch with a text form
    revisions=st.integers(min_value=1, max_value=5),
)
def test_the_hubs_next_cursor(epoch: str, revisions: int) -> None:
    """C1: the hub's written-out next cursor (``_advance``, the source of the publish paths'
    copies) is the validated cursor of the same fields."""
    hub = WorkflowActivityHub(epoch_factory=iter(["first-epoch", epoch]).__next__)
    hub.register_publisher()
    for revision in range(1, revisions + 1):
        cursor = hub._advance()
        assert_same_value(cursor, Cursor(epoch=epoch, revision=revision))
        assert hub.cursor is cursor


@given(cursor=cursors(), root=root_activities())
def test_the_hook_event_of_a_changed_frame(cursor: Cursor, root: RootActivity) -> None:
    """P4: the changed frame's ActivityChangedEvent twin."""
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
    detail=st.none() | unknown_details(),
)
def test_snapshot_frame(
    cursor: Cursor,
    availability: Availability,
    roots: tuple[RootActivity, ...],
    detail: str | None,
) -> None:
    """P3, C3: the hub passes roots exactly when it is ready, and a detail only when it is not,
    as the constructor requires."""
    ready = availability is Availability.READY
    held = roots if ready else None
    said = None if ready else detail
    assert_same_value(
        _build.snapshot_frame(cursor, availability, held, said),
        SnapshotFrame(cursor=cursor, availability=availability, roots=held, detail=said),
    )


@given(kind=st.sampled_from(DiagnosticKind), cursor=cursors())
def test_diagnostic(kind: DiagnosticKind, cursor: Cursor) -> None:
    """L3."""
    assert_same_value(_build.diagnostic(kind, cursor), Diagnostic(kind=kind, cursor=cursor))


def _envelope(event: LifecycleInput) -> dict[str, Any]:
    return attrs.asdict(event, recurse=False)


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
        _build.stage_completed_event_of(LifecycleEvent(cursor=cursor, **_envelope(completed))),
        StageCompletedEvent(cursor=cursor, **_envelope(completed)),
    )


def test_a_builder_must_set_every_field() -> None:
    """A builder that forgot a field (the contract grew one) refuses to exist."""
    with pytest.raises(TypeError, match="epoch"):
        generate_builder(Cursor, "revision", {"revision": "revision"})


def _queued(hub: WorkflowActivityHub) -> list[object]:
    """The hook queue's items without their publishers (each an event or what stands for one)."""
    return [item for item, _ in hub._hook_events]


@given(roots=st.lists(root_activities(), min_size=1, max_size=4))
def test_publish_changed_builds_what_the_constructors_build(roots: list[RootActivity]) -> None:
    """P4: the written-out publish path's cursor and frame (in the history and in the hook
    queue, standing for its ActivityChangedEvent) are the validated values of their fields."""
    hub = WorkflowActivityHub(epoch_factory=iter(["e0", "e1"]).__next__)
    publisher = hub.register_publisher()
    for revision, root in enumerate(roots, start=1):
        cursor = publisher.publish_changed(root)
        assert cursor is not None
        assert_same_value(cursor, Cursor(epoch="e1", revision=revision))
        assert hub.cursor is cursor
        (frame,) = hub._history.replay(revision - 1, revision) or []
        assert_same_value(frame, ChangedFrame(cursor=cursor, root=root))
        assert _queued(hub)[-1] is frame


@given(event=lifecycle_inputs())
def test_publish_lifecycle_stamps_what_the_constructor_builds(event: LifecycleInput) -> None:
    """P6: the written-out lifecycle path stamps the input's envelope with the next cursor, and
    queues a completed stage's second event as the stamped event it is built from."""
    hub = WorkflowActivityHub(epoch_factory=iter(["e0", "e1"]).__next__)
    publisher = hub.register_publisher()
    cursor = publisher.publish_lifecycle(event)
    assert_same_value(cursor, Cursor(epoch="e1", revision=1))
    queued = _queued(hub)
    assert cursor is not None
    assert_same_value(queued[0], LifecycleEvent(cursor=cursor, **_envelope(event)))
    target = event.target
    if type(target) is StageTarget and target.status is StageStatus.COMPLETED:
        assert queued[1:] == [(queued[0],)]
    else:
        assert queued[1:] == []


@given(event=lifecycle_inputs())
def test_the_checked_lifecycle_entry_is_publish_lifecycle(event: LifecycleInput) -> None:
    """P6: the tracker's entry (fields it checked, no LifecycleInput) queues what
    ``publish_lifecycle`` of the input queues, and returns the same cursor."""
    public = WorkflowActivityHub(epoch_factory=iter(["e0", "e1"]).__next__)
    private = WorkflowActivityHub(epoch_factory=iter(["e0", "e1"]).__next__)
    through_input = public.register_publisher().publish_lifecycle(event)
    through_fields = private.register_publisher()._publish_checked_lifecycle(
        *attrs.astuple(event, recurse=False)
    )
    assert through_fields is not None
    assert through_fields == through_input
    mine, theirs = _queued(private), _queued(public)
    assert mine == theirs
    assert_same_value(mine[0], LifecycleEvent(cursor=through_fields, **_envelope(event)))
    assert mine[1:] == [(mine[0],)] * (len(mine) - 1)
