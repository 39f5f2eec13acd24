"""What every benchmark script shares: workload sizes, hub variants, timing, rows and the table.

The machine is noisy, so no benchmark reports an absolute number alone: every figure is a
:class:`Row` that names a reference measured in the same run and the ratio between them. Timed
runs of the things being compared are interleaved and the best of a few repeats is kept, because
noise only ever makes a run slower. Runs of many milliseconds are timed with the thread's CPU
clock (:func:`cpu_ns`), single calls with the wall clock (:func:`now_ns`) and many repeats.

Every benchmark takes a ``hub_factory`` (what ``async with hub_factory() as hub:`` runs) and a
``label`` for its rows; :data:`HUB_VARIANTS` lists the configurations ``run_all.py`` measures, so
a configured hub (metrics on, a different queue limit ...) is one more entry there.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, final

import trio
from prometheus_client import CollectorRegistry

from workflow_hub import Reason, RootActivity, State, WorkflowActivityHub
from workflow_hub.metrics import HubMetrics

_R = TypeVar("_R")
_K = TypeVar("_K")

HubFactory = Callable[[], WorkflowActivityHub]
"""Makes the hub a benchmark runs; ``WorkflowActivityHub`` itself is the default."""

HUB_VARIANTS: dict[str, HubFactory] = {
    "hub": WorkflowActivityHub,
    "hub+metrics": lambda: WorkflowActivityHub(metrics=HubMetrics(CollectorRegistry())),
}
"""The hub configurations every benchmark measures, by the label their rows carry."""

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_PATH = BENCH_DIR / "results.json"


class BenchmarkError(RuntimeError):
    """A benchmark did not do what it measures (a frame went missing, a queue overflowed ...).

    Raised instead of reporting a figure: a benchmark that silently drops work is wrong.
    """


# --- workload sizes ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Scale:
    """How big each benchmark's workload is. ``full`` takes about 9 minutes on 2 cores.

    Timed runs are kept short and repeated rather than made long: on a shared machine a short
    run often fits between two bursts of someone else's work, and the best run is kept.
    """

    name: str
    repeats: int
    """Timed repeats of each measured thing; the best is kept."""
    fanout_observers: tuple[int, ...]
    fanout_deliveries: int
    """Deliveries per timed fan-out run (frames = deliveries / observers, at least 2 bursts)."""
    burst: int
    """Frames published between two checkpoints (fan-out and publish cost)."""
    publish_observers: tuple[int, ...]
    publish_frames: int
    """Timed ``publish_changed`` calls per run (a multiple of the queue limit, 256)."""
    memory_observers: int
    memory_frames: tuple[int, ...]
    snapshot_roots: tuple[int, ...]
    snapshot_observers: int
    """Observers attached to one snapshot in the memory part of the snapshot benchmark."""
    overflow_cycles: int
    """Overflow resnapshots timed per root count."""
    hook_handlers: tuple[int, ...]
    hook_events: int
    """Events dispatched per timed run (at most the hub's hook buffer, 10 000)."""
    collect: bool = True
    """Run the garbage collector before each timed or traced run (off for the smoke test)."""


SCALES: dict[str, Scale] = {
    "full": Scale(
        name="full",
        repeats=5,
        fanout_observers=(1, 10, 100, 1000),
        fanout_deliveries=100_000,
        burst=64,
        publish_observers=(0, 100, 1000),
        publish_frames=256 * 4,
        memory_observers=100,
        memory_frames=(1_000, 10_000, 100_000),
        snapshot_roots=(10, 1_000, 100_000),
        snapshot_observers=1_000,
        overflow_cycles=5,
        hook_handlers=(1, 10),
        hook_events=10_000,
    ),
    "quick": Scale(
        name="quick",
        repeats=2,
        fanout_observers=(1, 10, 100, 1000),
        fanout_deliveries=40_000,
        burst=64,
        publish_observers=(0, 100, 1000),
        publish_frames=256 * 4,
        memory_observers=100,
        memory_frames=(1_000, 3_000, 10_000),
        snapshot_roots=(10, 1_000, 10_000),
        snapshot_observers=1_000,
        overflow_cycles=3,
        hook_handlers=(1, 10),
        hook_events=2_000,
    ),
    # The smallest shapes that still exercise every code path: for the smoke test, not for numbers.
    "smoke": Scale(
        name="smoke",
        repeats=1,
        fanout_observers=(1, 3),
        fanout_deliveries=300,
        burst=8,
        publish_observers=(0, 2, 3),
        publish_frames=256,
        memory_observers=3,
        memory_frames=(300, 600),
        snapshot_roots=(3, 30),
        snapshot_observers=5,
        overflow_cycles=1,
        hook_handlers=(1, 2),
        hook_events=20,
        collect=False,
    ),
}


# --- results ----------------------------------------------------------------------------------

GoalOp = Literal[">=", "<="]


@dataclass(frozen=True, kw_only=True)
class Goal:
    """A target for a row's ratio, from the issue that asked for the benchmark.

    With ``unit`` (the row's own unit), the target is for the measured value itself, in that
    unit, rather than for the ratio: a goal such as "at most 1 µs" (issue 29). The row still
    shows its reference, measured in the same run, so the figure can be judged on a busy machine.
    """

    op: GoalOp
    threshold: float
    unit: str | None = None

    def met(self, ratio: float) -> bool:
        return ratio >= self.threshold if self.op == ">=" else ratio <= self.threshold

    def __str__(self) -> str:
        if self.unit is not None:
            return f"{self.op} {format_value(self.threshold, self.unit)}"
        return f"{self.op} {self.threshold:g}"


@dataclass(frozen=True, kw_only=True)
class Row:
    """One figure, next to the reference it is judged against (measured in the same run).

    ``ratio`` is ``value / reference_value``: for rates higher is better, for costs lower is.
    """

    benchmark: str
    case: str
    variant: str
    value: float
    unit: str
    reference: str | None = None
    reference_value: float | None = None
    goal: Goal | None = None
    note: str = ""
    ratio: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.reference_value is not None:
            ratio = self.value / self.reference_value if self.reference_value else float("inf")
            object.__setattr__(self, "ratio", ratio)

    @property
    def met(self) -> bool | None:
        if self.goal is None:
            return None
        if self.goal.unit is not None:
            return self.goal.met(self.value)
        if self.ratio is None:
            return None
        return self.goal.met(self.ratio)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["goal"] = None if self.goal is None else str(self.goal)
        data["met"] = self.met
        return data


def rate_unit(value: float) -> str:
    return _si(value) + "/s"


def _si(value: float) -> str:
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.3g}"


def format_value(value: float, unit: str) -> str:
    if unit == "B":
        for factor, suffix in ((1024.0**2, "MiB"), (1024.0, "KiB")):
            if abs(value) >= factor:
                return f"{value / factor:.3g} {suffix}"
        return f"{value:.0f} B"
    if unit == "ns":
        shown = float(f"{value:.3g}")  # 999.7 ns is shown as 1 µs, not as 1e+03 ns
        for factor, suffix in ((1e6, "ms"), (1e3, "µs")):
            if abs(shown) >= factor:
                return f"{value / factor:.3g} {suffix}"
        return f"{value:.3g} ns"
    if unit.startswith("/"):
        return f"{_si(value)}{unit}"
    return f"{_si(value)} {unit}".rstrip()


def format_table(rows: Sequence[Row]) -> str:
    """One plain-text table (also valid Markdown) of every row."""
    header = ("benchmark", "case", "measured", "reference", "ratio", "goal")
    lines = [header]
    for row in rows:
        if row.reference is None or row.reference_value is None:
            reference = ""
        else:
            reference = f"{row.reference}: {format_value(row.reference_value, row.unit)}"
        ratio = "" if row.ratio is None else f"{row.ratio:.3g}"
        goal = ""
        if row.goal is not None:
            goal = f"{row.goal} {'ok' if row.met else 'MISSED'}"
        case = row.case if row.variant == "hub" else f"{row.case} [{row.variant}]"
        measured = format_value(row.value, row.unit)
        if row.note:
            measured = f"{measured} ({row.note})"
        lines.append((row.benchmark, case, measured, reference, ratio, goal))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]

    def render(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [render(lines[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(render(line) for line in lines[1:])
    return "\n".join(out)


def machine() -> dict[str, str]:
    """Where the numbers come from: they mean little without it."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": platform.python_implementation() + " " + platform.python_version(),
        "trio": trio.__version__,
        "platform": platform.platform(),
    }


def write_results(rows: Iterable[Row], *, scale: Scale, seconds: float, path: Path) -> None:
    data = {
        "machine": machine(),
        "scale": scale.name,
        "seconds": round(seconds, 1),
        "rows": [row.as_json() for row in rows],
    }
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# --- timing -----------------------------------------------------------------------------------


def best_of(scale: Scale, candidates: dict[_K, Callable[[], float]]) -> dict[_K, float]:
    """Run each candidate ``repeats`` times, interleaved, and keep each one's smallest result.

    Interleaving spreads background noise over all candidates instead of loading it on one.
    """
    best: dict[_K, float] = {}
    for _ in range(scale.repeats):
        for name, candidate in candidates.items():
            collect_garbage(scale.collect)
            result = candidate()
            best[name] = min(best.get(name, result), result)
    return best


def collect_garbage(collect: bool) -> None:
    """A full collection now, so that none lands in the middle of what is measured next."""
    if collect:
        gc.collect()


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic collection inside: for single calls timed many times, as ``timeit`` does."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_trio(async_fn: Callable[..., Awaitable[_R]], *args: object) -> _R:
    """``trio.run``, re-raising a :class:`BenchmarkError` from inside a nursery as itself."""
    try:
        return trio.run(async_fn, *args)
    except BaseExceptionGroup as group:
        error = _first(group)
        if error is None:
            raise
        raise error from group


def _first(group: BaseExceptionGroup[BaseException]) -> BenchmarkError | None:
    for exception in group.exceptions:
        if isinstance(exception, BenchmarkError):
            return exception
        if isinstance(exception, BaseExceptionGroup):
            found = _first(exception)
            if found is not None:
                return found
    return None


def cpu_ns() -> int:
    """This thread's CPU time: for runs of many milliseconds, what the work cost.

    The benchmarks are single-threaded and never idle (a task is always runnable), so on a quiet
    machine this equals wall time; on a shared one, other processes do not inflate it.
    """
    return time.thread_time_ns()


def now_ns() -> int:
    """Wall time, cheap to read: for single calls, timed many times with the best kept."""
    return time.perf_counter_ns()


# --- workloads --------------------------------------------------------------------------------


def make_roots(count: int, *, prefix: str = "root") -> list[RootActivity]:
    """``count`` distinct roots: built once, outside anything timed or traced."""
    return [
        RootActivity(
            root_run_id=f"{prefix}-{index}",
            owner_session_id="session-1",
            state=State.WORKING,
            reason=Reason.EXECUTING,
            active_execution_count=1,
            actionable_block_count=0,
            needs_attention=False,
        )
        for index in range(count)
    ]


ROOT_POOL_SIZE = 64
"""Publishers cycle through this many roots, so the hub's state stays the same size as F grows."""


@final
class Tally:
    """Deliveries counted across all observers of one run."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0


@final
class Sink:
    """The no-op async callback every variant calls once per delivery; it only counts."""

    __slots__ = ("count", "tally")

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.count = 0

    async def __call__(self, item: object) -> None:
        self.count += 1
        self.tally.total += 1


async def wait_for(tally: Tally, target: int) -> None:
    """Yield until ``tally`` reaches ``target``; raise if deliveries stop short of it.

    Every consumer that has something to do runs within two scheduler batches of the caller's
    checkpoint, so three checkpoints without progress mean nothing is left to run.
    """
    idle = 0
    seen = tally.total
    while seen < target:
        await trio.lowlevel.checkpoint()
        if tally.total == seen:
            idle += 1
            if idle >= 3:
                raise BenchmarkError(f"deliveries stopped at {seen} of {target}")
        else:
            idle = 0
            seen = tally.total
    if seen > target:
        raise BenchmarkError(f"{seen} deliveries, expected {target}")


async def stall_forever(_frame: object) -> None:
    """A callback that never returns: its observer's queue fills and then overflows."""
    await trio.sleep_forever()


def frames_per_run(deliveries: int, observers: int, burst: int) -> int:
    """Frames for one fan-out run: ``deliveries / observers`` in whole bursts, at least two."""
    bursts = max(2, round(deliveries / observers / burst))
    return bursts * burst


def main_arguments(argv: Sequence[str] | None = None) -> tuple[Scale, list[str]]:
    """``--quick`` / ``--smoke`` pick a scale; anything else is returned for the caller."""
    args = list(sys.argv[1:] if argv is None else argv)
    scale = SCALES["full"]
    rest: list[str] = []
    for arg in args:
        if arg in ("--quick", "--smoke"):
            scale = SCALES[arg[2:]]
        else:
            rest.append(arg)
    return scale, rest


def run_script(benchmark: Callable[..., list[Row]], argv: Sequence[str] | None = None) -> list[Row]:
    """What ``python benchmarks/bench_x.py [--quick]`` does: every variant, one table."""
    scale, _ = main_arguments(argv)
    rows: list[Row] = []
    for label, factory in HUB_VARIANTS.items():
        rows.extend(benchmark(scale, hub_factory=factory, label=label))
    print(format_table(rows))
    return rows
