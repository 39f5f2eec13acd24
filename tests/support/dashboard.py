"""What the dashboard tests share: the page's files, and programs found on the machine.

The dashboard's JavaScript runs under ``node`` (the fold, compared with Python) and in Debian's
``chromium`` driven by Playwright (the page). Where a program is missing the tests skip, except with
``CI=true``, where a missing program is a failure: CI must run every test (``make test`` installs
both when it can).
"""

from __future__ import annotations

import os
import shutil
from importlib.resources import files
from pathlib import Path
from typing import NoReturn

import pytest

import workflow_hub

DASHBOARD = Path(str(files(workflow_hub) / "server" / "static"))


def require_program(name: str, variable: str) -> str:
    """The path of a program, from ``$variable`` or PATH; skip (fail in CI) without it."""
    found = os.environ.get(variable) or shutil.which(name)
    if found:
        return found
    missing(f"{name} not found (install it, or set {variable})")


def missing(message: str) -> NoReturn:
    """Skip for want of a tool; in CI, where every test must run, fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI runs every test")
    pytest.skip(message)
