"""Builders of the values the hub makes on every publication, from values already valid.

The hub builds a cursor, a frame and a hook event per publication, always from its own state and
from contract values that were validated when they were constructed. Running the attrs
constructor again (every converter) or :func:`~workflow_hub._contract.unchecked` (a keyword
dict and a generic ``object.__setattr__`` per field) cost more than the rest of the publish path
together. A builder here is a small function generated once per class from its attrs fields: one
``object.__new__`` and one slot store per field, through the slot's own descriptor. It validates
nothing, exactly like ``unchecked``; the values it makes are equal to, and of the same type as,
what the validating constructor makes from the same fields (``tests/core/test_builders.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from .._contract import (
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
)

__all__ = [
    "activity_changed_event",
    "changed_frame",
    "cursor",
    "diagnostic",
    "lifecycle_event",
    "removed_frame",
    "slot_stores",
    "snapshot_frame",
    "stage_completed_event",
    "stage_completed_event_of",
]

_T = TypeVar("_T")


def generate_builder(
    cls: type[_T], parameters: str, values: Mapping[str, str]
) -> Callable[..., _T]:
    """A function of ``parameters`` building ``cls`` with each field set to its expression.

    ``values`` must name every attrs field of ``cls`` exactly once; ``cls`` must be slotted, with
    no ``__attrs_post_init__`` check the caller would be skipping silently (callers that build
    such a class check its condition themselves and say so).
    """
    names = [field.name for field in attrs.fields(cls)]  # type: ignore[arg-type]
    if sorted(names) != sorted(values):
        raise TypeError(f"{cls.__name__} has fields {names}, the builder sets {sorted(values)}")
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"def build({parameters}):", "    instance = _new(_cls)"]
    for index, name in enumerate(names):
        descriptor = cls.__dict__[name]  # a slot: a member descriptor, not a property
        namespace[f"_set{index}"] = descriptor.__set__
        lines.append(f"    _set{index}(instance, {values[name]})")
    lines.append("    return instance")
    code = compile("\n".join(lines) + "\n", f"<workflow_hub builder of {cls.__name__}>", "exec")
    exec(code, namespace)  # the source is made above from attrs field names only
    build: Callable[..., _T] = namespace["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    return build


def slot_stores(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot store of each attrs field of ``cls``, in field order, for a path that builds a
    ``cls`` written out (``object.__new__`` and one store per field, as a builder does, without
    the builder's own call). Such a path must store every field; it is tested like a builder."""
    return tuple(cls.__dict__[field.name].__set__ for field in attrs.fields(cls))


def _same_names(names: str) -> dict[str, str]:
    return {name.strip(): name.strip() for name in names.split(",")}


def _envelope(event_class: type[Any]) -> dict[str, str]:
    """A lifecycle envelope's fields, read from ``event`` (a LifecycleInput), with ``cursor``."""
    fields = {field.name: f"event.{field.name}" for field in attrs.fields(LifecycleInput)}
    fields["cursor"] = "cursor"
    return fields


cursor: Callable[[str, int], Cursor] = generate_builder(
    Cursor, "epoch, revision", _same_names("epoch, revision")
)
changed_frame: Callable[[Cursor, RootActivity], ChangedFrame] = generate_builder(
    ChangedFrame, "cursor, root", _same_names("cursor, root")
)
removed_frame: Callable[[Cursor, str], RemovedFrame] = generate_builder(
    RemovedFrame, "cursor, root_run_id", _same_names("cursor, root_run_id")
)
snapshot_frame: Callable[[Cursor, Availability, tuple[RootActivity, ...] | None], SnapshotFrame] = (
    generate_builder(
        # SnapshotFrame's post-init check ("ready" has roots, the others none) holds by construction:
        # the hub passes roots exactly when it is ready.
        SnapshotFrame,
        "cursor, availability, roots",
        _same_names("cursor, availability, roots"),
    )
)
activity_changed_event: Callable[[Cursor, RootActivity], ActivityChangedEvent] = generate_builder(
    ActivityChangedEvent, "cursor, root", _same_names("cursor, root")
)
diagnostic: Callable[[DiagnosticKind, Cursor], Diagnostic] = generate_builder(
    Diagnostic, "kind, cursor", _same_names("kind, cursor")
)
lifecycle_event: Callable[[LifecycleInput, Cursor], LifecycleEvent] = generate_builder(
    LifecycleEvent, "event, cursor", _envelope(LifecycleEvent)
)
stage_completed_event: Callable[[LifecycleInput, Cursor], StageCompletedEvent] = (
    # Its post-init check (a completed stage target) is the condition the hub tests before
    # building one.
    generate_builder(StageCompletedEvent, "event, cursor", _envelope(StageCompletedEvent))
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
