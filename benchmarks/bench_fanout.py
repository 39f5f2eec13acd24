"""Fan-out throughput: one publisher, N observers with a no-op async callback.

F changed frames are published in bursts; between bursts the publisher yields until every
consumer has caught up, so nothing is ever dropped and the figure is deliveries (N x F) per
CPU second, publishing included (everything runs in one thread that is never idle, so that is
wall time on a quiet machine). Measured side by side in the same process:

- ``hub callback``: ``hub.observe(callback)``;
- ``hub stream``: ``async with hub.subscribe() as s: async for frame in s: await callback(frame)``;
- ``chan/receive``: what a user would write instead, a bounded trio memory channel per observer
  (``send_nowait``) and one task per observer doing ``async for item in channel`` (one scheduler
  round trip per item);
- ``chan/drain``: the same, tuned: after each ``receive()`` it drains what is buffered with
  ``receive_nowait()`` before awaiting again;
- ``floor``: one task awaiting every observer's callback for every frame in a plain loop.

The channel versions carry the bare root (no cursor, no frame, no snapshot, no hook event); the
hub does all of that per frame and is still compared with them. Every run checks that each
observer received every frame exactly once (for the hub: the attach snapshot, then F changed
frames, no overflow), or raises :class:`BenchmarkError`.

Goals: issue 8's at N >= 100 (>= chan/drain, >= 5 x chan/receive, >= 0.25 x floor) and issue
29's for the callback observer, the fixed cost per frame and per delivery: >= 0.5 x chan/drain
at N = 1 and >= 0.5 x floor at N >= 100 (rows noted "issue 29").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

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
    frames_per_run,
    make_roots,
    run_script,
    run_trio,
    wait_for,
)
from workflow_hub import DiagnosticKind, FrameStream, RootActivity, WorkflowActivityHub

VARIANTS = ("hub callback", "hub stream", "chan/receive", "chan/drain", "floor")
HUB_KINDS = ("hub callback", "hub stream")
QUEUE_LIMIT = 256
"""The hub's default bound; the channels get the same buffer."""

Publish = Callable[[RootActivity], object]


async def _publish_in_bursts(
    publish: Publish,
    roots: Sequence[RootActivity],
    frames: int,
    burst: int,
    tally: Tally,
    observers: int,
) -> int:
    """Publish ``frames`` roots, ``burst`` at a time, waiting for every delivery; elapsed ns."""
    pool = len(roots)
    target = tally.total
    start = cpu_ns()
    for first in range(0, frames, burst):
        for index in range(first, first + burst):
            publish(roots[index % pool])
        target += burst * observers
        await wait_for(tally, target)
    return cpu_ns() - start


async def _hub_run(
    hub_factory: HubFactory, kind: str, observers: int, frames: int, burst: int
) -> int:
    roots = make_roots(ROOT_POOL_SIZE)
    tally = Tally()
    sinks = [Sink(tally) for _ in range(observers)]
    async with hub_factory() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        async with trio.open_nursery() as nursery:
            for sink in sinks:
                if kind == "hub callback":
                    hub.observe(sink)
                else:
                    await nursery.start(_subscriber, hub, sink)
            await wait_for(tally, observers)  # every attach snapshot delivered
            elapsed = await _publish_in_bursts(
                publisher.publish_changed, roots, frames, burst, tally, observers
            )
            _check_hub(hub, sinks, frames)
            nursery.cancel_scope.cancel()
    return elapsed


async def _subscriber(
    hub: WorkflowActivityHub,
    sink: Sink,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    stream: FrameStream
    async with hub.subscribe() as stream:
        task_status.started()
        async for frame in stream:
            await sink(frame)


def _check_hub(hub: WorkflowActivityHub, sinks: Sequence[Sink], frames: int) -> None:
    overflows = [d for d in hub.diagnostics() if d.kind is DiagnosticKind.OBSERVER_OVERFLOW]
    if overflows:
        raise BenchmarkError(f"{len(overflows)} observer overflows: the benchmark dropped frames")
    short = [sink.count for sink in sinks if sink.count != frames + 1]
    if short:
        raise BenchmarkError(f"observers received {short[:5]} frames, expected {frames + 1}")


async def _channel_run(draining: bool, observers: int, frames: int, burst: int) -> int:
    roots = make_roots(ROOT_POOL_SIZE)
    tally = Tally()
    sinks = [Sink(tally) for _ in range(observers)]
    senders: list[trio.MemorySendChannel[RootActivity]] = []
    consumer = _drain if draining else _receive_each
    async with trio.open_nursery() as nursery:
        for sink in sinks:
            send, receive = trio.open_memory_channel[RootActivity](QUEUE_LIMIT)
            senders.append(send)
            nursery.start_soon(consumer, receive, sink)

        def broadcast(root: RootActivity) -> None:
            for send in senders:
                send.send_nowait(root)  # raises trio.WouldBlock if a buffer were ever full

        elapsed = await _publish_in_bursts(broadcast, roots, frames, burst, tally, observers)
        for send in senders:
            send.close()
    short = [sink.count for sink in sinks if sink.count != frames]
    if short:
        raise BenchmarkError(f"channel observers received {short[:5]} items, expected {frames}")
    return elapsed


async def _receive_each(
    receive: trio.MemoryReceiveChannel[RootActivity], callback: Callable[[object], Awaitable[None]]
) -> None:
    async with receive:
        async for item in receive:
            await callback(item)


async def _drain(
    receive: trio.MemoryReceiveChannel[RootActivity], callback: Callable[[object], Awaitable[None]]
) -> None:
    async with receive:
        async for item in receive:
            await callback(item)
            while True:
                try:
                    item = receive.receive_nowait()
                except trio.WouldBlock:
                    break
                await callback(item)


async def _floor_run(observers: int, frames: int) -> int:
    roots = make_roots(ROOT_POOL_SIZE)
    tally = Tally()
    sinks = [Sink(tally) for _ in range(observers)]
    pool = len(roots)
    start = cpu_ns()
    for index in range(frames):
        root = roots[index % pool]
        for sink in sinks:
            await sink(root)
    elapsed = cpu_ns() - start
    if tally.total != observers * frames:
        raise BenchmarkError("the floor loop lost deliveries")
    return elapsed


def measure(
    scale: Scale, observers: int, hub_factory: HubFactory = WorkflowActivityHub
) -> dict[str, float]:
    """Deliveries per second of every variant for ``observers`` observers (best of repeats)."""
    frames = frames_per_run(scale.fanout_deliveries, observers, scale.burst)
    if 2 * scale.burst > QUEUE_LIMIT:
        raise BenchmarkError("bursts must stay under half the queue limit so nothing overflows")

    def hub(kind: str) -> Callable[[], float]:
        return lambda: run_trio(_hub_run, hub_factory, kind, observers, frames, scale.burst)

    candidates: dict[str, Callable[[], float]] = {
        "hub callback": hub("hub callback"),
        "hub stream": hub("hub stream"),
        "chan/receive": lambda: run_trio(_channel_run, False, observers, frames, scale.burst),
        "chan/drain": lambda: run_trio(_channel_run, True, observers, frames, scale.burst),
        "floor": lambda: run_trio(_floor_run, observers, frames),
    }
    best_ns = best_of(scale, candidates)
    deliveries = observers * frames
    return {name: deliveries / (ns / 1e9) for name, ns in best_ns.items()}


def _n1_goal(observers: int, kind: str, reference: str, plain: bool) -> Goal | None:
    """Issue 29's goal for one callback observer: half the tuned channel's rate."""
    if plain and observers == 1 and kind == "hub callback" and reference == "chan/drain":
        return Goal(op=">=", threshold=0.5)
    return None


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    rows: list[Row] = []
    plain = label == "hub"
    for observers in scale.fanout_observers:
        rates = measure(scale, observers, hub_factory)
        big = observers >= 100
        if big:
            rows.append(
                Row(
                    benchmark="fan-out",
                    case=f"N={observers} callback",
                    variant=label,
                    value=rates["hub callback"],
                    unit="/s",
                    reference="floor",
                    reference_value=rates["floor"],
                    goal=Goal(op=">=", threshold=0.5) if plain else None,
                    note="issue 29",
                )
            )
        for kind in HUB_KINDS:
            case = f"N={observers} {kind.removeprefix('hub ')}"
            for reference, goal in (
                ("chan/drain", Goal(op=">=", threshold=1.0)),
                ("chan/receive", Goal(op=">=", threshold=5.0)),
                ("floor", Goal(op=">=", threshold=0.25)),
            ):
                rows.append(
                    Row(
                        benchmark="fan-out",
                        case=case,
                        variant=label,
                        value=rates[kind],
                        unit="/s",
                        reference=reference,
                        reference_value=rates[reference],
                        # Issue 8's goals are the plain hub's; metrics have their own (metrics).
                        goal=goal if big and plain else _n1_goal(observers, kind, reference, plain),
                    )
                )
    return rows


if __name__ == "__main__":
    run_script(run)
