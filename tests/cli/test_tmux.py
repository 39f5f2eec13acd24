"""``workflow-hub status`` in a real tmux status line (issue 24): the documented snippet works.

A private tmux server (its own socket) runs the snippet of ``docs/quickstart.md`` in
``status-right``; a control-mode client (``tmux -C``, which keeps the output of ``#()`` jobs
between commands, as an attached terminal does) asks ``display -p '#{E:status-right}'`` until the
line shows what the hub's state says, then the test changes the state and waits for the line to
follow. Without tmux the test skips, and fails under ``CI=true``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import trio

from tests.support.builders import root
from tests.support.netutil import served
from workflow_hub import WorkflowActivityHub
from workflow_hub.reporting import aggregate

TIMEOUT = 60
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def snippet() -> list[tuple[str, str]]:
    """The ``tmux set -g OPTION 'VALUE'`` lines of docs/quickstart.md."""
    page = (ROOT / "docs/quickstart.md").read_text(encoding="utf-8")
    found = re.findall(r"^tmux set -g (\S+) '?(.*?)'?$", page, flags=re.M)
    assert "status-right" in dict(found), found
    return found


def tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing (make test installs it)")
        pytest.skip("tmux is missing (make test installs it)")
    return found


class _Control:
    """A tmux control-mode client: one command in, its output block out."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._process = process
        self._buffer = bytearray()

    async def _line(self) -> str:
        assert self._process.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self._process.stdout.receive_some()
            assert chunk, "tmux went away"
            self._buffer.extend(chunk)
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        return line.decode()

    async def command(self, text: str) -> list[str]:
        assert self._process.stdin is not None
        await self._process.stdin.send_all(text.encode() + b"\n")
        while not (await self._line()).startswith("%begin"):
            pass
        lines = []
        while not (line := await self._line()).startswith(("%end", "%error")):
            lines.append(line)
        return lines

    async def status_right_until(self, expected: str) -> str:
        shown = ""
        with trio.move_on_after(TIMEOUT):
            while shown != expected:
                await trio.sleep(0.3)
                shown = "\n".join(await self.command("display -p '#{E:status-right}'")).strip()
        return shown


async def test_the_status_line_follows_the_hub(hub: WorkflowActivityHub, tmp_path: Path) -> None:
    program = tmux()
    socket = str(tmp_path / "tmux.sock")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("TMUX", None)
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("build")])
    async with served(hub) as url:
        base = [program, "-S", socket, "-f", "/dev/null"]
        await trio.run_process(
            [*base, "new-session", "-d", "-s", "t", "-x", "80", "-y", "24"], env=env
        )
        try:
            # The snippet of docs/quickstart.md, with this test's URL.
            for option, value in snippet():
                value = value.replace("http://127.0.0.1:8765", url)
                await trio.run_process([*base, "set", "-g", option, value], env=env)
            async with trio.open_nursery() as nursery:
                process: trio.Process = await nursery.start(
                    partial(
                        trio.run_process,
                        [*base, "-C", "attach", "-t", "t"],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        check=False,
                        env=env,
                    )
                )
                control = _Control(process)
                for change in (
                    lambda: None,
                    lambda: publisher.publish_changed(
                        root("deploy", state="blocked", reason="awaiting_input", active=0, blocks=1)
                    ),
                    lambda: publisher.publish_removed("build"),
                    publisher.dispose,
                ):
                    change()
                    expected = aggregate(hub.snapshot_frame()).message
                    assert await control.status_right_until(expected) == expected
                assert expected == "activity unknown: source unavailable"
                await control.command("detach")
                nursery.cancel_scope.cancel()
        finally:
            # The tmux server is a daemon (PID 1's child): killed also when the test is cancelled.
            with trio.CancelScope(shield=True), trio.fail_after(30):
                await trio.run_process([*base, "kill-server"], check=False, env=env)


def test_make_screenshot_draws_the_terminal_in_full_swing(tmp_path: Path) -> None:
    """``tools/terminal_screenshot.py`` (``make screenshot``): both sizes, the story under way."""
    tmux()
    subprocess.run(
        [sys.executable, str(ROOT / "tools/terminal_screenshot.py"), "--output-dir", str(tmp_path)],
        check=True,
        timeout=TIMEOUT,
        capture_output=True,
    )
    for size in ("80x24", "200x50"):
        drawn = (tmp_path / f"terminal-{size}.svg").read_text(encoding="utf-8")
        text = re.sub(r"&#160;|\s+", " ", drawn)
        for shown in ("workflow-hub", "connection:", "live", "hook", "nightly-build", "working"):
            assert shown in text, (size, shown)
