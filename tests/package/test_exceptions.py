"""One exception tree: every exception class of the package is a ``WorkflowHubError`` (issue 35).

A user catches "any error of this library" with ``except workflow_hub.WorkflowHubError``. Each
class keeps the builtin base it had before the tree existed, so code that catches those (a
``ContractError`` as a ``ValueError``, C1) goes on catching. The walk imports every module of
the package and looks at every subclass of ``BaseException`` the package defines, so a new
exception class anywhere fails here until it joins the tree. docs/exceptions.md draws the tree
and names every public class.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import workflow_hub
from workflow_hub import ContractError, Cursor, WorkflowHubError

ROOT = Path(__file__).resolve().parents[2]

# Exception classes of the package that may stay outside the tree, each with its reason. None
# today; adding one is a decision for docs/decisions.md.
OUTSIDE_THE_TREE: dict[str, str] = {}

# Each class's builtin base from before the tree: still there, so nothing stops catching.
BUILTIN_BASES: dict[str, type[BaseException]] = {
    "workflow_hub.ContractError": ValueError,
    "workflow_hub.sync.HostClosedError": RuntimeError,
    "workflow_hub.asyncio._guest.CallbackCancelled": RuntimeError,
    "workflow_hub.redis._connection.RoundTripTimeout": TimeoutError,
    "workflow_hub.testing._adapter.ConsumerFailure": RuntimeError,
    "workflow_hub.testing.conformance.ConformanceFailure": AssertionError,
}


def _every_module() -> list[str]:
    names = [
        info.name
        for info in pkgutil.walk_packages(workflow_hub.__path__, "workflow_hub.")
        if not info.name.endswith("__main__")  # runs the command line when imported
    ]
    for name in names:
        importlib.import_module(name)
    return names


def _subclasses(cls: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    waiting = [cls]
    while waiting:
        for sub in waiting.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                waiting.append(sub)
    return found


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in the package, by ``module.qualname``."""
    _every_module()
    return {
        f"{cls.__module__}.{cls.__qualname__}": cls
        for cls in _subclasses(BaseException)
        if cls.__module__.split(".")[0] == "workflow_hub"
    }


def test_the_walk_finds_the_exceptions_of_every_layer() -> None:
    """The walk cannot pass by finding nothing: it sees the contract's, a host's, an
    integration's and the command line's exceptions."""
    found = package_exceptions()
    assert {
        "workflow_hub.WorkflowHubError",
        "workflow_hub.ContractError",
        "workflow_hub.sync.HostClosedError",
        "workflow_hub.remote.RemoteAuthError",
        "workflow_hub.testing.conformance.JsonLinesError",
        "workflow_hub._cli._errors.UsageError",
    } <= set(found)


def test_every_exception_of_the_package_is_a_workflow_hub_error() -> None:
    outside = sorted(
        name
        for name, cls in package_exceptions().items()
        if not issubclass(cls, WorkflowHubError) and name not in OUTSIDE_THE_TREE
    )
    assert outside == []


def test_the_allowed_outsiders_exist_and_are_outside() -> None:
    found = package_exceptions()
    for name in OUTSIDE_THE_TREE:
        assert name in found, f"{name} is allowed outside the tree but no longer exists"
        assert not issubclass(found[name], WorkflowHubError), f"{name} has joined the tree"


@pytest.mark.parametrize(("name", "builtin"), sorted(BUILTIN_BASES.items()))
def test_each_class_keeps_its_builtin_base(name: str, builtin: type[BaseException]) -> None:
    cls = package_exceptions()[name]
    assert issubclass(cls, WorkflowHubError)
    assert issubclass(cls, builtin)


def test_the_base_is_an_exception_of_its_own() -> None:
    """Not a ``ValueError`` or ``RuntimeError`` itself: the subclasses choose their builtin."""
    assert WorkflowHubError.__mro__ == (WorkflowHubError, Exception, BaseException, object)
    assert "WorkflowHubError" in workflow_hub.__all__
    assert WorkflowHubError.__module__ == "workflow_hub"


def test_a_refused_value_is_caught_as_the_base_and_as_a_value_error() -> None:
    """C1: a bad value raises ContractError, which both ``except`` clauses catch."""
    with pytest.raises(WorkflowHubError) as caught:
        Cursor(epoch="e", revision=-1)
    assert isinstance(caught.value, ContractError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.path == "revision"


def test_the_base_costs_no_import() -> None:
    """``from workflow_hub import WorkflowHubError`` loads neither the contract nor trio: the
    one-shot ``status`` command subclasses it on its fast path."""
    program = (
        "import sys\n"
        "from workflow_hub import WorkflowHubError\n"
        "loaded = sorted(m for m in ('attr', 'attrs', 'trio', 'typing', "
        "'workflow_hub._contract', 'workflow_hub._core') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
        "assert WorkflowHubError.__module__ == 'workflow_hub'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_exceptions_page_names_every_public_exception() -> None:
    """docs/exceptions.md lists each exception a public module exports, under its public name."""
    page = (ROOT / "docs" / "exceptions.md").read_text(encoding="utf-8")
    public = sorted(
        name
        for name, cls in package_exceptions().items()
        if not any(part.startswith("_") for part in name.split("."))
    )
    assert public, "no public exception found"
    missing = [name for name in public if f"`{name}`" not in page]
    assert missing == []
