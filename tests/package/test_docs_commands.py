"""The shell commands in README.md and docs/*.md run as printed (issue 36).

A fenced ```sh or ```console block whose line just before the fence is ``<!-- runnable -->``
(or ``<!-- runnable: timeout=N -->``, seconds; 60 by default) is run here as a fresh clone's
reader runs it after ``make demo``: with bash (``set -e``) from the repository's root, with
``.venv/bin`` not on ``PATH``. In a ```console block the lines starting with ``$ `` are the
commands and the others are example output (not compared). The block runs in a process group of
its own, and the whole group (its background jobs too) is ended when the block ends, on every
path. A block fails when a command fails (non-zero status, or a command the shell cannot find
even where the page lets its status pass), and the failure shows the block's output. The ports a
block names (``127.0.0.1:PORT``, ``--port PORT``, ``--metrics-port PORT``) are replaced by free
ones for the run, the same port for the same number: two test runs on one machine, or a hub of
the reader's own on 8765, never collide with a block, which is otherwise run as printed.

Every command line a page shows, runnable or not, names ``workflow-hub`` and ``python`` as a
fresh clone has them (``.venv/bin/workflow-hub``, ``.venv/bin/python``), unless the block says
its commands run where ``pip install`` put them on ``PATH``: ``<!-- installed -->`` before the
fence, and the page saying so.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.support.fresh_clone import ROOT, clone, unactivated_environment

DOCUMENTS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
DEFAULT_TIMEOUT = 60.0
# How long the processes a block left behind have after SIGTERM before SIGKILL.
GRACE = 10.0

_FENCE = re.compile(
    r"^(?:(?P<marker><!-- (?P<kind>runnable|installed)(?:: timeout=(?P<timeout>\d+))? -->)\n)?"
    r"(?P<indent> *)```(?P<language>[a-z]*)\n(?P<body>.*?)^(?P=indent)```$",
    flags=re.M | re.S,
)
# A command word: at the start of a command (the line's, after `$ `, after `;`, `&&`, `|`, `(`,
# `#(`, `$(` or a backquote, or as a quoted argument that is itself a command, `--adapter "…"`),
# also behind `timeout N`, `env`, `nohup`, `exec` or `time`.
_BARE_COMMAND = re.compile(
    r"""(?:^\s*|[;&|(`]\s*|\s["'])(?:(?:timeout\s+\S+|env|nohup|exec|time)\s+)*"""
    r"""(?P<word>workflow-hub|python3?|pytest)(?=\s|$)"""
)
# A port a block names: in a loopback URL, or the value of a port option.
_PORT = re.compile(r"(?:127\.0\.0\.1:|--port |--metrics-port )(?P<port>\d{4,5})\b")

# Bash's words when a command does not exist, even where the page lets its status pass.
_NOT_FOUND = re.compile(
    r"^bash: line \d+: .*: (?:command not found|No such file or directory)$", re.M
)


class Block(NamedTuple):
    document: str
    line: int
    language: str
    kind: str | None
    timeout: float
    body: str

    @property
    def name(self) -> str:
        return f"{self.document}:{self.line}"

    def commands(self) -> list[str]:
        """The block's command lines: every line of a sh block; the ``$ `` lines of a console
        block (or an unlabelled one), with the continuation lines of a trailing backslash."""
        if self.language in ("sh", "bash", "shell"):
            return [line for line in self.body.splitlines() if line.strip()]
        commands: list[str] = []
        continued = False
        for line in self.body.splitlines():
            if continued:
                commands.append(line)
            elif line.startswith("$ "):
                commands.append(line.removeprefix("$ "))
            else:
                continue
            continued = line.endswith("\\")
        return commands


def blocks() -> list[Block]:
    found = []
    for document in DOCUMENTS:
        text = (ROOT / document).read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            body = "\n".join(
                line.removeprefix(match["indent"]) for line in match["body"].splitlines()
            )
            found.append(
                Block(
                    document=document,
                    line=text.count("\n", 0, match.start("indent")) + 1,
                    language=match["language"],
                    kind=match["kind"],
                    timeout=float(match["timeout"] or DEFAULT_TIMEOUT),
                    body=body,
                )
            )
    return found


def runnable() -> list[Block]:
    return [block for block in blocks() if block.kind == "runnable"]


def without_comment(line: str) -> str:
    """The line less a shell comment (`` # …``); tmux's ``#(`` is not one."""
    return re.sub(r"(?:^|\s)#(?!\().*$", "", line)


def test_runnable_blocks_are_sh_or_console() -> None:
    wrong = [
        f"{block.name} ({block.language or 'no language'})"
        for block in blocks()
        if block.kind == "runnable" and block.language not in ("sh", "console")
    ]
    assert not wrong, f"only ```sh and ```console blocks are run: {wrong}"


def test_the_pages_have_runnable_blocks() -> None:
    documents = {block.document for block in runnable()}
    assert {"docs/quickstart.md", "docs/conformance.md", "docs/demo.md"} <= documents


def test_every_command_line_runs_in_a_fresh_clone_as_printed() -> None:
    """``workflow-hub`` and ``python`` are not on a fresh clone's ``PATH`` after ``make demo``:
    a command line names them by their path in ``.venv/bin`` (or its block is marked
    ``installed``, for a page about a project of the reader's own)."""
    bare = [
        f"{block.name}: {line.strip()}"
        for block in blocks()
        if block.kind != "installed"
        and block.language in ("sh", "bash", "shell", "console", "text", "")
        for line in block.commands()
        if _BARE_COMMAND.search(without_comment(line))
    ]
    assert not bare, "commands not on PATH after make demo (write .venv/bin/…):\n" + "\n".join(bare)


def _living(group: int) -> list[int]:
    """The processes of ``group`` that still run (a zombie waits for its parent, not for us)."""
    living = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so from the last ")".
        state, _, pgrp = stat.rpartition(")")[2].split()[:3]
        if int(pgrp) == group and state != "Z":
            living.append(int(entry.name))
    return living


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to every process of the block's group, SIGKILL to what is left after GRACE."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + GRACE
        while _living(process.pid) and time.monotonic() < deadline:
            process.poll()
            time.sleep(0.05)
        if not _living(process.pid):
            return


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def with_free_ports(script: str) -> str:
    """``script`` with every port it names (see ``_PORT``) replaced by a free one, consistently."""
    ports = {match["port"]: str(_free_port()) for match in _PORT.finditer(script)}
    if not ports:
        return script
    return re.sub(r"\b(" + "|".join(map(re.escape, ports)) + r")\b", lambda m: ports[m[1]], script)


def run_block(script: str, where: Path, timeout: float, log: Path) -> int | None:
    """Run ``script`` with bash (``set -e``) in ``where`` as a fresh clone's reader would, its
    output into ``log``; its exit status, or None when it ran over ``timeout`` seconds. Every
    process of its group is ended before this returns."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["bash", "-c", "set -e\n" + script],
            cwd=where,
            env=unactivated_environment(),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            _end_group(process)
            process.wait()


@pytest.mark.parametrize("block", runnable(), ids=[block.name for block in runnable()])
def test_runnable_block_runs(block: Block, tmp_path: Path) -> None:
    scratch = tmp_path / "clone"
    scratch.mkdir()
    script = with_free_ports("\n".join(block.commands()) + "\n")
    log = tmp_path / "output.txt"
    status = run_block(script, clone(scratch), block.timeout, log)
    shown = log.read_text(encoding="utf-8", errors="replace")
    assert status is not None, f"{block.name} ran over {block.timeout:g} s:\n{script}\n{shown}"
    assert status == 0, f"{block.name} failed (exit {status}):\n{script}\n{shown}"
    missing = _NOT_FOUND.findall(shown)
    assert not missing, f"{block.name}: a command was not found:\n{script}\n{shown}"


# --- the runner and the checks themselves ----------------------------------------------------------


def test_a_failing_command_fails_the_block_and_background_jobs_end_with_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "output.txt"
    started = tmp_path / "started"
    script = f"sleep 300 &\necho $! > {started}\nfalse\necho never\n"
    assert run_block(script, tmp_path, DEFAULT_TIMEOUT, log) == 1
    assert "never" not in log.read_text()
    background = int(started.read_text())
    assert not Path(f"/proc/{background}").exists() or "Z" in _state(background)


def test_a_block_over_its_time_is_ended_whole(tmp_path: Path) -> None:
    log = tmp_path / "output.txt"
    started = tmp_path / "started"
    script = f"sleep 300 &\necho $! > {started}\nsleep 300\n"
    assert run_block(script, tmp_path, 1, log) is None
    background = int(started.read_text())
    assert not Path(f"/proc/{background}").exists() or "Z" in _state(background)


def test_the_ports_a_block_names_are_replaced_by_free_ones_consistently() -> None:
    script = (
        "redis-server --port 6393 &\n"
        "serve --redis redis://127.0.0.1:6393/0 --port 8765 &\n"
        "status http://127.0.0.1:8765 --seed 4\n"
    )
    ran = with_free_ports(script)
    ports = _PORT.findall(ran)
    assert len(ports) == 4
    assert ports[0] == ports[1] != ports[2] == ports[3]
    assert "6393" not in ran
    assert "8765" not in ran
    assert "--seed 4" in ran


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "Z"


@pytest.mark.parametrize(
    "line",
    [
        "workflow-hub serve",
        "$ workflow-hub status http://127.0.0.1:8765",
        "tmux set -g status-right '#(workflow-hub status --follow URL)'",
        'workflow-hub conformance --adapter "python -m workflow_hub.testing.jsonl_adapter"',
        "timeout 18 python bot.py",
        "cd benchmarks && python run_all.py",
    ],
)
def test_a_bare_command_is_caught(line: str) -> None:
    assert _BARE_COMMAND.search(without_comment(line.removeprefix("$ ")))


@pytest.mark.parametrize(
    "line",
    [
        ".venv/bin/workflow-hub serve   # then: workflow-hub watch URL",
        'tmux set -g status-right "#($PWD/.venv/bin/workflow-hub status --follow URL)"',
        "cd benchmarks && ../.venv/bin/python run_all.py",
        "pip install 'workflow-hub[celery]'",
        ".venv/bin/workflow-hub watch redis://127.0.0.1:6379/0 --prefix workflow-hub",
    ],
)
def test_a_path_qualified_command_passes(line: str) -> None:
    assert not _BARE_COMMAND.search(without_comment(line))
