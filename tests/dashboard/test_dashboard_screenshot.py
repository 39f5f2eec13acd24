"""``make screenshot`` draws the same dashboard twice, byte for byte (tools/dashboard_screenshot.py).

The demo's hook feed shows clock times (heartbeats), so a picture that followed the wall clock or
the machine's time zone would change at every run and rewrite docs/dashboard.png for nothing.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from tests.support.dashboard import require_program

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "dashboard_screenshot.py"


def draw(chromium: str, output: Path, *options: str) -> str:
    drawn = subprocess.run(
        [sys.executable, str(TOOL), "--chromium", chromium, "--output", str(output), *options],
        check=False,
        timeout=240,
        capture_output=True,
        text=True,
    )
    assert drawn.returncode == 0, drawn.stderr[-4000:]  # the tool's own words, when it fails
    return hashlib.sha256(output.read_bytes()).hexdigest()


def test_the_demo_screenshot_is_the_same_at_every_run(tmp_path: Path) -> None:
    """Two runs of the demo's picture (five seconds in, past the first heartbeat), taken seconds
    of wall clock apart: the same PNG. A third with another ``--clock`` differs (another
    heartbeat time): the fixed clock is what makes it stable, not an empty feed."""
    chromium = require_program("chromium", "WORKFLOW_HUB_CHROMIUM")
    first = draw(chromium, tmp_path / "first.png", "--width", "375")
    second = draw(chromium, tmp_path / "second.png", "--width", "375")
    assert first == second
    later = draw(chromium, tmp_path / "later.png", "--width", "375", "--clock", "1767261600000")
    assert later != first


def test_the_busy_screenshot_is_the_same_at_every_run(tmp_path: Path) -> None:
    """The busy scheduler's picture (its roots still changing while the page is open, one
    root's stages opened): the same PNG twice."""
    chromium = require_program("chromium", "WORKFLOW_HUB_CHROMIUM")
    busy = ("--busy", "120", "--view", "#group=attention", "--width", "375", "--height", "800")
    assert draw(chromium, tmp_path / "first.png", *busy) == draw(
        chromium, tmp_path / "second.png", *busy
    )
