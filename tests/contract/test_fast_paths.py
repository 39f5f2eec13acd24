"""The contract's fast paths make exactly what the checked paths make (C1, C2; issue 29).

``unchecked`` builds a value without running its converters, through a builder generated once
per class; these properties hold it to the attrs constructor on every valid value the public
strategies draw, for every contract class. ``dumps`` writes JSON text through encoders generated
once per class; these properties hold it to ``json.dumps`` of ``to_wire`` (the cattrs converter's
dict, which the shape and round-trip tests of ``test_wire.py`` check) on every value and union.
"""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workflow_hub import Cursor, HeartbeatEvent, RootActivity, RootGraph
from workflow_hub._contract import unchecked, unchecked_builder
from workflow_hub._contract._values import VALUE_CLASSES
from workflow_hub.testing import strategies as ws
from workflow_hub.wire import dumps, to_wire

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


def reference_text(value: object) -> str:
    return json.dumps(to_wire(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@pytest.mark.parametrize(("type_", "strategy"), TYPES, ids=[repr(t) for t, _ in TYPES])
@given(data=st.data())
def test_dumps_is_json_dumps_of_to_wire(
    type_: Any, strategy: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    """C2: the text ``dumps`` writes is character for character ``json.dumps(to_wire(x))``,
    compact and with non-ASCII kept: key order, omitted optionals, numbers, escapes."""
    value = data.draw(strategy)
    assert dumps(value) == reference_text(value)


@given(
    text=st.text(),
    number=st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
)
def test_dumps_escapes_text_and_writes_numbers_as_json_does(text: str, number: float) -> None:
    """Every string (quotes, backslashes, control characters, non-ASCII, surrogates) and every
    finite number is written as the json module writes it, even where ``unchecked`` built it."""
    value = unchecked(
        HeartbeatEvent,
        run_id=text,
        root_run_id=text,
        owner_session_id=text,
        scheduled_at=number,
        interval_minutes=number,
    )
    assert dumps(value) == reference_text(value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_dumps_refuses_a_non_finite_number_as_json_does(bad: float) -> None:
    value = unchecked(
        HeartbeatEvent,
        run_id="r",
        root_run_id="r",
        owner_session_id="s",
        scheduled_at=bad,
        interval_minutes=1,
    )
    with pytest.raises(ValueError, match="not JSON compliant"):
        reference_text(value)
    with pytest.raises(ValueError, match="not JSON compliant"):
        dumps(value)


def test_dumps_of_a_non_contract_value_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        dumps({"kind": "snapshot"})


@given(graphs=st.lists(ws.root_graphs(max_nodes=4), min_size=1, max_size=4), data=st.data())
def test_a_graph_that_keeps_some_nodes_of_another_is_written_as_json_does(
    graphs: list[RootGraph], data: st.DataObject
) -> None:
    """C2: ``dumps`` remembers a graph node's text by the node's identity (a tracker keeps the
    unchanged nodes' objects from one graph to the next); graphs that share nodes, in any
    order, are each written exactly as ``json.dumps(to_wire(x))`` writes them."""
    pool = [node for graph in graphs for node in graph.nodes]
    for graph in graphs:
        assert dumps(graph) == reference_text(graph)
        if pool:
            shared = data.draw(st.lists(st.sampled_from(pool), max_size=6))
            mixed = RootGraph(nodes=[*shared, *graph.nodes], run_prompts=graph.run_prompts)
            assert dumps(mixed) == reference_text(mixed)
