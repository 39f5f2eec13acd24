"""Re-exported names say where users import them from.

A public module re-exports classes from private ones; tracebacks, reprs and docs should then say
``workflow_hub.X``, not ``workflow_hub._contract.X`` (trio and httpcore do the same). Renaming a
class's ``__module__`` has one catch: with ``from __future__ import annotations`` its field
annotations are strings, evaluated in the class's module, which the rename points elsewhere. So
an attrs class has its field types resolved first, while its own module is still its home.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, TypeVar

import attrs

__all__ = ["NoPublicConstructor", "claim"]

_T = TypeVar("_T")


class NoPublicConstructor(type):
    """A metaclass for handles the library hands out: ``Cls(...)`` raises ``TypeError``.

    A publisher, lease or stream built by hand would bypass what makes it safe (a publisher that
    skipped ``register_publisher()`` and its fencing, a lease on a queue the hub does not know).
    The library builds them with ``Cls._create(...)`` (trio's pattern for its own handles).
    """

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__} has no public constructor: "
            "the hub (or runner) hands them out"
        )

    def _create(cls: type[_T], *args: Any, **kwargs: Any) -> _T:
        return super().__call__(*args, **kwargs)  # type: ignore[misc,no-any-return]


def claim(module: str, namespace: Mapping[str, object], names: Iterable[str]) -> None:
    """Make every class among ``names`` that lives in a private module say it lives in ``module``.

    A class already claimed by another public module (its module is public) is left alone.
    """
    for name in names:
        value = namespace[name]
        if not isinstance(value, type):
            continue
        if not value.__module__.rpartition(".")[2].startswith("_"):
            continue
        if attrs.has(value):
            attrs.resolve_types(value)
        value.__module__ = module
