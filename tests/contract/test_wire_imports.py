"""Decoding needs no cattrs: ``import workflow_hub`` and every ``loads``/``from_wire`` leave it
unimported, and the first ``to_wire`` imports it (``workflow-hub status`` decodes a snapshot on
each refresh and never encodes, so cattrs was most of its import cost beyond attrs)."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import json, sys
import workflow_hub
from workflow_hub import SnapshotFrame
from workflow_hub.reporting import aggregate
from workflow_hub.wire import dumps, from_wire, loads, to_wire

text = sys.stdin.read()
frame = loads(SnapshotFrame, text)
assert from_wire(SnapshotFrame, json.loads(text)) == frame
print(aggregate(frame).message)
assert dumps(frame) == text, "dumps gives the same text back"
print("cattrs before to_wire:", "cattrs" in sys.modules)
assert to_wire(frame) == json.loads(text)
print("cattrs after to_wire:", "cattrs" in sys.modules)
"""


def test_decoding_never_imports_cattrs_and_encoding_does() -> None:
    """C1's decoding path (a snapshot with a graph and a prompt) and the aggregate run without
    cattrs; the first to_wire loads it and agrees with dumps and loads."""
    from workflow_hub import (
        Cursor,
        NodePrompt,
        RootActivity,
        RootGraph,
        SnapshotFrame,
        StageNode,
    )
    from workflow_hub.wire import dumps

    graph = RootGraph(
        nodes=(
            StageNode(
                id="r:approve",
                run_id="r",
                node_id="approve",
                name="approve",
                parent_ids=(),
                depth=0,
                status="awaiting_input",
                pending_prompt=NodePrompt(
                    id="p", kind="confirm", message="Ship it?", created_at=1_700_000_000_000
                ),
            ),
        )
    )
    frame = SnapshotFrame(
        cursor=Cursor(epoch="e", revision=3),
        availability="ready",
        roots=(
            RootActivity(
                root_run_id="r",
                owner_session_id="s",
                state="blocked",
                reason="awaiting_input",
                active_execution_count=0,
                actionable_block_count=1,
                needs_attention=True,
                graph=graph,
            ),
        ),
    )
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        input=dumps(frame),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "1 waiting for input",
        "cattrs before to_wire: False",
        "cattrs after to_wire: True",
    ]
