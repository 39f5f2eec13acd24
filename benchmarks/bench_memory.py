"""Overflow memory: peak traced memory while publishing F frames to stalled observers.

``memory_observers`` callback observers (100 at full scale) never return from their first call,
so every queue fills to its bound (256) and then overflows every 256 frames. For each F the run
starts from a fresh hub, attaches the observers, and traces (``tracemalloc``) only the
publishing: the figure is the peak traced size above what was allocated before the first frame.
Roots come from a fixed pool, so the hub's own state does not grow with F; anything that grows
with F is retained history. It must stay flat once the queues are full.

Two hub set-ups are measured: with a hook dispatcher bound (a no-op one, as a host with a
``HookRunner`` has) and with none, where the hub buffers hook events up to its
``hook_buffer_limit`` (10 000 by default) before dropping the oldest.

The reference, measured in the same run, is what full queues must hold at least: the same number
of queues each referencing the same ``limit`` shared frames, built directly.
"""

from __future__ import annotations

import tracemalloc
from collections import deque
from collections.abc import Callable

import trio

from _harness import (
    ROOT_POOL_SIZE,
    BenchmarkError,
    Goal,
    HubFactory,
    Row,
    Scale,
    Tally,
    collect_garbage,
    make_roots,
    run_script,
    run_trio,
    stall_forever,
    wait_for,
)
from workflow_hub import ChangedFrame, Cursor, WorkflowActivityHub, WorkflowEvent

QUEUE_LIMIT = 256
BURST = 256
SETUPS = ("dispatcher bound", "no dispatcher")


async def _noop_dispatch(_event: WorkflowEvent, _is_current: Callable[[], bool]) -> None:
    return None


async def _peak(
    hub_factory: HubFactory, observers: int, frames: int, bind: bool, collect: bool
) -> int:
    roots = make_roots(ROOT_POOL_SIZE)
    pool = len(roots)
    tally = Tally()

    async def stall(frame: object) -> None:
        tally.total += 1
        await stall_forever(frame)

    async with hub_factory() as hub:
        if bind:
            hub.bind_dispatcher(_noop_dispatch)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        for _ in range(observers):
            hub.observe(stall)
        await wait_for(tally, observers)
        publish = publisher.publish_changed
        collect_garbage(collect)
        tracemalloc.start()
        try:
            floor = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            for first in range(0, frames, BURST):
                for index in range(first, min(first + BURST, frames)):
                    publish(roots[index % pool])
                await trio.lowlevel.checkpoint()
                # The same peak every run: the dispatcher has taken every event before the next
                # burst (the scheduler's order within a batch would otherwise decide).
                while bind and hub.statistics().hook_events_pending:
                    await trio.lowlevel.checkpoint()
            peak = tracemalloc.get_traced_memory()[1] - floor
        finally:
            tracemalloc.stop()
        statistics = hub.statistics()
        if observers and statistics.deepest_queue > QUEUE_LIMIT:
            raise BenchmarkError(f"a queue holds {statistics.deepest_queue} frames")
    return peak


def _full_queues_bytes(observers: int, collect: bool) -> int:
    """Bytes that ``observers`` full queues of shared frames hold at the very least."""
    root = make_roots(1)[0]
    collect_garbage(collect)
    tracemalloc.start()
    try:
        frames = [
            ChangedFrame(cursor=Cursor(epoch="e", revision=index), root=root)
            for index in range(QUEUE_LIMIT)
        ]
        queues = [deque(frames) for _ in range(observers)]
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del queues
    return size


def measure(scale: Scale, hub_factory: HubFactory = WorkflowActivityHub) -> dict[str, float]:
    results: dict[str, float] = {
        "reference": _full_queues_bytes(scale.memory_observers, scale.collect)
    }
    for setup in SETUPS:
        for frames in scale.memory_frames:
            results[f"{setup} F={frames}"] = run_trio(
                _peak,
                hub_factory,
                scale.memory_observers,
                frames,
                setup == "dispatcher bound",
                scale.collect,
            )
    return results


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    peaks = measure(scale, hub_factory)
    observers = scale.memory_observers
    rows: list[Row] = []
    reference = f"{observers} full queues"
    for setup in SETUPS:
        previous: int | None = None
        for frames in scale.memory_frames:
            peak = peaks[f"{setup} F={frames}"]
            case = f"{observers} stalled, F={frames:,}, {setup}"
            rows.append(
                Row(
                    benchmark="memory",
                    case=case,
                    variant=label,
                    value=peak,
                    unit="B",
                    reference=reference,
                    reference_value=peaks["reference"],
                )
            )
            if previous is not None:
                # Flat once full: the hook buffer is full from 10 000 events on.
                settled = setup == "dispatcher bound" or previous >= 10_000
                rows.append(
                    Row(
                        benchmark="memory",
                        case=case,
                        variant=label,
                        value=peak,
                        unit="B",
                        reference=f"F={previous:,}",
                        reference_value=peaks[f"{setup} F={previous}"],
                        goal=Goal(op="<=", threshold=1.1) if settled else None,
                    )
                )
            previous = frames
    return rows


if __name__ == "__main__":
    run_script(run)
