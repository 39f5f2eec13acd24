"""The runnable examples in README.md and docs/ run as printed, so the docs cannot drift."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Documents whose python blocks are complete programs (other pages hold fragments).
PROGRAMS = ["README.md", "docs/quickstart.md", "docs/index.md"]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("document", PROGRAMS)
def test_document_examples_run(document: str) -> None:
    blocks = python_blocks(ROOT / document)
    assert blocks, f"{document} has no python example"
    for block in blocks:
        result = subprocess.run(
            [sys.executable, "-c", block], capture_output=True, text=True, timeout=30, check=False
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout, "an example that prints nothing shows nothing"


def test_quickstart_output_is_what_the_page_says() -> None:
    """The page's printed output starts and ends as the program's does (unknown, then idle)."""
    (program,) = python_blocks(ROOT / "docs/quickstart.md")
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=True
    )
    lines = [line for line in result.stdout.splitlines() if "hook:" not in line]
    assert "activity unknown" in lines[0]
    assert lines[-1].split()[-1] == "idle"
    assert any("needs attention" in line for line in lines)
    assert "hook: build:compile completed" in result.stdout
