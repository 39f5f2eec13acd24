"""Publish cost: nanoseconds per ``publish_changed`` as the scheduler sees them.

Only the ``publish_changed`` calls are timed (bursts of them; the publisher yields between
bursts). N callback observers are either

- *keeping up*: a no-op async callback; between bursts the publisher waits until every observer
  has caught up, so each burst wakes each observer once and then appends to an empty queue; or
- *stalled*: a callback that never returns. Before timing, every queue is driven past its bound
  once, so the timed frames run in the steady state of a stalled observer: each of its queues
  takes 255 frames, then the 256th arriving frame overflows it (the pending frames are dropped,
  one shared snapshot takes their place and ``ObserverOverflow`` is recorded). The timed frames
  are a whole number of such cycles.

Reported: ns per publish (the reference is ``N=0``, the hub's fixed cost), the stalled/keeping-up
ratio, the per-observer slope, and what a user's own loop of ``send_nowait`` into N memory
channels costs per frame (consumers keeping up), measured in the same run. The fixed cost with
no observer is also shown next to the floor of any publish path: a bare ``deque.append`` of a
prebuilt changed frame, in the same loop (issue 29's goal: at most 1 µs).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import trio

from _harness import (
    ROOT_POOL_SIZE,
    BenchmarkError,
    Goal,
    HubFactory,
    Row,
    Scale,
    Sink,
    Tally,
    best_of,
    cpu_ns,
    make_roots,
    run_script,
    run_trio,
    stall_forever,
    wait_for,
)
from workflow_hub import ChangedFrame, Cursor, DiagnosticKind, RootActivity, WorkflowActivityHub

QUEUE_LIMIT = 256
PUBLISH_GOAL_NS = 1_000.0
"""Issue 29: ``publish_changed`` with no observer costs at most 1 µs."""


async def _hub_publish(
    hub_factory: HubFactory, observers: int, stalled: bool, frames: int, burst: int
) -> int:
    """Total ns spent inside ``frames`` calls of ``publish_changed``."""
    roots = make_roots(ROOT_POOL_SIZE)
    pool = len(roots)
    tally = Tally()
    async with hub_factory() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        for _ in range(observers):
            hub.observe(_stalled_counter(tally) if stalled else Sink(tally))
        await wait_for(tally, observers)  # every observer has its snapshot (and is stalled)
        if stalled:
            # Drive every queue past its bound once: the steady state of a stalled observer.
            for index in range(QUEUE_LIMIT + 1):
                publisher.publish_changed(roots[index % pool])
            if observers and hub.statistics().deepest_queue >= QUEUE_LIMIT:
                raise BenchmarkError("stalled queues did not overflow")
        publish = publisher.publish_changed
        spent = 0
        target = tally.total
        for first in range(0, frames, burst):
            start = cpu_ns()
            for index in range(first, first + burst):
                publish(roots[index % pool])
            spent += cpu_ns() - start
            if stalled:
                await trio.lowlevel.checkpoint()
            else:
                target += burst * observers
                await wait_for(tally, target)
        overflowed = any(d.kind is DiagnosticKind.OBSERVER_OVERFLOW for d in hub.diagnostics())
        if overflowed != (stalled and observers > 0):
            raise BenchmarkError(f"overflow={overflowed} with stalled={stalled}")
    return spent


async def _append_frames(frames: int, burst: int) -> int:
    """Total ns spent appending ``frames`` prebuilt changed frames to a deque, in the same bursts
    and loop as :func:`_hub_publish`: the floor under any publish path (it stores one frame)."""
    prebuilt = [
        ChangedFrame(cursor=Cursor(epoch="e", revision=index + 1), root=root)
        for index, root in enumerate(make_roots(ROOT_POOL_SIZE))
    ]
    pool = len(prebuilt)
    queue: deque[ChangedFrame] = deque(maxlen=QUEUE_LIMIT)
    append = queue.append
    spent = 0
    for first in range(0, frames, burst):
        start = cpu_ns()
        for index in range(first, first + burst):
            append(prebuilt[index % pool])
        spent += cpu_ns() - start
        await trio.lowlevel.checkpoint()
    return spent


def _stalled_counter(tally: Tally) -> Callable[[object], object]:
    async def stall(frame: object) -> None:
        tally.total += 1
        await stall_forever(frame)

    return stall


async def _channel_publish(observers: int, frames: int, burst: int) -> int:
    """Total ns spent in the user's broadcast loop (``send_nowait`` per channel)."""
    roots = make_roots(ROOT_POOL_SIZE)
    pool = len(roots)
    tally = Tally()
    senders: list[trio.MemorySendChannel[RootActivity]] = []
    spent = 0
    async with trio.open_nursery() as nursery:
        for _ in range(observers):
            send, receive = trio.open_memory_channel[RootActivity](QUEUE_LIMIT)
            senders.append(send)
            nursery.start_soon(_drain, receive, Sink(tally))
        target = 0
        for first in range(0, frames, burst):
            start = cpu_ns()
            for index in range(first, first + burst):
                root = roots[index % pool]
                for send in senders:
                    send.send_nowait(root)
            spent += cpu_ns() - start
            target += burst * observers
            await wait_for(tally, target)
        for send in senders:
            send.close()
    return spent


async def _drain(receive: trio.MemoryReceiveChannel[RootActivity], sink: Sink) -> None:
    async with receive:
        async for item in receive:
            await sink(item)
            while True:
                try:
                    item = receive.receive_nowait()
                except trio.WouldBlock:
                    break
                await sink(item)


def measure(
    scale: Scale, hub_factory: HubFactory = WorkflowActivityHub
) -> dict[tuple[str, int], float]:
    """ns per frame for ("keeping up" | "stalled" | "channels", N), best of repeats."""
    frames = scale.publish_frames
    if frames % QUEUE_LIMIT or frames % scale.burst:
        raise BenchmarkError("publish_frames must be whole overflow cycles and whole bursts")
    candidates: dict[tuple[str, int], Callable[[], float]] = {}
    for observers in scale.publish_observers:
        for stalled in (False, True):
            mode = "stalled" if stalled else "keeping up"
            candidates[mode, observers] = _bind_hub(
                hub_factory, observers, stalled, frames, scale.burst
            )
        candidates["channels", observers] = _bind_channels(observers, frames, scale.burst)
    candidates["deque.append", 0] = lambda: run_trio(_append_frames, frames, scale.burst)
    best = best_of(scale, candidates)
    return {key: ns / frames for key, ns in best.items()}


def _bind_hub(
    hub_factory: HubFactory, observers: int, stalled: bool, frames: int, burst: int
) -> Callable[[], float]:
    return lambda: run_trio(_hub_publish, hub_factory, observers, stalled, frames, burst)


def _bind_channels(observers: int, frames: int, burst: int) -> Callable[[], float]:
    return lambda: run_trio(_channel_publish, observers, frames, burst)


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    ns = measure(scale, hub_factory)
    counts: Sequence[int] = scale.publish_observers
    base = min(counts)
    top = max(counts)
    rows: list[Row] = [
        Row(
            benchmark="publish",
            case=f"publish_changed, N={base}",
            variant=label,
            value=ns["keeping up", base],
            unit="ns",
            reference="deque.append of the frame",
            reference_value=ns["deque.append", 0],
            # Issue 29's goal is the plain hub's (metrics cost has its own benchmark and goal).
            goal=Goal(op="<=", threshold=PUBLISH_GOAL_NS, unit="ns")
            if base == 0 and label == "hub"
            else None,
        )
    ]
    for observers in counts:
        for mode in ("keeping up", "stalled"):
            rows.append(
                Row(
                    benchmark="publish",
                    case=f"N={observers} {mode}",
                    variant=label,
                    value=ns[mode, observers],
                    unit="ns",
                    reference=f"N={base} {mode}",
                    reference_value=ns[mode, base],
                )
            )
        if observers:
            rows.append(
                Row(
                    benchmark="publish",
                    case=f"N={observers} keeping up",
                    variant=label,
                    value=ns["keeping up", observers],
                    unit="ns",
                    reference="send_nowait x N",
                    reference_value=ns["channels", observers],
                )
            )
            rows.append(
                Row(
                    benchmark="publish",
                    case=f"N={observers} stalled",
                    variant=label,
                    value=ns["stalled", observers],
                    unit="ns",
                    reference="keeping up",
                    reference_value=ns["keeping up", observers],
                    goal=Goal(op="<=", threshold=1.5) if observers == top else None,
                )
            )
    middle = [n for n in counts if n not in (base,)]
    if len(middle) >= 2:
        low, high = sorted(middle)[-2:]
        for mode in ("keeping up", "stalled"):
            slope = (ns[mode, high] - ns[mode, low]) / (high - low)
            channel_slope = (ns["channels", high] - ns["channels", low]) / (high - low)
            rows.append(
                Row(
                    benchmark="publish",
                    case=f"slope N={low}..{high} {mode}",
                    variant=label,
                    value=slope,
                    unit="ns",
                    note="per observer",
                    reference="send_nowait slope",
                    reference_value=channel_slope,
                )
            )
    return rows


if __name__ == "__main__":
    run_script(run)
