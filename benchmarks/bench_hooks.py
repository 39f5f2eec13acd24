"""Hook dispatch: events per second through a ``HookRunner`` with 1 and 10 handlers.

``hook_events`` lifecycle events are published while no dispatcher is bound (the hub buffers
them; at most its ``hook_buffer_limit``, 10 000), then the runner is bound and the timer runs
until every handler has seen every event. Publishing is not timed: this is the cost of the
dispatch path alone (the hub's hook task, the runner's fencing check before every handler, one
await per handler). Each handler is a no-op async function of its own extension.

The reference, measured in the same run, is the floor: one loop awaiting every handler for every
event. Skipped, with a note, while ``workflow_hub._hooks.HookRunner`` is not importable.
Issue 29's goals: at least 0.3 of the floor with 1 handler, 0.5 with 10.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
from typing import Any

from _harness import (
    BenchmarkError,
    Goal,
    HubFactory,
    Row,
    Scale,
    Sink,
    Tally,
    best_of,
    cpu_ns,
    run_script,
    run_trio,
    wait_for,
)
from workflow_hub import (
    Delivery,
    LifecycleEvent,
    LifecycleInput,
    RunStatus,
    RunTarget,
    WorkflowActivityHub,
)

GOALS = {1: 0.3, 10: 0.5}
"""Issue 29: events per second against the floor, by number of handlers."""


def hook_runner_class() -> type[Any] | None:
    """``workflow_hub._hooks.HookRunner``, or None while it does not exist yet."""
    try:
        module = importlib.import_module("workflow_hub._core._hooks")
    except ImportError:
        return None
    runner = getattr(module, "HookRunner", None)
    return runner if isinstance(runner, type) else None


def _event() -> LifecycleInput:
    return LifecycleInput(
        event_id="evt-1",
        run_id="run-1",
        root_run_id="root-1",
        owner_session_id="session-1",
        occurred_at=1_000,
        observed_at=1_000,
        delivery=Delivery.LIVE,
        target=RunTarget(run_id="run-1", status=RunStatus.RUNNING),
    )


async def _dispatch_run(
    hub_factory: HubFactory, runner_class: type[Any], handlers: int, events: int
) -> int:
    tally = Tally()
    async with hub_factory() as hub:
        runner = runner_class(hub)
        for index in range(handlers):
            runner.extension(f"extension-{index}").on(LifecycleEvent.type, Sink(tally))
        publisher = hub.register_publisher()
        event = _event()
        for _ in range(events):
            publisher.publish_lifecycle(event)
        if hub.statistics().hook_events_pending != events:
            raise BenchmarkError("the hub did not buffer every event (hook_buffer_limit?)")
        start = cpu_ns()
        runner.bind()
        await wait_for(tally, events * handlers)
        return cpu_ns() - start


async def _floor_run(handlers: int, events: int) -> int:
    tally = Tally()
    sinks = [Sink(tally) for _ in range(handlers)]
    items = [object() for _ in range(events)]
    start = cpu_ns()
    for item in items:
        for sink in sinks:
            await sink(item)
    elapsed = cpu_ns() - start
    if tally.total != events * handlers:
        raise BenchmarkError("the floor loop lost calls")
    return elapsed


def measure(
    scale: Scale, runner_class: type[Any], hub_factory: HubFactory = WorkflowActivityHub
) -> dict[tuple[str, int], float]:
    """Events per second, ("hook runner" | "floor", handlers), best of repeats."""
    events = scale.hook_events
    candidates: dict[tuple[str, int], Callable[[], float]] = {}
    for handlers in scale.hook_handlers:
        candidates["hook runner", handlers] = partial(
            run_trio, _dispatch_run, hub_factory, runner_class, handlers, events
        )
        candidates["floor", handlers] = partial(run_trio, _floor_run, handlers, events)
    best = best_of(scale, candidates)
    return {key: events / (ns / 1e9) for key, ns in best.items()}


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    runner_class = hook_runner_class()
    if runner_class is None:
        return [
            Row(
                benchmark="hooks",
                case="skipped",
                variant=label,
                value=0.0,
                unit="",
                note="workflow_hub._hooks.HookRunner is not importable yet",
            )
        ]
    rates = measure(scale, runner_class, hub_factory)
    return [
        Row(
            benchmark="hooks",
            case=f"{handlers} handler{'s' if handlers > 1 else ''}",
            variant=label,
            value=rates["hook runner", handlers],
            unit="events/s",
            reference="floor",
            reference_value=rates["floor", handlers],
            # Issue 29's goals are the plain hub's, as its table is.
            goal=Goal(op=">=", threshold=GOALS[handlers])
            if handlers in GOALS and label == "hub"
            else None,
        )
        for handlers in scale.hook_handlers
    ]


if __name__ == "__main__":
    run_script(run)
