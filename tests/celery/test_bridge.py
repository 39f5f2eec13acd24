"""The bridge core on a real tracker, with events as Celery's receiver delivers them (dicts).

These are the cases a live worker cannot be made to produce on demand (rejections, unknown
event types, out-of-canvas parents, retention); tests/celery/test_canvases.py has the real thing.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import pytest

from workflow_hub import RootActivity, StageNode, WorkflowActivityHub
from workflow_hub.celery import CeleryBridge, CeleryWatch
from workflow_hub.tracker import RunTracker


def setup(**options: Any) -> tuple[CeleryBridge, RunTracker]:
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="celery", include_graph=True)
    bridge = CeleryBridge(tracker, **options)
    bridge.begin()
    bridge.recovered({}, 0.0)
    return bridge, tracker


def event(kind: str, uuid: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": uuid, "hostname": "w1@h", **fields}


def statuses(root: RootActivity) -> dict[str, str]:
    assert root.graph is not None
    return {n.node_id: n.status for n in root.graph.nodes if isinstance(n, StageNode)}


def test_a_rejected_task_requeued_waits_and_one_dropped_fails() -> None:
    """task-rejected: requeue=True is pending again (it waits in its queue), requeue=False is a
    failure (nothing will run it): docs/celery.md."""
    bridge, tracker = setup()
    bridge.apply([event("task-received", "a", name="t", root_id="a")], 0.0)
    bridge.apply([event("task-rejected", "a", requeue=True)], 0.1)
    assert statuses(tracker.activity("a")) == {"a": "pending"}
    bridge.apply([event("task-rejected", "a", requeue=False)], 0.2)
    assert statuses(tracker.activity("a")) == {"a": "failed"}
    assert tracker.run_status("a") == "failed"
    assert tracker.activity("a").needs_attention


def test_unknown_event_types_are_counted_and_change_nothing() -> None:
    bridge, tracker = setup()
    bridge.apply([{"type": "task-frobnicated", "uuid": "x"}, {"no": "type"}], 0.0)
    assert bridge.statistics().ignored == 2
    assert tracker.activities() == ()


def test_a_parent_outside_the_root_or_unseen_is_no_edge_and_a_retry_is_no_self_edge() -> None:
    bridge, tracker = setup()
    bridge.apply(
        [
            event("task-received", "a", name="t", root_id="r", parent_id="elsewhere"),
            event("task-received", "a", name="t", root_id="r", parent_id="a", retries=1),
        ],
        0.0,
    )
    root = tracker.activity("r")
    assert root.graph is not None
    assert [n.parent_ids for n in root.graph.nodes] == [()]


def test_a_root_whose_tasks_succeeded_ends_after_the_settle_time_and_a_late_step_reopens_it() -> (
    None
):
    """A chain's next step is sent after its parent succeeded: until ``settle`` has passed the
    run goes on (working/automatic_continuation), and a step arriving later reopens it."""
    bridge, tracker = setup(settle=1.0)
    bridge.apply([event("task-started", "a", name="t", root_id="a")], 0.0)
    bridge.apply([event("task-succeeded", "a")], 0.1)
    root = tracker.activity("a")
    assert (root.state, root.reason) == ("working", "automatic_continuation")
    bridge.tick(0.9)
    assert tracker.run_status("a") == "running"
    bridge.tick(1.2)
    assert tracker.run_status("a") == "completed"
    bridge.apply([event("task-received", "b", name="t", root_id="a", parent_id="a")], 1.5)
    assert tracker.run_status("a") == "running"
    assert statuses(tracker.activity("a")) == {"a": "completed", "b": "pending"}


def test_ended_roots_are_removed_after_keep_ended_or_beyond_max_ended() -> None:
    bridge, tracker = setup(keep_ended=10.0, max_ended=2)
    for n, task in enumerate("abc"):
        bridge.apply([event("task-failed", task, name="t", root_id=task)], float(n))
    bridge.tick(3.0)
    assert [r.root_run_id for r in tracker.activities()] == ["b", "c"]
    bridge.tick(11.5)
    assert [r.root_run_id for r in tracker.activities()] == ["c"]
    assert bridge.statistics().roots == 1


def test_a_worker_offline_with_tasks_in_flight_makes_them_lost() -> None:
    """worker-offline (or a missed heartbeat window) with a task in flight: the stage is blocked
    and needs an intervention; the worker's return asks for a resync."""
    bridge, tracker = setup()
    bridge.apply(
        [
            {"type": "worker-heartbeat", "hostname": "w1@h", "freq": 2.0},
            event("task-started", "a", name="t", root_id="a"),
        ],
        0.0,
    )
    bridge.tick(3.9)
    assert statuses(tracker.activity("a")) == {"a": "running"}
    bridge.tick(4.1)
    root = tracker.activity("a")
    assert (root.state, root.reason, root.needs_attention) == (
        "blocked",
        "manual_intervention",
        True,
    )
    bridge.apply([{"type": "worker-online", "hostname": "w1@h"}], 5.0)
    assert bridge.take_resync_requests() == ["w1@h"]
    bridge.resynchronised("w1@h", {"w1@h": {"active": [{"id": "a", "name": "t"}]}}, 5.5)
    root = tracker.activity("a")
    assert (root.state, root.reason, root.needs_attention) == ("working", "executing", False)


def test_a_workers_interval_is_the_smallest_it_announced() -> None:
    """A heartbeat answering the bridge's wake-up call says ``freq=5`` whatever the interval:
    the smallest announced is the worker's, and lost is judged by it."""
    bridge, _tracker = setup()
    bridge.apply([{"type": "worker-heartbeat", "hostname": "w", "freq": 5}], 0.0)
    bridge.apply([{"type": "worker-heartbeat", "hostname": "w", "freq": 1.0}], 1.0)
    bridge.apply([{"type": "worker-heartbeat", "hostname": "w", "freq": 5}], 1.5)
    [status] = bridge.workers()
    assert (status.heartbeat_interval, status.online) == (1.0, True)
    bridge.tick(3.4)
    assert bridge.workers()[0].online
    bridge.tick(3.6)
    assert not bridge.workers()[0].online
    assert not bridge.workers()[0].lost  # nothing was in flight on it


def test_a_terminated_task_is_a_kill_request_and_its_running_siblings_are_stopping() -> None:
    """§5 D1/D8: ``task-revoked`` with ``terminated`` is a kill request on the root's run: the
    siblings still running are stopping executions; once they end the run is killed."""
    bridge, tracker = setup()
    bridge.apply(
        [
            event("task-started", "a", name="t", root_id="r"),
            event("task-started", "b", name="t", root_id="r"),
            event("task-revoked", "a", terminated=True, signum=15),
        ],
        0.0,
    )
    root = tracker.activity("r")
    assert (root.state, root.reason, root.active_execution_count) == ("working", "stopping", 1)
    bridge.apply([event("task-succeeded", "b")], 0.5)
    assert tracker.run_status("r") == "killed"
    root = tracker.activity("r")
    assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", False)


def test_a_retry_event_that_arrives_after_the_next_attempt_changes_nothing() -> None:
    """Two pool processes send their events on their own connections: the attempt that raised
    Retry and the next one, which succeeded, can reach the receiver in either order (seen in a
    full run: ``succeeded`` then ``retried``, the same millisecond). The late ``task-retried``
    only says what the next attempt's ``task-received`` (``retries=1``) already did; the stage
    stays completed and the root ends (D5: never stuck "retrying")."""
    bridge, tracker = setup(settle=0.0)
    bridge.apply(
        [
            event("task-received", "a", name="flaky", root_id="a", retries=0),
            event("task-started", "a"),
            event("task-received", "a", name="flaky", root_id="a", retries=1),
            event("task-started", "a"),
            event("task-succeeded", "a"),
            event("task-retried", "a"),
        ],
        0.0,
    )
    bridge.apply([], 1.0)
    assert statuses(tracker.activity("a")) == {"a": "completed"}
    assert tracker.run_status("a") == "completed"
    # In order, the retry is shown: retrying until the next attempt.
    bridge.apply(
        [
            event("task-received", "b", name="flaky", root_id="b", retries=0),
            event("task-started", "b"),
            event("task-retried", "b"),
        ],
        2.0,
    )
    assert tracker.activity("b").reason == "retrying"


def test_a_failed_root_ends_at_once_and_a_retry_of_its_task_waits_to_settle_again() -> None:
    """A failed or revoked task has no continuation, so its root ends without the settle wait;
    once the task is retried (received again) the root waits out the settle time as any other."""
    bridge, tracker = setup(settle=10.0)
    bridge.apply([event("task-failed", "a", name="t", root_id="a")], 0.0)
    assert tracker.run_status("a") == "failed"
    bridge.apply([event("task-received", "a", name="t", root_id="a", retries=1)], 1.0)
    assert tracker.run_status("a") == "running"
    bridge.apply([event("task-succeeded", "a")], 2.0)
    bridge.tick(3.0)
    assert tracker.run_status("a") == "running"  # it may still continue: not stopped any more
    bridge.tick(12.5)
    assert tracker.run_status("a") == "completed"


def test_a_tracker_that_keeps_failing_is_counted_every_time_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The bridge's rule for consumers: a call into the tracker that raises (a tracker whose
    host is gone, a bug) never reaches the bridge's threads or the host; every failure is
    counted (``watch.errors``), each distinct failure is logged once with its traceback, not
    once per batch, and again only after a call succeeded in between."""
    bridge, _ = setup()
    failing = [True]

    def call(function: Callable[[], None]) -> None:
        if failing[0]:
            raise RuntimeError("the tracker's host has exited")
        function()

    watch = CeleryWatch(
        None, bridge, call, inspect_timeout=1.0, tick=0.25, linger=0.0, clock=lambda: 0.0
    )
    with caplog.at_level(logging.ERROR, logger="workflow_hub.celery"):
        for now in range(5):
            watch._guarded(functools.partial(bridge.tick, float(now)))
        assert watch.errors == 5
        assert len(caplog.records) == 1
        assert caplog.records[0].exc_info is not None
        failing[0] = False
        watch._guarded(functools.partial(bridge.tick, 5.0))
        failing[0] = True
        watch._guarded(functools.partial(bridge.tick, 6.0))
    assert watch.errors == 6
    assert len(caplog.records) == 2
