"""The hook runner: order, one event at a time, fencing, buffering, errors, retirement (SPEC K1-K7)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import attrs
import pytest
import trio
import trio.testing

from tests.support.builders import heartbeat, root, run_lifecycle, stage_lifecycle
from workflow_hub import (
    HOOK_EVENT_TYPES,
    ActivityChangedEvent,
    HandlerFailure,
    HeartbeatEvent,
    HookEventType,
    HookRunner,
    LifecycleEvent,
    LifecycleInput,
    StageCompletedEvent,
    StageTarget,
    WorkflowActivityHub,
    WorkflowActivityPublisher,
    WorkflowEvent,
    open_hub,
)

HEARTBEAT: Final = "workflow_heartbeat"


class Calls:
    """Handlers that append ``(label, event)`` to one shared list, so order is visible."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, WorkflowEvent]] = []

    def handler(self, label: str) -> Callable[[WorkflowEvent], None]:
        def record(event: WorkflowEvent) -> None:
            self.calls.append((label, event))

        return record

    def async_handler(self, label: str) -> Callable[[WorkflowEvent], Any]:
        async def record(event: WorkflowEvent) -> None:
            await trio.lowlevel.checkpoint()
            self.calls.append((label, event))

        return record

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self.calls]

    @property
    def events(self) -> list[WorkflowEvent]:
        return [event for _, event in self.calls]


class Blocker:
    """A handler that records when it starts and finishes, and waits on a gate in between."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.gate: trio.Event | None = trio.Event()

    async def __call__(self, event: WorkflowEvent) -> None:
        self.calls.calls.append(("blocker started", event))
        if self.gate is not None:
            await self.gate.wait()
        self.calls.calls.append(("blocker finished", event))

    def release(self) -> None:
        assert self.gate is not None
        self.gate.set()
        self.gate = None


def ready_publisher(hub: WorkflowActivityHub) -> WorkflowActivityPublisher:
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    return publisher


# --- order (K3) ----------------------------------------------------------------------------------


async def test_extensions_run_in_load_order_and_handlers_in_registration_order(
    hub: WorkflowActivityHub,
) -> None:
    """K3: load order is the first extension() call; a later handler of an early extension runs first."""
    calls = Calls()
    runner = HookRunner(hub)
    first = runner.extension("first")
    second = runner.extension("second")
    second.on(HEARTBEAT, calls.handler("second.1"))
    first.on(HEARTBEAT, calls.handler("first.1"))
    second.on(HEARTBEAT, calls.handler("second.2"))
    runner.extension("first").on(HEARTBEAT, calls.handler("first.2"))
    runner.bind()
    hub.register_publisher().publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["first.1", "first.2", "second.1", "second.2"]


def test_extensions_lists_names_in_load_order_kept_raw() -> None:
    """K3: runner.extensions names every extension once, in load order, byte-identical."""
    runner = HookRunner(WorkflowActivityHub())
    for name in ["b", "", " x ", "ünïcode ✓", "b", ""]:
        runner.extension(name)
    assert runner.extensions == ("b", "", " x ", "ünïcode ✓")


def test_extension_returns_the_same_handle_for_the_same_name() -> None:
    """K3: calling extension() again with a name gives that extension's handle back."""
    runner = HookRunner(WorkflowActivityHub())
    handle = runner.extension("reporter")
    assert runner.extension("reporter") is handle
    assert runner.extension("other") is not handle
    assert handle.name == "reporter"


async def test_decorator_form_registers_and_returns_the_handler_unchanged(
    hub: WorkflowActivityHub,
) -> None:
    """K3: @handle.on(event_type) registers the function and leaves the name bound to it."""
    seen: list[WorkflowEvent] = []
    runner = HookRunner(hub)

    def on_beat(event: HeartbeatEvent) -> None:
        seen.append(event)

    decorated = runner.extension("ext").on(HEARTBEAT)(on_beat)
    assert decorated is on_beat
    assert runner.extension("ext").on(HEARTBEAT, on_beat) is on_beat
    runner.bind()
    hub.register_publisher().publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert seen == [heartbeat(), heartbeat()]


async def test_sync_and_async_handlers_each_finish_before_the_next_starts(
    hub: WorkflowActivityHub,
) -> None:
    """K3/K5: async handlers are awaited, sync ones called, one at a time; results are ignored."""
    order: list[str] = []
    running: list[str] = []
    overlaps: list[list[str]] = []

    def tracked(label: str) -> Callable[[WorkflowEvent], Any]:
        async def handler(event: WorkflowEvent) -> str:
            overlaps.append(list(running))
            running.append(label)
            for _ in range(3):
                await trio.lowlevel.checkpoint()
            running.remove(label)
            order.append(label)
            return "ignored"

        return handler

    def quick(event: WorkflowEvent) -> int:
        overlaps.append(list(running))
        order.append("quick")
        return 42

    runner = HookRunner(hub)
    runner.extension("a").on(HEARTBEAT, tracked("a.async"))
    runner.extension("a").on(HEARTBEAT, quick)
    runner.extension("b").on(HEARTBEAT, tracked("b.async"))
    runner.bind()
    hub.register_publisher().publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert order == ["a.async", "quick", "b.async"]
    assert overlaps == [[], [], []]


async def test_each_hook_reaches_only_the_handlers_registered_for_it(
    hub: WorkflowActivityHub,
) -> None:
    """K3/P4/P6/P7: handlers are keyed by hook; removals give no hook; a completed stage gives two."""
    calls = Calls()
    runner = HookRunner(hub)
    for event_type in HOOK_EVENT_TYPES:
        runner.extension("ext").on(event_type, calls.handler(event_type))
    runner.bind()
    publisher = ready_publisher(hub)
    changed = publisher.publish_changed(root("a"))
    publisher.publish_removed("a")
    completed = publisher.publish_lifecycle(stage_lifecycle("completed"))
    publisher.publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == [
        "workflow_activity_changed",
        "workflow_lifecycle",
        "workflow_stage_completed",
        "workflow_heartbeat",
    ]
    assert [type(event) for event in calls.events] == [
        ActivityChangedEvent,
        LifecycleEvent,
        StageCompletedEvent,
        HeartbeatEvent,
    ]
    assert [getattr(event, "cursor", None) for event in calls.events] == [
        changed,
        completed,
        completed,
        None,
    ]


async def test_event_class_type_constants_name_their_hooks(hub: WorkflowActivityHub) -> None:
    """K3: LifecycleEvent.type and friends are accepted wherever a hook name is."""
    calls = Calls()
    runner = HookRunner(hub)
    for event_class in (LifecycleEvent, ActivityChangedEvent, StageCompletedEvent, HeartbeatEvent):
        runner.extension("ext").on(event_class.type, calls.handler(event_class.type))
    runner.bind()
    publisher = ready_publisher(hub)
    publisher.publish_changed(root("a"))
    publisher.publish_lifecycle(stage_lifecycle("completed"))
    publisher.publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == [event.type for event in calls.events]
    assert len(calls.labels) == 4


@pytest.mark.parametrize(
    "event_type",
    ["", "lifecycle", "workflow_Lifecycle", " workflow_heartbeat", "workflow_unknown", None],
)
def test_unknown_event_type_is_a_value_error_at_registration(event_type: Any) -> None:
    """K3: an unknown hook name fails when registering, in both forms, and registers nothing."""
    runner = HookRunner(WorkflowActivityHub())
    handle = runner.extension("ext")
    with pytest.raises(ValueError, match="unknown workflow hook"):
        handle.on(event_type, print)
    with pytest.raises(ValueError, match="unknown workflow hook"):
        handle.on(event_type)


def test_non_callable_handler_is_rejected() -> None:
    """K3: a handler must be callable; the error names it, in both forms."""
    handle = HookRunner(WorkflowActivityHub()).extension("ext")
    with pytest.raises(ValueError, match="handler"):
        handle.on(HEARTBEAT, "not a function")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="handler"):
        handle.on(HEARTBEAT)(42)  # type: ignore[type-var]


# --- one event at a time (K6) --------------------------------------------------------------------


async def test_no_handler_sees_the_next_event_before_every_handler_finished_this_one(
    hub: WorkflowActivityHub,
) -> None:
    """K6: event n+1 starts only after the last handler of the last extension finished event n."""
    calls = Calls()
    blocker = Blocker(calls)
    runner = HookRunner(hub)
    runner.extension("first").on(HEARTBEAT, blocker)
    runner.extension("second").on(HEARTBEAT, calls.handler("second"))
    runner.bind()
    publisher = hub.register_publisher()
    publisher.publish_heartbeat(heartbeat(1))
    publisher.publish_heartbeat(heartbeat(2))
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["blocker started"]
    blocker.release()
    await trio.testing.wait_all_tasks_blocked()
    assert [(label, event.scheduled_at) for label, event in calls.calls] == [  # type: ignore[union-attr]
        ("blocker started", 1),
        ("blocker finished", 1),
        ("second", 1),
        ("blocker started", 2),
        ("blocker finished", 2),
        ("second", 2),
    ]


# --- fencing (K4) --------------------------------------------------------------------------------


def _publish_lifecycle(publisher: WorkflowActivityPublisher) -> None:
    publisher.publish_lifecycle(run_lifecycle())


def _publish_activity_changed(publisher: WorkflowActivityPublisher) -> None:
    publisher.publish_snapshot("ready", [])
    publisher.publish_changed(root("a"))


def _publish_stage_completed(publisher: WorkflowActivityPublisher) -> None:
    # Also emits a workflow_lifecycle event, which has no handlers in these tests.
    publisher.publish_lifecycle(stage_lifecycle("completed"))


def _publish_heartbeat(publisher: WorkflowActivityPublisher) -> None:
    publisher.publish_heartbeat(heartbeat())


PUBLISH: dict[HookEventType, Callable[[WorkflowActivityPublisher], None]] = {
    "workflow_lifecycle": _publish_lifecycle,
    "workflow_activity_changed": _publish_activity_changed,
    "workflow_stage_completed": _publish_stage_completed,
    "workflow_heartbeat": _publish_heartbeat,
}


def _retire_runner(
    runner: HookRunner, publisher: WorkflowActivityPublisher
) -> WorkflowActivityPublisher:
    runner.retire()
    return runner.hub.register_publisher()  # inert: the hub is disposed


def _dispose_publisher(
    runner: HookRunner, publisher: WorkflowActivityPublisher
) -> WorkflowActivityPublisher:
    publisher.dispose()
    return runner.hub.register_publisher()


def _replace_publisher(
    runner: HookRunner, publisher: WorkflowActivityPublisher
) -> WorkflowActivityPublisher:
    return runner.hub.register_publisher()


RETIRE = {
    "runner_retired": _retire_runner,
    "publisher_disposed": _dispose_publisher,
    "publisher_replaced": _replace_publisher,
}


@pytest.mark.parametrize("later_in", ["same_extension", "next_extension"])
@pytest.mark.parametrize("retirement", list(RETIRE))
@pytest.mark.parametrize("event_type", list(PUBLISH))
async def test_retirement_while_a_handler_awaits_fences_the_rest_of_the_chain(
    hub: WorkflowActivityHub, event_type: HookEventType, retirement: str, later_in: str
) -> None:
    """K4/K7: the awaiting handler finishes, the later one never starts; a fresh source flows again."""
    calls = Calls()
    blocker = Blocker(calls)
    runner = HookRunner(hub)
    runner.extension("first").on(event_type, blocker)
    later_extension = "first" if later_in == "same_extension" else "second"
    runner.extension(later_extension).on(event_type, calls.handler("later"))
    runner.bind()
    publisher = hub.register_publisher()
    PUBLISH[event_type](publisher)
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["blocker started"]

    fresh = RETIRE[retirement](runner, publisher)
    blocker.release()
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["blocker started", "blocker finished"]

    PUBLISH[event_type](fresh)
    await trio.testing.wait_all_tasks_blocked()
    if retirement == "runner_retired":
        assert calls.labels == ["blocker started", "blocker finished"]
    else:
        assert calls.labels[2:] == ["blocker started", "blocker finished", "later"]
        assert {event.type for event in calls.events} == {event_type}


async def test_retirement_inside_a_sync_handler_fences_the_rest_of_the_chain(
    hub: WorkflowActivityHub,
) -> None:
    """K4: the check runs before every handler, not only after an await."""
    calls = Calls()
    runner = HookRunner(hub)

    def replace_source(event: WorkflowEvent) -> None:
        calls.calls.append(("replace", event))
        hub.register_publisher()

    runner.extension("first").on(HEARTBEAT, replace_source)
    runner.extension("first").on(HEARTBEAT, calls.handler("same"))
    runner.extension("second").on(HEARTBEAT, calls.handler("next"))
    runner.bind()
    hub.register_publisher().publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["replace"]


async def test_fencing_skips_only_the_retired_publishers_events(hub: WorkflowActivityHub) -> None:
    """K2/K4: queued events of the replaced publisher are dropped; its successor's all arrive."""
    calls = Calls()
    blocker = Blocker(calls)
    runner = HookRunner(hub)
    runner.extension("first").on(HEARTBEAT, blocker)
    runner.extension("second").on(HEARTBEAT, calls.handler("second"))
    runner.bind()
    old = hub.register_publisher()
    old.publish_heartbeat(heartbeat(1))
    old.publish_heartbeat(heartbeat(2))
    await trio.testing.wait_all_tasks_blocked()
    new = hub.register_publisher()
    new.publish_heartbeat(heartbeat(3))
    blocker.release()
    await trio.testing.wait_all_tasks_blocked()
    assert [(label, event.scheduled_at) for label, event in calls.calls] == [  # type: ignore[union-attr]
        ("blocker started", 1),
        ("blocker finished", 1),
        ("blocker started", 3),
        ("blocker finished", 3),
        ("second", 3),
    ]


# --- buffering before bind (K1) ------------------------------------------------------------------


async def test_buffered_events_arrive_after_bind_asynchronously_in_order_before_live_ones(
    hub: WorkflowActivityHub,
) -> None:
    """K1: nothing before bind(), nothing inside it; then the buffer in order, then live events."""
    calls = Calls()
    runner = HookRunner(hub)
    for event_type in HOOK_EVENT_TYPES:
        runner.extension("early").on(event_type, calls.handler("early"))
    publisher = ready_publisher(hub)
    changed = publisher.publish_changed(root("a"))
    lifecycle = publisher.publish_lifecycle(stage_lifecycle("completed"))
    publisher.publish_heartbeat(heartbeat(1))
    # An extension loaded after the publications still gets the buffered events.
    for event_type in HOOK_EVENT_TYPES:
        runner.extension("late").on(event_type, calls.handler("late"))
    await trio.testing.wait_all_tasks_blocked()
    assert calls.calls == []

    runner.bind()
    publisher.publish_heartbeat(heartbeat(2))
    assert calls.calls == []
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["early", "late"] * 5
    seen = calls.events[::2]
    assert calls.events[1::2] == seen
    assert [event.type for event in seen] == [
        "workflow_activity_changed",
        "workflow_lifecycle",
        "workflow_stage_completed",
        "workflow_heartbeat",
        "workflow_heartbeat",
    ]
    assert [event.cursor for event in seen[:3]] == [changed, lifecycle, lifecycle]  # type: ignore[union-attr]
    assert seen[3:] == [heartbeat(1), heartbeat(2)]


async def test_buffered_stage_completed_equals_its_lifecycle_event_but_for_its_type(
    hub: WorkflowActivityHub,
) -> None:
    """K1/P6: both buffered events carry the same id, cursor and payload; only the type differs."""
    calls = Calls()
    runner = HookRunner(hub)
    runner.extension("ext").on("workflow_lifecycle", calls.handler("lifecycle"))
    runner.extension("ext").on("workflow_stage_completed", calls.handler("completed"))
    hub.register_publisher().publish_lifecycle(stage_lifecycle("completed", delivery="replay"))
    runner.bind()
    await trio.testing.wait_all_tasks_blocked()
    lifecycle, completed = calls.events
    assert isinstance(lifecycle, LifecycleEvent)
    assert isinstance(completed, StageCompletedEvent)
    assert attrs.asdict(lifecycle) == attrs.asdict(completed)
    assert (lifecycle.type, completed.type) == ("workflow_lifecycle", "workflow_stage_completed")
    assert completed.delivery == "replay"


@pytest.mark.parametrize("name", ["", " x ", "ステージ ✓", "\t\n", "e\u0301"])
async def test_buffered_events_keep_raw_ids_and_names(hub: WorkflowActivityHub, name: str) -> None:
    """K1/§2: empty, padded and unicode ids and names come back byte-identical."""
    calls = Calls()
    runner = HookRunner(hub)
    for event_type in HOOK_EVENT_TYPES:
        runner.extension(name).on(event_type, calls.handler(event_type))
    lifecycle = LifecycleInput(
        event_id=name,
        run_id=name,
        root_run_id=name,
        owner_session_id=name,
        occurred_at=1,
        observed_at=2,
        delivery="live",
        target=StageTarget(run_id=name, stage_id=name, stage_name=name, status="completed"),
    )
    beat = HeartbeatEvent(
        run_id=name, root_run_id=name, owner_session_id=name, scheduled_at=3, interval_minutes=1
    )
    publisher = ready_publisher(hub)
    publisher.publish_changed(root(name))
    publisher.publish_lifecycle(lifecycle)
    publisher.publish_heartbeat(beat)
    runner.bind()
    await trio.testing.wait_all_tasks_blocked()
    changed_event, lifecycle_event, completed_event, heartbeat_event = calls.events
    assert changed_event.root.root_run_id == name  # type: ignore[union-attr]
    expected_fields = attrs.asdict(lifecycle, recurse=False)
    for event in (lifecycle_event, completed_event):
        fields = attrs.asdict(event, recurse=False)
        del fields["cursor"]
        assert fields == expected_fields
    assert heartbeat_event == beat
    assert runner.extensions == (name,)


async def test_retiring_the_runner_before_binding_drops_buffered_events(
    hub: WorkflowActivityHub,
) -> None:
    """K1/K7: the buffer is dropped with the hub; the retired runner cannot be bound."""
    calls = Calls()
    runner = HookRunner(hub)
    runner.extension("ext").on(HEARTBEAT, calls.handler("ext"))
    hub.register_publisher().publish_heartbeat(heartbeat())
    runner.retire()
    assert hub.statistics().hook_events_pending == 0
    with pytest.raises(RuntimeError, match="retired"):
        runner.bind()
    await trio.testing.wait_all_tasks_blocked()
    assert calls.calls == []


async def test_buffered_events_of_a_disposed_publisher_are_dropped(
    hub: WorkflowActivityHub,
) -> None:
    """K1/K2: publisher retirement fences buffered events just like live ones."""
    calls = Calls()
    runner = HookRunner(hub)
    runner.extension("ext").on(HEARTBEAT, calls.handler("ext"))
    publisher = hub.register_publisher()
    publisher.publish_heartbeat(heartbeat())
    publisher.dispose()
    runner.bind()
    await trio.testing.wait_all_tasks_blocked()
    assert calls.calls == []


async def test_with_a_replacement_publisher_only_the_successors_buffered_events_arrive(
    hub: WorkflowActivityHub,
) -> None:
    """K1/K2: events buffered by a replaced publisher are dropped; the successor's arrive in order."""
    calls = Calls()
    runner = HookRunner(hub)
    runner.extension("ext").on("workflow_lifecycle", calls.handler("ext"))
    runner.extension("ext").on(HEARTBEAT, calls.handler("ext"))
    old = hub.register_publisher()
    old.publish_lifecycle(run_lifecycle(event_id="old"))
    old.publish_heartbeat(heartbeat(1))
    new = hub.register_publisher()
    first = new.publish_lifecycle(run_lifecycle(event_id="new"))
    new.publish_heartbeat(heartbeat(2))
    runner.bind()
    await trio.testing.wait_all_tasks_blocked()
    assert calls.events == [
        LifecycleEvent(cursor=first, **attrs.asdict(run_lifecycle(event_id="new"), recurse=False)),
        heartbeat(2),
    ]


# --- failures (K5) -------------------------------------------------------------------------------


async def test_failing_handlers_are_passed_to_on_error_and_the_chain_continues(
    hub: WorkflowActivityHub,
) -> None:
    """K5: one HandlerFailure per failing handler, sync or async; later handlers still run."""
    calls = Calls()
    failures: list[HandlerFailure] = []
    raised: list[Exception] = []

    def broken(event: WorkflowEvent) -> None:
        raised.append(ValueError("sync handler bug"))
        raise raised[-1]

    async def broken_async(event: WorkflowEvent) -> None:
        await trio.lowlevel.checkpoint()
        raised.append(KeyError("async handler bug"))
        raise raised[-1]

    runner = HookRunner(hub, on_error=failures.append)
    runner.extension("a").on(HEARTBEAT, broken)
    runner.extension("a").on(HEARTBEAT, calls.handler("a"))
    runner.extension("b").on(HEARTBEAT, broken_async)
    runner.extension("b").on(HEARTBEAT, calls.handler("b"))
    runner.bind()
    publisher = hub.register_publisher()
    publisher.publish_heartbeat(heartbeat(1))
    publisher.publish_heartbeat(heartbeat(2))
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["a", "b", "a", "b"]
    assert failures == [
        HandlerFailure(
            extension=extension, event_type=HEARTBEAT, event=heartbeat(n), exception=exception
        )
        for (extension, n), exception in zip(
            [("a", 1), ("b", 1), ("a", 2), ("b", 2)], raised, strict=True
        )
    ]
    assert "ObserverDeliveryFailed" not in [d.kind for d in hub.diagnostics()]


async def test_failing_handler_is_logged_with_extension_and_hook(
    hub: WorkflowActivityHub, caplog: pytest.LogCaptureFixture
) -> None:
    """K5: the workflow_hub logger gets the extension name, the hook and the traceback."""
    error = RuntimeError("handler bug")

    def broken(event: WorkflowEvent) -> None:
        raise error

    runner = HookRunner(hub)
    runner.extension("status-bar").on("workflow_stage_completed", broken)
    runner.bind()
    caplog.set_level(logging.ERROR, logger="workflow_hub")
    hub.register_publisher().publish_lifecycle(stage_lifecycle("completed"))
    await trio.testing.wait_all_tasks_blocked()
    [record] = [r for r in caplog.records if r.name == "workflow_hub"]
    assert record.levelno == logging.ERROR
    assert "'status-bar'" in record.getMessage()
    assert "workflow_stage_completed" in record.getMessage()
    assert record.exc_info is not None
    assert record.exc_info[1] is error


async def test_a_failing_on_error_is_logged_and_dispatch_goes_on(
    hub: WorkflowActivityHub, caplog: pytest.LogCaptureFixture
) -> None:
    """K5: an on_error that raises is logged; the next handler and the next event still run."""
    calls = Calls()

    def broken(event: WorkflowEvent) -> None:
        raise ValueError("handler bug")

    def broken_reporter(failure: HandlerFailure) -> None:
        raise LookupError("reporter bug")

    runner = HookRunner(hub, on_error=broken_reporter)
    runner.extension("a").on(HEARTBEAT, broken)
    runner.extension("b").on(HEARTBEAT, calls.handler("b"))
    runner.bind()
    caplog.set_level(logging.ERROR, logger="workflow_hub")
    publisher = hub.register_publisher()
    publisher.publish_heartbeat(heartbeat(1))
    publisher.publish_heartbeat(heartbeat(2))
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["b", "b"]
    reporter_records = [r for r in caplog.records if "on_error" in r.getMessage()]
    assert len(reporter_records) == 2
    assert all(isinstance(r.exc_info and r.exc_info[1], LookupError) for r in reporter_records)


def test_an_async_on_error_is_rejected() -> None:
    """K5: on_error is called synchronously from the dispatch, so it must be a plain function."""

    async def report(failure: HandlerFailure) -> None:
        pass

    with pytest.raises(ValueError, match="on_error"):
        HookRunner(WorkflowActivityHub(), on_error=report)


# --- registration during dispatch (K3) -----------------------------------------------------------


async def test_registering_during_a_dispatch_applies_from_the_next_event(
    hub: WorkflowActivityHub,
) -> None:
    """K3: the handler list is captured when an event's dispatch starts."""
    calls = Calls()
    runner = HookRunner(hub)

    def register_more(event: WorkflowEvent) -> None:
        calls.calls.append(("first", event))
        if len(calls.calls) == 1:
            runner.extension("first").on(HEARTBEAT, calls.handler("first.added"))
            runner.extension("third").on(HEARTBEAT, calls.handler("third"))

    runner.extension("first").on(HEARTBEAT, register_more)
    runner.extension("second").on(HEARTBEAT, calls.handler("second"))
    runner.bind()
    publisher = hub.register_publisher()
    publisher.publish_heartbeat(heartbeat(1))
    publisher.publish_heartbeat(heartbeat(2))
    await trio.testing.wait_all_tasks_blocked()
    assert calls.labels == ["first", "second", "first", "first.added", "second", "third"]


# --- retirement (K7) -----------------------------------------------------------------------------


async def test_retire_disposes_the_hub_its_leases_and_publishers_once(
    hub: WorkflowActivityHub,
) -> None:
    """K7/L2: retire() disposes every lease and fences every publisher; a second call does nothing."""
    runner = HookRunner(hub)
    publisher = hub.register_publisher()
    hub.observe(lambda frame: None)
    runner.retire()
    diagnostics = hub.diagnostics()
    runner.retire()
    assert runner.retired
    assert hub.disposed
    assert not publisher.current
    assert hub.statistics().observers == 0
    assert hub.diagnostics() == diagnostics
    assert [d.kind for d in diagnostics].count("ObserverDisposed") == 1


def test_registration_after_retire_raises_a_clear_runtime_error() -> None:
    """K7: a retired runner is sealed: no new extension, no handler on an old handle, no bind."""
    runner = HookRunner(WorkflowActivityHub())
    handle = runner.extension("ext")
    decorate = handle.on(HEARTBEAT)
    runner.retire()
    with pytest.raises(RuntimeError, match="retired"):
        runner.extension("new")
    with pytest.raises(RuntimeError, match="retired"):
        runner.extension("ext")
    with pytest.raises(RuntimeError, match="retired"):
        handle.on(HEARTBEAT, print)
    with pytest.raises(RuntimeError, match="retired"):
        decorate(print)
    with pytest.raises(RuntimeError, match="retired"):
        runner.bind()


async def test_reload_is_a_new_hub_and_a_new_runner() -> None:
    """K7: after retire(), the next generation uses a new hub (new epoch) and its own handlers."""
    old_calls, new_calls = Calls(), Calls()
    async with open_hub() as old_hub:
        old_runner = HookRunner(old_hub)
        old_runner.extension("ext").on(HEARTBEAT, old_calls.handler("old"))
        old_runner.bind()
        old_publisher = old_hub.register_publisher()
        old_runner.retire()
        async with open_hub() as new_hub:
            new_runner = HookRunner(new_hub)
            new_runner.extension("ext").on(HEARTBEAT, new_calls.handler("new"))
            new_runner.bind()
            old_publisher.publish_heartbeat(heartbeat(1))
            new_hub.register_publisher().publish_heartbeat(heartbeat(2))
            await trio.testing.wait_all_tasks_blocked()
            assert new_hub.cursor.epoch != old_hub.cursor.epoch
    assert old_calls.calls == []
    assert new_calls.events == [heartbeat(2)]


async def test_an_on_error_that_returns_a_coroutine_is_logged_and_the_coroutine_closed(
    hub: WorkflowActivityHub, caplog: pytest.LogCaptureFixture
) -> None:
    """K5: a lambda wrapping an async reporter is caught; nothing is left un-awaited."""
    reported: list[HandlerFailure] = []

    async def async_report(failure: HandlerFailure) -> None:
        reported.append(failure)

    def broken(event: WorkflowEvent) -> None:
        raise ValueError("handler bug")

    runner = HookRunner(hub, on_error=lambda failure: async_report(failure))
    runner.extension("ext").on(HEARTBEAT, broken)
    runner.bind()
    caplog.set_level(logging.ERROR, logger="workflow_hub")
    hub.register_publisher().publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert reported == []
    assert any("coroutine" in str(r.exc_info and r.exc_info[1]) for r in caplog.records)


async def test_a_second_runner_cannot_silently_take_over_a_hub(hub: WorkflowActivityHub) -> None:
    """Issue 12.7: binding a second runner raises; the first one keeps running its handlers."""
    first_calls, second_calls = Calls(), Calls()
    first = HookRunner(hub)
    first.extension("ext").on(HEARTBEAT, first_calls.handler("first"))
    first.bind()
    first.bind()  # binding the same runner again is harmless
    second = HookRunner(hub)
    second.extension("ext").on(HEARTBEAT, second_calls.handler("second"))
    with pytest.raises(RuntimeError, match="another HookRunner is already bound"):
        second.bind()
    hub.register_publisher().publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    assert first_calls.labels == ["first"]
    assert second_calls.calls == []


async def test_a_runner_of_another_hub_does_not_count() -> None:
    """Issue 12.7: the one-runner rule is per hub: two hubs, two runners, both bound."""
    calls = Calls()
    async with open_hub() as one, open_hub() as two:
        for label, hub in (("one", one), ("two", two)):
            runner = HookRunner(hub)
            runner.extension("ext").on(HEARTBEAT, calls.handler(label))
            runner.bind()
            hub.register_publisher().publish_heartbeat(heartbeat())
        await trio.testing.wait_all_tasks_blocked()
    assert sorted(calls.labels) == ["one", "two"]


def test_binding_keeps_neither_hub_nor_runner_alive() -> None:
    """Issue 12.7: the record of which runner a hub has does not leak either of them."""
    import gc
    import weakref

    hub = WorkflowActivityHub()
    runner = HookRunner(hub)
    runner.bind()
    gone = weakref.ref(hub), weakref.ref(runner)
    del hub, runner
    gc.collect()
    assert [ref() for ref in gone] == [None, None]
