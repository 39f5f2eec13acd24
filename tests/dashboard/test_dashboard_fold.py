"""The dashboard's JavaScript fold equals the Python one, frame by frame.

The page folds frames with ``_dashboard/fold.js``; here node runs that file on the same frames as
``ActivityView`` and ``aggregate`` (and the demo's event descriptions), and every intermediate
picture must match: change kind, cursor, availability, roots in order (as wire JSON), sync and
supersession flags, rejection count, and the aggregate with its message. The demo's event
descriptions come from the internal ``workflow_hub._cli._demo`` (the command has no public API).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.dashboard import DASHBOARD, require_program
from tests.support.processes import stop_group
from workflow_hub import (
    Availability,
    ChangedFrame,
    Cursor,
    FailureDetail,
    Frame,
    LifecycleEvent,
    RemovedFrame,
    RootActivity,
    RunStatus,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageStatus,
    StageTarget,
    ToolNodeStatus,
    ToolTarget,
    WorkflowEvent,
)
from workflow_hub._cli._output import EVENT_ERROR_MAX, describe_event, event_error
from workflow_hub.reporting import ActivityView, aggregate
from workflow_hub.testing import strategies as ws
from workflow_hub.wire import dumps, loads, to_wire

DRIVER = Path(__file__).parents[1] / "js" / "fold_driver.js"


class NodeFold:
    """One node process folding one sequence per request."""

    def __init__(self, node: str) -> None:
        self._process = subprocess.Popen(
            [node, str(DRIVER), str(DASHBOARD / "fold.js")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            start_new_session=True,
        )

    def run(
        self,
        frames: Sequence[Frame],
        events: Sequence[WorkflowEvent] = (),
        *,
        feed: Sequence[dict[str, Any]] = (),
        feed_limit: int = 50,
    ) -> dict[str, Any]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        request = {
            "frames": [to_wire(frame) for frame in frames],
            "events": [to_wire(event) for event in events],
            "feed": list(feed),
            "feedLimit": feed_limit,
        }
        self._process.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        assert line, "the node fold driver exited"
        # Every number as a double, as JavaScript holds it: a timestamp past 2**53 prints in
        # other digits from each language, and parses back to the same double.
        result: dict[str, Any] = json.loads(line, parse_int=float)
        return result

    def close(self) -> None:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.close()  # the driver ends at the end of its input
        try:
            self._process.wait(timeout=10)
        finally:
            stop_group(self._process)
        self._process.stdout.close()


@pytest.fixture(scope="module")
def node_fold() -> Iterator[NodeFold]:
    fold = NodeFold(require_program("node", "WORKFLOW_HUB_NODE"))
    yield fold
    fold.close()


def python_fold(frames: Sequence[Frame]) -> list[dict[str, Any]]:
    """What the Python view holds after each frame, in the driver's shape."""
    view = ActivityView()
    results = []
    for frame in frames:
        change = view.apply(frame)
        status = aggregate(view)
        results.append(
            {
                "change": {
                    "kind": str(change.kind),
                    "rootIds": list(change.root_ids),
                    "rejection": None if change.rejection is None else str(change.rejection),
                },
                "availability": None if view.availability is None else str(view.availability),
                "detail": view.detail,
                "cursor": None if view.cursor is None else to_wire(view.cursor),
                "roots": [to_wire(root) for root in view.roots],
                "known": view.known,
                "superseded": view.superseded,
                "inSync": view.in_sync,
                "rejected": view.rejected,
                "aggregate": {
                    "state": str(status.state),
                    "reason": None if status.reason is None else str(status.reason),
                    "attention": status.attention,
                    "roots": status.roots,
                    "working": status.working,
                    "blocked": status.blocked,
                    "awaitingInput": status.awaiting_input,
                    "message": status.message,
                },
            }
        )
    # Through JSON, as the driver's output is, with every number a double as in JavaScript.
    loaded: list[dict[str, Any]] = json.loads(json.dumps(results), parse_int=float)
    return loaded


def assert_same_fold(node_fold: NodeFold, frames: Sequence[Frame]) -> None:
    expected = python_fold(frames)
    actual = node_fold.run(frames)["results"]
    assert len(actual) == len(expected)
    for index, (js, py) in enumerate(zip(actual, expected, strict=True)):
        assert js == py, f"after frame {index}: {dumps(frames[index])}"


@pytest.fixture(scope="module")
def demo_stream() -> list[str]:
    """A recorded ``workflow-hub demo --json`` run: frames and hook events, one per line."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_hub._cli",
            *("demo", "--json", "--duration", "3"),
            *("--seed", "4"),
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=True,
    )
    return result.stdout.splitlines()


def test_the_demo_stream_folds_the_same(node_fold: NodeFold, demo_stream: list[str]) -> None:
    """Every frame of a whole demo run (snapshots of two epochs, changes, removals, the final
    unavailable snapshot) leaves the same picture and aggregate in both folds."""
    frames = [loads(Frame, line) for line in demo_stream if line.startswith('{"kind"')]
    kinds = {frame.kind for frame in frames}
    assert kinds == {"snapshot", "changed", "removed"}, "the recording covers every frame kind"
    assert len(frames) >= 20
    assert_same_fold(node_fold, frames)


def test_the_demo_events_read_as_in_the_demo(node_fold: NodeFold, demo_stream: list[str]) -> None:
    """The feed describes hook events in the demo's words (spacing aside)."""
    events = [loads(WorkflowEvent, line) for line in demo_stream if line.startswith('{"type"')]  # type: ignore[arg-type]
    assert {event.type for event in events} == {
        "workflow_lifecycle",
        "workflow_stage_completed",
        "workflow_activity_changed",
        "workflow_heartbeat",
    }
    descriptions = node_fold.run([], events)["descriptions"]
    assert descriptions == [" ".join(describe_event(event).split()) for event in events]


def test_events_of_generated_ids_read_the_same(node_fold: NodeFold) -> None:
    """A stage or tool whose id is generated (a Celery task's UUID) is named by its name too,
    in both languages; the length that decides it counts code points in both (astral
    characters are two UTF-16 units in JavaScript)."""
    uuid = "d18f8889-ef01-4a79-b1e6-d79060f00000"
    base = {
        "event_id": "e1",
        "cursor": Cursor(epoch="e", revision=1),
        "run_id": "r",
        "root_run_id": "r",
        "owner_session_id": "s",
        "occurred_at": 1,
        "observed_at": 1,
        "delivery": "live",
    }
    stage = StageTarget(
        run_id="r", stage_id=f"r:{uuid}", stage_name="proj.step", status="completed"
    )
    events: list[WorkflowEvent] = [
        LifecycleEvent(**base, target=stage),
        StageCompletedEvent(**base, target=stage),
        LifecycleEvent(
            **base,
            target=ToolTarget(run_id="r", tool_node_id=uuid, tool_name="fetch", status="running"),
        ),
        # Nine astral characters: 9 code points (written), 18 UTF-16 units.
        LifecycleEvent(**base, target=attrs.evolve(stage, stage_id="r:" + "\U0001f680" * 9)),
        LifecycleEvent(**base, target=attrs.evolve(stage, stage_id="r:" + "\U0001f680" * 17)),
    ]
    descriptions = node_fold.run([], events)["descriptions"]
    assert descriptions == [" ".join(describe_event(event).split()) for event in events]
    assert [("proj.step" in line, "fetch" in line) for line in descriptions] == [
        (True, False),
        (True, False),
        (False, True),
        (False, False),
        (True, False),
    ]


# A few epochs, revisions and ids, so that random sequences keep hitting the interesting cases:
# stale revisions, foreign epochs, frames before any snapshot, removals of absent roots, duplicate
# ids in a snapshot, changes while the source is not ready.
_EPOCHS = st.sampled_from(["e1", "e2", "e3"])
_IDS = st.sampled_from(["a", "b", "c", " ", "ü"])
_CURSORS = st.builds(Cursor, epoch=_EPOCHS, revision=st.integers(0, 8))
_ROOTS = ws.root_activities(root_run_ids=_IDS, graphs=st.none() | ws.root_graphs(max_nodes=2))
_FRAMES: st.SearchStrategy[Frame] = st.one_of(
    st.builds(
        SnapshotFrame,
        cursor=_CURSORS,
        availability=st.just(Availability.READY),
        roots=st.lists(_ROOTS, max_size=4).map(tuple),
    ),
    st.builds(
        SnapshotFrame,
        cursor=_CURSORS,
        availability=st.sampled_from(Availability).filter(
            lambda availability: availability is not Availability.READY
        ),
        detail=st.none() | ws.unknown_details(),  # C3: why it is unknown, or not said
    ),
    st.builds(ChangedFrame, cursor=_CURSORS, root=_ROOTS),
    st.builds(RemovedFrame, cursor=_CURSORS, root_run_id=_IDS),
)


@given(st.lists(_FRAMES, max_size=30))
def test_random_sequences_fold_the_same(node_fold: NodeFold, frames: list[Frame]) -> None:
    """Any sequence of frames, however broken, leaves both folds in the same place."""
    assert_same_fold(node_fold, frames)


def test_a_foreign_epoch_supersedes_in_both(node_fold: NodeFold) -> None:
    """The case the page shows as 'superseded': a change of a new epoch without its snapshot."""
    root = RootActivity(
        root_run_id="r",
        owner_session_id="s",
        state="working",
        reason="executing",
        active_execution_count=1,
        actionable_block_count=0,
        needs_attention=False,
    )
    frames: list[Frame] = [
        SnapshotFrame(cursor=Cursor(epoch="old", revision=1), availability="ready", roots=(root,)),
        ChangedFrame(cursor=Cursor(epoch="new", revision=2), root=root),
        SnapshotFrame(cursor=Cursor(epoch="new", revision=3), availability="ready", roots=()),
    ]
    results = node_fold.run(frames)["results"]
    assert [result["superseded"] for result in results] == [False, True, False]
    assert results[1]["aggregate"]["message"] == "activity unknown: source replaced"
    assert results[2]["aggregate"]["state"] == "idle"
    assert_same_fold(node_fold, frames)


def test_the_feed_keeps_the_latest_events_newest_first(
    node_fold: NodeFold, demo_stream: list[str]
) -> None:
    """A bounded feed: the newest event first, at most ``limit``, and a dropped-events line
    where the server said it skipped some."""
    events = [json.loads(line) for line in demo_stream if line.startswith('{"type"')][:12]
    feed = [{"type": event["type"], "data": event} for event in events[:8]]
    feed.append({"type": "dropped", "data": {"count": 3}})
    feed += [{"type": event["type"], "data": event} for event in events[8:]]
    entries = node_fold.run([], feed=feed, feed_limit=5)["feed"]
    assert len(entries) == 5
    assert [entry["seq"] for entry in entries] == [13, 12, 11, 10, 9]
    newest = loads(WorkflowEvent, json.dumps(events[-1]))  # type: ignore[arg-type]
    assert entries[0]["text"] == " ".join(describe_event(newest).split())
    assert entries[4]["type"] == "dropped"
    assert entries[4]["text"].startswith("3 events dropped")


def test_every_hook_event_carries_a_clock_time(node_fold: NodeFold, demo_stream: list[str]) -> None:
    """Each feed line has the HH:MM:SS (local time, as node and Python both read it) of its
    event's ``occurredAt``, a heartbeat's of its ``scheduledAt``; an activity change, which
    carries no time, reads the time of the fact just before it (issue 39)."""
    events = [json.loads(line) for line in demo_stream if line.startswith('{"type"')][:40]
    feed = [{"type": event["type"], "data": event} for event in events]
    entries = node_fold.run([], feed=feed, feed_limit=40)["feed"]
    assert len(entries) == len(events)
    last = ""
    expected = []
    for event in events:
        at = event.get("occurredAt", event.get("scheduledAt"))
        if at is not None:
            last = datetime.fromtimestamp(at / 1000).strftime("%H:%M:%S")
        expected.append((last, at is not None))
    assert any(not own for _, own in expected), "the demo's stream has activity changes"
    assert [(entry["time"], entry["timeOwn"]) for entry in reversed(entries)] == expected


def _failed(target: RunTarget | StageTarget | ToolTarget) -> LifecycleEvent:
    return LifecycleEvent(
        event_id="e1",
        cursor=Cursor(epoch="e", revision=1),
        run_id="r1",
        root_run_id="r1",
        owner_session_id="s",
        occurred_at=1,
        observed_at=1,
        delivery="live",
        target=target,
    )


def test_failed_events_say_their_error_in_both_languages(node_fold: NodeFold) -> None:
    """C3, issue 39: the feed's line of a failed run, stage or tool ends with its error, as the
    terminal's does: line breaks and every whitespace Python splits on made one space (the
    information separator \\x1c is one, a BOM is not), cut to the same count of code points."""
    errors = [
        FailureDetail(message="deadline passed", type="TimeoutError"),
        FailureDetail(message="disk full"),
        FailureDetail(
            message=" expected 200\n\tgot 503\r\n\x1c\x85(retry)\u3000", type="HTTP\nError"
        ),
        FailureDetail(message="\ufeffbom kept\u2028next line"),
        FailureDetail(message="x" * 500, type="OSError"),
        FailureDetail(message="\U0001f680" * 300),
        FailureDetail(message="y" * EVENT_ERROR_MAX),
        FailureDetail(message="y" * (EVENT_ERROR_MAX + 1)),
    ]
    events = [
        _failed(RunTarget(run_id="r1", previous_status="running", status="failed", error=error))
        for error in errors
    ]
    events.append(
        _failed(
            StageTarget(
                run_id="r1",
                stage_id="r1:deploy",
                stage_name="Deploy",
                status="failed",
                error=errors[0],
            )
        )
    )
    events.append(
        _failed(
            ToolTarget(
                run_id="r1",
                tool_node_id="fetch-1",
                tool_name="fetch",
                status="failed",
                error=errors[0],
            )
        )
    )
    descriptions = node_fold.run([], events)["descriptions"]
    assert descriptions == [" ".join(describe_event(event).split()) for event in events]
    assert descriptions[0] == "run r1: running → failed: TimeoutError: deadline passed"
    assert descriptions[2] == "run r1: running → failed: HTTP Error: expected 200 got 503 (retry)"
    assert descriptions[3] == "run r1: running → failed: \ufeffbom kept next line"
    assert descriptions[-1] == "tool fetch-1: failed: TimeoutError: deadline passed"
    for description in descriptions[4:6]:
        assert description.endswith("…")


@given(
    ws.lifecycle_events(
        targets=st.one_of(
            ws.run_targets(statuses=st.just(RunStatus.FAILED)),
            ws.stage_targets(statuses=st.just(StageStatus.FAILED)),
            ws.tool_targets(statuses=st.just(ToolNodeStatus.FAILED)),
        )
    )
)
def test_any_failed_event_reads_the_same(node_fold: NodeFold, event: LifecycleEvent) -> None:
    """Any failed target, with any error the contract allows (or none): the same words in both
    languages, spacing aside (ids may hold any whitespace), and one line."""
    (description,) = node_fold.run([], [event])["descriptions"]
    expected = describe_event(event)
    assert " ".join(description.split()) == " ".join(expected.split())
    error = getattr(event.target, "error", None)
    shown = "" if error is None else event_error(error)  # "" for a message of spaces only
    if shown:
        assert expected.endswith(": " + shown)
    assert "\n" not in shown
