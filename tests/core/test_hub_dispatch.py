"""The hub's hook queue under a bare dispatcher (SPEC K1, K2, K6, P4, P6, P7).

The batching tests bound batch sizes by the internal ``YIELD_EVERY`` (``workflow_hub._core._observers``)
and, for the hook task, ``HOOK_YIELD_EVERY`` and ``HOOK_YIELD_AFTER`` (``workflow_hub._core._hub``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import pytest
import trio
import trio.testing

from tests.support.builders import heartbeat, root, run_lifecycle, stage_lifecycle
from tests.support.consumers import RecordingDispatcher
from workflow_hub import (
    ActivityChangedEvent,
    HeartbeatEvent,
    LifecycleEvent,
    StageCompletedEvent,
    WorkflowActivityHub,
    WorkflowEvent,
    open_hub,
)
from workflow_hub._core._hub import HOOK_CLOCK_EVERY, HOOK_YIELD_AFTER, HOOK_YIELD_EVERY
from workflow_hub._core._observers import YIELD_EVERY


async def test_changed_emits_activity_changed_with_the_frames_cursor(
    hub: WorkflowActivityHub, dispatcher: RecordingDispatcher
) -> None:
    """P4: workflow_activity_changed carries the same cursor and root as the changed frame."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    cursor = publisher.publish_changed(root("a"))
    publisher.publish_removed("a")
    await trio.testing.wait_all_tasks_blocked()
    assert dispatcher.events == [ActivityChangedEvent(cursor=cursor, root=root("a"))]


async def test_completed_stage_emits_lifecycle_then_stage_completed(
    hub: WorkflowActivityHub, dispatcher: RecordingDispatcher
) -> None:
    """P6: a completed stage gives both hooks with the same id, cursor and payload."""
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


async def test_other_outcomes_give_no_completion_hook(
    hub: WorkflowActivityHub, dispatcher: RecordingDispatcher
) -> None:
    """P6: failed and skipped stages, and run outcomes, give only the lifecycle hook."""
    publisher = hub.register_publisher()
    publisher.publish_lifecycle(stage_lifecycle("failed"))
    publisher.publish_lifecycle(stage_lifecycle("skipped"))
    publisher.publish_lifecycle(run_lifecycle("killed"))
    publisher.publish_lifecycle(run_lifecycle("cancelled"))
    await trio.testing.wait_all_tasks_blocked()
    assert [type(e) for e in dispatcher.events] == [LifecycleEvent] * 4


async def test_heartbeat_is_dispatched_as_given(
    hub: WorkflowActivityHub, dispatcher: RecordingDispatcher
) -> None:
    """P7: the heartbeat reaches the dispatcher unchanged."""
    event = heartbeat()
    hub.register_publisher().publish_heartbeat(event)
    await trio.testing.wait_all_tasks_blocked()
    assert dispatcher.events == [event]
    assert isinstance(dispatcher.events[0], HeartbeatEvent)


async def test_events_before_binding_are_buffered_and_delivered_first_in_order(
    hub: WorkflowActivityHub,
) -> None:
    """K1: buffered events arrive asynchronously after bind, in order, before later ones."""
    publisher = hub.register_publisher()
    first = publisher.publish_lifecycle(run_lifecycle(event_id="one"))
    publisher.publish_heartbeat(heartbeat())
    await trio.testing.wait_all_tasks_blocked()
    dispatcher = RecordingDispatcher()
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
    dispatcher = RecordingDispatcher()
    hub.bind_dispatcher(dispatcher)
    async with hub:
        await trio.testing.wait_all_tasks_blocked()
        assert len(dispatcher.events) == 1


async def test_one_event_at_a_time(
    hub: WorkflowActivityHub, dispatcher: RecordingDispatcher
) -> None:
    """K6: the dispatcher never sees event n+1 before it has finished with event n."""
    dispatcher.gate = trio.Event()
    publisher = hub.register_publisher()
    publisher.publish_lifecycle(run_lifecycle(event_id="a"))
    publisher.publish_lifecycle(run_lifecycle(event_id="b"))
    await trio.testing.wait_all_tasks_blocked()
    assert len(dispatcher.events) == 1
    gate, dispatcher.gate = dispatcher.gate, None
    gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert len(dispatcher.events) == 2


async def test_events_of_a_retired_publisher_are_dropped_at_their_turn(
    hub: WorkflowActivityHub,
) -> None:
    """K2: buffered events of a replaced or disposed publisher are dropped; successors' flow."""
    old = hub.register_publisher()
    old.publish_lifecycle(run_lifecycle(event_id="old"))
    new = hub.register_publisher()
    new.publish_lifecycle(run_lifecycle(event_id="new"))
    new.publish_heartbeat(heartbeat())
    new.dispose()
    newest = hub.register_publisher()
    newest.publish_lifecycle(run_lifecycle(event_id="newest"))
    dispatcher = RecordingDispatcher()
    hub.bind_dispatcher(dispatcher)
    await trio.testing.wait_all_tasks_blocked()
    assert [getattr(e, "event_id", None) for e in dispatcher.events] == ["newest"]


async def test_is_current_follows_the_publisher(
    hub: WorkflowActivityHub, dispatcher: RecordingDispatcher
) -> None:
    """K2/K4: the is_current callable turns False when the publisher is retired mid-dispatch."""
    dispatcher.gate = trio.Event()
    publisher = hub.register_publisher()
    publisher.publish_lifecycle(run_lifecycle())
    await trio.testing.wait_all_tasks_blocked()
    assert dispatcher.is_current[0]()
    hub.register_publisher()
    assert not dispatcher.is_current[0]()
    dispatcher.gate.set()


async def test_failing_dispatcher_is_recorded_and_dispatch_goes_on(
    hub: WorkflowActivityHub,
) -> None:
    """K5 at hub level: an exception from dispatch records ObserverDeliveryFailed."""
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


async def test_binding_again_replaces_the_dispatcher(hub: WorkflowActivityHub) -> None:
    """K1: a second bind replaces the first dispatcher for events not yet started."""
    first, second = RecordingDispatcher(), RecordingDispatcher()
    hub.bind_dispatcher(first)
    publisher = hub.register_publisher()
    publisher.publish_heartbeat(heartbeat(1))
    await trio.testing.wait_all_tasks_blocked()
    hub.bind_dispatcher(second)
    publisher.publish_heartbeat(heartbeat(2))
    await trio.testing.wait_all_tasks_blocked()
    assert [e.scheduled_at for e in first.events] == [1]  # type: ignore[union-attr]
    assert [e.scheduled_at for e in second.events] == [2]  # type: ignore[union-attr]


async def test_disposed_hub_drops_buffer_and_ignores_binding(hub: WorkflowActivityHub) -> None:
    """L2/K1: dispose drops buffered hooks; binding a disposed hub does nothing."""
    hub.register_publisher().publish_heartbeat(heartbeat())
    hub.dispose()
    dispatcher = RecordingDispatcher()
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
        dispatcher = RecordingDispatcher()
        hub.bind_dispatcher(dispatcher)
        await trio.testing.wait_all_tasks_blocked()
        assert [e.scheduled_at for e in dispatcher.events] == [7, 8, 9]  # type: ignore[union-attr]


async def test_a_buffered_completed_stage_keeps_both_events_and_their_payloads() -> None:
    """K1, K2, P6: the StageCompletedEvent of a completed stage is a hook event of its own in the
    buffer (counted, dropped oldest first, fenced with its publisher) and arrives, after
    binding, equal to the one built from the input and the cursor at publication."""
    async with open_hub(hook_buffer_limit=5) as hub:
        fenced = hub.register_publisher()
        fenced.publish_lifecycle(stage_lifecycle("completed", event_id="fenced"))
        publisher = hub.register_publisher()
        first = stage_lifecycle("completed", event_id="first")
        first_cursor = publisher.publish_lifecycle(first)
        second = stage_lifecycle("completed", event_id="second")
        second_cursor = publisher.publish_lifecycle(second)
        stats = hub.statistics()
        # The fenced publisher's LifecycleEvent was dropped; its StageCompletedEvent is queued.
        assert (stats.hook_events_pending, stats.hook_events_dropped) == (5, 1)
        dispatcher = RecordingDispatcher()
        hub.bind_dispatcher(dispatcher)
        await trio.testing.wait_all_tasks_blocked()
        expected = []
        for event, cursor in ((first, first_cursor), (second, second_cursor)):
            envelope = attrs.asdict(event, recurse=False)
            expected += [
                LifecycleEvent(cursor=cursor, **envelope),
                StageCompletedEvent(cursor=cursor, **envelope),
            ]
        assert dispatcher.events == expected
        assert [type(e) for e in dispatcher.events] == [LifecycleEvent, StageCompletedEvent] * 2


def test_default_hook_buffer_holds_ten_thousand() -> None:
    from workflow_hub import WorkflowActivityHub

    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    for index in range(10_050):
        publisher.publish_heartbeat(heartbeat(index))
    assert hub.statistics().hook_events_pending == 10_000
    assert hub.statistics().hook_events_dropped == 50


# --- the hook task shares the loop (issue 12, item 1) ------------------------------------------


def _echo_dispatchers(
    publish: Callable[[ActivityChangedEvent], object],
) -> dict[str, Callable[[WorkflowEvent, Callable[[], bool]], object]]:
    """Three dispatchers that publish into their own hub for every activity change."""

    def plain(event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        if isinstance(event, ActivityChangedEvent):
            publish(event)

    async def never_awaits(event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        plain(event, is_current)

    return {"plain callable": plain, "async def that never awaits": never_awaits}


@pytest.mark.parametrize("style", ["plain callable", "async def that never awaits", "HookRunner"])
async def test_a_dispatcher_publishing_into_its_own_hub_cannot_starve_the_loop(
    style: str, mock_clock: trio.testing.MockClock
) -> None:
    """K6 with a feedback loop: the hook task checkpoints, so other tasks run and fail_after fires.

    Every activity change publishes another one. Before the fix the hook task never yielded:
    nothing else ran until the loop ended (here: at ``LIMIT`` echoes) and ``fail_after`` could not
    fire. Now a ticker task runs between batches, moves the clock and the deadline cancels the
    block while the echoes are still going.
    """
    from workflow_hub import HookRunner

    limit = 20 * YIELD_EVERY
    echoes: list[int] = []
    seen_by_ticker: list[int] = []

    async def ticker() -> None:
        for _ in range(3):
            await trio.lowlevel.checkpoint()
            seen_by_ticker.append(len(echoes))
        mock_clock.jump(2)

    async def echo_until_the_deadline() -> None:
        with trio.fail_after(1):
            async with open_hub() as hub, trio.open_nursery() as nursery:
                publisher = hub.register_publisher()

                def echo(event: ActivityChangedEvent) -> None:
                    if len(echoes) < limit:
                        echoes.append(event.cursor.revision)
                        publisher.publish_changed(event.root)

                if style == "HookRunner":
                    runner = HookRunner(hub)
                    runner.extension("echo").on("workflow_activity_changed", echo)
                    runner.bind()
                else:
                    hub.bind_dispatcher(_echo_dispatchers(echo)[style])  # type: ignore[arg-type]
                publisher.publish_changed(root())
                nursery.start_soon(ticker)
                await trio.sleep_forever()

    with pytest.raises(trio.TooSlowError):
        await echo_until_the_deadline()
    assert 0 < len(echoes) < limit, "the deadline fired while the echoes went on"
    assert len(set(seen_by_ticker)) > 1, "the ticker ran between batches of echoes"
    assert all(count < limit for count in seen_by_ticker)


async def test_a_large_buffer_is_dispatched_in_batches(hub: WorkflowActivityHub) -> None:
    """K1: binding after 10 000 buffered events does not block the loop until all are handled."""
    publisher = hub.register_publisher()
    for index in range(10_000):
        publisher.publish_heartbeat(heartbeat(index))
    handled: list[int] = []
    hub.bind_dispatcher(lambda event, is_current: handled.append(1))  # type: ignore[arg-type,func-returns-value]
    seen: list[int] = []
    while len(handled) < 10_000:
        await trio.lowlevel.checkpoint()
        seen.append(len(handled))
    assert max(b - a for a, b in zip([0, *seen], seen, strict=False)) <= 2 * HOOK_YIELD_EVERY


async def test_a_slow_dispatcher_is_checkpointed_by_time(hub: WorkflowActivityHub) -> None:
    """K6 and the loop's other tasks: a dispatcher that blocks 0.3 ms per event and never awaits
    is checkpointed after about a millisecond (the clock is read every HOOK_CLOCK_EVERY events),
    long before HOOK_YIELD_EVERY events."""
    publisher = hub.register_publisher()
    for index in range(100):
        publisher.publish_heartbeat(heartbeat(index))
    handled: list[int] = []

    def slow(event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        time.sleep(0.0003)
        handled.append(1)

    hub.bind_dispatcher(slow)
    seen: list[int] = []
    while len(handled) < 100:
        await trio.lowlevel.checkpoint()
        seen.append(len(handled))
    assert HOOK_YIELD_AFTER <= HOOK_CLOCK_EVERY * 0.0003  # the premise: 16 events take longer
    # Two batches at most between two looks: trio may run the two tasks in either order.
    assert max(b - a for a, b in zip([0, *seen], seen, strict=False)) <= 2 * HOOK_CLOCK_EVERY
