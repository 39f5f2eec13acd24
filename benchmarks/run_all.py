"""Run every benchmark, print one table, write ``benchmarks/results.json``.

Usage: ``python benchmarks/run_all.py [--quick | --smoke] [--only NAME ...] [--variants NAME ...]
[--output PATH]``
(``make bench`` runs the full scale, about 9 minutes on a 2-core machine). Every row is a
figure next to a reference measured in the same run, and the ratio between them; rows with a
goal from the issue that asked for the benchmark say whether it was met.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import bench_airflow
import bench_airflow_lag
import bench_celery
import bench_conflation
import bench_dashboard
import bench_fanout
import bench_fleet_stream
import bench_hooks
import bench_hosts
import bench_langgraph
import bench_langgraph_hosts
import bench_langgraph_turns
import bench_memory
import bench_metrics
import bench_network
import bench_otel
import bench_publish
import bench_redis
import bench_resume
import bench_snapshot
import bench_status
import bench_tracker
import bench_watch_cpu
from _harness import (
    HUB_VARIANTS,
    RESULTS_PATH,
    SCALES,
    HubFactory,
    Row,
    Scale,
    format_table,
    machine,
    write_results,
)

Benchmark = Callable[..., list[Row]]

BENCHMARKS: dict[str, Benchmark] = {
    "fanout": bench_fanout.run,
    "publish": bench_publish.run,
    "memory": bench_memory.run,
    "snapshot": bench_snapshot.run,
    "hooks": bench_hooks.run,
    "metrics": bench_metrics.run,
    "network": bench_network.run,
    "redis": bench_redis.run,
    "fleet_stream": bench_fleet_stream.run,
    "resume": bench_resume.run,
    "tracker": bench_tracker.run,
    "dashboard": bench_dashboard.run,
    "langgraph": bench_langgraph.run,
    "langgraph_hosts": bench_langgraph_hosts.run,
    "langgraph_turns": bench_langgraph_turns.run,
    "hosts": bench_hosts.run,
    "celery": bench_celery.run,
    "watch_cpu": bench_watch_cpu.run,
    "conflation": bench_conflation.run,
    "status": bench_status.run,
    "otel": bench_otel.run,
    "airflow": bench_airflow.run,
    "airflow_lag": bench_airflow_lag.run,
}


def run_benchmarks(
    scale: Scale,
    names: Sequence[str] = tuple(BENCHMARKS),
    variants: dict[str, HubFactory] | None = None,
    progress: Callable[[str], object] | None = None,
) -> list[Row]:
    """Every selected benchmark for every hub variant, in order; the rows of all of them."""
    rows: list[Row] = []
    for name in names:
        for label, factory in (variants or HUB_VARIANTS).items():
            started = time.perf_counter()
            rows.extend(BENCHMARKS[name](scale, hub_factory=factory, label=label))
            if progress is not None:
                progress(f"{name} [{label}]: {time.perf_counter() - started:.1f}s")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller workloads (~20 s)")
    size.add_argument("--smoke", action="store_true", help="tiny workloads: checks, not numbers")
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    parser.add_argument("--output", type=Path, default=RESULTS_PATH, help="results JSON path")
    parser.add_argument(
        "--variants", nargs="+", choices=list(HUB_VARIANTS), default=list(HUB_VARIANTS)
    )
    args = parser.parse_args(argv)
    scale = SCALES["quick" if args.quick else "smoke" if args.smoke else "full"]

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    info = machine()
    progress(f"{info['cpu']}, {info['cores']} cores, {info['python']}, trio {info['trio']}")
    started = time.perf_counter()
    variants = {name: HUB_VARIANTS[name] for name in args.variants}
    rows = run_benchmarks(scale, args.only, variants, progress=progress)
    seconds = time.perf_counter() - started
    print(format_table(rows))
    write_results(rows, scale=scale, seconds=seconds, path=args.output)
    missed = sum(row.met is False for row in rows)
    goals = sum(row.met is not None for row in rows)
    progress(f"{scale.name} scale, {seconds:.0f}s; goals met: {goals - missed}/{goals}")
    progress(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
