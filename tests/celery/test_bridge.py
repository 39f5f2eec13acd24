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
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from tests.support.consumers import RecordingDispatcher
from workflow_hub import (
    ContractError,
    FailureDetail,
    LifecycleEvent,
    RootActivity,
    RunTarget,
    StageNode,
    StageTarget,
    WorkflowActivityHub,
    open_hub,
)
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


def test_a_terminated_task_is_killed_alone_and_its_running_siblings_keep_executing() -> None:
    """§5 D1/D4/D8: ``task-revoked`` with ``terminated`` kills that task only: its siblings still
    running are executions of their own (``working / executing``, never ``stopping``); once
    they end the run ends ``killed``, with its kill request (attribution ``user``)."""
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
    assert (root.state, root.reason, root.active_execution_count) == ("working", "executing", 1)
    assert statuses(root) == {"a": "skipped", "b": "running"}
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


def test_a_failed_root_ends_at_once_and_a_late_event_of_its_task_changes_nothing() -> None:
    """A failed or revoked task has no continuation, so its root ends without the settle wait;
    Celery sends task-failed only once no retry is left, so a task-received or task-started
    that arrives after it (another process's connection, another clock) is late: the stage
    stays failed and the root stays ended (issue 37: a final state is never undone)."""
    bridge, tracker = setup(settle=10.0)
    bridge.apply([event("task-failed", "a", name="t", root_id="a", exception="E('x')")], 0.0)
    assert tracker.run_status("a") == "failed"
    bridge.apply([event("task-received", "a", name="t", root_id="a", retries=1)], 1.0)
    bridge.apply([event("task-started", "a")], 1.5)
    assert tracker.run_status("a") == "failed"
    root = tracker.activity("a")
    assert statuses(root) == {"a": "failed"}
    assert (root.state, root.needs_attention, root.active_execution_count) == ("idle", True, 0)


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


def test_an_event_with_a_lone_surrogate_is_refused_alone_and_its_batch_is_applied(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 37: a ``task-received`` whose name holds a lone surrogate (no UTF-8 form, so no
    wire form) in the middle of a batch is refused alone, before it changes anything (no root
    of its own, no stage): counted in ``statistics().refused`` and logged once, on one line
    without a traceback; the events before and after it in the batch are applied (P3)."""
    bridge, tracker = setup()
    batch = [
        event("task-received", "a", name="t", root_id="a"),
        event("task-received", "bad", name="t\ud800x", root_id="bad"),
        event("task-received", "c", name="t", root_id="c"),
        event("task-started", "c"),
        event("task-received", "worse", name="\udfff", root_id="worse"),
    ]
    with caplog.at_level(logging.WARNING, logger="workflow_hub.celery"):
        bridge.apply(batch, 0.0)
    assert [r.root_run_id for r in tracker.activities()] == ["a", "c"]
    assert statuses(tracker.activity("c")) == {"c": "running"}
    stats = bridge.statistics()
    assert (stats.refused, stats.events) == (2, 5)
    [record] = caplog.records
    assert record.exc_info is None
    message = record.getMessage()
    assert "\n" not in message
    assert "task-received" in message
    assert "'bad'" in message
    assert "name: lone surrogate" in message
    # The same task's later good events are applied.
    bridge.apply([event("task-started", "bad", root_id="bad")], 1.0)
    assert statuses(tracker.activity("bad")) == {"bad": "running"}


def test_a_task_succeeded_before_its_started_and_received_ends_its_root() -> None:
    """Issue 37: ``task-succeeded`` overtaking ``task-started`` and ``task-received`` (they
    come from the worker's pool process and its main process, on connections of their own)
    leaves nothing executing: the stage is completed and the root ends (D4, D8). The late
    received still gives what only it carries: the task's name, its root and its parent."""
    bridge, tracker = setup(settle=0.5)
    bridge.apply([event("task-received", "r", name="first", root_id="r")], 0.0)
    bridge.apply([event("task-succeeded", "r")], 0.1)
    bridge.apply(
        [
            event("task-succeeded", "b"),
            event("task-started", "b"),
            event("task-received", "b", name="second", root_id="r", parent_id="r"),
        ],
        0.2,
    )
    assert [r.root_run_id for r in tracker.activities()] == ["r"]  # b's guessed root is gone
    root = tracker.activity("r")
    assert statuses(root) == {"r": "completed", "b": "completed"}
    assert root.graph is not None
    assert {n.node_id: (n.name, n.parent_ids) for n in root.graph.nodes} == {
        "r": ("first", ()),
        "b": ("second", ("r:r",)),
    }
    assert (root.state, root.reason, root.active_execution_count) == (
        "working",
        "automatic_continuation",
        0,
    )
    bridge.tick(1.0)
    assert tracker.run_status("r") == "completed"
    root = tracker.activity("r")
    assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", False)


# --- any order of a task's events ends where the ordered sequence ends --------------------


def _history(attempts: int, end: str) -> list[dict[str, Any]]:
    """A task's events in the order a worker sends them: ``attempts - 1`` retried attempts,
    then a last one ending in ``end``; a chain's second task, so its root is not its own."""
    sent = [event("task-sent", "t", name="job", root_id="r", parent_id="r", queue="q")]
    events: list[dict[str, Any]] = []
    for attempt in range(attempts):
        events.append(
            event("task-received", "t", name="job", root_id="r", parent_id="r", retries=attempt)
        )
        if end == "revoked" and attempt == attempts - 1:
            break
        events.append(event("task-started", "t"))
        if attempt < attempts - 1:
            events.append(event("task-retried", "t", exception="OSError('again')"))
    last = {
        "succeeded": event("task-succeeded", "t", result="1"),
        "failed": event("task-failed", "t", exception="ValueError('boom')", traceback="Tr..."),
        "revoked": event("task-revoked", "t", terminated=False),
    }[end]
    return sent + events + [last]


def _final(events: list[dict[str, Any]]) -> object:
    bridge, tracker = setup(settle=0.5)
    bridge.apply([event("task-received", "r", name="first", root_id="r")], 0.0)
    bridge.apply([event("task-succeeded", "r")], 0.0)
    for n, one in enumerate(events):
        bridge.apply([one], 0.01 * n)
    bridge.tick(5.0)
    seen = []
    for root in tracker.activities():
        assert root.graph is not None
        nodes = [
            (n.node_id, n.name, n.parent_ids, n.status, n.error)
            for n in root.graph.nodes
            if isinstance(n, StageNode)
        ]
        seen.append(
            (
                root.root_run_id,
                root.state,
                root.reason,
                root.needs_attention,
                root.active_execution_count,
                tracker.run_status(root.root_run_id),
                sorted(nodes),
            )
        )
    return seen


@given(
    attempts=st.integers(1, 3),
    end=st.sampled_from(["succeeded", "failed", "revoked"]),
    data=st.data(),
)
def test_any_order_of_a_tasks_events_ends_as_the_ordered_sequence(
    attempts: int, end: str, data: st.DataObject
) -> None:
    """Issue 37 (D4, D8, P3): events are applied by what they mean, not by arrival. Any
    permutation of one task's events (sent, each attempt's received, started and retried, its
    final succeeded, failed or revoked) ends in the same root, stage, run status and error as
    the ordered sequence: a final state is never undone by a late earlier event."""
    ordered = _history(attempts, end)
    shuffled = data.draw(st.permutations(ordered), label="arrival order")
    assert _final(shuffled) == _final(ordered)


def _lifecycle(steps: Callable[[CeleryBridge], None]) -> list[LifecycleEvent]:
    """The lifecycle events a bridge's tracker emits while ``steps`` drive it (a real hub and
    hook dispatch, under trio)."""

    async def run() -> list[LifecycleEvent]:
        async with open_hub() as hub:
            hooks = RecordingDispatcher()
            hub.bind_dispatcher(hooks)
            tracker = RunTracker(
                hub.register_publisher(), owner_session_id="celery", include_graph=True
            )
            bridge = CeleryBridge(tracker, settle=0.5)
            bridge.begin()
            bridge.recovered({}, 0.0)
            steps(bridge)
            await trio.testing.wait_all_tasks_blocked()
            return hooks.lifecycle()

    return trio.run(run)


def _broken_chains(events: list[LifecycleEvent]) -> list[str]:
    """Lifecycle events that repeat or skip a change: each run's events, and each task's stage
    events wherever the task was shown, must form one chain (an event's previous status is
    the status the one before it reported; the first has none, or ``pending`` for a stage).
    A change reported twice (a task moved to the root its name gives, reported again there)
    breaks it."""
    last: dict[tuple[str, str], str] = {}
    broken = []
    for event in events:
        target = event.target
        if isinstance(target, RunTarget):
            if target.action is not None:
                continue  # a control request describes the request, not a change
            key, first = ("run", target.run_id), None
        elif isinstance(target, StageTarget):
            task_id = target.stage_id.removeprefix(f"{target.run_id}:")
            key, first = ("stage", task_id), "pending"
        else:
            continue
        previous = target.previous_status
        expected = last.get(key)
        if previous != expected and not (expected is None and previous in (None, first)):
            broken.append(f"{key}: {previous} -> {target.status} after {expected}")
        last[key] = target.status
    return broken


def _lone(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same events of a task outside any canvas: its root is its own id."""
    return [
        {**one, "root_id": "t", "parent_id": None} if "root_id" in one else one for one in events
    ]


@given(
    attempts=st.integers(1, 3),
    end=st.sampled_from(["succeeded", "failed", "revoked"]),
    lone=st.booleans(),
    gap=st.sampled_from([0.01, 0.7]),
    data=st.data(),
)
def test_a_tasks_lifecycle_events_report_each_change_once_in_any_order(
    attempts: int, end: str, lone: bool, gap: float, data: st.DataObject
) -> None:
    """Issue 38 (P6, SPEC §5: lifecycle events only on a real status change): whatever order a
    task's events arrive in, its stage events (under its guessed root, then where its name puts
    it) and every run's events form one chain. Moving a task that was first seen without its
    name is no change: nothing it reported is reported again. The task is a chain's second step
    or a root of its own (named in place); its events come close together, or further apart
    than the settle time (its roots end, and end again, in between)."""
    history = _lone(_history(attempts, end)) if lone else _history(attempts, end)
    shuffled = data.draw(st.permutations(history), label="arrival order")

    def steps(bridge: CeleryBridge) -> None:
        bridge.apply([event("task-received", "r", name="first", root_id="r")], 0.0)
        bridge.apply([event("task-succeeded", "r")], 0.0)
        for n, one in enumerate(shuffled):
            bridge.apply([one], gap * n)
            bridge.tick(gap * n)
        bridge.tick(5.0 + gap * len(shuffled))

    events = _lifecycle(steps)
    assert _broken_chains(events) == []


@pytest.mark.parametrize("named_by", ["received", "lookup"])
def test_a_lone_task_named_after_its_end_reports_its_run_and_stage_once(named_by: str) -> None:
    """A task outside any canvas, first seen at its end (``task-succeeded`` carries no name),
    then named by its late ``task-received`` or by the lookup (half a second later): its root
    keeps its id, takes the name, and its start, completion and end are each reported once
    (they were reported under the guess; the guess and the named root are the same run)."""

    def steps(bridge: CeleryBridge) -> None:
        bridge.apply([event("task-succeeded", "x")], 0.0)
        bridge.tick(1.0)  # its root ends (nothing else is open)
        if named_by == "received":
            bridge.apply([event("task-received", "x", name="job", root_id="x")], 1.2)
        else:
            bridge.named({"x": {"name": "job"}}, 1.2)
        bridge.tick(3.0)

    events = _lifecycle(steps)
    assert [(e.target.kind, e.target.previous_status, e.target.status) for e in events] == [
        ("run", None, "running"),
        ("stage", "pending", "completed"),
        ("run", "running", "completed"),
    ]

    bridge, tracker = setup(settle=0.5)
    steps(bridge)
    root = tracker.activity("x")
    assert root.graph is not None
    assert [(n.name, n.status) for n in root.graph.nodes] == [("job", "completed")]
    assert tracker.run_status("x") == "completed"


def test_a_lone_task_named_after_its_root_ended_keeps_its_turn_to_retire() -> None:
    """Ended roots retire oldest first: one named in place after it ended is as old as it was."""
    bridge, tracker = setup(settle=0.0, keep_ended=1.0)
    bridge.apply([event("task-succeeded", "x")], 0.0)
    bridge.tick(0.1)  # x ends
    bridge.apply([event("task-received", "y", name="other", root_id="y")], 0.2)
    bridge.apply([event("task-succeeded", "y")], 0.2)
    bridge.tick(0.3)  # y ends
    bridge.apply([event("task-received", "x", name="job", root_id="x")], 0.4)
    bridge.tick(1.15)  # x ended 1.05 s ago, y 0.85 s ago
    assert [root.root_run_id for root in tracker.activities()] == ["y"]


def test_a_refused_name_moves_nothing_and_the_guessed_root_stays_live() -> None:
    """A name with no UTF-8 form, from a worker's inspection (which is not checked as events
    are): refused before the task moves; its guessed root is still there, still working."""
    bridge, tracker = setup()
    bridge.apply([event("task-started", "x")], 0.0)
    inspection = {"w1@h": {"active": [{"id": "x", "name": "bad\ud800"}]}}
    with pytest.raises(ContractError, match="name"):
        bridge.resynchronised("w1@h", inspection, 0.1)
    root = tracker.activity("x")
    assert (root.state, root.active_execution_count) == ("working", 1)
    assert root.graph is not None
    assert [(n.name, n.status) for n in root.graph.nodes] == [("unknown task", "running")]


def test_a_task_moved_into_its_named_root_reports_only_what_happens_after() -> None:
    """A task first seen running without its name (its ``task-started`` overtook its
    ``task-received``) is shown under its own id; the late event moves it, running, into the
    root it names without a second ``running``; its end is reported there."""

    def steps(bridge: CeleryBridge) -> None:
        bridge.apply([event("task-received", "a", name="s1", root_id="a")], 0.0)
        bridge.apply([event("task-started", "b")], 0.1)
        bridge.apply([event("task-received", "b", name="s2", root_id="a", parent_id="a")], 0.2)
        bridge.apply([event("task-succeeded", "b")], 0.3)

    stage_events = [
        (e.target.stage_id, e.target.previous_status, e.target.status)
        for e in _lifecycle(steps)
        if isinstance(e.target, StageTarget)
    ]
    assert stage_events == [("b:b", "pending", "running"), ("a:b", "running", "completed")]


@pytest.mark.parametrize(
    ("exception", "message", "kind"),
    [
        ("ValueError('boom')", "boom", "ValueError"),
        ('KeyError("it\'s missing")', "it's missing", "KeyError"),
        ("app.errors.Bad(1, 'two')", "(1, 'two')", "Bad"),
        ("TimeoutError()", "TimeoutError", "TimeoutError"),
        ("Weird(<object at 0x1>)", "<object at 0x1>", "Weird"),
        ("ValueError('first line\\nsecond')", "first line", "ValueError"),
        ("a custom repr\nwith lines", "a custom repr", None),
        (f"ValueError('{'x' * 900}')", "x" * 499 + "…", "ValueError"),
        ("Bad('\\ud800')", "?", "Bad"),
    ],
)
def test_a_failed_tasks_error_is_its_exceptions_message_and_class(
    exception: str, message: str, kind: str | None
) -> None:
    """C3: ``task-failed``'s ``exception`` is the exception's repr: the stage's and the run's
    error is its message (as ``str(exception)`` gives it; first line, bounded) and its class
    name; a repr that does not parse is the message, without a type. The ``traceback`` field is
    never read."""
    bridge, tracker = setup()
    bridge.apply(
        [
            event("task-received", "a", name="t", root_id="a"),
            event("task-failed", "a", exception=exception, traceback="Traceback (most recent)"),
        ],
        0.0,
    )
    expected = FailureDetail(message=message, type=kind)
    root = tracker.activity("a")
    assert root.graph is not None
    assert [n.error for n in root.graph.nodes if isinstance(n, StageNode)] == [expected]
    assert tracker.run_status("a") == "failed"


def test_a_failure_without_an_exception_has_no_error_and_a_rejection_says_why() -> None:
    bridge, tracker = setup()
    bridge.apply([event("task-failed", "a", name="t", root_id="a")], 0.0)
    bridge.apply([event("task-rejected", "b", name="t", root_id="b", requeue=False)], 0.0)
    errors = {
        r.root_run_id: [n.error for n in r.graph.nodes if isinstance(n, StageNode)]
        for r in tracker.activities()
        if r.graph is not None
    }
    assert errors == {
        "a": [None],
        "b": [FailureDetail(message="rejected by its worker and not requeued")],
    }


def test_labels_are_fixed_ones_and_the_first_queue_and_worker_of_a_roots_tasks() -> None:
    """C3: ``labels`` on every root; ``labels_from`` adds ``queue`` (task-sent) and ``worker``
    (the first worker event of one of its tasks; task-sent comes from the client, not a
    worker), each set once; a value that is no valid label is left out."""
    bridge, tracker = setup(labels={"env": "prod"}, labels_from=("queue", "worker"))
    bridge.apply(
        [
            {**event("task-sent", "a", name="t", root_id="a", queue="fast"), "hostname": "cli"},
            event("task-received", "a", name="t", root_id="a"),
            {**event("task-received", "b", name="t", root_id="a"), "hostname": "w2@h"},
            {**event("task-received", "c", name="t", root_id="c"), "hostname": ""},
        ],
        0.0,
    )
    assert tracker.activity("a").labels == {"env": "prod", "queue": "fast", "worker": "w1@h"}
    assert tracker.activity("c").labels == {"env": "prod"}


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"labels": {"1bad": "x"}}, ContractError),
        ({"labels_from": ("queue", "pool")}, ValueError),
        ({"labels_from": "queue"}, TypeError),
        ({"labels": {"queue": "q"}, "labels_from": ("queue",)}, ValueError),
    ],
)
def test_bad_label_options_are_refused_when_the_bridge_is_made(
    options: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        CeleryBridge(
            RunTracker(WorkflowActivityHub().register_publisher(), owner_session_id="c"), **options
        )


def test_an_event_whose_handling_raises_loses_only_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 37: whatever one event's handling raises (here the tracker fails on one stage's
    name, as a bug would), the other events of its batch are applied; the failure is counted
    in ``refused`` and its traceback logged once per exception type, not per event."""
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="celery", include_graph=True)

    class Failing:
        def __getattr__(self, name: str) -> Any:
            return getattr(tracker, name)

        def add_stage(self, run_id: str, stage_id: str, name: str, **options: Any) -> None:
            if name == "broken":
                raise RuntimeError("a bug")
            tracker.add_stage(run_id, stage_id, name, **options)

    bridge = CeleryBridge(Failing())  # type: ignore[arg-type]  # the protocol, by delegation
    bridge.begin()
    bridge.recovered({}, 0.0)
    batch = [
        event("task-received", "a", name="ok", root_id="a"),
        event("task-received", "b", name="broken", root_id="a"),
        event("task-received", "c", name="broken", root_id="a"),
        event("task-received", "d", name="ok", root_id="a"),
    ]
    with caplog.at_level(logging.WARNING, logger="workflow_hub.celery"):
        bridge.apply(batch, 0.0)
    assert statuses(tracker.activity("a")) == {"a": "pending", "d": "pending"}
    assert bridge.statistics().refused == 2
    assert [r.exc_info is not None for r in caplog.records] == [True, False]


def test_a_lone_task_seen_first_from_its_end_takes_its_name_when_received_arrives() -> None:
    """A task outside any canvas whose ``task-succeeded`` overtook ``task-received``: shown
    under its own id as ``unknown task`` until then (never ``?``: issue 38), then with its
    name, still completed (issue 37)."""
    bridge, tracker = setup(settle=0.0)
    bridge.apply([event("task-succeeded", "x")], 0.0)
    root = tracker.activity("x")
    assert root.graph is not None
    assert [(n.name, n.status) for n in root.graph.nodes] == [("unknown task", "completed")]
    bridge.apply([event("task-received", "x", name="job", root_id="x")], 0.5)
    bridge.tick(1.0)
    root = tracker.activity("x")
    assert root.graph is not None
    assert [(n.name, n.status) for n in root.graph.nodes] == [("job", "completed")]
    assert tracker.run_status("x") == "completed"
    assert (root.state, root.reason) == ("idle", "quiescent")


def test_work_queued_while_no_worker_is_alive_needs_attention_until_one_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """§5 D3/D6/D8, N4 (issue 38): a task waiting in the broker is progressing only while a
    worker is alive to run it; with none (none answered the inspection, or the last one went
    silent) it is blocked with an intervention, said once in the log; a worker that comes
    back makes it wait again (``working / automatic_continuation``)."""
    caplog.set_level(logging.INFO, "workflow_hub.celery")
    bridge, tracker = setup()
    bridge.apply([event("task-sent", "a", name="t", root_id="a")], 0.0)
    bridge.apply([event("task-sent", "b", name="t", root_id="b")], 0.0)
    root = tracker.activity("a")
    assert (root.state, root.reason, root.needs_attention) == (
        "blocked",
        "manual_intervention",
        True,
    )
    assert statuses(root) == {"a": "blocked"}
    bridge.apply([{"type": "worker-heartbeat", "hostname": "w1@h", "freq": 1.0}], 1.0)
    root = tracker.activity("a")
    assert (root.state, root.reason, root.needs_attention) == (
        "working",
        "automatic_continuation",
        False,
    )
    bridge.tick(3.5)  # the worker's window (2 x 1 s) passed: silent, offline
    assert tracker.activity("b").state == "blocked"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings  # once per outage of workers, not once per task
    assert all("no celery worker is alive" in r.getMessage() for r in warnings)


def test_a_gone_workers_unacknowledged_tasks_wait_to_be_redelivered_and_continue() -> None:
    """§5 D3/D5 (issue 38): when a worker goes, a task it had prefetched (received, not
    started) or running with ``acks_late`` still has its message in the broker: it is not
    failed nor lost but pending, retrying (waiting to be redelivered), and the redelivery
    continues it; a running task whose message was acknowledged is lost (needs attention)."""
    bridge, tracker = setup(acks_late=lambda name: name == "late")
    bridge.apply(
        [
            {"type": "worker-heartbeat", "hostname": "w1@h", "freq": 1.0},
            {"type": "worker-heartbeat", "hostname": "w2@h", "freq": 5.0},  # stays alive
            event("task-started", "run", name="t", root_id="run"),
            event("task-started", "late", name="late", root_id="late"),
            event("task-received", "pre", name="t", root_id="pre"),
        ],
        0.0,
    )
    bridge.apply([{"type": "worker-heartbeat", "hostname": "w2@h", "freq": 5.0}], 2.5)
    bridge.tick(2.5)  # w1's window (2 x 1 s) passed
    assert tracker.activity("run").state == "blocked"
    for root_id in ("late", "pre"):
        root = tracker.activity(root_id)
        assert (root.state, root.reason, root.needs_attention) == ("working", "retrying", False)
        assert statuses(root) == {root_id: "pending"}
        assert tracker.run_status(root_id) == "running"
    bridge.apply(
        [
            {**event("task-received", "pre", name="t", root_id="pre"), "hostname": "w2@h"},
            {**event("task-started", "pre"), "hostname": "w2@h"},
            {**event("task-succeeded", "pre"), "hostname": "w2@h"},
        ],
        3.0,
    )
    bridge.tick(4.5)
    assert tracker.run_status("pre") == "completed"
    root = tracker.activity("pre")
    assert (root.state, root.needs_attention) == ("idle", False)
