"""The test run owns its processes (issue 36): one still alive when the run ends fails it.

Each test runs a tiny pytest session (with the suite's :class:`LeakCheck`, plain and under xdist
as ``make test`` runs it) whose tests start ``sleep`` processes, tagged with a number of this
test so they are found by their command line, and checks what the session said and left.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.processes import command_line, owned_process

REPO = Path(__file__).resolve().parents[2]
WAIT = 120  # a safety net for a loaded machine; every wait below ends on an event first

CONFTEST = """
from tests.support.processes import LeakCheck

def pytest_configure(config):
    config.pluginmanager.register(LeakCheck(config), "workflow-hub-leak-check")
"""

OWNED = """
from tests.support.processes import owned_process

def test_owned():
    with owned_process(['sh', '-c', 'sleep {job} & wait']):
        pass
"""

XDIST = [pytest.param([], id="plain"), pytest.param(["-n", "2"], id="xdist")]

# The inner sessions load the plugins the suite's do, less LangSmith's (installed with langgraph,
# used by no test here), whose import of its client costs each pytest process, and each xdist
# worker, about half a second of CPU.
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:langsmith_plugin"]


def tag() -> str:
    """A ``sleep`` argument no other process has: 600 s and a unique fraction."""
    return f"600.{uuid.uuid4().int % 10**9:09d}"


def sleeping(seconds: str) -> list[int]:
    """The live ``sleep SECONDS`` processes."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and command_line(int(name)) == f"sleep {seconds}":
            state = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[0]
            if state != "Z":
                found.append(int(name))
    return found


def settled(pid: int) -> None:
    """Wait until ``/proc/PID/cmdline`` is readable: for a moment after ``exec`` (seen on a loaded
    machine) it reads empty, and the process would look like it is not there."""
    deadline = time.monotonic() + WAIT
    while command_line(pid) == "":
        assert time.monotonic() < deadline, f"process {pid} has no command line"
        time.sleep(0.01)


def session(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def run(where: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "src")])}
    command = [*PYTEST, "-q", *options]
    with owned_process(
        command, cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        out, _ = process.communicate(timeout=WAIT)
    return subprocess.CompletedProcess(command, process.returncode, out, "")


@pytest.mark.parametrize("options", XDIST)
def test_a_process_left_running_fails_the_run_named_and_is_killed(
    tmp_path: Path, options: list[str]
) -> None:
    """A child left running, and an orphan (its parent gone, so it is PID 1's): both named, both
    killed, and the run fails although every test passed. An owned process group (a shell and
    the job it put in the background) is stopped by its test and not named; nor are the pytest
    processes (xdist's workers)."""
    child, orphan, job = tag(), tag(), tag()
    where = session(
        tmp_path,
        {
            "test_child.py": (
                "import subprocess\n"
                "def test_child():\n"
                f"    subprocess.Popen(['sleep', '{child}'])\n"
            ),
            "test_orphan.py": (
                "import subprocess\n"
                "def test_orphan():\n"
                f"    subprocess.run(['sh', '-c', 'sleep {orphan} >/dev/null 2>&1 &'], check=True)\n"
            ),
            "test_owned.py": OWNED.format(job=job),
        },
    )
    result = run(where, *options)
    assert result.returncode == 1, result.stdout
    assert "3 passed" in result.stdout
    section = result.stdout.split("processes the tests left running (killed)", 1)[1]
    named = sorted(line.split(": ", 1)[1] for line in section.splitlines() if ": " in line)
    assert named == sorted([f"sleep {child}", f"sleep {orphan}"]), result.stdout
    assert sleeping(child) == []
    assert sleeping(orphan) == []
    assert sleeping(job) == []


def test_a_run_whose_processes_are_all_stopped_passes(tmp_path: Path) -> None:
    job = tag()
    result = run(session(tmp_path, {"test_owned.py": OWNED.format(job=job)}))
    assert result.returncode == 0, result.stdout
    assert "left running" not in result.stdout
    assert sleeping(job) == []


@pytest.mark.parametrize("options", XDIST)
def test_sigterm_of_pytest_stops_the_processes_of_the_running_test(
    tmp_path: Path, options: list[str]
) -> None:
    """An interrupted run: SIGTERM while a trio test waits with a process running; the fixture's
    teardown (or the final check) leaves nothing behind."""
    job = tag()
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    where = session(
        tmp_path,
        {
            "test_waits.py": (
                "import trio\n"
                "from tests.support.processes import open_owned_process\n"
                "async def test_waits():\n"
                f"    async with open_owned_process(['sleep', '{job}']) as process:\n"
                f"        with open({str(fifo)!r}, 'w') as started:\n"
                "            started.write(f'{process.pid}\\n')\n"
                "        await trio.sleep_forever()\n"
            )
        },
    )
    (where / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "src")])}
    command = [*PYTEST, "-q", *options]
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with owned_process(
            command, cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as pytest_process:
            line = b""
            while not line.endswith(b"\n"):
                readable, _, _ = select.select([reader], [], [], WAIT)
                assert readable, "the inner test never started its process"
                line += os.read(reader, 64)
                assert pytest_process.poll() is None, pytest_process.communicate()[0]
            pid = int(line)
            settled(pid)
            assert sleeping(job) == [pid]
            pytest_process.send_signal(signal.SIGTERM)  # the pytest process only, not its group
            out, _ = pytest_process.communicate(timeout=WAIT)
    finally:
        os.close(reader)
    assert pytest_process.returncode != 0, out
    assert sleeping(job) == [], out
