"""``workflow-hub status`` in a real tmux status line (issue 24): the documented snippet works.

A private tmux server (its own socket) gets the snippet of ``docs/quickstart.md`` as a fresh
clone's reader types it (issue 36): each line through bash, from the repository, with
``.venv/bin`` not on ``PATH``; ``tmux`` is a shim that adds the private socket. A control-mode
client (``tmux -C``, which keeps the output of ``#()`` jobs between commands, as an attached
terminal does) asks ``display -p '#{E:status-right}'`` until the line shows what the hub's state
says, then the test changes the state and waits for the line to follow. A second tmux shows a
real client of the first on its screen, at 80x24 and 200x50, and the sentence must be whole on
its status line. Without tmux the tests skip, and fail under ``CI=true``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import pytest
import trio

from tests.support.builders import root
from tests.support.fresh_clone import clone, unactivated_environment
from tests.support.netutil import served
from workflow_hub import WorkflowActivityHub
from workflow_hub.reporting import aggregate

TIMEOUT = 60
ROOT = Path(__file__).resolve().parents[2]


def snippet() -> list[str]:
    """The ``tmux set -g OPTION VALUE`` lines of docs/quickstart.md, as printed."""
    page = (ROOT / "docs/quickstart.md").read_text(encoding="utf-8")
    found = re.findall(r"^tmux set -g .*$", page, flags=re.M)
    assert any(line.startswith("tmux set -g status-right ") for line in found), found
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


@asynccontextmanager
async def tmux_with_the_snippet(url: str, tmp_path: Path) -> AsyncIterator[list[str]]:
    """A private tmux server, 80x24, with the page's snippet typed in bash as printed (the hub
    at ``url``); yields the command that reaches that server."""
    program = tmux()
    socket = str(tmp_path / "tmux.sock")
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "tmux"
    shim.write_text(f'#!/bin/sh\nexec {program} -S {socket} -f /dev/null "$@"\n')
    shim.chmod(0o755)
    scratch = tmp_path / "clone"
    scratch.mkdir()
    where = clone(scratch)
    env = unactivated_environment()
    env.pop("TMUX", None)
    base = [program, "-S", socket, "-f", "/dev/null"]
    await trio.run_process(
        [*base, "new-session", "-d", "-s", "t", "-x", "80", "-y", "24"], env=env, cwd=where
    )
    try:
        typed = {**env, "PATH": f"{shims}{os.pathsep}{env['PATH']}"}
        for line in snippet():
            await trio.run_process(
                ["bash", "-c", line.replace("http://127.0.0.1:8765", url)], env=typed, cwd=where
            )
        yield base
    finally:
        # The tmux server is a daemon (PID 1's child): killed also when the test is cancelled.
        with trio.CancelScope(shield=True), trio.fail_after(30):
            await trio.run_process([*base, "kill-server"], check=False, env=env)


async def test_the_status_line_follows_the_hub(hub: WorkflowActivityHub, tmp_path: Path) -> None:
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("build")])
    async with (
        served(hub) as url,
        tmux_with_the_snippet(url, tmp_path) as base,
        trio.open_nursery() as nursery,
    ):
        process: trio.Process = await nursery.start(
            partial(
                trio.run_process,
                [*base, "-C", "attach", "-t", "t"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                check=False,
                env={key: value for key, value in os.environ.items() if key != "TMUX"},
            )
        )
        control = _Control(process)
        for change in (
            lambda: None,
            lambda: publisher.publish_changed(
                root("deploy", state="blocked", reason="awaiting_input", active=0, blocks=1)
            ),
            lambda: publisher.publish_removed("build"),
            # C3 (issue 38): why the source is unknown, on the line.
            lambda: publisher.publish_snapshot(
                "recovering", detail="broker unreachable: ConnectionError: Connection refused"
            ),
            publisher.dispose,
        ):
            change()
            expected = aggregate(hub.snapshot_frame()).message
            assert await control.status_right_until(expected) == expected
            if hub.snapshot_frame().detail is not None:
                assert expected == (
                    "activity unknown: broker unreachable: ConnectionError: Connection refused"
                )
        assert expected == "activity unknown: source unavailable"
        await control.command("detach")
        nursery.cancel_scope.cancel()


async def test_the_status_line_is_whole_on_the_screen_at_80_and_200_columns(
    hub: WorkflowActivityHub, tmp_path: Path
) -> None:
    """tmux cuts ``status-right`` at 40 columns unless told otherwise (issue 36)."""
    hub.register_publisher().publish_snapshot(
        "ready",
        [
            root("build"),
            root("lint"),
            root("deploy", state="blocked", reason="awaiting_input", active=0, blocks=1),
            root("release", state="blocked", reason="manual_intervention", active=0, blocks=1),
        ],
    )
    expected = aggregate(hub.snapshot_frame()).message
    assert len(expected) > 40, expected
    async with served(hub) as url, tmux_with_the_snippet(url, tmp_path) as base:
        screen = [tmux(), "-S", str(tmp_path / "screen.sock"), "-f", "/dev/null"]
        # The second tmux's pane is the terminal a person attaches the first one from.
        attach = f"TERM=xterm-256color exec {' '.join(base)} attach -t t"
        env = {key: value for key, value in os.environ.items() if key != "TMUX"}
        await trio.run_process(
            [*screen, "new-session", "-d", "-s", "s", "-x", "80", "-y", "24", attach], env=env
        )
        try:
            for width, height in ((80, 24), (200, 50)):
                await trio.run_process(
                    [*screen, "resize-window", "-t", "s", "-x", str(width), "-y", str(height)]
                )
                shown = ""
                with trio.move_on_after(TIMEOUT):
                    while expected not in shown:
                        await trio.sleep(0.3)
                        captured = await trio.run_process(
                            [*screen, "capture-pane", "-p", "-t", "s"], capture_stdout=True
                        )
                        lines = captured.stdout.decode().rstrip("\n").splitlines()
                        shown = lines[-1] if lines else ""
                assert expected in shown, (width, height, shown)
        finally:
            # The tmux server is a daemon (PID 1's child): killed also when the test is cancelled.
            with trio.CancelScope(shield=True), trio.fail_after(30):
                await trio.run_process([*screen, "kill-server"], check=False, env=env)


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
        # Issue 39: what needs a person leads, in words; at 80 columns a legend.
        assert re.search(r"\d+ needs? attention:", text), size
        assert "manual_intervention" not in text.split("hook events")[0], size
        if size == "80x24":
            assert "! needs attention" in text
