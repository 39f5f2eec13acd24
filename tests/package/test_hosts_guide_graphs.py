"""The hosts guide's examples publish a graph, so a question shows in the documented pattern.

Issue 39: the dashboard says so when a source publishes no graph (as ``watch`` does); the
programs of docs/hosts.md, which people copy, must not be such sources. Each example runs as
printed with a recorder put in front of it: the three ``open_hub`` doors (trio, asyncio,
threads) are wrapped so that one more observer, a plain function, writes every frame the hub
publishes to stderr as wire JSON. Every root of every frame carries a graph, and at some frame
one holds an open question. The uvicorn program serves until stopped: its snapshot is read
where the page reads it, from ``/hub/v1/snapshot``, then the program is stopped.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.processes import lines_until, owned_process
from workflow_hub import ChangedFrame, Frame, RootActivity, SnapshotFrame, StageNode
from workflow_hub.wire import loads

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "hosts.md"
MARK = "recorded-frame "
# A safety net for a loaded machine: the waits end on the lines themselves.
NET = 60.0

RECORDER = f"""
import sys as _sys
from contextlib import asynccontextmanager as _acm, contextmanager as _cm

import workflow_hub as _hub
import workflow_hub.asyncio as _asyncio_host
import workflow_hub.sync as _thread_host
from workflow_hub.wire import dumps as _dumps


def _record(frame):
    _sys.stderr.write({MARK!r} + _dumps(frame) + "\\n")
    _sys.stderr.flush()


def _observed(open_hub):  # trio's and asyncio's: observe() takes a plain function
    @_acm
    async def opened(*args, **kwargs):
        async with open_hub(*args, **kwargs) as hub:
            hub.observe(_record)
            yield hub
    return opened


def _observed_in_thread(open_hub):  # the thread host: an observer of the hub in its thread
    @_cm
    def opened(*args, **kwargs):
        with open_hub(*args, **kwargs) as hub:
            hub.call(hub.trio_hub.observe, _record)
            yield hub
    return opened


_hub.open_hub = _observed(_hub.open_hub)
_asyncio_host.open_hub = _observed(_asyncio_host.open_hub)
_thread_host.open_hub = _observed_in_thread(_thread_host.open_hub)
"""


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)


def finite_examples() -> dict[str, str]:
    """The guide's programs that run to their end, by the host they open."""
    found = {}
    for program in examples():
        if "uvicorn" in program:
            continue
        if "trio.run(" in program:
            found["trio"] = program
        elif "asyncio.run(" in program:
            found["asyncio"] = program
        elif "from workflow_hub.sync import open_hub" in program:
            found["threads"] = program
    return found


def asks(root: RootActivity) -> bool:
    """Whether the root's graph holds an open question (on a run, or on a stage)."""
    graph = root.graph
    assert graph is not None
    return bool(graph.run_prompts) or any(
        isinstance(node, StageNode) and node.pending_prompt is not None for node in graph.nodes
    )


def published_roots(frames: list[Frame]) -> list[RootActivity]:
    roots: list[RootActivity] = []
    for frame in frames:
        if isinstance(frame, SnapshotFrame):
            roots.extend(frame.roots or ())
        elif isinstance(frame, ChangedFrame):
            roots.append(frame.root)
    return roots


def test_the_guide_has_an_example_for_each_host() -> None:
    assert sorted(finite_examples()) == ["asyncio", "threads", "trio"]
    assert sum("uvicorn" in program for program in examples()) == 1


@pytest.mark.parametrize("host", ["trio", "asyncio", "threads"])
def test_each_example_publishes_its_graph_with_a_question(host: str) -> None:
    """What the page needs: every root each example publishes carries its graph
    (stages and prompts), and the question the example asks is in it while it waits."""
    program = RECORDER + finite_examples()[host]
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=NET, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith(MARK)]
    frames = [loads(Frame, line.removeprefix(MARK)) for line in lines]
    roots = published_roots(frames)
    assert roots, result.stderr
    assert [root.root_run_id for root in roots if root.graph is None] == []
    assert any(asks(root) for root in roots)
    # The example said so on its status line while the question was open.
    assert "waiting for input" in result.stdout


def test_the_uvicorn_example_serves_a_graph_with_its_question() -> None:
    """The mounted app's snapshot, which the page reads, holds the run's graph and the question
    it waits at."""
    (program,) = [program for program in examples() if "uvicorn" in program]
    assert "port=8000" in program
    with owned_process(
        [sys.executable, "-c", program.replace("port=8000", "port=0")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as server:
        lines = lines_until(
            server, lambda lines: any("Uvicorn running on" in line for line in lines), NET
        )
        address = next(
            match.group(1)
            for line in lines
            if (match := re.search(r"Uvicorn running on (http://\S+)", line))
        )
        response = httpx.get(f"{address}/hub/v1/snapshot", timeout=NET)
    response.raise_for_status()
    snapshot = loads(SnapshotFrame, response.text)
    assert snapshot.availability == "ready"
    roots = snapshot.roots or ()
    assert [root.root_run_id for root in roots] == ["build-42"]
    assert all(asks(root) for root in roots)
