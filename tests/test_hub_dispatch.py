"""The hub's hook queue under a bare dispatcher (SPEC K1, K2, K6, P4, P6, P7)."""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from workflow_hub import (
    ActivityChangedEvent,
    HeartbeatEvent,
    LifecycleEvent,
    StageCompletedEvent,
    WorkflowEvent,
    open_hub,
)

from .builders import heartbeat, root, run_lifecycle, stage_lifecycle


class Dispatcher:
    def __init__(self) -> None:
        self.events: list[WorkflowEvent] = []
        self.gate: trio.Event | None = None
        self.is_current: list[Callable[[], bool]] = []

    async def __call__(self, event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        self.events.append(event)
        self.is_current.append(is_current)
        if self.gate is not None:
            await self.gate.wait()


async def test_changed_emits_activity_changed_with_the_frames_cursor() -> None:
    """P4: workflow_activity_changed carries the same cursor and root as the changed frame."""
    async with open_hub() as hub:
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        cursor = publisher.publish_changed(root("a"))
        publisher.publish_removed("a")
        await trio.testing.wait_all_tasks_blocked()
        assert dispatcher.events == [ActivityChangedEvent(cursor=cursor, root=root("a"))]


async def test_completed_stage_emits_lifecycle_then_stage_completed() -> None:
    """P6: a completed stage gives both hooks with the same id, cursor and payload."""
    async with open_hub() as hub:
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        publisher = hub.register_publisher()
        cursor = publisher.publish_lifecycle(stage_lifecycle("completed", delivery="replay"))
        await trio.testing.wait_all_tasks_blocked()
        lifecycle, completed = dispatcher.events
        assert isinstance(lifecycle, LifecycleEvent)
        assert isinstance(completed, StageCompletedEvent)
        assert lifecycle.cursor == completed.cursor == cursor
        assert lifecycle.event_id == completed.event_id == "evt-1"
        assert completed.delivery == "replay"
        assert completed.target == lifecycle.target


async def test_other_outcomes_give_no_completion_hook() -> None:
    """P6: failed and skipped stages, and run outcomes, give only the lifecycle hook."""
    async with open_hub() as hub:
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        publisher = hub.register_publisher()
        publisher.publish_lifecycle(stage_lifecycle("failed"))
        publisher.publish_lifecycle(stage_lifecycle("skipped"))
        publisher.publish_lifecycle(run_lifecycle("killed"))
        publisher.publish_lifecycle(run_lifecycle("cancelled"))
        await trio.testing.wait_all_tasks_blocked()
        assert [type(e) for e in dispatcher.events] == [LifecycleEvent] * 4


async def test_heartbeat_is_dispatched_as_given() -> None:
    """P7: the heartbeat reaches the dispatcher unchanged."""
    async with open_hub() as hub:
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        event = heartbeat()
        hub.register_publisher().publish_heartbeat(event)
        await trio.testing.wait_all_tasks_blocked()
        assert dispatcher.events == [event]
        assert isinstance(dispatcher.events[0], HeartbeatEvent)


async def test_events_before_binding_are_buffered_and_delivered_first_in_order() -> None:
    """K1: buffered events arrive asynchronously after bind, in order, before later ones."""
    async with open_hub() as hub:
        publisher = hub.register_publisher()
        first = publisher.publish_lifecycle(run_lifecycle(event_id="one"))
        publisher.publish_heartbeat(heartbeat())
        await trio.testing.wait_all_tasks_blocked()
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        publisher.publish_lifecycle(run_lifecycle(event_id="three"))
        assert dispatcher.events == []
        await trio.testing.wait_all_tasks_blocked()
        assert [getattr(e, "event_id", "hb") for e in dispatcher.events] == ["one", "hb", "three"]
        assert dispatcher.events[0].cursor == first  # type: ignore[union-attr]


async def test_events_published_before_the_hub_runs_are_kept() -> None:
    """K1/L1: publishing works on a hub that is not running; hooks wait for it to run."""
    from workflow_hub import WorkflowActivityHub

    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_lifecycle(run_lifecycle())
    dispatcher = Dispatcher()
    hub.bind_dispatcher(dispatcher)
    async with hub:
        await trio.testing.wait_all_tasks_blocked()
        assert len(dispatcher.events) == 1


async def test_one_event_at_a_time() -> None:
    """K6: the dispatcher never sees event n+1 before it has finished with event n."""
    async with open_hub() as hub:
        dispatcher = Dispatcher()
        dispatcher.gate = trio.Event()
        hub.bind_dispatcher(dispatcher)
        publisher = hub.register_publisher()
        publisher.publish_lifecycle(run_lifecycle(event_id="a"))
        publisher.publish_lifecycle(run_lifecycle(event_id="b"))
        await trio.testing.wait_all_tasks_blocked()
        assert len(dispatcher.events) == 1
        gate, dispatcher.gate = dispatcher.gate, None
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert len(dispatcher.events) == 2


async def test_events_of_a_retired_publisher_are_dropped_at_their_turn() -> None:
    """K2: buffered events of a replaced or disposed publisher are dropped; successors' flow."""
    async with open_hub() as hub:
        old = hub.register_publisher()
        old.publish_lifecycle(run_lifecycle(event_id="old"))
        new = hub.register_publisher()
        new.publish_lifecycle(run_lifecycle(event_id="new"))
        new.publish_heartbeat(heartbeat())
        new.dispose()
        newest = hub.register_publisher()
        newest.publish_lifecycle(run_lifecycle(event_id="newest"))
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        await trio.testing.wait_all_tasks_blocked()
        assert [getattr(e, "event_id", None) for e in dispatcher.events] == ["newest"]


async def test_is_current_follows_the_publisher() -> None:
    """K2/K4: the is_current callable turns False when the publisher is retired mid-dispatch."""
    async with open_hub() as hub:
        dispatcher = Dispatcher()
        dispatcher.gate = trio.Event()
        hub.bind_dispatcher(dispatcher)
        publisher = hub.register_publisher()
        publisher.publish_lifecycle(run_lifecycle())
        await trio.testing.wait_all_tasks_blocked()
        assert dispatcher.is_current[0]()
        hub.register_publisher()
        assert not dispatcher.is_current[0]()
        dispatcher.gate.set()


async def test_failing_dispatcher_is_recorded_and_dispatch_goes_on() -> None:
    """K5 at hub level: an exception from dispatch records ObserverDeliveryFailed."""
    async with open_hub() as hub:
        seen: list[WorkflowEvent] = []

        async def broken(event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
            seen.append(event)
            raise ValueError("bad handler")

        hub.bind_dispatcher(broken)
        publisher = hub.register_publisher()
        publisher.publish_heartbeat(heartbeat(1))
        publisher.publish_heartbeat(heartbeat(2))
        await trio.testing.wait_all_tasks_blocked()
        assert len(seen) == 2
        assert [d.kind for d in hub.diagnostics()][-2:] == ["ObserverDeliveryFailed"] * 2


async def test_binding_again_replaces_the_dispatcher() -> None:
    """K1: a second bind replaces the first dispatcher for events not yet started."""
    async with open_hub() as hub:
        first, second = Dispatcher(), Dispatcher()
        hub.bind_dispatcher(first)
        publisher = hub.register_publisher()
        publisher.publish_heartbeat(heartbeat(1))
        await trio.testing.wait_all_tasks_blocked()
        hub.bind_dispatcher(second)
        publisher.publish_heartbeat(heartbeat(2))
        await trio.testing.wait_all_tasks_blocked()
        assert [e.scheduled_at for e in first.events] == [1]  # type: ignore[union-attr]
        assert [e.scheduled_at for e in second.events] == [2]  # type: ignore[union-attr]


async def test_disposed_hub_drops_buffer_and_ignores_binding() -> None:
    """L2/K1: dispose drops buffered hooks; binding a disposed hub does nothing."""
    async with open_hub() as hub:
        hub.register_publisher().publish_heartbeat(heartbeat())
        hub.dispose()
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        await trio.testing.wait_all_tasks_blocked()
        assert dispatcher.events == []
        assert hub.statistics().hook_events_pending == 0


async def test_hook_buffer_is_bounded_dropping_the_oldest() -> None:
    """A hub that never binds does not grow without limit: the oldest events go, counted."""
    async with open_hub(hook_buffer_limit=3) as hub:
        publisher = hub.register_publisher()
        for index in range(10):
            publisher.publish_heartbeat(heartbeat(index))
        stats = hub.statistics()
        assert stats.hook_events_pending == 3
        assert stats.hook_events_dropped == 7
        dispatcher = Dispatcher()
        hub.bind_dispatcher(dispatcher)
        await trio.testing.wait_all_tasks_blocked()
        assert [e.scheduled_at for e in dispatcher.events] == [7, 8, 9]  # type: ignore[union-attr]


def test_default_hook_buffer_holds_ten_thousand() -> None:
    from workflow_hub import WorkflowActivityHub

    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    for index in range(10_050):
        publisher.publish_heartbeat(heartbeat(index))
    assert hub.statistics().hook_events_pending == 10_000
    assert hub.statistics().hook_events_dropped == 50
