"""Draw docs/terminal-80x24.svg and docs/terminal-200x50.svg: `workflow-hub watch` in tmux.

`make screenshot` runs it. A `workflow-hub serve` (the demo's story, looping) runs in a process
of its own; a private tmux server (its own socket, no user configuration, no status bar) runs
`workflow-hub watch URL` in one session per size; a few seconds into a round, when the story is
in full swing, `tmux capture-pane -e` takes each screen with its colours, and rich turns it into
an SVG. Same seed, same story (up to timing jitter).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SIZES = ((80, 24), (200, 50))


def tmux(socket: str, *args: str) -> str:
    result = subprocess.run(
        ["tmux", "-S", socket, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return result.stdout


def svg(captured: str, width: int, title: str) -> str:
    console = Console(
        width=width, file=io.StringIO(), record=True, force_terminal=True, color_system="truecolor"
    )
    console.print(Text.from_ansi(captured.rstrip("\n")), end="", soft_wrap=True)
    return console.export_svg(title=title)


# What a pane shows once `watch` is connected and the story under way: on a busy machine that
# takes longer than ``--at`` seconds, so the capture waits for it (bounded), not for a guess.
IN_FULL_SWING = ("live", "hook events", "nightly-build", "working")


def in_full_swing(socket: str, session: str, *, within: float = 60.0) -> str:
    """The pane of ``session`` once it shows the story in full swing (or after ``within`` s)."""
    deadline = time.monotonic() + within
    while True:
        captured = tmux(socket, "capture-pane", "-e", "-p", "-t", session)
        plain = re.sub(r"\x1b\[[0-9;]*m", "", captured)
        if all(word in plain for word in IN_FULL_SWING) or time.monotonic() > deadline:
            return captured
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument(
        "--at", type=float, default=5.5, help="seconds into the first round of the story"
    )
    parser.add_argument("--output-dir", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is missing: make tmux installs it", file=sys.stderr)
        return 1
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("TMUX", None)
    env["TERM"] = "xterm-256color"
    server = subprocess.Popen(
        [str(BIN / "workflow-hub"), "serve", "--port", "0", "--seed", str(args.seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    with tempfile.TemporaryDirectory() as scratch:
        socket = str(Path(scratch) / "tmux.sock")
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            started = time.monotonic()
            for width, height in SIZES:
                session = f"s{width}x{height}"
                subprocess.run(
                    [
                        *("tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d"),
                        *("-s", session, "-x", str(width), "-y", str(height)),
                        f"workflow-hub watch {url}",
                    ],
                    check=True,
                    env=env,
                    timeout=30,
                )
                tmux(socket, "set", "-g", "status", "off")
                tmux(socket, "resize-window", "-t", session, "-x", str(width), "-y", str(height))
            time.sleep(max(0.0, args.at - (time.monotonic() - started)))
            for width, height in SIZES:
                session = f"s{width}x{height}"
                captured = in_full_swing(socket, session)
                path = args.output_dir / f"terminal-{width}x{height}.svg"
                path.write_text(
                    svg(captured, width, f"workflow-hub watch ({width}x{height})"),
                    encoding="utf-8",
                )
                print(f"wrote {path}", file=sys.stderr)
        finally:
            subprocess.run(
                ["tmux", "-S", socket, "kill-server"], check=False, capture_output=True, timeout=30
            )
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
