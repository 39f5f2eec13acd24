"""The repository as a reader has it after ``make demo``: its files, ``.venv`` beside them, and
``.venv/bin`` not on ``PATH`` (nobody activated it), so that a command the project prints or
documents is run exactly as printed.

A worktree that shares another checkout's virtualenv has no ``.venv`` of its own: there the
clone is a directory of links to the repository's files, with ``.venv`` linking to the
virtualenv running the tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ROOT", "VENV", "clone", "unactivated_environment"]

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)


def clone(scratch: Path) -> Path:
    """Where a fresh clone's commands run from: the repository itself when its ``.venv`` runs
    these tests, else links to its files in ``scratch`` with ``.venv`` linking to the running
    virtualenv."""
    own = ROOT / ".venv"
    if own.exists() and own.resolve() == VENV.resolve():
        return ROOT
    for entry in ROOT.iterdir():
        if entry.name != ".venv":
            (scratch / entry.name).symlink_to(entry)
    (scratch / ".venv").symlink_to(VENV)
    return scratch


def unactivated_environment() -> dict[str, str]:
    """This process's environment without the virtualenv on ``PATH`` (nor ``VIRTUAL_ENV``)."""
    venv_bin = (VENV / "bin").resolve()
    kept = [
        entry
        for entry in os.environ.get("PATH", os.defpath).split(os.pathsep)
        if entry and Path(entry).resolve() != venv_bin
    ]
    env = {**os.environ, "PATH": os.pathsep.join(kept), "PYTHONUNBUFFERED": "1"}
    env.pop("VIRTUAL_ENV", None)
    return env
