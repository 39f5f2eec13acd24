"""The commands a served hub prints beside its URL run as printed (issue 36).

After ``make demo`` nothing put ``.venv/bin`` on ``PATH``: a printed ``workflow-hub watch URL``
was "command not found". ``serve`` and ``demo --serve`` (what ``make demo`` runs) run here as a
fresh clone's reader starts them, from the repository with the virtualenv not activated, and
their printed ``watch`` and ``status`` lines are pasted into bash as they are.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.fresh_clone import clone, unactivated_environment
from tests.support.processes import lines_until, owned_process

TIMEOUT = 60


def printed_commands(stderr: str) -> tuple[str, str]:
    """The ``watch`` and ``status`` commands of ``serve``'s second line on stderr."""
    (line,) = [line for line in stderr.splitlines() if "in a terminal: " in line]
    watch, _, status = line.partition("in a terminal: ")[2].partition("  ·  one line: ")
    return watch, status


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--port", "0", "--seed", "3"],
        # What `make demo` runs (its output is not a terminal here: plain lines on stdout).
        ["demo", "--serve", "127.0.0.1:0", "--seed", "3"],
    ],
    ids=["serve", "demo"],
)
def test_the_served_demo_prints_commands_that_run_as_printed(
    command: list[str], tmp_path: Path
) -> None:
    where = clone(tmp_path)
    env = unactivated_environment()
    server = subprocess.Popen(
        [".venv/bin/workflow-hub", *command, "--duration", "120"],
        cwd=where,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert server.stderr is not None
        said = [server.stderr.readline(), server.stderr.readline()]
        served = re.search(r"serving at (\S+) ", said[0])
        assert served is not None, said
        url = served.group(1)
        watch, status = printed_commands("".join(said))
        assert watch == f".venv/bin/workflow-hub watch {url}"
        assert status == f".venv/bin/workflow-hub status {url}"
        shown = subprocess.run(
            ["bash", "-c", f'{status}; echo "exit $?"'],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        # The exit status says the state (0 idle, 1 working, 2 blocked): never 127, not found.
        assert shown.stdout.splitlines()[-1] in ("exit 0", "exit 1", "exit 2"), shown
        # The watch line as printed, until it shows the connection live (an event, not a
        # --duration guess that a loaded machine outruns), then Ctrl-C.
        with owned_process(
            ["bash", "-c", f"exec {watch}"],
            cwd=where,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as watching:
            lines_until(watching, lambda lines: "connection live" in lines)
            watching.send_signal(signal.SIGINT)
            _, err = watching.communicate(timeout=TIMEOUT)
        assert watching.returncode == 0, err
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        if server.stderr is not None:
            server.stderr.close()


def test_the_command_is_its_name_where_the_shell_finds_this_program(
    tmp_path: Path,
) -> None:
    """An activated virtualenv (or a ``pip install``) has ``workflow-hub`` on ``PATH``: the
    printed line says just that; without it, the path a shell in the same directory runs
    (relative in the clone, absolute elsewhere)."""
    scratch = tmp_path / "clone"
    elsewhere = tmp_path / "elsewhere"
    scratch.mkdir()
    elsewhere.mkdir()
    where = clone(scratch)
    env = unactivated_environment()
    script = "from workflow_hub._cli._command_line import command_name; print(command_name())"
    for cwd, path, expected in (
        (where, env["PATH"], ".venv/bin/workflow-hub"),
        (where, f"{where}/.venv/bin{os.pathsep}{env['PATH']}", "workflow-hub"),
        (elsewhere, env["PATH"], f"{where}/.venv/bin/workflow-hub"),
    ):
        printed = subprocess.run(
            [f"{where}/.venv/bin/python", "-c", script],
            cwd=cwd,
            env={**env, "PATH": path},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        assert printed.stdout.strip() == expected


def test_the_hints_name_the_command_as_the_shell_runs_it(tmp_path: Path) -> None:
    """A mistake's hint ("'workflow-hub serve' starts one", "use 'workflow-hub status …'") is a
    command line too."""
    where = clone(tmp_path)
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    hints = []
    for arguments in (
        ["status", f"127.0.0.1:{port}"],
        ["snapshot", "redis://127.0.0.1:6399/0"],
    ):
        result = subprocess.run(
            [".venv/bin/workflow-hub", *arguments],
            cwd=where,
            env=unactivated_environment(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        hints += re.findall(r"'([^']*workflow-hub [a-z]+)", result.stderr)
    assert hints == [
        ".venv/bin/workflow-hub serve",
        ".venv/bin/workflow-hub status",
        ".venv/bin/workflow-hub watch",
    ]
