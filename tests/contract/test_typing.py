"""Typed users see the constructors that run (issue 12): mypy accepts wire strings for enum fields
and any iterable for tuples, and knows which fields are required.

Each contract class declares its real ``__init__`` under ``TYPE_CHECKING`` (see ``_contract``);
the first test holds those declarations to the attrs fields, the others run mypy on a user program.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

from workflow_hub._contract import _values as _contract


def declared_inits() -> dict[str, ast.FunctionDef]:
    tree = ast.parse(inspect.getsource(_contract))
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.If) and ast.unparse(statement.test) == "TYPE_CHECKING":
                for inner in statement.body:
                    if isinstance(inner, ast.FunctionDef) and inner.name == "__init__":
                        found[node.name] = inner
    return found


def test_every_declared_init_matches_the_attrs_fields() -> None:
    """Same names, same order, all keyword-only, a default exactly where attrs has one."""
    inits = declared_inits()
    assert set(inits) == {cls.__name__ for cls in _contract.VALUE_CLASSES}
    for cls in _contract.VALUE_CLASSES:
        init = inits[cls.__name__]
        assert [a.arg for a in init.args.args] == ["self"], cls
        declared = [
            (arg.arg, default is not None)
            for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True)
        ]
        fields = [(f.name, f.default is not attrs.NOTHING) for f in attrs.fields(cls)]
        assert declared == fields, cls.__name__


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
