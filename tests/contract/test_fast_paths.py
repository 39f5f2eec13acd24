"""The contract's fast paths make exactly what the checked paths make (C1, C2; issue 29).

``unchecked`` builds a value without running its converters, through a builder generated once
per class; these properties hold it to the attrs constructor on every valid value the public
strategies draw, for every contract class.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workflow_hub import Cursor, RootActivity
from workflow_hub._contract import unchecked, unchecked_builder
from workflow_hub._contract._values import VALUE_CLASSES

from .test_wire import TYPES

# One (class, strategy) per contract class: the unions of TYPES draw classes listed on their own.
CLASSES: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (type_, strategy) for type_, strategy in TYPES if isinstance(type_, type)
]


def test_every_contract_class_is_covered() -> None:
    assert {type_ for type_, _ in CLASSES} == set(VALUE_CLASSES)


@pytest.mark.parametrize(("type_", "strategy"), CLASSES, ids=[t.__name__ for t, _ in CLASSES])
@given(data=st.data())
def test_unchecked_builds_what_the_constructor_builds(
    type_: Any, strategy: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    """C1: ``unchecked(cls, **fields)`` of a valid value's fields is that value: same type,
    equal, same hash and repr, every field the very object given."""
    value = data.draw(strategy)
    fields = {field.name: getattr(value, field.name) for field in attrs.fields(type_)}
    built = unchecked(type_, **fields)
    assert type(built) is type_
    assert built == value
    assert hash(built) == hash(value)
    assert repr(built) == repr(value)
    for name, given_value in fields.items():
        assert getattr(built, name) is given_value, name
    assert unchecked_builder(type_)(**fields) == value


def test_unchecked_builder_is_made_once_per_class() -> None:
    assert unchecked_builder(Cursor) is unchecked_builder(Cursor)
    assert unchecked_builder(Cursor) is not unchecked_builder(RootActivity)


def test_unchecked_needs_every_field_and_no_other() -> None:
    """A missing or unknown field is a TypeError, never a half-built value."""
    with pytest.raises(TypeError):
        unchecked(Cursor, epoch="e")
    with pytest.raises(TypeError):
        unchecked(Cursor, epoch="e", revision=1, extra=2)
    built = unchecked(Cursor, epoch="e", revision=1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.revision = 2  # type: ignore[misc]
