"""Typed users see the constructors that run (issue 12): mypy accepts wire strings for enum fields
and any iterable for tuples, and knows which fields are required.

Each contract class declares its real ``__init__`` under ``TYPE_CHECKING`` (see ``_contract``),
generated from the attrs fields by tools/contract_inits.py (issue 21); the first tests hold the
file to its regeneration, the others run mypy on a user program.
"""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from workflow_hub._contract import _values as _contract

TOOL = Path(__file__).parents[2] / "tools" / "contract_inits.py"


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("contract_inits", TOOL)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool()


def test_the_declared_inits_are_their_regeneration(tool: ModuleType) -> None:
    """Same names, order, defaults and accepted types as the attrs fields: nothing hand-written."""
    source = inspect.getsource(_contract)
    assert tool.regenerate(source, tool.value_classes()) == source


def test_a_drifted_declaration_is_rewritten_and_check_fails(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A field dropped from a declaration (or a class without one) comes back; --check says so."""
    source = inspect.getsource(_contract)
    drifted = source.replace("            revision: int,\n", "", 1)
    assert drifted != source
    assert tool.regenerate(drifted, tool.value_classes()) == source
    copy = tmp_path / "_contract.py"
    copy.write_text(drifted)
    monkeypatch.setattr(tool, "module_path", lambda: copy)
    assert tool.main(["--check"]) == 1
    assert copy.read_text() == drifted
    assert tool.main([]) == 0
    assert copy.read_text() == source
    assert tool.main(["--check"]) == 0


PLAIN_STRINGS = """
from workflow_hub import (
    Cursor, LifecycleInput, RootActivity, RootGraph, RunTarget, SnapshotFrame, StageNode, State,
)

stage = StageNode(
    id="run-1:plan", run_id="run-1", node_id="plan", name="plan", parent_ids=["run-0:start"],
    depth=0, status="running",
)
root = RootActivity(
    root_run_id="root-1", owner_session_id="session-1", state="working", reason="executing",
    active_execution_count=1, actionable_block_count=0, needs_attention=False,
    graph=RootGraph(nodes=[stage]),
)
frame = SnapshotFrame(cursor=Cursor(epoch="e", revision=1), availability="ready", roots=[root])
event = LifecycleInput(
    event_id="evt-1", run_id="run-1", root_run_id="root-1", owner_session_id="session-1",
    occurred_at=1_700_000_000_000, observed_at=1_700_000_000_000.5, delivery="live",
    target=RunTarget(run_id="run-1", status="paused", action="pause"),
)
# Reading gives the normalised types, not the accepted ones.
state: State = root.state
roots: tuple[RootActivity, ...] | None = frame.roots
"""

MISSING_FIELD = """
from workflow_hub import RootActivity

root = RootActivity(
    root_run_id="root-1", owner_session_id="session-1", state="working", reason="executing",
    active_execution_count=1, needs_attention=False,
)
"""

ASSIGNS_A_FIELD = """
from workflow_hub import Cursor

cursor = Cursor(epoch="e", revision=1)
cursor.revision = 2
"""


def mypy(tmp_path: Path, cache: Path, program: str) -> subprocess.CompletedProcess[str]:
    user = tmp_path / "user.py"
    user.write_text(textwrap.dedent(program))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(user)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy-cache")


def test_mypy_accepts_plain_strings_and_lists(tmp_path: Path, mypy_cache: Path) -> None:
    result = mypy(tmp_path, mypy_cache, PLAIN_STRINGS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_rejects_a_missing_required_field(tmp_path: Path, mypy_cache: Path) -> None:
    result = mypy(tmp_path, mypy_cache, MISSING_FIELD)
    assert result.returncode == 1
    assert 'Missing named argument "actionable_block_count"' in result.stdout


def test_mypy_knows_values_are_frozen(tmp_path: Path, mypy_cache: Path) -> None:
    result = mypy(tmp_path, mypy_cache, ASSIGNS_A_FIELD)
    assert result.returncode == 1
    assert "revision" in result.stdout
