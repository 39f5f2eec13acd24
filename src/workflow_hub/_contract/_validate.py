"""Field converters that turn bad input into a :class:`ContractError` naming the field.

Every contract field is declared with one of these, as an ``attrs.Converter`` that receives the
field: the error can then name it without the class repeating itself. Converters *normalise* (a
list becomes a tuple, a wire string becomes its enum member) and *check*; they never guess (a bool
is not a count, ``"1"`` is not a number).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Any, TypeVar

import attrs

from ._errors import ContractError

__all__ = [
    "DETAIL_MAX",
    "FAILURE_MESSAGE_MAX",
    "FAILURE_TYPE_MAX",
    "LABELS_MAX",
    "LABEL_KEY_MAX",
    "LABEL_VALUE_MAX",
    "LONGEST",
    "bool_field",
    "check_detail",
    "check_labels",
    "count_field",
    "detail_field",
    "enum_field",
    "instance_field",
    "labels_field",
    "number_field",
    "str_field",
    "text_field",
    "tuple_field",
]

_T = TypeVar("_T")
_E = TypeVar("_E", bound=StrEnum)

# A check takes the value and the path to name in an error, and returns the normalised value.
Check = Callable[[Any, str], _T]


def _type_name(value: object) -> str:
    return type(value).__name__


def check_str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ContractError(path, f"expected a string, got {_type_name(value)}")
    if not value.isascii():
        # The wire format is UTF-8: a lone surrogate (from "\\ud800" in JSON, or a str built
        # in Python) has no UTF-8 form, and would only fail later, when the frame is sent.
        try:
            value.encode()
        except UnicodeEncodeError as error:
            raise ContractError(
                path,
                f"not valid Unicode text: lone surrogate {value[error.start]!r} at index "
                f"{error.start} has no UTF-8 form",
            ) from None
    return value


def text_check(longest: int) -> Check[str]:
    """A non-empty string of at most ``longest`` characters (a message, a type name): short text
    that a view shows whole, never a dump."""

    def check(value: object, path: str) -> str:
        text = check_str(value, path)
        if not text:
            raise ContractError(path, "expected a non-empty string")
        if len(text) > longest:
            raise ContractError(path, f"expected at most {longest} characters, got {len(text)}")
        return text

    _ACCEPTED_BY[check] = "str"
    return check


def check_count(value: object, path: str) -> int:
    # bool is an int subclass; a count of True is a bug, not a 1.
    if type(value) is not int:
        if isinstance(value, int) and not isinstance(value, bool):
            return check_count(int(value), path)
        raise ContractError(path, f"expected an int >= 0, got {_type_name(value)}")
    if value < 0:
        raise ContractError(path, f"expected an int >= 0, got {value}")
    return value


def check_bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise ContractError(path, f"expected a bool, got {_type_name(value)}")
    return value


def check_number(value: object, path: str) -> int | float:
    # Kept exactly as given: an int stays an int, a float stays a float.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ContractError(path, f"expected a finite int or float, got {_type_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ContractError(path, f"expected a finite number, got {value}")
    return value


def check_positive_number(value: object, path: str) -> int | float:
    number = check_number(value, path)
    if number <= 0:
        raise ContractError(path, f"expected a number > 0, got {number}")
    return number


# What a field's converter accepts, as a type expression in the contract module's namespace: it
# is recorded in the attrs field's ``metadata`` under this key, and tools/contract_inits.py
# writes each class's type-checking ``__init__`` from it.
ACCEPTS = "workflow_hub.accepts"

# The type each check accepts, for the checks that fields are built from.
_ACCEPTED_BY: dict[Callable[..., Any], str] = {
    check_str: "str",
    check_count: "int",
    check_bool: "bool",
}


FAILURE_MESSAGE_MAX = 500
"""The longest failure message (C3): a line a view shows whole, never a traceback."""
FAILURE_TYPE_MAX = 200
"""The longest failure type name (a qualified exception class name)."""
LABELS_MAX = 16
"""At most this many labels on a root (C3: a small map)."""
LABEL_KEY_MAX = 63
"""A label key: a letter, then letters, digits, ``_ . - /``; at most this many characters."""
LABEL_VALUE_MAX = 256
"""A label value: printable text, at most this many characters."""

DETAIL_MAX = 200
"""The longest ``detail`` of a non-ready snapshot (C3): why the source is unknown, in one line a
view shows beside "unknown" (``broker unreachable: ConnectionError: …``)."""

_LABEL_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")


def check_label(key: object, value: object, path: str) -> None:
    """One label of a root: the error names the key (C3)."""
    if not isinstance(key, str) or not _LABEL_KEY.fullmatch(key) or len(key) > LABEL_KEY_MAX:
        raise ContractError(
            path,
            f"label key {key!r}: expected a letter, then letters, digits, '_', '.', '-' or '/', "
            f"at most {LABEL_KEY_MAX} characters",
        )
    if not isinstance(value, str):
        raise ContractError(path, f"label {key!r}: expected a string, got {_type_name(value)}")
    check_str(value, path)
    if not value or len(value) > LABEL_VALUE_MAX or not value.isprintable():
        raise ContractError(
            path,
            f"label {key!r}: expected 1 to {LABEL_VALUE_MAX} printable characters, got "
            f"{value[:40]!r}{'…' if len(value) > 40 else ''}",
        )


def enum_check(enum: type[_E]) -> Check[_E]:
    allowed = ", ".join(member.value for member in enum)
    by_value: dict[str, _E] = {member.value: member for member in enum}

    def check(value: object, path: str) -> _E:
        if isinstance(value, str):
            member = by_value.get(value)
            if member is not None:
                return member
            raise ContractError(path, f"unknown value {value!r}; expected one of {allowed}")
        raise ContractError(path, f"expected one of {allowed}, got {_type_name(value)}")

    return check


def instance_check(cls: type[_T] | tuple[type[Any], ...]) -> Check[_T]:
    classes = cls if isinstance(cls, tuple) else (cls,)
    names = " or ".join(c.__name__ for c in classes)

    def check(value: object, path: str) -> _T:
        if not isinstance(value, cls):
            raise ContractError(path, f"expected {names}, got {_type_name(value)}")
        return value

    _ACCEPTED_BY[check] = " | ".join(c.__name__ for c in classes)
    return check


def tuple_check(item: Check[_T]) -> Check[tuple[_T, ...]]:
    def check(value: object, path: str) -> tuple[_T, ...]:
        if type(value) is tuple or type(value) is list:
            if not value:
                return ()
        elif isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            raise ContractError(path, f"expected a sequence, got {_type_name(value)}")
        items = tuple(value)
        try:
            return tuple([item(element, path) for element in items])
        except ContractError:
            pass
        # Checks are pure: run them again, naming each element, so the error names the bad one.
        # (Formatting that name for every element cost more than checking the element.)
        return tuple(item(element, f"{path}[{index}]") for index, element in enumerate(items))

    return check


def optional(check: Check[_T]) -> Check[_T | None]:
    def optional_check(value: object, path: str) -> _T | None:
        return None if value is None else check(value, path)

    return optional_check


def _converter(check: Check[Any]) -> attrs.Converter[Any, Any]:
    return attrs.Converter(lambda value, field: check(value, field.name), takes_field=True)


def _field(check: Check[Any], accepts: str, *, optional_: bool) -> Any:
    if optional_:
        return attrs.field(
            default=None,
            converter=_converter(optional(check)),
            metadata={ACCEPTS: f"{accepts} | None"},
        )
    return attrs.field(converter=_converter(check), metadata={ACCEPTS: accepts})


def str_field(*, optional: bool = False) -> Any:
    return _field(check_str, "str", optional_=optional)


def count_field(*, optional: bool = False) -> Any:
    return _field(check_count, "int", optional_=optional)


def bool_field() -> Any:
    return _field(check_bool, "bool", optional_=False)


def number_field(*, positive: bool = False) -> Any:
    check = check_positive_number if positive else check_number
    return _field(check, "int | float", optional_=False)


def enum_field(enum: type[StrEnum], *, optional: bool = False) -> Any:
    # A wire string is accepted for its member (``status="running"``).
    return _field(enum_check(enum), f"{enum.__name__} | str", optional_=optional)


def instance_field(cls: type[Any] | tuple[type[Any], ...], *, optional: bool = False) -> Any:
    check: Check[Any] = instance_check(cls)
    return _field(check, _ACCEPTED_BY[check], optional_=optional)


def tuple_field(item: Check[Any], *, optional: bool = False) -> Any:
    # Any iterable but a string, bytes or a mapping is read into a tuple.
    return _field(tuple_check(item), f"Iterable[{_ACCEPTED_BY[item]}]", optional_=optional)


LONGEST = "workflow_hub.longest"
"""The metadata key of a text field's longest length (the JSON Schema's ``maxLength``)."""


def text_field(longest: int, *, optional: bool = False) -> Any:
    field = _field(text_check(longest), "str", optional_=optional)
    field.metadata[LONGEST] = longest
    return field


def check_labels(value: object, path: str) -> dict[str, str]:
    """A root's labels as a plain dict, every key and value checked (C3)."""
    if not isinstance(value, Mapping):
        raise ContractError(path, f"expected a mapping of str to str, got {_type_name(value)}")
    if len(value) > LABELS_MAX:
        raise ContractError(path, f"expected at most {LABELS_MAX} labels, got {len(value)}")
    for key, item in value.items():
        check_label(key, item, path)
    return dict(value)


def check_detail(value: object, path: str) -> str:
    """Why a source is unknown (C3): 1 to :data:`DETAIL_MAX` printable characters, one line."""
    text = check_str(value, path)
    if not text or len(text) > DETAIL_MAX or not text.isprintable():
        raise ContractError(
            path,
            f"expected 1 to {DETAIL_MAX} printable characters (one line), got "
            f"{text[:40]!r}{'…' if len(text) > 40 else ''}",
        )
    return text


_ACCEPTED_BY[check_detail] = "str"


def detail_field() -> Any:
    """A non-ready snapshot's optional ``detail`` (C3)."""
    field = _field(check_detail, "str", optional_=True)
    field.metadata[LONGEST] = DETAIL_MAX
    return field


def labels_field(cls: type[Mapping[str, str]]) -> Any:
    """A root's labels: any mapping of str to str, kept as a ``cls`` (which checks it); an empty
    mapping is ``None`` (absent, omitted on the wire), so a root without labels has one form."""

    def check(value: object, path: str) -> Any:
        if value is None or isinstance(value, cls):
            return value or None
        if isinstance(value, Mapping) and not value:
            return None
        return cls(value)  # type: ignore[call-arg]  # it checks every key and value

    return attrs.field(
        default=None,
        converter=_converter(check),
        metadata={ACCEPTS: "Mapping[str, str] | None"},
    )
