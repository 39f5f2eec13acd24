"""OTel metrics from the demo's six workflows (issue 41): runs active and ended, failures by
stage name, human waits, and the folded view's roots by state and reason. The real SDK's
in-memory metric reader reads them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

import trio
import trio.testing
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.otel.receiver import Receiver
from workflow_hub import HookRunner, RunTracker, open_hub
from workflow_hub._cli._demo_script import run_scenario
from workflow_hub.otel import open_tracing

BASE_MS = 1_767_000_000_000.0


def _clock() -> float:
    return BASE_MS + trio.current_time() * 1000


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = defaultdict(list)
    data = reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name].extend(metric.data.data_points)
    return found


def _sums(points: list[Any], *keys: str) -> dict[tuple[Any, ...], float]:
    sums: dict[tuple[Any, ...], float] = defaultdict(float)
    for point in points:
        sums[tuple(point.attributes.get(key) for key in keys)] += point.value
    return dict(sums)


async def test_the_demo_gives_run_task_wait_and_root_metrics(
    autojump_clock: trio.testing.MockClock, otlp: Receiver
) -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    async with open_hub() as hub:
        runner = HookRunner(hub)
        async with open_tracing(
            runner, meter_provider=meters, source="demo", clock=_clock
        ) as tracing:
            runner.bind()
            tracker = RunTracker(hub.register_publisher(), owner_session_id="demo", clock=_clock)
            await run_scenario(cast(RunTracker, tracing.facts(tracker)), duration=20.0, seed=7)
            await trio.testing.wait_all_tasks_blocked()
            during = _points(reader)
            roots = {
                (str(root.state), str(root.reason)) for root in hub.snapshot_frame().roots or ()
            }
    after = _points(reader)

    # Roots by state and reason: what the hub holds (nightly-build was removed).
    gauge = _sums(during["workflow_hub.root.active"], "workflow_hub.state", "workflow_hub.reason")
    assert {key for key, value in gauge.items() if value} == roots
    assert sum(gauge.values()) == 5
    assert all(
        point.attributes["workflow_hub.source"] == "demo"
        for point in during["workflow_hub.root.active"]
    )
    # Every run ended: none active; and once tracing stops, no root either.
    assert set(_sums(during["cicd.pipeline.run.active"], "cicd.pipeline.run.state").values()) == {0}
    assert set(_sums(after["workflow_hub.root.active"], "workflow_hub.state").values()) == {0}

    durations = {
        point.attributes["cicd.pipeline.result"]: point.count
        for point in during["cicd.pipeline.run.duration"]
    }
    assert durations == {"success": 5, "cancellation": 1, "failure": 1}
    errors = _sums(during["cicd.pipeline.run.errors"], "error.type")
    assert errors == {("ConnectionError",): 1}

    failures = _sums(during["workflow_hub.task.failures"], "cicd.pipeline.task.name", "error.type")
    shard = [key for key in failures if str(key[0]).startswith("pytest shard")]
    assert len(shard) == 1
    assert failures == {
        shard[0]: 1,
        ("deploy", "TimeoutError"): 1,
        ("probe", "ConnectionError"): 1,
    }
    assert shard[0][1] == "AssertionError"
    tasks = {
        (point.attributes["workflow_hub.span.kind"], point.attributes["cicd.pipeline.task.name"])
        for point in during["workflow_hub.task.duration"]
    }
    assert ("stage", "row counts") in tasks
    assert ("tool", "pytest shard 1") in tasks

    (wait,) = during["workflow_hub.human_wait.duration"]
    assert wait.attributes["workflow_hub.prompt.result"] == "answered"
    assert wait.count == 1
    assert wait.sum >= 5.0  # asked at ~2 script seconds, answered at ~8
    meters.shutdown()
