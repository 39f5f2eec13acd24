"""Profiles of the fixed costs (issue 29): where the time goes in each row of the table.

Usage: ``python benchmarks/profile_rows.py [ROW ...] [--top N]`` with rows among
``fanout-100``, ``fanout-1``, ``publish``, ``tracker``, ``hooks-1``, ``hooks-10``, ``sse-1``
(default: all). Each row's workload is the one its benchmark times, run once under
:mod:`cProfile`; the functions with the most time of their own are printed, as a share of the
profile's total. A profile is slower than the real thing (cProfile charges every call), so read
shares, not microseconds; calls per unit of work (per delivery, per fact, per event: every
Python function and every C function called from Python) are exact, and are the first figure.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from collections.abc import Callable
from functools import partial

import bench_fanout
import bench_hooks
import bench_network
import bench_publish
import bench_tracker
from _harness import Sink, Tally, run_trio, wait_for
from workflow_hub import HookRunner, LifecycleEvent, WorkflowActivityHub

_PROFILER = cProfile.Profile()
"""The profiler of the current row: rows that time only part of a run switch it themselves."""


def _fanout(observers: int) -> tuple[Callable[[], object], int, str]:
    frames = bench_fanout.frames_per_run(40_000, observers, 64)
    run = partial(
        run_trio, bench_fanout._hub_run, WorkflowActivityHub, "hub callback", observers, frames, 64
    )
    return run, observers * frames, "delivery"


def _publish() -> tuple[Callable[[], object], int, str]:
    frames = 256 * 40
    run = partial(run_trio, bench_publish._hub_publish, WorkflowActivityHub, 0, False, frames, 64)
    return run, frames, "publish_changed"


def _tracker() -> tuple[Callable[[], object], int, str]:
    facts = 20_000
    return partial(bench_tracker._per_fact_ns, 10, False, facts), facts, "fact"


async def _hooks_dispatch(profiler: cProfile.Profile, handlers: int, events: int) -> None:
    """What ``bench_hooks`` times, and only that under the profiler: the dispatch."""
    tally = Tally()
    async with WorkflowActivityHub() as hub:
        runner = HookRunner(hub)
        for index in range(handlers):
            runner.extension(f"extension-{index}").on(LifecycleEvent.type, Sink(tally))
        publisher = hub.register_publisher()
        event = bench_hooks._event()
        for _ in range(events):
            publisher.publish_lifecycle(event)
        profiler.enable()
        runner.bind()
        await wait_for(tally, events * handlers)
        profiler.disable()


def _hooks(handlers: int) -> tuple[Callable[[], object], int, str]:
    events = 10_000
    return partial(run_trio, _hooks_dispatch, _PROFILER, handlers, events), events, "event"


def _sse() -> tuple[Callable[[], object], int, str]:
    frames = 20_000
    run = partial(run_trio, bench_network._server_run, WorkflowActivityHub, 1, frames)
    return run, frames, "event"


ROWS: dict[str, Callable[[], tuple[Callable[[], object], int, str]]] = {
    "fanout-100": partial(_fanout, 100),
    "fanout-1": partial(_fanout, 1),
    "publish": _publish,
    "tracker": _tracker,
    "hooks-1": partial(_hooks, 1),
    "hooks-10": partial(_hooks, 10),
    "sse-1": _sse,
}


_SELF_PROFILING = ("hooks-1", "hooks-10")


def profile(name: str, top: int) -> None:
    global _PROFILER
    run, units, unit = ROWS[name]()
    run()  # warm up: imports, caches, the first trio.run
    profiler = _PROFILER = cProfile.Profile()
    run, units, unit = ROWS[name]()
    if name not in _SELF_PROFILING:
        profiler.enable()
    run()
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    calls = sum(entry[1] for entry in stats.stats.values())  # type: ignore[attr-defined]
    # Calls per unit are exact whatever the machine does; times under a profiler are not.
    print(f"## {name}: {units} x {unit}, {calls / units:.1f} profiled calls per {unit}")
    entries = sorted(
        stats.stats.items(),  # type: ignore[attr-defined]
        key=lambda item: item[1][2],
        reverse=True,
    )
    print(f"| own time | calls per {unit} | function |")
    print("|---|---|---|")
    for (filename, line, function), (_, calls, own, _cumulative, _) in entries[:top]:
        where = filename.rpartition("/src/")[2] if "/src/" in filename else filename
        where = where.rpartition("site-packages/")[2]
        print(f"| {own / total:.0%} | {calls / units:.2f} | `{function}` ({where}:{line}) |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*", choices=[*ROWS, []], default=list(ROWS))
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    for name in args.rows or list(ROWS):
        profile(name, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
