"""examples/langgraph_approval.py runs as its user would run it, with the answers typed for them.

The example is started as a real subprocess; the test reads the dashboard's URL it prints, asks
the served hub (``GET /v1/snapshot``) what it shows while the graph waits for approval, answers
on standard input, and checks what the hub shows when the graph finished.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import httpx

from tests.support.processes import stop_group
from workflow_hub import RootActivity, SnapshotFrame
from workflow_hub.wire import loads

from .graphs import statuses, summary

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_approval.py"
TIMEOUT = 30.0


class Output:
    """The example's standard output, read in a thread so that every wait has a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self._chars: queue.Queue[str] = queue.Queue()
        self.text = ""
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        while char := stream.read(1):
            self._chars.put(char)
        self._chars.put("")

    def until(self, marker: str) -> str:
        """Everything up to and including the first ``marker`` not read yet."""
        start = len(self.text)
        while marker not in self.text[start:]:
            char = self._chars.get(timeout=TIMEOUT)
            assert char, f"the example ended before {marker!r}: {self.text!r}"
            self.text += char
        return self.text[start:]


def root(url: str) -> RootActivity:
    response = httpx.get(f"{url}v1/snapshot", timeout=TIMEOUT)
    response.raise_for_status()
    frame = loads(SnapshotFrame, response.text)
    assert isinstance(frame, SnapshotFrame)
    assert frame.roots is not None
    (found,) = (r for r in frame.roots if r.root_run_id == "note-1")
    return found


def test_the_example_waits_for_approval_and_finishes() -> None:
    """The user's view: blocked / awaiting_input on the approval (a prompt on the subgraph's
    stage, every earlier stage done, the retried draft and the tool included); after the answer,
    idle with every stage completed."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--pace", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        output = Output(process.stdout)
        url = output.until("/\n").split("dashboard: ", 1)[1].strip()
        assert output.until("[yes/no] ").startswith("Publish this draft?")

        waiting = root(url)
        assert summary(waiting) == ("blocked", "awaiting_input", 0, 1, True)
        assert statuses(waiting) == {
            "plan": "completed",
            "research": "completed",
            "search": "completed",
            "draft": "completed",
            "review": "running",
            "check": "completed",
            "approve": "awaiting_input",
        }

        process.stdin.write("yes\n")
        process.stdin.flush()
        assert "done: published: True" in output.until("press Enter")
        done = root(url)
        assert summary(done) == ("idle", "quiescent", 0, 0, False)
        assert set(statuses(done).values()) == {"completed"}

        process.stdin.write("\n")
        process.stdin.flush()
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        stop_group(process)
        assert process.stderr is not None
        process.stderr.close()
        process.stdout.close()
        process.stdin.close()
