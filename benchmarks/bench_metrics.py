"""Metrics cost: fan-out throughput with ``HubMetrics`` on, against the same hub without it.

Issue 9's goal: metrics cost at most 15% of fan-out throughput at N = 100 and 1 000 observers, so
the ratio (metrics on / metrics off) should stay at or above 0.85. Both hubs run the fan-out
workload of :mod:`bench_fanout` interleaved in the same process, so noise falls on both alike.
This benchmark compares hub configurations itself; it runs once, for the plain ``hub`` variant.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from prometheus_client import CollectorRegistry

from _harness import (
    Goal,
    HubFactory,
    Row,
    Scale,
    best_of,
    frames_per_run,
    run_script,
    run_trio,
)
from bench_fanout import HUB_KINDS, _hub_run
from workflow_hub import WorkflowActivityHub
from workflow_hub.metrics import HubMetrics


def _with_metrics() -> WorkflowActivityHub:
    return WorkflowActivityHub(metrics=HubMetrics(CollectorRegistry()))


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []
    rows: list[Row] = []
    for observers in scale.fanout_observers:
        if observers < 100 and scale.name != "smoke":
            continue
        frames = frames_per_run(scale.fanout_deliveries, observers, scale.burst)
        candidates: dict[tuple[str, bool], Callable[[], float]] = {}
        for kind in HUB_KINDS:
            for metrics in (False, True):
                factory: HubFactory = _with_metrics if metrics else WorkflowActivityHub
                candidates[kind, metrics] = partial(
                    run_trio, _hub_run, factory, kind, observers, frames, scale.burst
                )
        best_ns = best_of(scale, candidates)
        deliveries = observers * frames
        for kind in HUB_KINDS:
            rows.append(
                Row(
                    benchmark="metrics",
                    case=f"N={observers} {kind.removeprefix('hub ')}, metrics on",
                    variant=label,
                    value=deliveries / (best_ns[kind, True] / 1e9),
                    unit="/s",
                    reference="metrics off",
                    reference_value=deliveries / (best_ns[kind, False] / 1e9),
                    goal=Goal(op=">=", threshold=0.85) if observers >= 100 else None,
                )
            )
    return rows


if __name__ == "__main__":
    run_script(run)
