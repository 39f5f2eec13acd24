"""Resuming (issue 14): catching up costs O(missed frames), and history costs next to nothing.

Three measurements, each next to a reference from the same run:

- **Catch-up.** A hub holds R roots (100 000 at full scale). An observer that missed 10 frames
  attaches ``since`` its cursor and its :class:`ActivityView` (already holding what it had) folds
  the replay; the reference is the same observer starting over: attach, receive the snapshot,
  fold its R roots into a fresh view. Both are timed on the wall clock from ``observe()`` to the
  last frame folded, best of several interleaved repeats. Goal: <= 0.05.
- **Publish cost.** ``publish_changed`` with history on (the default 1024) against history off,
  with no observer (the cheapest publish, where any extra work shows most) and with 100 observers
  that keep up. Timed on the CPU clock, interleaved. Goal: <= 1.1.
- **Memory.** Peak traced memory while publishing F changed frames with history on, against the
  previous F (flat once the history is full: goal <= 1.1); and while publishing a run of
  full snapshots of R roots with keeping-up observers, against publishing one such snapshot
  (goal <= 1.2: the history keeps only the latest snapshot), and against the same run with
  history off (informational). Retained memory after the run is reported next to one snapshot.

Only the plain hub is measured (label ``hub``): the history is the same code with metrics on.
"""

from __future__ import annotations

import tracemalloc
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
    cpu_ns,
    make_roots,
    now_ns,
    run_script,
    run_trio,
    wait_for,
)
from workflow_hub import Cursor, Frame, SnapshotFrame, WorkflowActivityHub, WorkflowEvent
from workflow_hub.reporting import ActivityView

MISSED = 10
HISTORY = 1024
PUBLISH_OBSERVERS = (0, 100)
SNAPSHOT_RUN = 10
"""Full snapshots published in a row in the memory measurement."""


def _roots_count(scale: Scale) -> int:
    return max(scale.snapshot_roots)


# --- catch-up -----------------------------------------------------------------------------------


async def _catch_up(roots: int, repeats: int, collect: bool) -> tuple[float, float]:
    """Best wall-clock ns of (resume from 10 missed frames, start from a snapshot)."""
    pool = make_roots(roots)
    changes = make_roots(MISSED, prefix="changed")
    async with WorkflowActivityHub(history_limit=HISTORY) as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", pool)
        before: SnapshotFrame = hub.snapshot_frame()
        since: Cursor = hub.cursor
        for root in changes:
            publisher.publish_changed(root)
        best_resume = best_snapshot = float("inf")
        for _ in range(repeats):
            # Resume: the view already holds what it had at ``since`` (built untimed).
            view = ActivityView()
            view.apply(before)
            collect_garbage(collect)
            elapsed = await _timed_attach(hub, view, since, MISSED)
            if not (view.in_sync and view.cursor == hub.cursor):
                raise BenchmarkError("the resumed view did not catch up")
            best_resume = min(best_resume, elapsed)
            # Start over: a fresh view folds the snapshot.
            view = ActivityView()
            collect_garbage(collect)
            elapsed = await _timed_attach(hub, view, None, 1)
            if not (view.in_sync and len(view.roots) == roots + MISSED):
                raise BenchmarkError("the snapshot view did not catch up")
            best_snapshot = min(best_snapshot, elapsed)
    return best_resume, best_snapshot


async def _timed_attach(
    hub: WorkflowActivityHub, view: ActivityView, since: Cursor | None, frames: int
) -> float:
    done = trio.Event()
    received = 0
    finished = 0

    def fold(frame: Frame) -> None:
        nonlocal received, finished
        view.apply(frame)
        received += 1
        if received == frames:
            finished = now_ns()
            done.set()

    started = now_ns()
    lease = hub.observe(fold, since=since)
    with trio.fail_after(60):
        await done.wait()
    lease.dispose()
    if lease.resumed != (since is not None):
        raise BenchmarkError(f"resumed is {lease.resumed} for since={since}")
    return finished - started


# --- publish cost -------------------------------------------------------------------------------


async def _publish_ns(history: int, observers: int, frames: int, burst: int) -> float:
    roots = make_roots(ROOT_POOL_SIZE)
    tally = Tally()

    def sink(_frame: object) -> None:
        tally.total += 1

    async with WorkflowActivityHub(history_limit=history) as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        for _ in range(observers):
            hub.observe(sink)
        await wait_for(tally, observers)
        publish = publisher.publish_changed
        spent = 0
        for first in range(0, frames, burst):
            started = cpu_ns()
            for index in range(first, min(first + burst, frames)):
                publish(roots[index % ROOT_POOL_SIZE])
            spent += cpu_ns() - started
            # Observers keep up between bursts (delivery is not what is timed).
            await wait_for(tally, observers + observers * min(first + burst, frames))
    return spent / frames


# --- memory -------------------------------------------------------------------------------------


async def _noop_dispatch(_event: WorkflowEvent, _is_current: Callable[[], bool]) -> None:
    return None


async def _changed_peak(frames: int, collect: bool) -> int:
    roots = make_roots(ROOT_POOL_SIZE)
    async with WorkflowActivityHub(history_limit=HISTORY) as hub:
        # Hook events are dispatched as a host's HookRunner would: an unbound hub buffers up to
        # 10 000 of them by design, which bench_memory measures on its own.
        hub.bind_dispatcher(_noop_dispatch)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        publish = publisher.publish_changed
        collect_garbage(collect)
        tracemalloc.start()
        try:
            floor = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            for index in range(frames):
                publish(roots[index % ROOT_POOL_SIZE])
                if index % 256 == 255:
                    while hub.statistics().hook_events_pending:
                        await trio.lowlevel.checkpoint()
            peak = tracemalloc.get_traced_memory()[1] - floor
        finally:
            tracemalloc.stop()
        if hub.statistics().history_frames != min(frames + 1, HISTORY):  # + the snapshot
            raise BenchmarkError(f"history holds {hub.statistics().history_frames} frames")
    return peak


async def _snapshots_memory(
    history: int, snapshots: int, pool: list[object], observers: int, collect: bool
) -> tuple[int, int]:
    """(peak, retained) traced bytes while publishing ``snapshots`` full snapshots of ``pool``."""
    tally = Tally()

    def sink(_frame: object) -> None:
        tally.total += 1

    async with WorkflowActivityHub(history_limit=history) as hub:
        publisher = hub.register_publisher()
        for _ in range(observers):
            hub.observe(sink)
        await wait_for(tally, observers)
        collect_garbage(collect)
        tracemalloc.start()
        try:
            floor = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            for count in range(1, snapshots + 1):
                publisher.publish_snapshot("ready", pool)  # type: ignore[arg-type]
                await wait_for(tally, observers * (count + 1))
            collect_garbage(collect)
            current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        if history and hub.statistics().history_frames != 1:
            raise BenchmarkError(f"history holds {hub.statistics().history_frames} frames")
    return peak - floor, current - floor


def measure(scale: Scale) -> dict[str, float]:
    roots = _roots_count(scale)
    results: dict[str, float] = {}
    resume, snapshot = run_trio(_catch_up, roots, max(3, scale.repeats), scale.collect)
    results["catch-up resume"] = resume
    results["catch-up snapshot"] = snapshot
    frames = scale.publish_frames * 8
    for _ in range(scale.repeats):
        for observers in PUBLISH_OBSERVERS:
            for history in (HISTORY, 0):
                collect_garbage(scale.collect)
                key = f"publish {observers} {history}"
                value = run_trio(_publish_ns, history, observers, frames, scale.burst)
                results[key] = min(results.get(key, value), value)
    for count in scale.memory_frames:
        results[f"changed F={count}"] = run_trio(_changed_peak, count, scale.collect)
    pool = make_roots(roots)
    observers = 10
    run = SNAPSHOT_RUN if scale.collect else 2
    for label, history, snapshots in (
        ("one", HISTORY, 1),
        ("run", HISTORY, run),
        ("run off", 0, run),
    ):
        peak, retained = run_trio(
            _snapshots_memory, history, snapshots, pool, observers, scale.collect
        )
        results[f"snapshots {label} peak"] = peak
        results[f"snapshots {label} retained"] = retained
    results["snapshot run length"] = run
    return results


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []
    results = measure(scale)
    roots = _roots_count(scale)
    rows = [
        Row(
            benchmark="resume",
            case=f"catch up {MISSED} missed frames, {roots:,} roots",
            variant=label,
            value=results["catch-up resume"],
            unit="ns",
            reference="start over from a snapshot",
            reference_value=results["catch-up snapshot"],
            goal=Goal(op="<=", threshold=0.05),
        )
    ]
    for observers in PUBLISH_OBSERVERS:
        rows.append(
            Row(
                benchmark="resume",
                case=f"publish_changed, history {HISTORY}, {observers} observers",
                variant=label,
                value=results[f"publish {observers} {HISTORY}"],
                unit="ns",
                reference="history off",
                reference_value=results[f"publish {observers} 0"],
                goal=Goal(op="<=", threshold=1.1),
            )
        )
    previous: int | None = None
    for count in scale.memory_frames:
        if previous is not None:
            rows.append(
                Row(
                    benchmark="resume",
                    case=f"memory, history {HISTORY}, F={count:,} changed frames",
                    variant=label,
                    value=results[f"changed F={count}"],
                    unit="B",
                    reference=f"F={previous:,}",
                    reference_value=results[f"changed F={previous}"],
                    # Flat once the history is full (from F = history_limit on).
                    goal=Goal(op="<=", threshold=1.1) if previous >= HISTORY else None,
                )
            )
        previous = count
    run_length = int(results["snapshot run length"])
    case = f"memory, {run_length} snapshots of {roots:,} roots, 10 observers"
    rows += [
        Row(
            benchmark="resume",
            case=case + " (retained)",
            variant=label,
            value=results["snapshots run retained"],
            unit="B",
            reference="one snapshot (retained)",
            reference_value=results["snapshots one retained"],
            goal=Goal(op="<=", threshold=1.2),
        ),
        Row(
            benchmark="resume",
            case=case + " (peak)",
            variant=label,
            value=results["snapshots run peak"],
            unit="B",
            reference="history off (peak)",
            reference_value=results["snapshots run off peak"],
            goal=Goal(op="<=", threshold=1.2),
        ),
        # Informational: any publisher builds the next snapshot while the hub still holds the
        # previous one, history or not, so a run peaks near two snapshots.
        Row(
            benchmark="resume",
            case=case + " (peak)",
            variant=label,
            value=results["snapshots run peak"],
            unit="B",
            reference="one snapshot (peak)",
            reference_value=results["snapshots one peak"],
        ),
    ]
    return rows


if __name__ == "__main__":
    run_script(run)
