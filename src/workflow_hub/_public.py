"""The public surface: where re-exported names say they live, and handles users cannot build.

A public module re-exports classes and functions from private ones; tracebacks, reprs and docs
should then say ``workflow_hub.X``, not ``workflow_hub._contract.X`` (trio's
``fixup_module_metadata`` does the same). Renaming a class's ``__module__`` has one catch: with
``from __future__ import annotations`` its field annotations are strings, evaluated in the
class's module, which the rename points elsewhere. So an attrs class has its field types resolved
first, while its own module is still its home. (A function's annotations are evaluated in its
``__globals__``, which the rename does not touch.)
"""

from __future__ import annotations

# Nothing is imported at the top: the package root imports this module, and a one-shot command
# (``workflow-hub status``) that needs none of the contract should not pay for ``inspect``,
# ``typing`` or attrs. The functions import what they use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "NoPublicConstructor",
    "claim_root_names",
    "declare_root_names",
    "fixup_module_metadata",
]


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


def _private(module_name: str) -> bool:
    return module_name.split(".")[0] == "workflow_hub" and any(
        part.startswith("_") for part in module_name.split(".")
    )


def fixup_module_metadata(module_name: str, namespace: Mapping[str, object]) -> None:
    """Make each class and function in ``namespace["__all__"]`` that lives in a private module of
    this package say it lives in ``module_name``.

    Call it last in a public module, then delete the name (``del fixup_module_metadata``) so it
    does not become part of that module. A name already claimed by another public module (its
    module is public) is left alone: the first public module to export it is its home. The
    package root is the exception: what ``workflow_hub`` itself exports (the contract, the hub,
    the tracker) says ``workflow_hub``, whichever public module also has it.
    """
    import inspect

    import attrs

    claim_public = module_name == "workflow_hub"
    names = namespace["__all__"]
    assert isinstance(names, list | tuple)
    for name in names:
        value = namespace[name]
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue  # constants and type aliases have no module of their own to fix
        if not (_private(value.__module__) or claim_public):
            continue
        if isinstance(value, type) and attrs.has(value):
            attrs.resolve_types(value)
        value.__module__ = module_name


_root_names: set[str] = set()
"""What the package root exports (declared by it before any of its lazy modules loads)."""


def declare_root_names(names: list[str]) -> None:
    """The package root's ``__all__``: called once, first thing, by ``workflow_hub/__init__.py``."""
    _root_names.update(names)


def claim_root_names(namespace: Mapping[str, object]) -> None:
    """Make each class and function of ``namespace`` that the package root exports say
    ``workflow_hub``.

    The root loads its hub, tracker and thread-publisher names on first access (PEP 562), so a
    module defining or re-exporting them (``_core``, ``_threads``, ``tracker``) calls this at its
    end: the names then say ``workflow_hub`` however the module was first imported (through the
    root, or directly as ``workflow_hub.tracker``, or by another module of the package).
    """
    import inspect

    import attrs

    for name in sorted(_root_names.intersection(namespace)):
        value = namespace[name]
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if value.__module__.split(".")[0] != "workflow_hub":
            continue
        if isinstance(value, type) and attrs.has(value) and _private(value.__module__):
            attrs.resolve_types(value)
        value.__module__ = "workflow_hub"
