"""The public surface is deliberate: one test over every public module (issue 13.6).

A public module is any module of the package with no ``_private`` part in its dotted name. Each
has an ``__all__``; every class and function it exports says, in ``__module__``, a public module it
can be imported from; each is exported by one public module (plus, as a convenience, the package
itself); and no internal helper is reachable under a public-looking name. Modelled on trio's
``test_exports.py``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import pkgutil
import subprocess
import sys
from collections import defaultdict
from types import ModuleType

import pytest

import workflow_hub


def _is_public(module_name: str) -> bool:
    return not any(part.startswith("_") for part in module_name.split("."))


def public_modules() -> list[ModuleType]:
    names = ["workflow_hub"] + [
        info.name
        for info in pkgutil.walk_packages(workflow_hub.__path__, "workflow_hub.")
        if _is_public(info.name)
    ]
    return [importlib.import_module(name) for name in sorted(names)]


PUBLIC_MODULES = public_modules()


def _ours(value: object) -> bool:
    """A class or function defined in this package."""
    if not (inspect.isclass(value) or inspect.isfunction(value)):
        return False
    return getattr(value, "__module__", "").split(".")[0] == "workflow_hub"


def exporters() -> dict[int, tuple[object, list[str]]]:
    """Every class and function of ours that a public module exports, and which modules do."""
    found: dict[int, tuple[object, list[str]]] = {}
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if _ours(value):
                found.setdefault(id(value), (value, []))[1].append(module.__name__)
    return found


def test_the_public_modules_are_found() -> None:
    names = {module.__name__ for module in PUBLIC_MODULES}
    assert {"workflow_hub", "workflow_hub.metrics", "workflow_hub.reporting"} <= names
    assert not any(not _is_public(name) for name in names)


@pytest.mark.parametrize("module", PUBLIC_MODULES, ids=lambda module: module.__name__)
def test_every_public_module_lists_its_names_once(module: ModuleType) -> None:
    exported = module.__all__
    assert len(exported) == len(set(exported))
    for name in exported:
        assert not name.startswith("_"), name
        assert hasattr(module, name), name


@pytest.mark.parametrize("module", PUBLIC_MODULES, ids=lambda module: module.__name__)
def test_exported_classes_and_functions_say_a_public_module(module: ModuleType) -> None:
    """``__module__`` is where a user imports it from: tracebacks, reprs and docs say so."""
    for name in module.__all__:
        value = getattr(module, name)
        if not _ours(value):
            continue
        home = value.__module__
        assert _is_public(home), f"{module.__name__}.{name} says it lives in {home}"
        assert getattr(importlib.import_module(home), value.__name__, None) is value, name


def test_every_public_class_and_function_is_exported_by_one_module() -> None:
    """One home each; the package root may re-export a name as well, for convenience."""
    twice = {
        getattr(value, "__qualname__", repr(value)): modules
        for value, modules in exporters().values()
        if len(set(modules) - {"workflow_hub"}) > 1
    }
    assert twice == {}


@pytest.mark.parametrize("module", PUBLIC_MODULES, ids=lambda module: module.__name__)
def test_no_internal_helper_leaks_under_a_public_name(module: ModuleType) -> None:
    """A public-looking attribute that is ours and exported by no public module is a leak."""
    exported = exporters()
    by_module: dict[str, list[str]] = defaultdict(list)
    for name in dir(module):
        if name.startswith("_") or name in module.__all__:
            continue
        value = getattr(module, name)
        if _ours(value) and id(value) not in exported:
            by_module[module.__name__].append(name)
    assert dict(by_module) == {}


def test_the_version_is_the_installed_distributions_and_costs_no_import() -> None:
    """``__version__`` comes from the installed metadata, read when asked for (issue 21)."""
    assert workflow_hub.__version__ == importlib.metadata.version("workflow-hub")
    assert "__version__" not in workflow_hub.__all__
    program = (
        "import sys, workflow_hub\n"
        "assert 'importlib.metadata' not in sys.modules, 'imported on import'\n"
        "print(workflow_hub.__version__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == workflow_hub.__version__
