"""The hosts (issue 26): the hub from asyncio and from threads, against the trio-hosted hub.

- *publish from asyncio*: ns per ``publish_changed`` called from asyncio code on a hub hosted by
  ``workflow_hub.asyncio`` (trio as a guest), against the same calls from a trio task on a
  trio-hosted hub; N observers (plain callbacks) keep up between bursts. Goal <= 1.2.
- *asyncio subscribers*: deliveries per second to N = 100 asyncio tasks iterating
  ``hub.subscribe()``, against N trio tasks iterating the trio hub's ``subscribe()``; bursts of
  frames, each followed by a wait until every subscriber has caught up. Goal >= 0.5.
- *publish from a thread*: ns per ``publish_changed`` on ``workflow_hub.sync``'s publisher, as the
  publishing thread sees it, against ``ThreadPublisher.publish_changed`` into a trio hub running
  in another thread, the plumbing users wrote before. Goal <= 1.0.

- *tracker facts from asyncio*: CPU time of the whole process per ``set_stage_status`` on the
  asyncio host's tracker, one fact per loop turn (``await asyncio.sleep(0)``), one observer,
  against the same on a ``RunTracker`` in a trio-hosted hub (a checkpoint). Informational: it is
  the same tracker in the same thread; the difference is trio's guest-mode wake-up per turn.
- *tracker facts from a thread*: CPU time of the whole process per fact on ``workflow_hub.sync``'s
  tracker (bursts of 64 facts, then ``flush()``), against the same facts on a ``RunTracker``
  called in a trio-hosted hub. Goal <= 1.5: the hand-over must cost little next to the fact.

Publish costs are the publishing thread's CPU time (:func:`cpu_ns`): what the call costs the
scheduler, not the moments it waits for the GIL while the guest's I/O thread or the hub's
thread runs (other processes on a shared machine would add to wall time too). Throughput is
wall time, bursts and the waits for subscribers to catch up included. The best of a few
interleaved repeats is kept.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from functools import partial

import trio
import trio.lowlevel
import trio.testing

from _harness import (
    ROOT_POOL_SIZE,
    BenchmarkError,
    Goal,
    HubFactory,
    Row,
    Scale,
    best_of,
    cpu_ns,
    gc_paused,
    make_roots,
    now_ns,
    run_script,
    run_trio,
)
from workflow_hub import (
    DiagnosticKind,
    Frame,
    RunTracker,
    ThreadPublisher,
    WorkflowActivityHub,
    WorkflowActivityPublisher,
    open_hub,
)
from workflow_hub import asyncio as hub_asyncio
from workflow_hub import sync as hub_sync

PUBLISH_OBSERVERS = 100
SUBSCRIBERS = 100
BURST = 64
FRAMES = {"full": 64 * 32, "quick": 64 * 16, "smoke": 64 * 2}
THREAD_FRAMES = {"full": 20_000, "quick": 10_000, "smoke": 500}


class _Count:
    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0

    def __call__(self, frame: Frame) -> None:
        self.total += 1


def _check_no_overflow(diagnostics: object) -> None:
    kinds = [d.kind for d in diagnostics]  # type: ignore[attr-defined]
    if DiagnosticKind.OBSERVER_OVERFLOW in kinds:
        raise BenchmarkError("an observer overflowed: the run measured resnapshots")


# --- publish cost: asyncio host vs trio host -------------------------------------------------


def _timed_bursts(
    publisher: WorkflowActivityPublisher, roots: list, frames: int, start: int
) -> tuple[int, int]:
    """Publish one burst, timed; (ns, next index)."""
    pool = len(roots)
    began = cpu_ns()
    for index in range(start, start + BURST):
        publisher.publish_changed(roots[index % pool])
    return cpu_ns() - began, start + BURST


async def _trio_publish(frames: int) -> float:
    roots = make_roots(ROOT_POOL_SIZE)
    async with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        counts = [_Count() for _ in range(PUBLISH_OBSERVERS)]
        for count in counts:
            hub.observe(count)
        await trio.testing.wait_all_tasks_blocked()
        total = 0
        index = 0
        with gc_paused():
            while index < frames:
                spent, index = _timed_bursts(publisher, roots, frames, index)
                total += spent
                await trio.testing.wait_all_tasks_blocked()
        if any(count.total != frames + 1 for count in counts):
            raise BenchmarkError("a trio observer missed frames")
        _check_no_overflow(hub.diagnostics())
    return total / frames


async def _caught_up(counts: list[_Count], target: int) -> None:
    idle = 0
    while any(count.total < target for count in counts):
        before = sum(count.total for count in counts)
        await asyncio.sleep(0)
        if sum(count.total for count in counts) == before:
            idle += 1
            if idle > 10_000:
                raise BenchmarkError("asyncio observers stopped short")
        else:
            idle = 0


async def _asyncio_publish(frames: int) -> float:
    roots = make_roots(ROOT_POOL_SIZE)
    async with hub_asyncio.open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        counts = [_Count() for _ in range(PUBLISH_OBSERVERS)]
        for count in counts:
            hub.observe(count)
        await _caught_up(counts, 1)
        total = 0
        index = 0
        with gc_paused():
            while index < frames:
                spent, index = _timed_bursts(publisher, roots, frames, index)
                total += spent
                await _caught_up(counts, index + 1)
        _check_no_overflow(hub.diagnostics())
    return total / frames


# --- subscriber throughput: asyncio host vs trio host ----------------------------------------


async def _trio_subscribers(frames: int) -> float:
    roots = make_roots(ROOT_POOL_SIZE)
    pool = len(roots)
    received = _Count()
    async with open_hub() as hub, trio.open_nursery() as nursery:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)

        async def subscriber(task_status: trio.TaskStatus[None]) -> None:
            async with hub.subscribe() as stream:
                task_status.started()
                async for frame in stream:
                    received(frame)

        for _ in range(SUBSCRIBERS):
            await nursery.start(subscriber)
        await trio.testing.wait_all_tasks_blocked()
        received.total = 0
        with gc_paused():
            began = now_ns()
            for start in range(0, frames, BURST):
                for index in range(start, start + BURST):
                    publisher.publish_changed(roots[index % pool])
                await trio.testing.wait_all_tasks_blocked()
            elapsed = now_ns() - began
        if received.total != frames * SUBSCRIBERS:
            raise BenchmarkError(f"{received.total} deliveries, expected {frames * SUBSCRIBERS}")
        _check_no_overflow(hub.diagnostics())
        nursery.cancel_scope.cancel()
    return elapsed / (frames * SUBSCRIBERS)


async def _asyncio_subscribers(frames: int) -> float:
    roots = make_roots(ROOT_POOL_SIZE)
    pool = len(roots)
    received = _Count()
    async with hub_asyncio.open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        ready = 0

        async def subscriber() -> None:
            nonlocal ready
            async with hub.subscribe() as stream:
                ready += 1
                async for frame in stream:
                    received(frame)

        tasks = [asyncio.create_task(subscriber()) for _ in range(SUBSCRIBERS)]
        counts = [received]
        await _caught_up(counts, SUBSCRIBERS)  # every snapshot taken
        received.total = 0
        with gc_paused():
            began = now_ns()
            for start in range(0, frames, BURST):
                for index in range(start, start + BURST):
                    publisher.publish_changed(roots[index % pool])
                await _caught_up(counts, (start + BURST) * SUBSCRIBERS)
            elapsed = now_ns() - began
        if received.total != frames * SUBSCRIBERS:
            raise BenchmarkError(f"{received.total} deliveries, expected {frames * SUBSCRIBERS}")
        _check_no_overflow(hub.diagnostics())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return elapsed / (frames * SUBSCRIBERS)


# --- publish from a thread: workflow_hub.sync vs ThreadPublisher -----------------------------


def _thread_publish_sync(frames: int) -> float:
    roots = make_roots(ROOT_POOL_SIZE)
    pool = len(roots)
    with hub_sync.open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        total = 0
        with gc_paused():
            for start in range(0, frames, BURST):
                began = cpu_ns()
                for index in range(start, start + BURST):
                    publisher.publish_changed(roots[index % pool])
                total += cpu_ns() - began
                publisher.publish_removed_blocking("none")  # the hub caught up
    return total / frames


def _thread_publish_portal(frames: int) -> float:
    roots = make_roots(ROOT_POOL_SIZE)
    pool = len(roots)
    handed: list[ThreadPublisher] = []
    ready = threading.Event()
    stop = trio.Event()

    async def hub_thread() -> None:
        async with open_hub() as hub:
            handed.append(ThreadPublisher(hub.register_publisher()))
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=trio.run, args=(hub_thread,))
    thread.start()
    ready.wait()
    portal = handed[0]
    portal.publish_snapshot("ready", roots)
    total = 0
    try:
        with gc_paused():
            for start in range(0, frames, BURST):
                began = cpu_ns()
                for index in range(start, start + BURST):
                    portal.publish_changed(roots[index % pool])
                total += cpu_ns() - began
                portal.publish_removed_blocking("none")  # the hub caught up
    finally:
        portal.trio_token.run_sync_soon(stop.set)
        thread.join()
    return total / frames


# --- tracker facts: asyncio host and thread host vs a RunTracker in trio -----------------------

TRACKER_FACTS = {"full": 4_000, "quick": 2_000, "smoke": 200}


def _tracker_setup(tracker: object) -> None:
    tracker.start()  # type: ignore[attr-defined]
    tracker.add_run("run-1", status="running")  # type: ignore[attr-defined]
    tracker.add_stage("run-1", "work", "work")  # type: ignore[attr-defined]


def _stage_status(i: int) -> str:
    return "running" if i % 2 == 0 else "pending"


async def _trio_tracker(facts: int, per_turn: int) -> float:
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="bench")
        _tracker_setup(tracker)
        hub.observe(_Count())
        await trio.testing.wait_all_tasks_blocked()
        with gc_paused():
            began = process_ns()
            for start in range(0, facts, per_turn):
                for i in range(start, start + per_turn):
                    tracker.set_stage_status("run-1", "work", _stage_status(i))
                await trio.lowlevel.checkpoint()
            await trio.testing.wait_all_tasks_blocked()
            spent = process_ns() - began
    return spent / facts


async def _asyncio_tracker(facts: int) -> float:
    async with hub_asyncio.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench")
        _tracker_setup(tracker)
        count = _Count()
        hub.observe(count)
        await _caught_up([count], 1)
        with gc_paused():
            began = process_ns()
            for i in range(facts):
                tracker.set_stage_status("run-1", "work", _stage_status(i))
                await asyncio.sleep(0)
            # Not _caught_up's spin: under load the guest's I/O thread needs the CPU to deliver.
            deadline = time.monotonic() + 30
            while hub.statistics().pending_frames:
                if time.monotonic() > deadline:
                    raise BenchmarkError("the asyncio observer stopped short")
                await asyncio.sleep(0.001)
            spent = process_ns() - began
    return spent / facts


def _sync_tracker(facts: int) -> float:
    with hub_sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench")
        _tracker_setup(tracker)
        tracker.flush()
        with gc_paused():
            began = process_ns()
            for start in range(0, facts, BURST):
                for i in range(start, start + BURST):
                    tracker.set_stage_status("run-1", "work", _stage_status(i))
                tracker.flush()
            spent = process_ns() - began
    return spent / facts


def process_ns() -> int:
    """CPU time of the whole process (every thread: the guest's I/O thread, the hub's)."""
    return time.process_time_ns()


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the hosts host the plain hub; the variants are measured elsewhere
    frames = FRAMES.get(scale.name, FRAMES["full"])
    thread_frames = THREAD_FRAMES.get(scale.name, THREAD_FRAMES["full"])
    tracker_facts = TRACKER_FACTS.get(scale.name, TRACKER_FACTS["full"])
    candidates: dict[str, Callable[[], float]] = {
        "trio publish": partial(run_trio, _trio_publish, frames),
        # asyncio.run takes a coroutine, which runs once: a fresh one per repeat.
        "asyncio publish": lambda: asyncio.run(_asyncio_publish(frames)),
        "trio subscribers": partial(run_trio, _trio_subscribers, frames),
        "asyncio subscribers": lambda: asyncio.run(_asyncio_subscribers(frames)),
        "ThreadPublisher": partial(_thread_publish_portal, thread_frames),
        "sync publisher": partial(_thread_publish_sync, thread_frames),
        "trio tracker, a fact a turn": partial(run_trio, _trio_tracker, tracker_facts, 1),
        "asyncio tracker": lambda: asyncio.run(_asyncio_tracker(tracker_facts)),
        "trio tracker, bursts": partial(run_trio, _trio_tracker, tracker_facts, BURST),
        "sync tracker": partial(_sync_tracker, tracker_facts),
    }
    # Every candidate returns a cost (ns per call or per delivery): best_of keeps the smallest.
    best = best_of(scale, candidates)
    return [
        Row(
            benchmark="hosts",
            case=f"publish from asyncio, N={PUBLISH_OBSERVERS} observers",
            variant=label,
            value=best["asyncio publish"],
            unit="ns",
            reference="from trio",
            reference_value=best["trio publish"],
            goal=Goal(op="<=", threshold=1.2),
        ),
        Row(
            benchmark="hosts",
            case=f"asyncio subscribers, N={SUBSCRIBERS}",
            variant=label,
            value=1e9 / best["asyncio subscribers"],
            unit="/s",
            reference="trio subscribers",
            reference_value=1e9 / best["trio subscribers"],
            goal=Goal(op=">=", threshold=0.5),
        ),
        Row(
            benchmark="hosts",
            case="publish from a thread (workflow_hub.sync)",
            variant=label,
            value=best["sync publisher"],
            unit="ns",
            reference="ThreadPublisher",
            reference_value=best["ThreadPublisher"],
            goal=Goal(op="<=", threshold=1.0),
        ),
        Row(
            benchmark="hosts",
            case="tracker fact from asyncio, one per loop turn",
            variant=label,
            value=best["asyncio tracker"],
            unit="ns",
            reference="RunTracker in trio",
            reference_value=best["trio tracker, a fact a turn"],
            # Informational: the difference is trio's guest-mode wake-up (docs/performance.md).
            note="process CPU",
        ),
        Row(
            benchmark="hosts",
            case="tracker fact from a thread (workflow_hub.sync)",
            variant=label,
            value=best["sync tracker"],
            unit="ns",
            reference="RunTracker in trio",
            reference_value=best["trio tracker, bursts"],
            goal=Goal(op="<=", threshold=1.5),
            note="process CPU",
        ),
    ]


if __name__ == "__main__":
    run_script(run)
