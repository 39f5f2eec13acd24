"""A remote observer in another process: ``workflow-hub watch URL`` on a pipe (one line a frame).

``watch`` is ``workflow_hub.remote`` as a user runs it: it connects, resumes, and reconnects.
The host tests read its lines to see what a remote observer saw, in particular the final frame.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from tests.support.processes import signal_group

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
LINE_TIMEOUT = 15.0


class Watcher:
    """The lines a ``watch`` process printed so far, and a way to wait for one."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    async def wait_for(self, wanted: Callable[[str], bool]) -> str:
        """Read lines until one is ``wanted``; fail after ``LINE_TIMEOUT`` seconds."""
        for line in self.lines:
            if wanted(line):
                return line
        assert self.process.stdout is not None
        async with asyncio.timeout(LINE_TIMEOUT):
            while True:
                raw = await self.process.stdout.readline()
                if not raw:
                    raise AssertionError(f"watch ended before the line; it printed {self.lines}")
                line = raw.decode().rstrip("\n")
                self.lines.append(line)
                if wanted(line):
                    return line


@asynccontextmanager
async def watching(url: str) -> AsyncIterator[Watcher]:
    """``workflow-hub watch URL`` for the duration of the block (then terminated)."""
    process = await asyncio.create_subprocess_exec(
        *CLI,
        "watch",
        url,
        "--duration",
        "60",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=ENV,
        start_new_session=True,
    )
    try:
        yield Watcher(process)
    finally:
        try:
            signal_group(process.pid, signal.SIGTERM)
            async with asyncio.timeout(15):
                await process.wait()
        finally:  # also on a timeout or a cancelled test: nothing of the group stays
            signal_group(process.pid, signal.SIGKILL)
