"""Snapshot scale: what R roots cost when a whole snapshot is published, captured or rebuilt.

For each R (10, 1 000, 100 000 at full scale):

- ``publish_snapshot``: one ready snapshot of R roots, no observers. Reference: the least a
  keyed snapshot can cost, a dict keyed by ``root_run_id`` plus a tuple of its values.
- ``observe()``: attaching one more observer right after the snapshot was published (the frame is
  built once per revision and shared), and right after a change (the first observer of a
  revision builds the frame for everybody). Reference: one ``tuple(roots)`` copy, what a hub that
  copied the state per observer would pay for every attach.
- overflow resnapshot: the ``publish_changed`` call that overflows 10 stalled observers at once,
  next to an ordinary ``publish_changed`` with the same observers. The snapshot that replaces the
  dropped frames is built once and shared, so this costs about one ``tuple(roots)`` copy, not ten.
- memory: traced bytes of attaching ``snapshot_observers`` (1 000) observers to one snapshot, per
  observer. The reference is the same figure at the smallest R: sharing makes it O(observers).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Sequence

from _harness import (
    BenchmarkError,
    Goal,
    HubFactory,
    Row,
    Scale,
    Tally,
    collect_garbage,
    cpu_ns,
    make_roots,
    now_ns,
    run_script,
    run_trio,
    stall_forever,
    wait_for,
)
from workflow_hub import DiagnosticKind, RootActivity, WorkflowActivityHub

Clock = Callable[[], int]

QUEUE_LIMIT = 256
STALLED = 10
ATTACHES = 10
"""Observers attached, one at a time, to each published snapshot."""


def _copy_ns(roots: Sequence[RootActivity], repeats: int, clock: Clock) -> tuple[int, int]:
    """Best ns of ``tuple(roots)`` and of a keyed dict plus its values tuple."""
    copy = keyed = 1 << 62
    for _ in range(repeats):
        start = clock()
        tuple(roots)
        copy = min(copy, clock() - start)
        start = clock()
        by_id = {root.root_run_id: root for root in roots}
        tuple(by_id.values())
        keyed = min(keyed, clock() - start)
    return copy, keyed


async def _publish_and_observe(
    hub_factory: HubFactory,
    roots: Sequence[RootActivity],
    repeats: int,
    collect: bool,
    clock: Clock,
) -> dict[str, int]:
    best = {"publish_snapshot": 1 << 62, "observe cached": 1 << 62, "observe rebuilt": 1 << 62}
    extra = make_roots(1, prefix="extra")[0]
    async with hub_factory() as hub:
        publisher = hub.register_publisher()
        collect_garbage(collect)
        for _ in range(repeats):
            start = clock()
            publisher.publish_snapshot("ready", roots)
            best["publish_snapshot"] = min(best["publish_snapshot"], clock() - start)
            for _ in range(ATTACHES):
                start = clock()
                lease = hub.observe(_ignore)
                best["observe cached"] = min(best["observe cached"], clock() - start)
                lease.dispose()
            publisher.publish_changed(extra)
            start = clock()
            lease = hub.observe(_ignore)
            best["observe rebuilt"] = min(best["observe rebuilt"], clock() - start)
            lease.dispose()
        if hub.statistics().roots != len(roots) + 1:
            raise BenchmarkError("the hub does not hold the published roots")
    return best


async def _ignore(_frame: object) -> None:
    return None


async def _overflow_costs(
    hub_factory: HubFactory,
    roots: Sequence[RootActivity],
    cycles: int,
    collect: bool,
    clock: Clock,
) -> tuple[int, int]:
    """Best ns of a ``publish_changed`` that overflows the stalled observers, and of one that
    does not."""
    tally = Tally()

    async def stall(frame: object) -> None:
        tally.total += 1
        await stall_forever(frame)

    changes = make_roots(QUEUE_LIMIT, prefix="changed")
    overflow = ordinary = 1 << 62
    async with hub_factory() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        for _ in range(STALLED):
            hub.observe(stall)
        await wait_for(tally, STALLED)
        publish = publisher.publish_changed
        # Each queue now holds nothing; after QUEUE_LIMIT frames the next one overflows.
        pending = 0
        collect_garbage(collect)
        for _ in range(cycles):
            for index in range(QUEUE_LIMIT - pending):
                start = clock()
                publish(changes[index])
                ordinary = min(ordinary, clock() - start)
            start = clock()
            publish(changes[0])
            overflow = min(overflow, clock() - start)
            pending = 1  # the resnapshot
            if hub.statistics().deepest_queue != 1:
                raise BenchmarkError("the timed publish did not overflow every queue")
        overflows = sum(d.kind is DiagnosticKind.OBSERVER_OVERFLOW for d in hub.diagnostics())
        if overflows != STALLED * cycles:
            raise BenchmarkError(f"{overflows} overflows, expected {STALLED * cycles}")
    return overflow, ordinary


async def _attach_memory(
    hub_factory: HubFactory, roots: Sequence[RootActivity], observers: int, collect: bool
) -> int:
    """Traced bytes of attaching ``observers`` stalled callback observers to one snapshot."""
    tally = Tally()

    async def stall(frame: object) -> None:
        tally.total += 1
        await stall_forever(frame)

    async with hub_factory() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        hub.snapshot_frame()
        collect_garbage(collect)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(observers):
                hub.observe(stall)
            await wait_for(tally, observers)  # every observer holds its snapshot
            size = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    return size


def measure(
    scale: Scale, hub_factory: HubFactory = WorkflowActivityHub
) -> dict[int, dict[str, float]]:
    results: dict[int, dict[str, float]] = {}
    for count in scale.snapshot_roots:
        roots = make_roots(count)
        # Warm, individually timed calls, best kept: more of them where each one is cheap.
        repeats = max(3, min(50, 100_000 // count))
        # Calls of many milliseconds on the CPU clock (a preemption is not their cost); short ones
        # on the cheaper wall clock, where the best of many is rarely preempted.
        clock = cpu_ns if count >= 10_000 else now_ns
        copy, keyed = _copy_ns(roots, repeats, clock)
        timings = run_trio(_publish_and_observe, hub_factory, roots, repeats, scale.collect, clock)
        overflow, ordinary = run_trio(
            _overflow_costs, hub_factory, roots, scale.overflow_cycles, scale.collect, clock
        )
        memory = run_trio(
            _attach_memory, hub_factory, roots, scale.snapshot_observers, scale.collect
        )
        results[count] = {
            "copy": copy,
            "keyed": keyed,
            **timings,
            "overflow": overflow,
            "ordinary": ordinary,
            "memory per observer": memory / scale.snapshot_observers,
        }
    return results


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    results = measure(scale, hub_factory)
    smallest = min(results)
    largest = max(results)
    rows: list[Row] = []

    def row(
        case: str,
        value: float,
        unit: str,
        reference: str,
        reference_value: float,
        *,
        goal: Goal | None = None,
        note: str = "",
    ) -> None:
        rows.append(
            Row(
                benchmark="snapshot",
                case=case,
                variant=label,
                value=value,
                unit=unit,
                reference=reference,
                reference_value=reference_value,
                goal=goal,
                note=note,
            )
        )

    for count, r in results.items():
        roots = f"R={count:,}"
        row(f"{roots} publish_snapshot", r["publish_snapshot"], "ns", "dict+tuple", r["keyed"])
        row(f"{roots} observe() cached", r["observe cached"], "ns", "tuple(roots)", r["copy"])
        row(f"{roots} observe() rebuilt", r["observe rebuilt"], "ns", "tuple(roots)", r["copy"])
        row(f"{roots} overflow {STALLED} obs", r["overflow"], "ns", "tuple(roots)", r["copy"])
        row(f"{roots} overflow {STALLED} obs", r["overflow"], "ns", "ordinary", r["ordinary"])
        row(
            f"{roots} attach {scale.snapshot_observers} obs",
            r["memory per observer"],
            "B",
            f"R={smallest:,}",
            results[smallest]["memory per observer"],
            note="per observer",
            goal=Goal(op="<=", threshold=1.25) if count == largest else None,
        )
    return rows


if __name__ == "__main__":
    run_script(run)
