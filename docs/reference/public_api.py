"""The reference's one directive: ``.. public-module:: workflow_hub.x`` renders a public module.

A page renders what the module exports, read from its ``__all__`` when the site is built, so a
name added to an ``__all__`` appears without editing the page (tests/package/test_api_reference.py
checks that every public name and module is in the built reference).

Each exported object is documented in full once, on the page of the most specific public module
that exports it: the contract's values on ``workflow_hub.contract``'s page, ``RunTracker`` on
``workflow_hub.tracker``'s. The package root re-exports them for convenience; its page lists those
in a table that links to them, and its own names (the hub, the hooks) in full. A constant exported
by two submodules is shown on both pages.
"""

from __future__ import annotations

import enum
import functools
import importlib
import inspect
import pkgutil
import re
import sys
import types
import typing
from types import ModuleType
from typing import Any

import attrs
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import PycodeError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

from workflow_hub._public import NoPublicConstructor

ROOT = "workflow_hub"


def is_public(module_name: str) -> bool:
    return not any(part.startswith("_") for part in module_name.split("."))


@functools.cache
def public_module_names() -> list[str]:
    """Every module of the package with no ``_private`` part in its dotted name, sorted."""
    root = importlib.import_module(ROOT)
    found = [
        info.name
        for info in pkgutil.walk_packages(root.__path__, f"{ROOT}.")
        if is_public(info.name)
    ]
    return sorted([ROOT, *found])


@functools.cache
def exporters() -> dict[tuple[str, int], list[str]]:
    """Which public modules export each object under each name (by identity: two equal small
    numbers are one object, so the name is part of the key)."""
    found: dict[tuple[str, int], list[str]] = {}
    for name in public_module_names():
        module = importlib.import_module(name)
        for each in module.__all__:
            found.setdefault((each, id(getattr(module, each))), []).append(name)
    return found


def homes(value: object, exported_by: list[str]) -> list[str]:
    """The pages that document ``value`` in full: its exporters other than the root, if any."""
    return [name for name in exported_by if name != ROOT] or [ROOT]


def _is_routine(value: object) -> bool:
    return inspect.isfunction(value) or inspect.isbuiltin(value)


def entry(module: str, name: str, value: object) -> list[str]:
    """reStructuredText for one name documented in full."""
    target = f"{module}.{name}"
    if inspect.isclass(value):
        lines = [f".. autoclass:: {target}", "   :members:"]
        if issubclass(value, enum.Enum):
            lines.append("   :undoc-members:")
        if issubclass(value, BaseException):
            lines.append("   :show-inheritance:")
        return lines
    if _is_routine(value):
        return [f".. autofunction:: {target}"]
    return constant(module, name, value)


def constant(module: str, name: str, value: object) -> list[str]:
    """A constant or type alias: its value, and the docstring written under its assignment.

    The attribute docstring lives in the private module that defines the name (autodoc reads
    those only from the module it documents, which merely imports it), so it is looked up there.
    """
    lines = [f".. py:data:: {name}", f"   :module: {module}"]
    if shown := plain_value(value):
        lines.append(f"   :value: {shown}")
    lines.append("")
    lines += [f"   {line}" if line else "" for line in attribute_doc(name, value)]
    return lines


def plain_value(value: object) -> str | None:
    """The value as source text when it is short and says the same on every machine.

    A path, for one, would show where the site was built; an alias shows what it stands for.
    """
    if isinstance(value, bool | int | float | str) or value is None:
        return repr(value)
    if isinstance(value, tuple) and all(isinstance(each, str) for each in value):
        shown = repr(value)
        return shown if len(shown) <= 100 else None
    if isinstance(value, types.UnionType):
        return " | ".join(getattr(each, "__name__", repr(each)) for each in typing.get_args(value))
    return None


def attribute_doc(name: str, value: object) -> list[str]:
    """The docstring under ``name = ...`` in the package module that defines ``value``."""
    for module_name, module in sorted(sys.modules.items()):
        if module_name.split(".")[0] != ROOT or getattr(module, name, None) is not value:
            continue
        try:
            docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        except PycodeError:
            continue
        if ("", name) in docs:
            return list(docs["", name])
    return []


def summary(name: str, value: object) -> str:
    """The first paragraph of what documents ``value``, on one line."""
    if inspect.isclass(value) or _is_routine(value):
        text = vars(value).get("__doc__") if inspect.isclass(value) else value.__doc__
        lines = inspect.cleandoc(text or "").splitlines()
    else:
        lines = attribute_doc(name, value)
    first: list[str] = []
    for line in lines:
        if not line.strip():
            break
        first.append(line.strip())
    return " ".join(first)


class PublicModule(SphinxDirective):
    """``.. public-module:: dotted.name``: the module's docstring, then its ``__all__``."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module_name = self.arguments[0].strip()
        module: ModuleType = importlib.import_module(module_name)
        found = exporters()
        lines = [f".. automodule:: {module_name}", ""]
        elsewhere: list[str] = []
        for name in module.__all__:
            value = getattr(module, name)
            pages = homes(value, found[name, id(value)])
            if module_name in pages:
                lines += [*entry(module_name, name, value), ""]
            else:
                elsewhere += [
                    f"   * - :py:obj:`~{pages[0]}.{name}`",
                    f"     - {summary(name, value)}",
                ]
        if elsewhere:
            # The table comes first: a reader of the package's page sees everything it exports.
            lines[2:2] = [
                ".. rubric:: Re-exported here, documented with their module",
                "",
                ".. list-table::",
                "   :widths: 1 3",
                "",
                *elsewhere,
                "",
            ]
        if not module.__all__:
            lines += ["This module exports no names itself; see its submodules.", ""]
        self.env.note_dependency(inspect.getfile(module))
        return self.parse_text_to_nodes("\n".join(lines))


def _reexported_aliases(app: Sphinx, env: Any) -> None:
    """Register ``workflow_hub.X`` for the root's re-exports that autodoc gives no name to.

    autodoc records a class or function documented as ``workflow_hub.contract.Cursor`` under its
    canonical name too (``workflow_hub.Cursor``, its ``__module__``); a type alias or constant
    has no ``__module__``, so its root name is recorded here, pointing at the same entry.
    """
    domain = env.get_domain("py")
    root = importlib.import_module(ROOT)
    found = exporters()
    for name in root.__all__:
        value = getattr(root, name)
        pages = homes(value, found[name, id(value)])
        full = f"{pages[0]}.{name}"
        alias = f"{ROOT}.{name}"
        if ROOT in pages or alias in domain.objects or full not in domain.objects:
            continue
        documented = domain.objects[full]
        domain.objects[alias] = documented._replace(aliased=True)


@functools.cache
def shared_names() -> frozenset[str]:
    """Names that public modules export for different objects (``HookRunner``: trio's, asyncio's)."""
    seen: dict[str, set[int]] = {}
    for module_name in public_module_names():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            seen.setdefault(name, set()).add(id(getattr(module, name)))
    return frozenset(name for name, values in seen.items() if len(values) > 1)


_ATTRS_DEFAULT = re.compile(r"attr_dict\['(\w+)'\]\.default")


def attrs_defaults(cls: type, signature: str) -> str:
    """An attrs class's defaults as values: ``graph=None``, not ``graph=attr_dict['graph'].default``.

    attrs writes its ``__init__`` with defaults read from a table, and autodoc, which shows the
    defaults as written in the source, shows that lookup; a default made afresh by a factory it
    shows as ``NOTHING``, which here becomes the call that makes it (``received=list()``).
    """
    fields = attrs.fields_dict(cls)
    signature = _ATTRS_DEFAULT.sub(lambda match: repr(fields[match.group(1)].default), signature)
    made = iter(
        f"{getattr(getattr(field.default, 'factory', None), '__name__', 'factory')}()"
        for field in fields.values()
        if field.init and hasattr(field.default, "takes_self")  # an attrs.Factory
    )
    return re.sub(r"\bNOTHING\b", lambda _match: next(made, "NOTHING"), signature)


def _qualify_root_names(
    app: Sphinx,
    what: str,
    name: str,
    obj: object,
    options: object,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None]:
    """Say ``workflow_hub.X`` for a bare, shared ``X`` in a signature's string annotations.

    An annotation that names a class imported only for type checkers cannot be evaluated, so
    autodoc shows it as written: ``runner: HookRunner``. On the page of a module that exports
    no ``HookRunner`` of its own, that bare name would match both the package's runner and
    asyncio's; the package root's is the one such modules import. (Sphinx takes the first
    answer of this event's handlers, so an attrs class's defaults are written here too.)
    """
    if signature and inspect.isclass(obj) and attrs.has(obj):
        signature = attrs_defaults(obj, signature)
    module = max(
        (each for each in public_module_names() if name.startswith(f"{each}.")),
        key=len,
        default=ROOT,
    )
    own = set(importlib.import_module(module).__all__)
    root = set(importlib.import_module(ROOT).__all__)
    names = sorted((shared_names() & root) - own)
    if not names:
        return signature, return_annotation
    bare = re.compile(r"(?<![\w.])(" + "|".join(names) + r")\b")

    def qualify(text: str | None) -> str | None:
        return None if text is None else bare.sub(rf"{ROOT}.\1", text)

    return qualify(signature), qualify(return_annotation)


def _no_signature_for_handles(
    app: Sphinx,
    what: str,
    name: str,
    obj: object,
    options: object,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None] | None:
    """A handle the library hands out has no constructor to show (its metaclass refuses one),
    and neither has a protocol (``FleetEngine``, ``SchedulerFacts``: implemented, not built)."""
    if what == "class" and (
        isinstance(obj, NoPublicConstructor) or getattr(obj, "_is_protocol", False)
    ):
        return "", return_annotation
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("public-module", PublicModule)
    app.connect("autodoc-process-signature", _no_signature_for_handles)
    app.connect("autodoc-process-signature", _qualify_root_names)
    app.connect("env-check-consistency", _reexported_aliases)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
