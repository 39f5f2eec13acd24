"""Every printed output in quickstart.md and demo.md is produced here from the code it documents
(issue 24), so the pages cannot drift from the program.

A block the tests produce follows a marker ``<!-- output: NAME -->`` in the page. The test
compares what the code prints now with the block; ``WORKFLOW_HUB_UPDATE_DOCS=1 pytest
tests/cli/test_docs_outputs.py`` rewrites the blocks instead (then read the diff).

The demo's screens are drawn on trio's MockClock with a fixed seed, a fixed wall clock and UTC,
so the same moment of the story gives the same screen on every machine.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from rich.console import Console

from tests.support.builders import root
from tests.support.fresh_clone import clone, unactivated_environment
from tests.support.netutil import served
from workflow_hub import WorkflowActivityHub
from workflow_hub._cli._demo import add_arguments, play_demo
from workflow_hub._cli._output import PlainOutput
from workflow_hub._cli._rich import RichOutput

ROOT = Path(__file__).resolve().parents[2]
UPDATE = os.environ.get("WORKFLOW_HUB_UPDATE_DOCS") == "1"
CLI = [sys.executable, "-m", "workflow_hub._cli"]
WALL_CLOCK = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def _marked(text: str, name: str) -> re.Match[str]:
    found = re.search(rf"<!-- output: {re.escape(name)} -->\n```[a-z]*\n(.*?)```", text, flags=re.S)
    assert found is not None, f"no block marked {name!r}"
    return found


def check_block(document: str, name: str, produced: str, *, streams: tuple[str, ...] = ()) -> None:
    """The block ``name`` of ``document`` is ``produced`` (or becomes it, when updating).

    With ``streams`` (line prefixes), the block's lines of each stream must be the first lines of
    that stream, in order, but how the streams interleave may differ (frames and hook events
    travel separately)."""
    path = ROOT / document
    text = path.read_text(encoding="utf-8")
    found = _marked(text, name)
    produced = produced.rstrip("\n") + "\n"
    if UPDATE:
        path.write_text(text[: found.start(1)] + produced + text[found.end(1) :], encoding="utf-8")
        return
    if streams:
        for prefix in streams:
            shown = [line for line in found.group(1).splitlines() if line.startswith(prefix)]
            ran = [line for line in produced.splitlines() if line.startswith(prefix)]
            assert shown, f"{document}'s {name!r} block has no {prefix!r} lines"
            assert shown == ran[: len(shown)], (
                f"{document}'s {name!r} block, lines {prefix!r}:\n" + produced
            )
        return
    assert found.group(1) == produced, (
        f"{document}'s {name!r} block is not what the program prints now "
        "(WORKFLOW_HUB_UPDATE_DOCS=1 rewrites it):\n" + produced
    )


# --- quickstart.md: the program's output --------------------------------------------------------


def test_the_quickstart_prints_what_the_page_says() -> None:
    page = (ROOT / "docs/quickstart.md").read_text(encoding="utf-8")
    (program,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)[:1]
    printed = re.search(r"It prints.*?```\n(.*?)```", page, flags=re.S)
    assert printed is not None
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=True
    )
    # The page explains lines with "(…)" beside them; where the hook line lands among the status
    # lines is not fixed (the page says so), so it is checked apart.
    shown = [re.sub(r"\s{2,}\(.*\)$", "", line) for line in printed.group(1).splitlines()]
    ran = result.stdout.splitlines()
    assert [line for line in shown if "hook:" not in line] == [
        line for line in ran if "hook:" not in line
    ]
    assert [line for line in shown if "hook:" in line] == [line for line in ran if "hook:" in line]


# --- quickstart.md: status ------------------------------------------------------------------------


async def test_the_status_examples_print_what_the_page_says(hub: WorkflowActivityHub) -> None:
    """The page's state (two builds working, a deploy waiting for input, a settled failure),
    its commands run."""
    hub.register_publisher().publish_snapshot(
        "ready",
        [
            root("build"),
            root("lint"),
            attrs.evolve(
                root("deploy", state="blocked", reason="awaiting_input", active=0, blocks=1),
                labels={"team": "web", "env": "prod"},
            ),
            attrs.evolve(
                root("smoke", state="idle", reason="quiescent", active=0, attention=True),
                labels={"team": "qa", "env": "prod"},
            ),
        ],
    )
    page = (ROOT / "docs/quickstart.md").read_text(encoding="utf-8")
    commands = [
        line.removeprefix("$ ")
        for line in _marked(page, "status-examples").group(1).splitlines()
        if line.startswith("$ ")
    ]
    assert commands
    async with served(hub) as url:
        lines = []
        for command in commands:
            shell = command.replace("http://127.0.0.1:8765", url).replace(
                ".venv/bin/workflow-hub", " ".join(CLI)
            )
            with trio.fail_after(60):
                result = await trio.run_process(
                    ["bash", "-c", shell], capture_stdout=True, check=False
                )
            lines += [f"$ {command}", *result.stdout.decode().splitlines()]
    check_block("docs/quickstart.md", "status-examples", "\n".join(lines))


# --- demo.md: the screens ------------------------------------------------------------------------


@pytest.fixture
def fixed_wall_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setattr(time, "time", lambda: WALL_CLOCK)
    yield
    monkeypatch.undo()
    time.tzset()


def demo_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--seed", "4", *argv])


def screen_at(seconds: float, width: int, height: int) -> str:
    """The live view ``seconds`` into the default 20-second demo (seed 4), at width x height."""
    output = RichOutput(pane_lines=12, events=deque(maxlen=200))

    async def main() -> str:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(play_demo, demo_args(), output)
            await trio.sleep(seconds)
            await trio.testing.wait_all_tasks_blocked()
            console = Console(
                width=width, height=height, file=io.StringIO(), record=True, color_system=None
            )
            console.print(output.renderable())
            nursery.cancel_scope.cancel()
        return "\n".join(line.rstrip() for line in console.export_text().splitlines())

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.usefixtures("fixed_wall_clock")
@pytest.mark.parametrize(
    ("name", "seconds", "width", "height"),
    [("screen-4s", 4.0, 120, 30), ("screen-10s", 9.45, 120, 20), ("screen-80x24", 6.0, 80, 24)],
)
def test_the_demo_screens_are_the_programs(
    name: str, seconds: float, width: int, height: int
) -> None:
    check_block("docs/demo.md", name, screen_at(seconds, width, height))


@pytest.mark.usefixtures("fixed_wall_clock")
def test_the_plain_lines_are_the_programs() -> None:
    stream = io.StringIO()

    async def main() -> None:
        with trio.move_on_after(1.2):
            await play_demo(demo_args(), PlainOutput(stream))

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    lines = stream.getvalue().splitlines()
    frames = [index for index, line in enumerate(lines) if line.startswith("frame")]
    # The page shows the lines up to the fifth frame, as one run interleaved them.
    shown = lines[: frames[4] + 1] if UPDATE else lines
    check_block("docs/demo.md", "plain", "\n".join(shown), streams=("frame", "hook"))


def test_serve_says_where_the_dashboard_is_as_the_page_shows(tmp_path: Path) -> None:
    """As a fresh clone's reader runs it after ``make demo`` (issue 36)."""
    result = subprocess.run(
        [".venv/bin/workflow-hub", "serve", "--port", "0", "--duration", "1"],
        cwd=clone(tmp_path),
        env=unactivated_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    url = result.stdout.splitlines()[0]
    said = result.stderr.replace(url, "http://127.0.0.1:8765")
    check_block("docs/dashboard.md", "serve-stderr", said)


# --- dashboard.md: what the page says ------------------------------------------------------------


def test_the_dashboard_caption_says_the_feed_order_the_page_says() -> None:
    """The page's feed heading says its order (tests/dashboard check the order itself); the
    caption of the screenshot says the same, never "at the bottom"."""
    from workflow_hub.server import create_app  # noqa: F401  (the page ships with the server)

    page = (ROOT / "src/workflow_hub/server/static/index.html").read_text(encoding="utf-8")
    heading = re.search(r'id="feed-heading">[^<]*<span class="count">\((.*?)\)</span>', page)
    assert heading is not None
    order = heading.group(1)
    assert order == "newest first"
    caption = (ROOT / "docs/dashboard.md").read_text(encoding="utf-8")
    assert f"listed {order}" in caption
    assert "at the bottom" not in caption
