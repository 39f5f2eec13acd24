"""Re-exported names say where users import them from.

A public module re-exports classes from private ones; tracebacks, reprs and docs should then say
``workflow_hub.X``, not ``workflow_hub._contract.X`` (trio and httpcore do the same). Renaming a
class's ``__module__`` has one catch: with ``from __future__ import annotations`` its field
annotations are strings, evaluated in the class's module, which the rename points elsewhere. So
an attrs class has its field types resolved first, while its own module is still its home.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

__all__ = ["claim"]


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
