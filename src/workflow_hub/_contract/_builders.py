"""Builders of contract values that validate nothing, for hot paths: the one generator of them.

Hot paths build values from values already valid (the hub's own state, fields of checked contract
objects). Running the attrs constructor again (every converter) costs more than the rest of such
a path, and a generic loop of ``object.__setattr__`` over a keyword dict three to five times what
the stores themselves cost (issue 29). A builder here is a small function generated once from a
class's attrs fields: one ``object.__new__`` and one store per field, through the slot's own
descriptor. It validates nothing, no ``__attrs_post_init__`` check runs either; the values it
makes are equal to, and of the same type as, what the validating constructor makes from the same
fields (``tests/contract/test_fast_paths.py``, ``tests/core/test_builders.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

__all__ = ["generate_builder", "slot_stores", "unchecked", "unchecked_builder"]

_T = TypeVar("_T")


def generate_builder(
    cls: type[_T], parameters: str, values: Mapping[str, str], *, name: str = "build"
) -> Callable[..., _T]:
    """A function of ``parameters`` building ``cls`` with each field set to its expression.

    ``values`` must name every attrs field of ``cls`` exactly once (a class that gained a field
    makes this raise ``TypeError``, so a builder cannot drift from its class silently); ``cls``
    must be slotted, with no ``__attrs_post_init__`` check the caller would be skipping silently
    (callers that build such a class check its condition themselves and say so). The function is
    named ``<name>_<class>``.
    """
    names = [field.name for field in attrs.fields(cls)]  # type: ignore[arg-type]
    if sorted(names) != sorted(values):
        raise TypeError(f"{cls.__name__} has fields {names}, the builder sets {sorted(values)}")
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"def build({parameters}):", "    instance = _new(_cls)"]
    for index, store in enumerate(slot_stores(cls)):
        namespace[f"_set{index}"] = store
        lines.append(f"    _set{index}(instance, {values[names[index]]})")
    lines.append("    return instance")
    code = compile("\n".join(lines) + "\n", f"<workflow_hub {name} of {cls.__name__}>", "exec")
    exec(code, namespace)  # the source is made above from attrs field names only
    build: Callable[..., _T] = namespace["build"]
    build.__qualname__ = build.__name__ = f"{name}_{cls.__name__}"
    return build


def slot_stores(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot store of each attrs field of ``cls``, in field order.

    What a builder calls; and what a path that builds a ``cls`` written out calls (``object.__new__``
    and one store per field, without the builder's own call). Such a path unpacks this tuple into
    one name per field, so a class that gains a field fails at import; it is tested like a builder.
    """
    # Every contract class is slotted: the class attribute is the slot's member descriptor.
    return tuple(cls.__dict__[field.name].__set__ for field in attrs.fields(cls))


_BUILDERS: dict[type[Any], Callable[..., Any]] = {}


def unchecked_builder(cls: type[_T]) -> Callable[..., _T]:
    """The function :func:`unchecked` calls for ``cls``: take it once and call it with every field
    as a keyword argument, to skip the class look-up on a hot path. Validates nothing."""
    build = _BUILDERS.get(cls)
    if build is None:
        names = [field.name for field in attrs.fields(cls)]  # type: ignore[arg-type]
        parameters = f"*, {', '.join(names)}" if names else ""
        values = {name: name for name in names}
        build = _BUILDERS[cls] = generate_builder(cls, parameters, values, name="unchecked")
    return build


def unchecked(cls: type[_T], **fields: object) -> _T:
    """Build ``cls`` **without validating anything**: no converter runs (C1 holds only because the
    caller guarantees it).

    For hot paths only, where every value comes from a checked contract object or the hub's own
    state: every field must be given (a missing or unknown one is a :class:`TypeError`), already
    of its declared type. No ``__attrs_post_init__`` check runs either.
    """
    return unchecked_builder(cls)(**fields)
