"""The run tracker on a running hub: what it publishes, and when (SPEC §5, P3-P6)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from tests.support.builders import fold
from tests.support.consumers import RecordingDispatcher
from workflow_hub import (
    ActivityChangedEvent,
    Attribution,
    ChangedFrame,
    ContractError,
    FailureDetail,
    Frame,
    PromptTarget,
    RemovedFrame,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageTarget,
    ToolTarget,
    WorkflowActivityHub,
)
from workflow_hub.tracker import RunTracker


class Clock:
    """A clock the test moves by hand (epoch milliseconds)."""

    def __init__(self, now: float = 1_000) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Scene:
    """A running hub with a tracker, an observer and a hook dispatcher attached."""

    def __init__(self, hub: WorkflowActivityHub, *, include_graph: bool = False) -> None:
        self.hub = hub
        self.clock = Clock()
        ids = itertools.count(1)
        self.tracker = RunTracker(
            hub.register_publisher(),
            owner_session_id="session-1",
            clock=self.clock,
            event_id_factory=lambda: f"evt-{next(ids)}",
            include_graph=include_graph,
        )
        self.frames: list[Frame] = []
        self.hooks = RecordingDispatcher()
        hub.observe(self.frames.append)
        hub.bind_dispatcher(self.hooks)

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()

    def kinds(self) -> list[str]:
        return [frame.kind for frame in self.frames]


def known_empty(scene: Scene) -> SnapshotFrame:
    """A ready, empty snapshot: what the scene's observer saw before its frames were cleared."""
    return SnapshotFrame(cursor=scene.hub.cursor, availability="ready", roots=())


@pytest.fixture
async def scene(hub: WorkflowActivityHub) -> Scene:
    scene = Scene(hub)
    scene.tracker.start()
    await scene.settle()
    scene.frames.clear()
    return scene


# --- frames ----------------------------------------------------------------------------------


async def test_start_publishes_the_initial_ready_snapshot(hub: WorkflowActivityHub) -> None:
    """§5/P3: start() publishes a ready snapshot (known empty when nothing is tracked yet)."""
    scene = Scene(hub)
    scene.tracker.start()
    await scene.settle()
    assert [(f.kind, getattr(f, "availability", None)) for f in scene.frames] == [
        ("snapshot", "unavailable"),
        ("snapshot", "ready"),
    ]
    assert hub.snapshot_frame().roots == ()


async def test_reporting_before_start_raises_and_changes_nothing(hub: WorkflowActivityHub) -> None:
    """§5: facts before the first ready snapshot would be lost, so they are refused."""
    scene = Scene(hub)
    with pytest.raises(RuntimeError, match="start"):
        scene.tracker.add_run("root")
    assert "root" not in scene.tracker


async def test_a_real_change_publishes_one_changed_frame(scene: Scene) -> None:
    """§5/P4: a fact that changes the root's summary publishes the whole root once."""
    scene.tracker.add_run("root", status="running")
    await scene.settle()
    assert scene.kinds() == ["changed"]
    frame = scene.frames[0]
    assert isinstance(frame, ChangedFrame)
    assert frame.root == scene.tracker.activity("root")
    assert (frame.root.state, frame.root.reason, frame.root.owner_session_id) == (
        "working",
        "automatic_continuation",
        "session-1",
    )


async def test_a_fact_that_leaves_the_summary_unchanged_publishes_nothing(scene: Scene) -> None:
    """§5: changed only when the root's summary actually changed."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan")
    tracker.set_stage_status("root", "plan", "running")
    await scene.settle()
    scene.frames.clear()
    tracker.add_stage("root", "build", "Build", parent_ids=["plan"])
    tracker.add_tool("root", "grep", "grep", parent_ids=["plan"])
    await scene.settle()
    assert scene.frames == []


async def test_the_graph_makes_node_facts_real_changes(hub: WorkflowActivityHub) -> None:
    """§5: with include_graph, a new node changes the root (its graph), so it is published."""
    scene = Scene(hub, include_graph=True)
    scene.tracker.start()
    scene.tracker.add_run("root", status="running")
    scene.tracker.add_stage("root", "plan", "Plan")
    await scene.settle()
    last = scene.frames[-1]
    assert isinstance(last, ChangedFrame)
    assert last.root.graph is not None
    assert [node.id for node in last.root.graph.nodes] == ["root:plan"]


async def test_a_renamed_stage_shows_its_new_name_and_emits_nothing(
    hub: WorkflowActivityHub,
) -> None:
    """§5/P6: ``set_stage_name`` changes the stage's graph node (one published change), emits
    no event (nothing moved), and the stage's later events carry the new name; the same name
    again publishes nothing, and a name that is not a str is refused naming ``name``."""
    scene = Scene(hub, include_graph=True)
    tracker = scene.tracker
    tracker.start()
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "fetch", "task 7f3a", status="running")
    await scene.settle()
    events, frames = len(scene.hooks.lifecycle()), len(scene.frames)
    tracker.set_stage_name("root", "fetch", "fetch_invoices")
    await scene.settle()
    assert len(scene.hooks.lifecycle()) == events
    assert len(scene.frames) == frames + 1
    last = scene.frames[-1]
    assert isinstance(last, ChangedFrame)
    assert last.root.graph is not None
    assert [node.name for node in last.root.graph.nodes] == ["fetch_invoices"]
    tracker.set_stage_name("root", "fetch", "fetch_invoices")
    with pytest.raises(ContractError) as refused:
        tracker.set_stage_name("root", "fetch", None)  # type: ignore[arg-type]
    assert refused.value.path == "name"
    with pytest.raises(KeyError):
        tracker.set_stage_name("root", "nowhere", "x")
    await scene.settle()
    assert len(scene.frames) == frames + 1
    tracker.set_stage_status("root", "fetch", "completed")
    await scene.settle()
    completed = [e for e in scene.hooks.events if isinstance(e, StageCompletedEvent)]
    assert [e.target.stage_name for e in completed] == ["fetch_invoices"]


async def test_changes_of_a_nested_run_publish_its_root(scene: Scene) -> None:
    """§5: nested child runs belong to their root; their changes publish the root."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "spawn", "Spawn", status="running")
    tracker.add_run("child", parent_run_id="root", host_stage_id="spawn", status="running")
    tracker.add_stage("child", "ask", "Ask", status="running")
    tracker.open_prompt("child", "p1", "confirm", "Deploy?", stage_id="ask")
    await scene.settle()
    assert fold([known_empty(scene), *scene.frames]) == {"root": tracker.activity("root")}
    assert tracker.activity("root").reason == "awaiting_input"


async def test_removing_a_root_publishes_removed(scene: Scene) -> None:
    """§5/P5: a root that goes away is published as removed, with its nested runs."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_run("child", parent_run_id="root", status="running")
    tracker.add_stage("child", "build", "Build", status="running")
    tracker.remove_run("root")
    await scene.settle()
    assert scene.kinds() == ["changed", "changed", "removed"]
    removed = scene.frames[-1]
    assert isinstance(removed, RemovedFrame)
    assert removed.root_run_id == "root"
    assert "child" not in tracker
    assert scene.hub.snapshot_frame().roots == ()


async def test_removing_a_nested_run_changes_its_root(scene: Scene) -> None:
    """§5: removing a nested run is a change of its root, not a removal."""
    tracker = scene.tracker
    tracker.add_run("root", status="running", live=False)
    tracker.add_run("child", parent_run_id="root", status="running")
    await scene.settle()
    scene.frames.clear()
    tracker.remove_run("child")
    await scene.settle()
    assert scene.kinds() == ["changed"]
    assert tracker.activity("root").state == "idle"


async def test_batch_publishes_each_changed_root_once(scene: Scene) -> None:
    """§5: inside batch() the half-way summaries are never published."""
    tracker = scene.tracker
    with tracker.batch():
        tracker.add_run("a", status="running")
        tracker.add_stage("a", "ask", "Ask", status="awaiting_input")
        tracker.open_prompt("a", "p", "input", "Name?", stage_id="ask")
        tracker.add_run("b", status="completed")
        assert scene.hub.snapshot_frame().roots == ()
    await scene.settle()
    assert scene.kinds() == ["changed", "changed"]
    assert fold([known_empty(scene), *scene.frames]) == {
        "a": tracker.activity("a"),
        "b": tracker.activity("b"),
    }


# --- hydration -------------------------------------------------------------------------------


async def test_an_observer_attached_during_hydration_sees_recovering_then_ready(
    hub: WorkflowActivityHub,
) -> None:
    """§5/O3: while hydrating the source is recovering; then one full ready snapshot."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="session-1")
    frames: list[Frame] = []
    with tracker.hydrating():
        hub.observe(frames.append)
        tracker.add_run("root", status="running", live=False)
        tracker.add_stage("root", "plan", "Plan", status="completed")
        tracker.add_run("other", status="failed", live=False)
        await trio.testing.wait_all_tasks_blocked()
    await trio.testing.wait_all_tasks_blocked()
    assert [(f.kind, getattr(f, "availability", None)) for f in frames] == [
        ("snapshot", "recovering"),
        ("snapshot", "ready"),
    ]
    ready = frames[1]
    assert isinstance(ready, SnapshotFrame)
    assert ready.roots == tracker.activities()
    assert [root.root_run_id for root in ready.roots] == ["root", "other"]


async def test_hydration_synthesises_no_lifecycle_events(hub: WorkflowActivityHub) -> None:
    """§5: recovery never synthesises lifecycle events, even for live runs."""
    scene = Scene(hub)
    with scene.tracker.hydrating():
        scene.tracker.add_run("root", status="running")
        scene.tracker.add_stage("root", "plan", "Plan", status="running")
        scene.tracker.set_stage_status("root", "plan", "completed")
        scene.tracker.request_control("root", "pause")
    await scene.settle()
    assert scene.hooks.lifecycle() == []


async def test_hydration_can_restore_history_then_take_ownership(scene: Scene) -> None:
    """§5: restored history is idle; the executor taking ownership makes its work count."""
    tracker = scene.tracker
    with tracker.hydrating():
        tracker.add_run("root", status="running", live=False)
        tracker.add_stage("root", "build", "Build", status="running")
    assert tracker.activity("root").state == "idle"
    await scene.settle()
    scene.frames.clear()
    tracker.take_ownership("root")
    await scene.settle()
    assert scene.kinds() == ["changed"]
    assert tracker.activity("root").reason == "executing"
    assert scene.hooks.lifecycle() == []


async def test_a_failed_hydration_leaves_the_source_unavailable(hub: WorkflowActivityHub) -> None:
    """§5: neither non-ready state means idle; an aborted hydration is unknown, not ready."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="session-1")

    def restore() -> None:
        with tracker.hydrating():
            tracker.add_run("root", live=False)
            raise OSError("disk gone")

    with pytest.raises(OSError, match="disk"):
        restore()
    assert hub.availability == "unavailable"
    assert not tracker.started
    tracker.start()
    assert hub.snapshot_frame().roots == tracker.activities()


# --- lifecycle events ------------------------------------------------------------------------


async def test_run_status_change_emits_with_previous_status_and_clock_times(
    scene: Scene,
) -> None:
    """§5/P6: a real status change of a live run emits an event with its previous status."""
    tracker = scene.tracker
    tracker.add_run("root")
    scene.clock.now = 2_500
    tracker.set_run_status("root", "running")
    await scene.settle()
    (event,) = scene.hooks.lifecycle()
    assert event.target == RunTarget(run_id="root", previous_status="pending", status="running")
    assert (event.event_id, event.run_id, event.root_run_id) == ("evt-1", "root", "root")
    assert (event.occurred_at, event.observed_at, event.delivery) == (2_500, 2_500, "live")
    assert event.owner_session_id == "session-1"


async def test_a_run_added_pending_emits_nothing_and_one_added_running_does(scene: Scene) -> None:
    """§5: adding a run emits only when it appears in a status other than pending."""
    scene.tracker.add_run("quiet")
    scene.tracker.add_run("busy", status="running")
    await scene.settle()
    assert scene.hooks.targets() == [RunTarget(run_id="busy", status="running")]


async def test_the_same_status_again_emits_nothing(scene: Scene) -> None:
    """§5: lifecycle events only on a real status change."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan", status="running")
    await scene.settle()
    count = len(scene.hooks.lifecycle())
    tracker.set_run_status("root", "running")
    tracker.set_stage_status("root", "plan", "running")
    await scene.settle()
    assert len(scene.hooks.lifecycle()) == count


async def test_every_event_has_a_fresh_event_id(scene: Scene) -> None:
    """§5: each lifecycle event gets a fresh id from the factory."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan")
    tracker.set_stage_status("root", "plan", "running")
    tracker.set_stage_status("root", "plan", "completed")
    await scene.settle()
    assert [e.event_id for e in scene.hooks.lifecycle()] == ["evt-1", "evt-2", "evt-3"]


async def test_stage_events_carry_the_nested_stage_id_and_completion_hook(scene: Scene) -> None:
    """§5/P6: stage targets use "{run_id}:{stage_id}"; completion also fires the stage hook."""
    tracker = scene.tracker
    tracker.add_run("root", status="running", live=False)
    tracker.add_run("child", parent_run_id="root", status="running")
    tracker.add_stage("child", "build", "Build")
    tracker.set_stage_status("child", "build", "running")
    tracker.set_stage_status("child", "build", "completed")
    await scene.settle()
    completed = [e for e in scene.hooks.events if isinstance(e, StageCompletedEvent)]
    assert [e.target for e in completed] == [
        StageTarget(
            run_id="child",
            stage_id="child:build",
            stage_name="Build",
            previous_status="running",
            status="completed",
        )
    ]
    assert (completed[0].run_id, completed[0].root_run_id) == ("child", "root")


async def test_a_replayed_stage_is_delivered_as_replay(scene: Scene) -> None:
    """§5/P6: an explicit continuation replay tags its stage events delivery: replay."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan", status="completed")
    tracker.set_stage_status("root", "plan", "running", replay=True)
    tracker.set_stage_status("root", "plan", "completed", replay=True)
    tracker.add_stage("root", "next", "Next")
    tracker.set_stage_status("root", "next", "running")
    await scene.settle()
    stage_events = [e for e in scene.hooks.lifecycle() if isinstance(e.target, StageTarget)]
    assert [(e.target.status, e.delivery) for e in stage_events] == [
        ("completed", "live"),
        ("running", "replay"),
        ("completed", "replay"),
        ("running", "live"),
    ]


async def test_a_replayed_tool_is_delivered_as_replay(scene: Scene) -> None:
    """§5/P6: replay=True on a tool tags its event delivery: replay too."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_tool("root", "grep", "grep", status="completed")
    tracker.set_tool_status("root", "grep", "running", replay=True)
    tracker.set_tool_status("root", "grep", "completed")
    await scene.settle()
    tool_events = [e for e in scene.hooks.lifecycle() if isinstance(e.target, ToolTarget)]
    assert [(e.target.status, e.delivery) for e in tool_events] == [
        ("completed", "live"),
        ("running", "replay"),
        ("completed", "live"),
    ]


async def test_tool_events_carry_the_nested_tool_id(scene: Scene) -> None:
    """§5: tool targets use "{run_id}:{tool_id}" and the previous status."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_tool("root", "grep", "grep", ordinal=1)
    tracker.set_tool_status("root", "grep", "cached")
    await scene.settle()
    assert scene.hooks.targets()[-1] == ToolTarget(
        run_id="root",
        tool_node_id="root:grep",
        tool_name="grep",
        previous_status="pending",
        status="cached",
    )


async def test_prompts_emit_opened_then_answered_or_cancelled(scene: Scene) -> None:
    """§5: prompts opened, answered and cancelled on a run or a stage are lifecycle events."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "ask", "Ask")
    tracker.open_prompt("root", "p1", "confirm", "Deploy?", stage_id="ask")
    tracker.open_prompt("root", "p2", "input", "Why?")
    tracker.answer_prompt("root", "p1")
    tracker.cancel_prompt("root", "p2")
    await scene.settle()
    assert scene.hooks.targets()[1:] == [
        PromptTarget(run_id="root", stage_id="root:ask", prompt_id="p1", status="opened"),
        PromptTarget(run_id="root", prompt_id="p2", status="opened"),
        PromptTarget(run_id="root", stage_id="root:ask", prompt_id="p1", status="answered"),
        PromptTarget(run_id="root", prompt_id="p2", status="cancelled"),
    ]
    assert tracker.activity("root").actionable_block_count == 0


async def test_a_control_request_describes_the_request_not_the_outcome(scene: Scene) -> None:
    """§5: quit emits a run event with action quit and the run's current status."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "build", "Build", status="running")
    tracker.request_control("root", "quit", attribution="user")
    await scene.settle()
    event = scene.hooks.lifecycle()[-1]
    assert event.target == RunTarget(run_id="root", status="running", action="quit")
    assert event.attribution == "user"
    assert tracker.activity("root").reason == "stopping"


async def test_a_status_a_person_set_carries_its_attribution_on_its_event(scene: Scene) -> None:
    """§5, issue 42: a stage's, a tool's or a run's status changed by a person ("mark
    success", a clear) says so: ``attribution`` goes on that fact's event, and on no other.
    A kind that is not the contract's is refused, naming ``attribution``, and changes
    nothing."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "load", "Load", status="running")
    tracker.add_tool("root", "fetch", "Fetch", status="running")
    with pytest.raises(ContractError, match="attribution"):
        tracker.set_stage_status("root", "load", "completed", attribution="alice")
    await scene.settle()
    assert len(scene.hooks.lifecycle()) == 3  # the run, the stage, the tool: nothing more
    tracker.set_stage_status("root", "load", "completed", attribution="user")
    tracker.set_tool_status("root", "fetch", "failed", error="boom", attribution="agent")
    tracker.set_stage_status("root", "load", "pending", attribution=Attribution.USER)
    tracker.set_stage_status("root", "load", "running")
    tracker.set_run_status("root", "failed", error="stopped by hand", attribution="user")
    await scene.settle()
    events = scene.hooks.lifecycle()[3:]
    assert [(type(e.target).__name__, e.target.status, e.attribution) for e in events] == [
        ("StageTarget", "completed", "user"),
        ("ToolTarget", "failed", "agent"),
        ("StageTarget", "pending", "user"),
        ("StageTarget", "running", None),
        ("RunTarget", "failed", "user"),
    ]


async def test_run_events_equal_the_constructors_targets(scene: Scene) -> None:
    """P6/C3: a run event's target, built without the constructor (``Publication.run_moved``),
    equals the one the constructor builds, field by field, and hashes alike: a run added,
    moved with an error and an attribution, and asked to stop."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_run("child", parent_run_id="root", status="running")
    tracker.set_run_status("child", "failed", error=ValueError("bad input"), attribution="agent")
    tracker.request_control("root", "quit", attribution="user")
    await scene.settle()
    expected = [
        RunTarget(run_id="root", status="running"),
        RunTarget(run_id="child", status="running"),
        RunTarget(
            run_id="child",
            previous_status="running",
            status="failed",
            error=FailureDetail(message="bad input", type="ValueError"),
        ),
        RunTarget(run_id="root", status="running", action="quit"),
    ]
    events = scene.hooks.lifecycle()
    assert [event.target for event in events] == expected
    assert [hash(event.target) for event in events] == [hash(target) for target in expected]
    assert [repr(event.target) for event in events] == [repr(target) for target in expected]
    assert [event.attribution for event in events] == [None, None, "agent", "user"]
    assert [(event.run_id, event.root_run_id) for event in events] == [
        ("root", "root"),
        ("child", "root"),
        ("child", "root"),
        ("root", "root"),
    ]


async def test_an_already_aborted_run_still_emits_kill(scene: Scene) -> None:
    """§5: control requests emit even when the run has already ended."""
    tracker = scene.tracker
    tracker.add_run("root", status="killed")
    tracker.request_control("root", "kill")
    await scene.settle()
    assert scene.hooks.targets() == [
        RunTarget(run_id="root", status="killed"),
        RunTarget(run_id="root", status="killed", action="kill"),
    ]


async def test_pause_and_resume_requests_emit_their_actions(scene: Scene) -> None:
    """§5: pause and resume are requests too; the outcome is reported separately."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.request_control("root", "pause")
    tracker.set_run_status("root", "paused")
    tracker.request_control("root", "resume")
    tracker.set_run_status("root", "running")
    await scene.settle()
    assert [(t.action, t.status) for t in scene.hooks.targets() if isinstance(t, RunTarget)] == [
        (None, "running"),
        ("pause", "running"),
        (None, "paused"),
        ("resume", "paused"),
        (None, "running"),
    ]


async def test_historical_runs_never_emit_lifecycle_events(scene: Scene) -> None:
    """§5: restored history never synthesises lifecycle events, control requests included."""
    tracker = scene.tracker
    tracker.add_run("root", status="running", live=False)
    tracker.add_stage("root", "plan", "Plan")
    tracker.set_stage_status("root", "plan", "completed")
    tracker.open_prompt("root", "p", "input", "?")
    tracker.request_control("root", "kill")
    tracker.set_run_status("root", "killed")
    await scene.settle()
    assert scene.hooks.lifecycle() == []
    # Only activity changes: idle, blocked by the prompt, idle again once the run was killed
    # (D2: a prompt left open on a killed run is no wait).
    assert [type(e) for e in scene.hooks.events] == [ActivityChangedEvent] * 3


async def test_released_runs_stop_emitting_and_stop_working(scene: Scene) -> None:
    """§5: after the executor releases a run it is history: no events, no work."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "build", "Build", status="running")
    await scene.settle()
    count = len(scene.hooks.lifecycle())
    tracker.release_ownership("root")
    tracker.set_stage_status("root", "build", "completed")
    await scene.settle()
    assert len(scene.hooks.lifecycle()) == count
    assert tracker.activity("root").state == "idle"


async def test_taking_ownership_makes_the_nested_runs_live_too(scene: Scene) -> None:
    """§5: ownership is per subtree: a restored nested run's work counts once owned."""
    tracker = scene.tracker
    tracker.add_run("root", status="running", live=False)
    tracker.add_run("child", parent_run_id="root", status="running", live=False)
    tracker.add_stage("child", "build", "Build", status="running")
    assert tracker.activity("root").state == "idle"
    tracker.take_ownership("root")
    assert (tracker.activity("root").reason, tracker.activity("root").active_execution_count) == (
        "executing",
        1,
    )


async def test_releasing_ownership_makes_the_nested_runs_history_too(scene: Scene) -> None:
    """§5: a released run's nested runs stop working and stop emitting as well."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_run("child", parent_run_id="root", status="running")
    tracker.add_stage("child", "build", "Build", status="running")
    await scene.settle()
    count = len(scene.hooks.lifecycle())
    tracker.release_ownership("root")
    tracker.set_stage_status("child", "build", "completed")
    await scene.settle()
    assert tracker.activity("root").state == "idle"
    assert len(scene.hooks.lifecycle()) == count


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda t: t.set_run_status("root", "exploded"), ContractError),
        (lambda t: t.set_run_status("nope", "running"), KeyError),
        (lambda t: t.set_stage_status("root", "grep", "running"), KeyError),
        (lambda t: t.set_tool_status("root", "plan", "running"), KeyError),
        (lambda t: t.add_stage("root", "plan", "Again"), ValueError),
        (lambda t: t.add_run("root"), ValueError),
        (lambda t: t.add_run("x", parent_run_id="nope"), KeyError),
        (lambda t: t.request_control("root", "explode"), ContractError),
        (lambda t: t.open_prompt("root", "p", "shout", "?"), ContractError),
        (lambda t: t.open_prompt("root", "p", "input", "?", stage_id="nope"), KeyError),
        (lambda t: t.answer_prompt("root", "nope"), KeyError),
        (lambda t: t.add_tool("root", "t", "t", ordinal=-1), ContractError),
        (lambda t: t.add_run("x", heartbeat_interval_minutes=0), ContractError),
    ],
)
async def test_bad_facts_raise_before_changing_anything(
    scene: Scene, call: Callable[[RunTracker], None], error: type[Exception]
) -> None:
    """C1: a bad argument or an unknown id raises, and nothing is published or changed."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan", status="running")
    tracker.add_tool("root", "grep", "grep")
    await scene.settle()
    before, cursor = tracker.activities(), scene.hub.cursor
    with pytest.raises(error):
        call(tracker)
    assert tracker.activities() == before
    assert scene.hub.cursor == cursor
    assert "x" not in tracker


class EventIds:
    """An event id factory that returns a non-string once ``broken`` is set."""

    def __init__(self) -> None:
        self.count = 0
        self.broken = False

    def __call__(self) -> Any:
        self.count += 1
        return self.count if self.broken else f"evt-{self.count}"


FACTS_THAT_EMIT: list[Callable[[RunTracker], None]] = [
    lambda t: t.set_run_status("root", "paused"),
    lambda t: t.set_stage_status("root", "plan", "running"),
    lambda t: t.set_tool_status("root", "grep", "running"),
    lambda t: t.add_run("x", status="running"),
    lambda t: t.add_run("x", parent_run_id="root", status="running"),
    lambda t: t.add_stage("root", "build", "Build", status="running"),
    lambda t: t.request_control("root", "kill"),
    lambda t: t.open_prompt("root", "q", "input", "?"),
    lambda t: t.answer_prompt("root", "p"),
]


@pytest.mark.parametrize("fact", FACTS_THAT_EMIT)
async def test_a_bad_event_id_from_the_factory_raises_before_changing_anything(
    hub: WorkflowActivityHub, fact: Callable[[RunTracker], None]
) -> None:
    """C1: the event is built before the fact is recorded, so a bad id changes nothing; once the
    factory behaves, the same fact applies as if the failed call never happened."""
    ids = EventIds()
    tracker = RunTracker(
        hub.register_publisher(), owner_session_id="s", event_id_factory=ids, include_graph=True
    )
    tracker.start()
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan")
    tracker.add_tool("root", "grep", "grep")
    tracker.open_prompt("root", "p", "confirm", "Go?")
    before, snapshot, cursor = tracker.activities(), hub.snapshot_frame(), hub.cursor
    ids.broken = True
    with pytest.raises(ContractError, match="event_id"):
        fact(tracker)
    assert tracker.activities() == before
    assert tracker.run_status("root") == "running"
    assert (hub.snapshot_frame(), hub.cursor) == (snapshot, cursor)
    assert "x" not in tracker
    ids.broken, failed_calls = False, ids.count
    fact(tracker)  # a half-applied fact would now raise, or emit nothing
    assert (ids.count, hub.cursor != cursor) == (failed_calls + 1, True)


@pytest.mark.parametrize("fact", [*FACTS_THAT_EMIT, lambda t: t.require_intervention("root")])
async def test_a_bad_time_from_the_clock_raises_before_changing_anything(
    scene: Scene, fact: Callable[[RunTracker], None]
) -> None:
    """C1: the clock's value is checked where it is read, before anything changes."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan")
    tracker.add_tool("root", "grep", "grep")
    tracker.open_prompt("root", "p", "confirm", "Go?")
    before, snapshot, cursor = tracker.activities(), scene.hub.snapshot_frame(), scene.hub.cursor
    scene.clock.now = float("nan")
    with pytest.raises(ContractError, match="clock"):
        fact(tracker)
    assert tracker.activities() == before
    assert tracker.run_status("root") == "running"
    assert (scene.hub.snapshot_frame(), scene.hub.cursor) == (snapshot, cursor)
    assert "x" not in tracker


async def test_deeply_nested_runs_are_tracked_without_recursion(scene: Scene) -> None:
    """§5: nested runs belong to their root at any depth (2 000 here, beyond the stack limit)."""
    tracker = scene.tracker
    depth = 2_000
    with tracker.batch():
        tracker.add_run("r0", status="running")
        for level in range(1, depth):
            tracker.add_run(f"r{level}", parent_run_id=f"r{level - 1}")
        tracker.add_stage(f"r{depth - 1}", "build", "Build", status="running")
    assert tracker.activity("r0").reason == "executing"
    tracker.request_control("r0", "kill")
    tracker.set_run_status("r0", "killed")
    assert tracker.activity("r0").reason == "stopping"
    tracker.release_ownership("r0")
    assert tracker.activity("r0").state == "idle"
    tracker.remove_run("r0")
    assert f"r{depth - 1}" not in tracker
    assert scene.hub.snapshot_frame().roots == ()


async def test_a_stage_holds_at_most_one_open_prompt(scene: Scene) -> None:
    """§2: a stage node has one pending prompt; a second one is refused."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "ask", "Ask")
    tracker.open_prompt("root", "p1", "input", "?", stage_id="ask")
    with pytest.raises(ValueError, match="already has open prompt"):
        tracker.open_prompt("root", "p2", "input", "?", stage_id="ask")
    assert tracker.activity("root").actionable_block_count == 1


async def test_resume_withdraws_a_quit_that_has_not_settled(scene: Scene) -> None:
    """§5: a resume request cancels a pending quit: the work executes again."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "build", "Build", status="running")
    tracker.request_control("root", "quit")
    assert tracker.activity("root").reason == "stopping"
    tracker.request_control("root", "resume")
    assert tracker.activity("root").reason == "executing"


async def test_a_run_restarted_after_a_quit_is_no_longer_stopping(scene: Scene) -> None:
    """§5: quit settles as paused; running again later starts afresh, not stopping."""
    tracker = scene.tracker
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "build", "Build", status="running")
    tracker.request_control("root", "quit")
    tracker.set_stage_status("root", "build", "pending")
    tracker.set_run_status("root", "paused")
    assert (tracker.activity("root").state, tracker.activity("root").reason) == ("idle", "paused")
    tracker.set_run_status("root", "running")
    tracker.set_stage_status("root", "build", "running")
    assert tracker.activity("root").reason == "executing"


async def test_execution_order_is_the_order_nodes_first_left_pending(
    hub: WorkflowActivityHub,
) -> None:
    """§2/§5: graph nodes get an execution order, per root, when they first leave pending."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="s", include_graph=True)
    tracker.start()
    tracker.add_run("root", status="running")
    for stage_id in ("a", "b", "c"):
        tracker.add_stage("root", stage_id, stage_id.upper())
    tracker.set_stage_status("root", "c", "running")
    tracker.set_stage_status("root", "a", "running")
    tracker.set_stage_status("root", "c", "completed")
    graph = tracker.activity("root").graph
    assert graph is not None
    assert [(node.node_id, node.execution_order) for node in graph.nodes] == [
        ("a", 1),
        ("b", None),
        ("c", 0),
    ]


# --- issue 12 item 9: parent ids are looked up ---------------------------------------------


def plain_tracker() -> RunTracker:
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="s", clock=lambda: 1.0)
    tracker.start()
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan")
    return tracker


@pytest.mark.parametrize("kind", ["stage", "tool"])
def test_an_unknown_parent_id_raises_key_error_and_changes_nothing(kind: str) -> None:
    """§5/C1: as the scheduler guide says, every id is looked up first; unknown ones raise."""
    tracker = plain_tracker()
    before = tracker.activity("root")
    add = tracker.add_stage if kind == "stage" else tracker.add_tool
    with pytest.raises(KeyError, match="nope"):
        add("root", "build", "Build", parent_ids=["plan", "nope"])
    assert tracker.activity("root") == before
    add("root", "build", "Build", parent_ids=["plan"])  # the id is still free


def test_a_stage_that_is_its_own_parent_is_refused() -> None:
    """C1: a self-reference is a ContractError naming parent_ids; nothing changes."""
    tracker = plain_tracker()
    with pytest.raises(ContractError, match="parent_ids"):
        tracker.add_stage("root", "build", "Build", parent_ids=["build"])
    tracker.add_stage("root", "build", "Build")


def test_a_host_stage_must_be_a_stage_of_the_parent_run() -> None:
    """§5: host_stage_id names a stage of the parent run; a root has no host."""
    tracker = plain_tracker()
    with pytest.raises(KeyError):
        tracker.add_run("child", parent_run_id="root", host_stage_id="nope")
    with pytest.raises(ContractError, match="host_stage_id"):
        tracker.add_run("other", host_stage_id="plan")
    assert "child" not in tracker
    assert "other" not in tracker


# --- issue 12: following a reload -----------------------------------------------------------


async def test_replace_publisher_moves_the_tracker_to_the_new_generation(
    hub: WorkflowActivityHub,
) -> None:
    """P1/P2: after a new publisher fences the old one, replace_publisher republishes a full
    snapshot through the new one, and later facts go there without PublisherFenced."""
    tracker = RunTracker(hub.register_publisher(), owner_session_id="s", clock=lambda: 1.0)
    tracker.start()
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "build", "Build", status="running")
    successor = hub.register_publisher()  # the reload: the tracker's publisher is fenced
    assert hub.snapshot_frame().availability == "unavailable"
    tracker.replace_publisher(successor)
    assert tracker.publisher is successor
    frame = hub.snapshot_frame()
    assert frame.availability == "ready"
    assert frame.roots == (tracker.activity("root"),)
    fenced = [d for d in hub.diagnostics() if d.kind == "PublisherFenced"]
    tracker.set_stage_status("root", "build", "completed")
    assert hub.snapshot_frame().roots == (tracker.activity("root"),)
    assert [d for d in hub.diagnostics() if d.kind == "PublisherFenced"] == fenced


def test_replace_publisher_inside_hydrating_publishes_recovering() -> None:
    """§5: a tracker that hydrates tells the new generation it is recovering, then ready."""
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="s", clock=lambda: 1.0)
    with tracker.hydrating():
        tracker.add_run("root", status="running", live=False)
        tracker.replace_publisher(hub.register_publisher())
        assert hub.snapshot_frame().availability == "recovering"
    assert hub.snapshot_frame().roots == (tracker.activity("root"),)


def test_replace_publisher_refuses_a_non_publisher() -> None:
    """C1: a bad argument is a ContractError naming it, and the publisher stays."""
    tracker = plain_tracker()
    publisher = tracker.publisher
    with pytest.raises(ContractError, match="publisher"):
        tracker.replace_publisher(object())  # type: ignore[arg-type]
    assert tracker.publisher is publisher


def test_the_default_event_ids_are_uuid4_text() -> None:
    """Without an ``event_id_factory`` every lifecycle event's id is a random version-4 UUID in
    its canonical text (what ``str(uuid.uuid4())`` gives), and ids do not repeat."""
    import uuid

    from workflow_hub.tracker._publication import uuid4

    made = [uuid4() for _ in range(5000)]
    assert len(set(made)) == len(made)
    for text in made:
        value = uuid.UUID(text)
        assert str(value) == text
        assert (value.version, value.variant) == (4, uuid.RFC_4122)
    # Every variant digit and every other random digit shows up: the bits stay random.
    assert {text[19] for text in made} == set("89ab")
    assert {text[15] for text in made} == set("0123456789abcdef")
