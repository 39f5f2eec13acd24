"""The JSON wire format: one cattrs converter owns every key, discriminator and decoding rule.

Encoding uses hooks that cattrs generates per class (camelCase renames, absent optionals omitted),
with the class-level discriminator (``kind`` or ``type``) put in front. Decoding uses hooks written
here rather than cattrs' generated ones, for two reasons a reader could not guess from the code:

* cattrs' primitive hooks *coerce* (``int("5")``, ``bool("false")``, ``str(5)``), which would let a
  host send ``"1"`` for a count and get ``1`` back. Our hooks only reshape JSON into keyword
  arguments; every leaf value goes to the attrs constructor untouched, so decoding validates with
  exactly the rules construction does (SPEC C1) and an int timestamp stays an int.
* Errors must name the JSON path in *wire* names (``roots[2].activeExecutionCount``). Each hook
  prefixes the path of an error raised below it, and an error raised by a constructor (which names
  the Python field) is translated to the wire name on the way out.

Decoding dispatches on the type itself (:func:`_structure`, one hook a class or union, made on
first use), and encoding's converter is made the first time :func:`to_wire` runs: a reader that
only decodes (``workflow-hub status``, a reporter) never imports cattrs, which is most of what
``import workflow_hub`` used to cost beyond attrs. The JSON text encoders of :func:`dumps` are
likewise generated on its first call.
"""

from __future__ import annotations

import json
import json.encoder
import math
import re
import threading
import types
from collections.abc import Callable, Mapping
from enum import StrEnum
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast, get_args, get_origin, overload

import attrs

from . import _values
from ._errors import ContractError
from ._values import VALUE_CLASSES

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "discriminator_of",
    "dumps",
    "from_wire",
    "loads",
    "parse_json",
    "to_wire",
    "union_members",
]

_T = TypeVar("_T")

# A decoder turns one wire value into what the constructor takes; its errors carry a path relative
# to that value.
_Decoder = Callable[[Any], Any]

# Every contract class is wired: the table is the contract's own list.
_CLASSES: tuple[type[Any], ...] = VALUE_CLASSES
_CLASS_SET: frozenset[type[Any]] = frozenset(_CLASSES)


# --- names and paths ---------------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _wire_path(python_path: str) -> str:
    """``parent_ids[1]`` -> ``parentIds[1]``: every wire name is the camelCase of its field name."""
    return _IDENTIFIER.sub(lambda match: _camel(match.group()), python_path)


def _join(prefix: str, path: str) -> str:
    if not path:
        return prefix
    if not prefix or path.startswith("["):
        return prefix + path
    return f"{prefix}.{path}"


def _below(prefix: str, error: ContractError) -> ContractError:
    return ContractError(_join(prefix, error.path), error.problem)


def _json_type(value: object) -> str:
    """Name a decoded JSON value the way a host author would: ``object``, ``array``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


# --- discriminators ----------------------------------------------------------------------------


def discriminator_of(cls: type[Any]) -> tuple[str, str] | None:
    """The ``(key, value)`` a class carries on the wire, e.g. ``("kind", "snapshot")``.

    It is a class-level string constant, never an attrs field: ``NodePrompt.kind`` and
    ``Diagnostic.kind`` are data (a prompt kind, a diagnostic kind), not discriminators.
    """
    fields = attrs.fields_dict(cls)
    for key in ("kind", "type"):
        value = cls.__dict__.get(key)
        if key not in fields and isinstance(value, str):
            return key, value
    return None


def union_members(tp: object) -> tuple[object, ...] | None:
    """The members of a union type (``A | B`` or ``Union[A, B]``), None for any other type."""
    if get_origin(tp) in (Union, types.UnionType):
        return get_args(tp)
    return None


# A union's decoding table: (discriminator key, tag) -> member class.
_TagTable = dict[tuple[str, str], type[Any]]


def _discriminated_union(tp: object) -> _TagTable | None:
    """The tag table of a union of contract classes, or None if ``tp`` is not one.

    Every member needs a discriminator, and no two members the same ``(key, tag)`` pair. The keys
    may differ: ``Frame | WorkflowEvent`` (``kind`` and ``type``) is a union too, so a stream
    that mixes frames and hook events decodes line by line.
    """
    members = union_members(tp)
    if members is None or not all(member in _CLASS_SET for member in members):
        return None
    table: _TagTable = {}
    for member in cast(tuple[type[Any], ...], members):
        discriminator = discriminator_of(member)
        if discriminator is None or discriminator in table:
            return None
        table[discriminator] = member
    return table


def _check_object(data: object) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ContractError("", f"expected an object, got {_json_type(data)}")
    return data


def _expected(table: _TagTable, key: str | None = None) -> str:
    """``'snapshot', 'changed'`` for one key; ``kind 'snapshot', … or type 'workflow_heartbeat'``
    when the union's members use more than one."""
    keys = {k for k, _ in table}
    if key is not None or len(keys) == 1:
        return ", ".join(repr(tag) for k, tag in table if key is None or k == key)
    return ", ".join(f"{k} {tag!r}" for k, tag in table)


# --- decoding ----------------------------------------------------------------------------------


def _array_decoder(item: _Decoder | None) -> _Decoder:
    def decode(raw: object) -> object:
        if not isinstance(raw, list | tuple):
            raise ContractError("", f"expected an array, got {_json_type(raw)}")
        if item is None:
            # Leaves are checked, with their index, by the constructor.
            return raw
        values = []
        for index, element in enumerate(raw):
            try:
                values.append(item(element))
            except ContractError as error:
                raise _below(f"[{index}]", error) from None
        return values

    return decode


def _decoder_for(tp: object) -> _Decoder | None:
    """How to decode a field of type ``tp``; None for a leaf the constructor validates as is."""
    members = union_members(tp)
    present = tuple(m for m in members if m is not type(None)) if members is not None else (tp,)
    if all(member in _CLASS_SET for member in present):
        target = present[0] if len(present) == 1 else reduce(or_, present)
        return lambda raw: _structure(raw, target)
    if len(present) == 1 and get_origin(present[0]) is tuple:
        return _array_decoder(_decoder_for(get_args(present[0])[0]))
    return None


@attrs.frozen
class _FieldPlan:
    name: str
    key: str
    required: bool
    decode: _Decoder | None


def _make_class_hook(cls: type[Any]) -> Callable[[Any, Any], Any]:
    discriminator = discriminator_of(cls)
    plans = [
        _FieldPlan(
            name=field.name,
            key=_camel(field.name),
            required=field.default is attrs.NOTHING,
            decode=_decoder_for(field.type),
        )
        for field in attrs.fields(cls)
    ]

    def structure(data: object, _: object) -> Any:
        document = _check_object(data)
        if discriminator is not None:
            key, expected = discriminator
            if key not in document:
                raise ContractError(key, f"missing discriminator; expected {expected!r}")
            if document[key] != expected:
                raise ContractError(key, f"expected {expected!r}, got {document[key]!r}")
        arguments: dict[str, Any] = {}
        for plan in plans:
            if plan.key not in document:
                if plan.required:
                    raise ContractError(plan.key, "missing required key")
                continue
            raw = document[plan.key]
            if raw is None:
                raise ContractError(
                    plan.key,
                    "required, got null"
                    if plan.required
                    else "null is not a value; an absent optional field is omitted",
                )
            if plan.decode is not None:
                try:
                    raw = plan.decode(raw)
                except ContractError as error:
                    raise _below(plan.key, error) from None
            arguments[plan.name] = raw
        try:
            return cls(**arguments)
        except ContractError as error:
            raise ContractError(_wire_path(error.path), error.problem) from None

    return structure


def _make_union_hook(tp: object) -> Callable[[Any, Any], Any]:
    table = _discriminated_union(tp)
    assert table is not None  # the factory predicate checked it
    keys = list(dict.fromkeys(key for key, _ in table))

    def structure(data: object, _: object) -> Any:
        document = _check_object(data)
        present = [key for key in keys if key in document]
        if not present:
            names = " or ".join(keys)
            raise ContractError(
                keys[0] if len(keys) == 1 else "",
                f"missing discriminator {names}; expected one of {_expected(table)}",
            )
        members = {
            key: table.get((key, tag)) if isinstance(tag := document[key], str) else None
            for key in present
        }
        found = [(key, member) for key, member in members.items() if member is not None]
        if len(found) > 1:
            claims = " and ".join(f"{key} {document[key]!r}" for key, _ in found)
            raise ContractError("", f"ambiguous discriminators: {claims}")
        if not found:
            # Name the key the document most likely meant: the first one it carries.
            key = present[0]
            raise ContractError(
                key,
                f"unknown {key} {document[key]!r}; expected one of {_expected(table, key)}",
            )
        return _structure(document, found[0][1])

    return structure


_STRUCTURE: dict[object, Callable[[Any, Any], Any]] = {}
"""The decoding hook of each contract class and union decoded so far."""


def _structure(data: object, type_: object) -> Any:
    """Decode ``data`` as ``type_`` (a contract class or a discriminated union of them)."""
    hook = _STRUCTURE.get(type_)
    if hook is None:
        if type_ in _CLASS_SET:
            hook = _make_class_hook(type_)
        elif _discriminated_union(type_) is not None:
            hook = _make_union_hook(type_)
        else:
            raise TypeError(f"{type_!r} is not a contract class or a union of them")
        _STRUCTURE[type_] = hook
    return hook(data, type_)


# --- encoding ----------------------------------------------------------------------------------


def _make_unstructure_hook(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    from cattrs.gen import make_dict_unstructure_fn, override

    overrides: dict[str, Any] = {
        field.name: override(
            rename=_camel(field.name),
            # Only optional fields have a default (None), so this omits exactly the absent ones.
            omit_if_default=field.default is not attrs.NOTHING,
        )
        for field in attrs.fields(cls)
    }
    fields_of = make_dict_unstructure_fn(cls, _unstructure_converter(), **overrides)
    discriminator = discriminator_of(cls)
    if discriminator is None:
        return fields_of
    key, tag = discriminator

    def unstructure(value: Any) -> dict[str, Any]:
        # The discriminator leads, so a JSON line says what it is before anything else.
        return {key: tag, **fields_of(value)}

    return unstructure


def _enum_value(member: StrEnum) -> str:
    return member.value


def _is_contract_class(tp: object) -> bool:
    return tp in _CLASS_SET


# What is made on first use is made under this lock: the thread hosts (workflow_hub.sync) encode
# from more than one thread, and the text encoders are generated through one shared namespace.
_MAKING = threading.Lock()

_converters: list[cattrs.Converter] = []
"""The encoding converter, once :func:`_unstructure_converter` has made it."""


def _unstructure_converter() -> cattrs.Converter:
    """The converter :func:`to_wire` uses, made (and cattrs imported) on its first call."""
    if _converters:
        return _converters[0]
    with _MAKING:
        if _converters:
            return _converters[0]
        import cattrs

        # Sequences are tuples in Python and arrays (lists) on the wire.
        converter = cattrs.Converter(unstruct_collection_overrides={tuple: list})
        # StrEnum members are strs, so cattrs would pass them through as members; the wire wants
        # plain str. Registered on StrEnum itself: it precedes ``str`` in every member's MRO, so
        # it wins the dispatch.
        converter.register_unstructure_hook(StrEnum, _enum_value)
        # A root's labels are a JSON object of strings (C3).
        converter.register_unstructure_hook(_values.Labels, dict)
        converter.register_unstructure_hook_factory(_is_contract_class, _make_unstructure_hook)
        _converters.append(converter)
        return converter


# --- JSON text ---------------------------------------------------------------------------------
#
# ``dumps`` is what a server pays once per frame for every client, so it does not go through
# ``to_wire`` and ``json.dumps`` (a dict per value, a ``JSONEncoder`` per call, an enum property
# per member): each class gets a function generated once from its attrs fields that writes its
# compact JSON text directly. Strings go through the json module's own string encoder (the one
# ``json.dumps(..., ensure_ascii=False)`` uses), numbers through ``int.__repr__`` and
# ``float.__repr__`` (what the json module writes), so the text is exactly
# ``json.dumps(to_wire(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)``
# (``tests/contract/test_fast_paths.py`` holds every drawn value to that).

_json_string: Callable[[str], str] = getattr(json.encoder, "c_encode_basestring", None) or (
    json.encoder.py_encode_basestring
)
_int_text: Callable[[int], str] = int.__repr__
_float_text: Callable[[float], str] = float.__repr__


def _number_text(value: float) -> str:
    """An int or float timestamp as the json module writes it; a non-finite float is refused
    as ``json.dumps(..., allow_nan=False)`` refuses it."""
    if isinstance(value, float):
        if value != value or value in (math.inf, -math.inf):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return _float_text(value)
    return _int_text(value)


def _bool_text(value: bool) -> str:
    return "true" if value else "false"


_TEXT_OF: dict[type[Any], Callable[[Any], str]] = {}
"""Every contract class's text encoder, filled at the first :func:`dumps` (:func:`_text_of`)."""


def _value_text(value: Any) -> str:
    return _TEXT_OF[type(value)](value)


def _str_array_text(values: tuple[str, ...]) -> str:
    return "[" + ",".join(map(_json_string, values)) + "]"


def _labels_text(labels: _values.Labels) -> str:
    string = _json_string
    return "{" + ",".join([string(k) + ":" + string(v) for k, v in labels.items()]) + "}"


def _value_array_text(values: tuple[Any, ...]) -> str:
    text_of = _TEXT_OF
    return "[" + ",".join([text_of[type(value)](value) for value in values]) + "]"


# A root changes one node at a time, and RunTracker keeps the other nodes' objects in its next
# graph: a node's text is remembered by the node's identity (the entry holds the node, so its id
# is not reused while the entry lives), and a graph of 100 nodes is written from 99 known texts
# and one new one. Values are immutable, so a remembered text is the text. Bounded: emptied
# when full.
_NODE_TEXT: dict[int, tuple[Any, str]] = {}
_NODE_TEXT_LIMIT = 8192


def _nodes_text(nodes: tuple[Any, ...]) -> str:
    known = _NODE_TEXT
    parts = []
    for node in nodes:
        hit = known.get(id(node))
        if hit is not None and hit[0] is node:
            parts.append(hit[1])
            continue
        text = _TEXT_OF[type(node)](node)
        if len(known) >= _NODE_TEXT_LIMIT:
            known.clear()
        known[id(node)] = (node, text)
        parts.append(text)
    return "[" + ",".join(parts) + "]"


def _leaf_text(tp: object) -> str:
    """The name of the function writing a present value of type ``tp`` (never None)."""
    members = union_members(tp)
    present = tuple(m for m in members if m is not type(None)) if members is not None else (tp,)
    if len(present) == 1 and present[0] in _CLASS_SET:
        # One class: its own encoder, as the converter uses the declared class's hook.
        return f"_text_{present[0].__name__}"
    if all(member in _CLASS_SET for member in present):
        return "_value_text"
    if len(present) == 1:
        (only,) = present
        if only is _values.Labels:
            return "_labels_text"
        if get_origin(only) is tuple:
            (item,) = {a for a in get_args(only) if a is not Ellipsis}
            if item == _values.GraphNode:
                return "_nodes_text"
            return "_str_array_text" if item is str else "_value_array_text"
        if only is str or (isinstance(only, type) and issubclass(only, StrEnum)):
            # A StrEnum member is a str whose text is its value.
            return "_json_string"
        if only is bool:
            return "_bool_text"
        if only is int:
            return "_int_text"
    if set(present) == {int, float}:
        return "_number_text"
    raise TypeError(f"no JSON text for a field of type {tp!r}")


def _json_pair(key: str, value: str) -> str:
    return json.dumps(key) + ":" + json.dumps(value)


# The globals of every generated encoder: the helpers above, and each class's encoder as
# ``_text_<class name>`` (added as they are made; looked up when called).
_TEXT_NAMESPACE: dict[str, Any] = {
    name: globals()[name]
    for name in (
        "_value_text",
        "_str_array_text",
        "_value_array_text",
        "_nodes_text",
        "_labels_text",
        "_json_string",
        "_bool_text",
        "_int_text",
        "_number_text",
    )
}


def _make_text_encoder(cls: type[Any]) -> Callable[[Any], str]:
    discriminator = discriminator_of(cls)
    fields = attrs.fields(cls)
    # The converter's order: the discriminator, the required fields, then the optional ones that
    # are present (cattrs adds an omittable field after the others).
    required = [field for field in fields if field.default is attrs.NOTHING]
    optional = [field for field in fields if field.default is not attrs.NOTHING]
    if not required:
        raise TypeError(f"{cls.__name__} has no required field to open its object with")
    # Each part is a Python expression; an optional field's part is empty when it is None.
    parts = [] if discriminator is None else [repr("{" + _json_pair(*discriminator) + ",")]
    lines = ["def text(value):"]
    for position, field in enumerate(required):
        opening = "{" if position == 0 and discriminator is None else ""
        comma = "," if position else ""
        parts.append(repr(opening + comma + json.dumps(_camel(field.name)) + ":"))
        parts.append(f"{_leaf_text(field.type)}(value.{field.name})")
    for index, field in enumerate(optional):
        key = "," + json.dumps(_camel(field.name)) + ":"
        lines.append(f"    f{index} = value.{field.name}")
        parts.append(f"('' if f{index} is None else {key!r} + {_leaf_text(field.type)}(f{index}))")
    parts.append(repr("}"))
    lines.append(f"    return ''.join(({', '.join(parts)},))")
    source = "\n".join(lines) + "\n"
    code = compile(source, f"<workflow_hub JSON text of {cls.__name__}>", "exec")
    exec(
        code, _TEXT_NAMESPACE
    )  # the source is made above from attrs field names and wire keys only
    text: Callable[[Any], str] = _TEXT_NAMESPACE.pop("text")
    text.__qualname__ = text.__name__ = f"text_of_{cls.__name__}"
    _TEXT_NAMESPACE[f"_text_{cls.__name__}"] = text
    return text


for _cls in _CLASSES:
    # The annotations are strings until resolved (the decoding plans and encoders read them).
    attrs.resolve_types(_cls, globalns=vars(_values))


def _text_of() -> dict[type[Any], Callable[[Any], str]]:
    """Every class's text encoder, generated together on the first call (they call each other
    by name, so one generated alone could not run)."""
    with _MAKING:
        if not _TEXT_OF:
            encoders = {cls: _make_text_encoder(cls) for cls in _CLASSES}
            _TEXT_OF.update(encoders)
    return _TEXT_OF


# --- public functions --------------------------------------------------------------------------


def to_wire(value: object) -> dict[str, Any]:
    """The JSON object for a contract value: camelCase keys, discriminator, absent optionals omitted.

    The result holds only dicts, lists, strs, ints, floats and bools, ready for any JSON encoder.
    Anything that is not a contract value is a :class:`TypeError`, as with :func:`json.dumps`.
    """
    # Exact classes only: a subclass would have no hook of its own and could add fields the
    # format does not know.
    if type(value) not in _CLASS_SET:
        raise TypeError(f"{type(value).__name__} is not a workflow_hub contract value")
    return cast(dict[str, Any], _unstructure_converter().unstructure(value))


def _check_decodable(type_: object) -> None:
    if not (type_ in _CLASS_SET or _discriminated_union(type_) is not None):
        raise TypeError(f"{type_!r} is not a contract class or a union of them")


@overload
def from_wire(type_: type[_T], data: object) -> _T: ...
@overload
def from_wire(type_: types.UnionType, data: object) -> Any: ...
def from_wire(type_: object, data: object) -> Any:
    """Decode a JSON object (as :func:`json.loads` returns it) into a contract value.

    ``type_`` is a contract class or a union of them (``Frame``, ``WorkflowEvent``,
    ``LifecycleTarget``, ``GraphNode``, or ``Frame | WorkflowEvent`` for a stream that mixes
    both), resolved by the discriminator. Bad data raises
    :class:`~workflow_hub.ContractError` whose ``path`` is the JSON path in wire names, e.g.
    ``roots[2].activeExecutionCount``. Keys the format does not know are ignored (a newer host
    may add some); a missing or unknown discriminator, a missing required key, ``null`` and any
    value the constructor would refuse are errors. See ``docs/wire-format.md``.
    """
    _check_decodable(type_)
    return _structure(data, type_)


def dumps(value: object) -> str:
    """:func:`to_wire` as compact JSON text. Non-ASCII stays as is; encode the text as UTF-8.

    The text is exactly ``json.dumps(to_wire(value), ensure_ascii=False, separators=(",", ":"),
    allow_nan=False)``, written directly (see *JSON text* above).
    """
    text_of = (_TEXT_OF or _text_of()).get(type(value))
    if text_of is None:
        raise TypeError(f"{type(value).__name__} is not a workflow_hub contract value")
    return text_of(value)


def _reject_constant(name: str) -> object:
    raise ContractError("", f"malformed JSON: {name} is not a JSON number")


@overload
def loads(type_: type[_T], text: str | bytes | bytearray) -> _T: ...
@overload
def loads(type_: types.UnionType, text: str | bytes | bytearray) -> Any: ...
def loads(type_: object, text: str | bytes | bytearray) -> Any:
    """Parse JSON text and decode it with :func:`from_wire`.

    Text that is not JSON (RFC 8259: ``NaN`` and ``Infinity`` are not JSON) is a
    :class:`~workflow_hub.ContractError` with an empty path.
    """
    _check_decodable(type_)
    return _structure(parse_json(text), type_)


def parse_json(text: str | bytes | bytearray) -> Any:
    """JSON text as :func:`json.loads` returns it, or the :class:`ContractError` of :func:`loads`."""
    if not isinstance(text, str | bytes | bytearray):
        raise ContractError(
            "", f"expected JSON text (str, bytes or bytearray), got {type(text).__name__}"
        )
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ContractError:
        raise
    except (ValueError, RecursionError) as error:
        # ValueError covers JSONDecodeError, undecodable bytes and over-long integer literals.
        raise ContractError("", f"malformed JSON: {error}") from None
