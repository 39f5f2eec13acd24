"""The runnable examples in README.md and docs/ run as printed, so the docs cannot drift.

A ```python block that calls ``trio.run(`` or ``asyncio.run(``, or opens the thread host
(``from workflow_hub.sync import open_hub``), is a complete program and must run to completion;
other blocks are fragments (checked by reading; a review ran each against the code). A program
whose first line says it ``needs a running Redis`` is run by its page's own console session,
against a live fleet, and not here (it follows the fleet until stopped).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
# Pages whose first example is the one a newcomer runs first: it must show something.
PRINTING = {"README.md", "docs/quickstart.md", "docs/index.md", "docs/hosts.md"}
# What makes a block a complete program: it starts a trio run, an asyncio loop or the thread host.
PROGRAM_MARKS = ("trio.run(", "asyncio.run(", "from workflow_hub.sync import open_hub")
NEEDS_SERVICE = "needs a running Redis"
# A server that runs until Ctrl-C (docs/hosts.md's uvicorn program): tests/hosts/test_exits.py
# runs it, interrupts it and checks its exit.
UNTIL_STOPPED = "serves until stopped"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def programs() -> list[tuple[str, int, str]]:
    found = []
    for document in DOCUMENTS:
        for index, block in enumerate(python_blocks(ROOT / document)):
            if any(mark in block.partition("\n")[0] for mark in (NEEDS_SERVICE, UNTIL_STOPPED)):
                continue
            if any(mark in block for mark in PROGRAM_MARKS):
                found.append((document, index, block))
    return found


def test_the_first_pages_have_programs() -> None:
    documents = {document for document, _, _ in programs()}
    assert documents >= PRINTING
    assert "docs/scheduler-guide.md" in documents


@pytest.mark.parametrize(
    ("document", "index", "program"),
    programs(),
    ids=[f"{document}#{index}" for document, index, _ in programs()],
)
def test_document_programs_run(document: str, index: int, program: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    if document in PRINTING:
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


def test_the_quickstart_says_why_it_prints_unknown_twice() -> None:
    """Issue 12: two "activity unknown" lines in a row, each explained on the page."""
    (program,) = python_blocks(ROOT / "docs/quickstart.md")
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=True
    )
    first, second = result.stdout.splitlines()[:2]
    assert "activity unknown" in first
    assert "activity unknown" in second
    page = (ROOT / "docs/quickstart.md").read_text(encoding="utf-8")
    printed = re.search(r"It prints.*?```\n(.*?)```", page, flags=re.S)
    assert printed is not None
    shown = printed.group(1).splitlines()
    assert "no publisher yet" in shown[0]
    assert "register_publisher()" in shown[1]
    assert "register_publisher()" in page.split("What to notice")[1]


def test_the_quickstart_shows_the_status_lines_it_prints() -> None:
    """The page's sample output is the program's, line for line (hook lines may land anywhere)."""
    (program,) = python_blocks(ROOT / "docs/quickstart.md")
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=True
    )
    printed = [line for line in result.stdout.splitlines() if "hook:" not in line]
    page = (ROOT / "docs/quickstart.md").read_text(encoding="utf-8")
    sample = re.search(r"It prints.*?```\n(.*?)```", page, flags=re.S)
    assert sample is not None
    shown = [
        re.sub(r"\s+\(.*\)$", "", line)
        for line in sample.group(1).splitlines()
        if "hook:" not in line
    ]
    assert shown == printed
