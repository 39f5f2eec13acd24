"""The package root loads every name on first access (issue 24, PEP 562).

``import workflow_hub`` imports nothing heavy: the contract's values (attrs) load when one of
them is first used, and the names that need trio (the hub, its handles, the tracker, the thread
publisher; ``reporting.run_reporter``) likewise; all say ``workflow_hub`` however they were
reached. ``workflow-hub status URL`` loads neither trio nor any transport. Each check runs in a
fresh interpreter, where nothing is imported yet.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import workflow_hub


def _run(program: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_importing_the_package_does_not_load_trio() -> None:
    _run(
        "import sys, workflow_hub\n"
        "assert 'trio' not in sys.modules\n"
        "assert 'workflow_hub._core' not in sys.modules\n"
        "workflow_hub.RootActivity, workflow_hub.ContractError\n"
        "assert 'trio' not in sys.modules\n"
    )


def test_importing_the_package_loads_neither_attrs_nor_the_contract() -> None:
    _run(
        "import sys, workflow_hub\n"
        "loaded = sorted(m for m in ('attr', 'attrs', 'typing', 'inspect', "
        "'workflow_hub._contract', 'workflow_hub.contract') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
        "assert workflow_hub.RootActivity.__module__ == 'workflow_hub'\n"
        "assert 'workflow_hub._contract' in sys.modules\n"
    )


def test_the_roots_contract_names_are_the_contracts() -> None:
    """The root writes the contract's names out (to load them lazily); they are exactly its list."""
    contract_names = [
        name
        for name, home in workflow_hub._LAZY.items()  # type: ignore[attr-defined]
        if home == "contract"
    ]
    assert contract_names == list(workflow_hub.contract.__all__)


@pytest.mark.parametrize(
    "first",
    [
        "import workflow_hub.reporting",
        "import workflow_hub.wire",
        "from workflow_hub.contract import RootActivity",
        "from workflow_hub.testing import strategies",
    ],
)
def test_contract_names_say_the_package_whichever_module_loads_them_first(first: str) -> None:
    out = _run(
        f"{first}\n"
        "import workflow_hub._contract as contract\n"
        "print(sorted({contract.RootActivity.__module__, contract.State.__module__, "
        "contract.ContractError.__module__, contract.SnapshotFrame.__module__}))\n"
    )
    assert out.split() == ["['workflow_hub']"]


def test_status_loads_only_values_wire_and_aggregate() -> None:
    """What one ``status`` refresh imports: no trio, no hub, no httpx, no rich, no server."""
    _run(
        "import sys\n"
        "import workflow_hub._cli, workflow_hub._cli._status, workflow_hub.wire\n"
        "from workflow_hub.reporting import aggregate\n"
        "loaded = sorted(m for m in ('trio', 'workflow_hub._core', 'workflow_hub.tracker', "
        "'httpx', 'rich', 'starlette', 'coredis', 'workflow_hub.reporting._reporter') "
        "if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )


@pytest.mark.parametrize(
    "name",
    sorted(set(workflow_hub._LAZY) - set(workflow_hub.contract.__all__)),  # type: ignore[attr-defined]
)
def test_each_lazy_name_imports_from_the_package(name: str) -> None:
    """``from workflow_hub import X`` works for every name, in a fresh interpreter, and a class or
    function says ``workflow_hub`` (constants and type aliases have no module of their own)."""
    _run(
        "import inspect, sys\n"
        f"from workflow_hub import {name} as value\n"
        "import workflow_hub\n"
        f"assert workflow_hub.{name} is value\n"
        "if inspect.isclass(value) or inspect.isfunction(value):\n"
        "    assert value.__module__ == 'workflow_hub', value.__module__\n"
        "assert 'trio' in sys.modules\n"
    )


@pytest.mark.parametrize(
    "first",
    [
        "from workflow_hub.tracker import RunTracker, ThreadPublisher, run_heartbeats",
        "import workflow_hub.metrics",
        "import workflow_hub.server",
        "from workflow_hub.reporting import run_reporter",
        "from workflow_hub import *",
    ],
)
def test_names_say_the_package_whichever_module_loads_them_first(first: str) -> None:
    """A class reached through ``workflow_hub.tracker`` (or loaded by another module) before the
    root was asked for it still says ``workflow_hub``: the module's own claim, not access order."""
    out = _run(
        f"{first}\n"
        "import workflow_hub._core as core, workflow_hub._threads as threads\n"
        "import workflow_hub.tracker as tracker\n"
        "found = [core.WorkflowActivityHub, core.HookRunner, core.FrameStream, core.open_hub,\n"
        "         threads.ThreadPublisher, tracker.RunTracker, tracker.run_heartbeats]\n"
        "print(sorted({value.__module__ for value in found}))\n"
        "import workflow_hub.reporting as reporting\n"
        "print(reporting.run_reporter.__module__)\n"
    )
    assert out.split() == ["['workflow_hub']", "workflow_hub.reporting"]


def test_dir_and_star_import_see_every_name() -> None:
    _run(
        "import workflow_hub\n"
        "assert set(workflow_hub.__all__) <= set(dir(workflow_hub))\n"
        "import workflow_hub.reporting as reporting\n"
        "assert set(reporting.__all__) <= set(dir(reporting))\n"
        "namespace = {}\nexec('from workflow_hub import *', namespace)\n"
        "assert set(workflow_hub.__all__) <= set(namespace)\n"
    )


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        workflow_hub.Nope  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError):
        exec("from workflow_hub import Nope", {})
