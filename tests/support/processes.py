"""Processes the tests start, owned on every path; and the check that none outlives the run.

:func:`owned_process` (and :func:`open_owned_process` under trio) starts a command in its own
session, so its process group holds everything it forks (a Celery worker's pool, a shell's
jobs), and on leaving the block, whatever ended it (a failing assertion, a timeout, Ctrl-C),
terminates the group, waits, and kills what is left of it.

:class:`LeakCheck` is the pytest plugin behind the promise (tests/conftest.py registers it):
the run marks its environment with ``WORKFLOW_HUB_TEST_RUN=<run id>``, which every process a
test starts inherits (through ``os.environ``, or an ``env`` built from it), and when the session
finishes it looks for processes still alive that carry the mark, orphans reparented to PID 1
included, or descend from pytest (or from an xdist worker). Each is named in the summary and
killed, and the run fails. SIGTERM of pytest is turned into Ctrl-C, so fixtures tear down.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

MARK = "WORKFLOW_HUB_TEST_RUN"
"""The environment variable of every process the test run starts; its value is the run's id."""

GRACE = 10.0
"""Seconds a terminated process group has to exit before it is killed (a safety net: a clean
exit ends the wait at once)."""

LEAKS_KEY = "workflow_hub_leaked_processes"


def signal_group(pid: int, signum: int) -> None:
    """``signum`` to the process group ``pid`` leads, or to the process alone when it leads none
    (started without a session of its own); nothing when both are gone."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    except PermissionError:
        pass


def stop_group(process: subprocess.Popen[Any], grace: float = GRACE) -> None:
    """Terminate the group, wait up to ``grace`` seconds, kill whatever is left of it, reap."""
    try:
        if process.poll() is None:
            signal_group(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(grace)
    finally:
        # Also when the leader ended by itself: what it forked may still run in its group.
        signal_group(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def owned_process(
    args: Sequence[str], *, grace: float = GRACE, **options: Any
) -> Iterator[subprocess.Popen[Any]]:
    """``subprocess.Popen(args, **options)`` in a new session, stopped (:func:`stop_group`) and
    its pipes closed when the block ends, however it ends."""
    process = subprocess.Popen(args, start_new_session=True, **options)
    try:
        yield process
    finally:
        try:
            stop_group(process, grace)
        finally:
            process.__exit__(None, None, None)  # closes the pipes (the process is reaped)


@asynccontextmanager
async def open_owned_process(
    args: Sequence[str], *, grace: float = GRACE, **options: Any
) -> AsyncIterator[trio.Process]:
    """:func:`owned_process` for trio: ``trio.lowlevel.open_process`` in a new session; the
    stop is shielded, so a cancelled test still waits for its processes."""
    process = await trio.lowlevel.open_process(args, start_new_session=True, **options)
    try:
        yield process
    finally:
        with trio.CancelScope(shield=True):
            try:
                if process.returncode is None:
                    signal_group(process.pid, signal.SIGTERM)
                    with trio.move_on_after(grace):
                        await process.wait()
            finally:
                signal_group(process.pid, signal.SIGKILL)
                await process.wait()  # trio's Process has no aclose() since 0.2x: reap, close
                for pipe in (process.stdin, process.stdout, process.stderr):
                    if pipe is not None:
                        await pipe.aclose()


class OwnedProcesses:
    """The ``owned`` fixture: processes started without a block of their own (``start``, as
    ``subprocess.Popen``), each in a new session, stopped (:func:`stop_group`) in reverse order
    when the test ends, however it ends. (Under trio, :func:`open_owned_process`.)"""

    def __init__(self) -> None:
        self._started: list[subprocess.Popen[Any]] = []

    def start(self, args: Sequence[str], **options: Any) -> subprocess.Popen[Any]:
        process = subprocess.Popen(args, start_new_session=True, **options)
        self._started.append(process)
        return process

    def close(self) -> None:
        while self._started:
            process = self._started.pop()
            try:
                stop_group(process)
            finally:
                process.__exit__(None, None, None)


def lines_until(
    process: subprocess.Popen[str], wanted: Callable[[list[str]], bool], within: float = 60.0
) -> list[str]:
    """Lines of the process' stdout (a pipe), read as they come until ``wanted(lines)`` holds;
    an ``AssertionError`` when the output ends first, or after ``within`` seconds (a safety net
    for a loaded machine: the wait ends on the line itself). It reads the pipe's descriptor
    itself (a buffered ``readline`` would hide lines from ``select``); lines written after the
    one wanted, if already read, are in the list too, and the rest is left in the pipe (for
    ``communicate()``)."""
    assert process.stdout is not None
    descriptor = process.stdout.fileno()
    lines: list[str] = []
    pending = b""
    deadline = time.monotonic() + within
    while not wanted(lines):
        readable, _, _ = select.select([descriptor], [], [], max(0.0, deadline - time.monotonic()))
        assert readable, f"not within {within} s; the output so far: {lines}"
        chunk = os.read(descriptor, 65536)
        assert chunk, f"the output ended first: {lines}"
        *complete, pending = (pending + chunk).split(b"\n")
        lines.extend(line.decode(errors="replace") for line in complete)
    if pending:
        lines.append(pending.decode(errors="replace"))  # the start of a line not yet ended
    return lines


# --- the check at the end of the run -----------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # after "pid (comm)", which may hold spaces
    return fields[0], int(fields[1])


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)


def _marked(pid: int, mark: bytes) -> bool:
    try:
        return mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def live_processes(run_id: str | None, root: int) -> set[int]:
    """Processes alive now (zombies are not) that descend from ``root`` or carry the run's mark,
    ``root`` itself and its ancestors excepted."""
    stats = {pid: stat for pid in _pids() if (stat := _stat(pid)) is not None}
    children: dict[int, list[int]] = {}
    for pid, (_, parent) in stats.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    pending = list(children.get(root, ()))
    while pending:
        pid = pending.pop()
        found.add(pid)
        pending.extend(children.get(pid, ()))
    if run_id is not None:
        mark = f"{MARK}={run_id}".encode()
        found.update(pid for pid in stats if _marked(pid, mark))
    ancestors = set()
    pid = root
    while pid > 0 and pid not in ancestors:
        ancestors.add(pid)
        pid = stats[pid][1] if pid in stats else 0
    return {pid for pid in found - ancestors if stats[pid][0] != "Z"}


def _wait_gone(pids: Iterable[int], within: float) -> None:
    """Wait (pidfd: the exit itself, no polling) until each process ended or ``within`` passed."""
    deadline = time.monotonic() + within
    for pid in pids:
        try:
            descriptor = os.pidfd_open(pid)
        except OSError:
            continue  # already gone
        try:
            select.select([descriptor], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(descriptor)


def reap_leaks(run_id: str | None, root: int, grace: float = 5.0) -> list[str]:
    """The command lines of processes the run left behind, each then killed. A process still on
    its way out (a daemon told to quit a moment ago) gets ``grace`` seconds to end first."""
    candidates = live_processes(run_id, root)
    if not candidates:
        return []
    _wait_gone(candidates, grace)
    leaked = live_processes(run_id, root) & candidates
    lines = [f"pid {pid}: {command_line(pid)}" for pid in sorted(leaked)]
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    _wait_gone(leaked, grace)
    for pid in leaked:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return lines


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: pytest (and trio, in a trio test) stop the way they do on SIGINT, so
    every fixture's teardown runs."""
    os.kill(os.getpid(), signal.SIGINT)


class LeakCheck:
    """The pytest plugin: marks the run, turns SIGTERM into SIGINT, and fails a run that leaves a
    process alive (listing and killing each)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = hasattr(config, "workerinput")  # an xdist worker: the controller marked it
        if not self.worker:
            os.environ[MARK] = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.run_id = os.environ.get(MARK)
        self.leaked: list[str] = []
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            signal.signal(signal.SIGTERM, _interrupt)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.leaked.extend(output.get(LEAKS_KEY, ()))

    @pytest.hookimpl(trylast=True)  # after the session's fixtures and xdist's workers are gone
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # A worker checks its own descendants (its processes in the others' runs are not its
        # business); the controller checks its own and every process of the run's mark.
        found = reap_leaks(None if self.worker else self.run_id, os.getpid())
        self.leaked.extend(found)
        if self.worker:
            workeroutput: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
            workeroutput[LEAKS_KEY] = found
        elif self.leaked and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.leaked and not self.worker:
            terminalreporter.section("processes the tests left running (killed)", red=True)
            for line in self.leaked:
                terminalreporter.line(line)
