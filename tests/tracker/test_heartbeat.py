"""Heartbeats on a mock clock: boundaries, skipping, observation only (SPEC §5, P7).

Every async test runs under ``trio.testing.MockClock(autojump_threshold=0)``: pytest-trio's
``autojump_clock`` fixture, which must be an argument of the test itself to reach ``trio.run``.
The tracker gets a clock derived from trio's, so epoch milliseconds are exactly
``trio.current_time() * 1000`` and the mock clock starts at 0.

The boundary arithmetic (``latest_boundary``, ``next_boundary``) and the one-owner check are about
the internal module ``workflow_hub.tracker._heartbeat``, so those tests import it by its private name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from tests.support.consumers import RecordingDispatcher
from workflow_hub import (
    ContractError,
    HeartbeatEvent,
    WorkflowActivityHub,
    run_heartbeats,
)
from workflow_hub.tracker import RunTracker
from workflow_hub.tracker._heartbeat import latest_boundary, next_boundary


def trio_ms() -> float:
    return trio.current_time() * 1000


@pytest.fixture
async def tracker(
    hub: WorkflowActivityHub, dispatcher: RecordingDispatcher
) -> AsyncIterator[RunTracker]:
    tracker = RunTracker(hub.register_publisher(), owner_session_id="session-1", clock=trio_ms)
    tracker.start()
    async with trio.open_nursery() as nursery:
        await nursery.start(tracker.run_heartbeats)
        yield tracker
        nursery.cancel_scope.cancel()


async def settle_at(seconds: float) -> None:
    await trio.sleep_until(seconds)
    await trio.testing.wait_all_tasks_blocked()


async def test_a_running_run_beats_on_its_boundaries(
    autojump_clock: trio.testing.MockClock, tracker: RunTracker, dispatcher: RecordingDispatcher
) -> None:
    """§5/P7: started at 1 000 ms, 1-minute interval: beats at 61 000 and 121 000, not before."""
    tracker.add_run("root", status="running", heartbeat_interval_minutes=1, started_at=1_000)
    await settle_at(60.999)
    assert dispatcher.heartbeats() == []
    await settle_at(61.0)
    assert dispatcher.heartbeats() == [
        HeartbeatEvent(
            run_id="root",
            root_run_id="root",
            owner_session_id="session-1",
            scheduled_at=61_000,
            interval_minutes=1,
        )
    ]
    await settle_at(121.0)
    assert dispatcher.heartbeat_times() == [("root", 61_000), ("root", 121_000)]


async def test_boundaries_missed_while_paused_are_never_back_filled(
    autojump_clock: trio.testing.MockClock, tracker: RunTracker, dispatcher: RecordingDispatcher
) -> None:
    """§5: a paused run does not beat; after resuming, missed boundaries are skipped."""
    tracker.add_run("root", status="running", heartbeat_interval_minutes=1, started_at=1_000)
    await settle_at(30.0)
    tracker.set_run_status("root", "paused")
    await settle_at(150.0)
    tracker.set_run_status("root", "running")
    await settle_at(181.0)
    assert dispatcher.heartbeat_times() == [("root", 181_000)]


async def test_only_live_top_level_runs_with_an_interval_beat(
    autojump_clock: trio.testing.MockClock, tracker: RunTracker, dispatcher: RecordingDispatcher
) -> None:
    """§5: nested, restored and interval-less runs never beat; pending ones neither."""
    tracker.add_run("root", status="running", heartbeat_interval_minutes=1, started_at=0)
    tracker.add_run(
        "child",
        parent_run_id="root",
        status="running",
        heartbeat_interval_minutes=1,
        started_at=0,
    )
    tracker.add_run("old", status="running", live=False, heartbeat_interval_minutes=1)
    tracker.add_run("plain", status="running")
    tracker.add_run("later", heartbeat_interval_minutes=1)
    await settle_at(60.0)
    assert dispatcher.heartbeat_times() == [("root", 60_000)]


async def test_the_start_defaults_to_when_the_run_is_first_seen_running(
    autojump_clock: trio.testing.MockClock, tracker: RunTracker, dispatcher: RecordingDispatcher
) -> None:
    """§5: without started_at, the boundaries count from the moment the run started running."""
    tracker.add_run("root", heartbeat_interval_minutes=0.5)
    await settle_at(10.0)
    tracker.set_run_status("root", "running")
    await settle_at(70.0)
    assert dispatcher.heartbeat_times() == [("root", 40_000), ("root", 70_000)]


async def test_boundaries_before_the_task_started_are_skipped(
    autojump_clock: trio.testing.MockClock,
    hub: WorkflowActivityHub,
    dispatcher: RecordingDispatcher,
) -> None:
    """§5: a heartbeat task started late does not back-fill the boundaries it missed."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="session-1", clock=trio_ms)
    tracker.start()
    tracker.add_run("root", status="running", heartbeat_interval_minutes=1, started_at=0)
    await settle_at(150.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(run_heartbeats, tracker)
        await settle_at(180.0)
        nursery.cancel_scope.cancel()
    assert dispatcher.heartbeat_times() == [("root", 180_000)]


async def test_heartbeats_are_observation_only(
    autojump_clock: trio.testing.MockClock,
    hub: WorkflowActivityHub,
    tracker: RunTracker,
    dispatcher: RecordingDispatcher,
) -> None:
    """§5/P7: a heartbeat publishes no frame, advances no cursor and changes no summary."""
    tracker.add_run("root", status="running", heartbeat_interval_minutes=1, started_at=0)
    cursor, activity = hub.cursor, tracker.activity("root")
    await settle_at(180.0)
    assert len(dispatcher.heartbeats()) == 3
    assert hub.cursor == cursor
    assert tracker.activity("root") == activity


async def test_no_heartbeats_while_hydrating(
    autojump_clock: trio.testing.MockClock, tracker: RunTracker, dispatcher: RecordingDispatcher
) -> None:
    """§5: hydration synthesises nothing: boundaries passing while it lasts are skipped."""
    tracker.add_run("root", status="running", heartbeat_interval_minutes=1, started_at=0)
    with tracker.hydrating():
        await settle_at(61.0)
    await settle_at(119.0)
    assert dispatcher.heartbeats() == []
    await settle_at(120.0)
    assert dispatcher.heartbeat_times() == [("root", 120_000)]


async def test_a_second_heartbeat_task_for_one_tracker_is_refused(
    autojump_clock: trio.testing.MockClock, tracker: RunTracker
) -> None:
    """One task per tracker, or every heartbeat would be emitted twice."""
    with pytest.raises(RuntimeError, match="already running"):
        await run_heartbeats(tracker)


def test_boundaries_are_start_plus_n_intervals_the_first_strictly_after_start() -> None:
    """§5: boundaries are start + n * interval with n >= 1."""
    assert latest_boundary(1_000, 60_000, 60_999) is None
    assert latest_boundary(1_000, 60_000, 61_000) == 61_000
    assert latest_boundary(1_000, 60_000, 200_000) == 181_000
    assert next_boundary(1_000, 60_000, 1_000) == 61_000
    assert next_boundary(1_000, 60_000, 0) == 61_000
    assert next_boundary(1_000, 60_000, 61_000) == 121_000


# --- issue 12 item 8: intervals that cannot be scheduled ------------------------------------


@pytest.mark.parametrize("interval", [5e-324, 1e-9, 1 / 120_000, 1e308])
def test_an_interval_that_cannot_be_scheduled_is_refused_at_add_run(interval: float) -> None:
    """C1: a denormal, sub-millisecond or overflowing interval is a ContractError naming the
    argument, and the run is not tracked (it used to crash the heartbeat task)."""
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="s", clock=lambda: 0.0)
    tracker.start()
    with pytest.raises(ContractError, match="heartbeat_interval_minutes"):
        tracker.add_run("r", status="running", heartbeat_interval_minutes=interval)
    assert "r" not in tracker


def test_boundaries_never_overflow() -> None:
    """§5: the boundary arithmetic is safe for any accepted interval and any finite times."""
    smallest = 1 / 60_000 * 60_000  # the shortest accepted interval, in milliseconds
    assert latest_boundary(0, smallest, 1e300) == 1e300
    assert next_boundary(0, smallest, 1e300) is None  # floats cannot tell the next one apart
    assert latest_boundary(-1.7e308, smallest, 1.7e308) is None
    assert next_boundary(-1.7e308, smallest, 1.7e308) is None
    assert next_boundary(0, 1e300, 5) == 1e300


async def test_the_shortest_interval_far_from_its_start_beats_without_crashing(
    autojump_clock: trio.testing.MockClock,
    hub: WorkflowActivityHub,
    dispatcher: RecordingDispatcher,
) -> None:
    """§5: a run whose next boundary floats cannot represent beats once, then waits quietly."""
    far = 1e20
    tracker = RunTracker(
        hub.register_publisher(), owner_session_id="s", clock=lambda: far + trio_ms()
    )
    tracker.start()
    async with trio.open_nursery() as nursery:
        await nursery.start(tracker.run_heartbeats)
        tracker.add_run("r", status="running", heartbeat_interval_minutes=1 / 60_000, started_at=0)
        await settle_at(5.0)
        nursery.cancel_scope.cancel()
    assert dispatcher.heartbeat_times() == [("r", far)]


def test_heartbeat_bookkeeping_has_one_owner() -> None:
    """Issue 13: the schedule owns its state; the heartbeat module needs no tracker internals."""
    import ast
    import inspect

    import workflow_hub.tracker._heartbeat as heartbeat_module

    tree = ast.parse(inspect.getsource(heartbeat_module))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "_tracker" not in imported
    # Nothing in the module touches another object's private attribute.
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            assert isinstance(node.value, ast.Name), node.attr
            assert node.value.id == "self", node.attr
    assert not any(
        name.startswith("_heartbeat") for name in RunTracker.__slots__ if name != "_heartbeats"
    )
