"""OpenTelemetry tracing: CPU per 10 000 lifecycle events, against a no-op hook handler and
against JSON-encoding the same events, measured in the same run (issue 41: at most 3 times the
no-op runner).

The events (runs that start, run one stage and complete: four events and two spans a run) are
published into a hub whose runner is bound, and the timer runs from the first publish until
every handler has seen every event: publishing and dispatching cost the same in every variant. The tracing variant uses the real SDK: its ``TracerProvider``, the batch span
processor with the hub's counting wrappers, and an exporter that encodes each batch to OTLP
protobuf (what the OTLP/HTTP exporter sends) and discards it, so no network is timed. Its CPU
is the whole process's (``process_time``), the batch processor's thread included, up to a
``force_flush``; the references' too. One more row times the exporter's encoding of the same
spans alone (kept from a run before the measured ones), with no hub: the floor any tracing on
the SDK's exporter stands on. Skipped, with a note, without the ``otel`` extra.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import trio

from _harness import BenchmarkError, Goal, HubFactory, Row, Scale, best_of, run_script, run_trio
from workflow_hub import (
    Delivery,
    HookRunner,
    LifecycleEvent,
    LifecycleInput,
    RunStatus,
    RunTarget,
    StageStatus,
    StageTarget,
    WorkflowActivityHub,
)
from workflow_hub.wire import dumps

GOAL = 3.0
"""Issue 41: tracing costs at most three times a HookRunner with a no-op handler."""


def _events(count: int) -> list[LifecycleInput]:
    events: list[LifecycleInput] = []
    for number in range(count // 4):
        run_id = f"run-{number}"
        stage_id = f"{run_id}:build"

        def event(target: Any, at: int, run_id: str = run_id) -> LifecycleInput:
            return LifecycleInput(
                event_id=f"evt-{len(events)}",
                run_id=run_id,
                root_run_id=run_id,
                owner_session_id="session-1",
                occurred_at=at,
                observed_at=at,
                delivery=Delivery.LIVE,
                target=target,
            )

        at = 1_700_000_000_000 + number * 10
        events.append(event(RunTarget(run_id=run_id, status=RunStatus.RUNNING), at))
        events.append(
            event(
                StageTarget(
                    run_id=run_id, stage_id=stage_id, stage_name="build", status=StageStatus.RUNNING
                ),
                at + 1,
            )
        )
        events.append(
            event(
                StageTarget(
                    run_id=run_id,
                    stage_id=stage_id,
                    stage_name="build",
                    status=StageStatus.COMPLETED,
                ),
                at + 5,
            )
        )
        events.append(
            event(
                RunTarget(
                    run_id=run_id, previous_status=RunStatus.RUNNING, status=RunStatus.COMPLETED
                ),
                at + 6,
            )
        )
    return events


def _reached(value: Callable[[], int], target: int) -> bool:
    return value() == target


async def wait_until(condition: Callable[[], bool]) -> None:
    """Yield until ``condition()``; raise if it never holds."""
    idle = 0
    while not condition():
        await trio.lowlevel.checkpoint()
        idle += 1
        if idle > 100_000:
            raise BenchmarkError("the hook handlers stopped short of the events published")


EXPORT_BATCH = 512
"""Spans per export: the batch processor's default ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``."""


def _encoding_exporter(kept: list[Any] | None = None) -> Any:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Encoding(SpanExporter):
        def __init__(self) -> None:
            self.spans = 0

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            encode_spans(spans).SerializePartialToString()
            self.spans += len(spans)
            if kept is not None:
                kept.extend(spans)
            return SpanExportResult.SUCCESS

    return Encoding()


def _encode_only(spans: list[Any]) -> float:
    """CPU to encode finished spans to OTLP protobuf as the exporter does, in the batch
    processor's batches: what any tracing built on the SDK's exporter pays for them."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    start = time.process_time_ns()
    for first in range(0, len(spans), EXPORT_BATCH):
        encode_spans(spans[first : first + EXPORT_BATCH]).SerializePartialToString()
    return time.process_time_ns() - start


async def _run(
    hub_factory: HubFactory,
    variant: str,
    events: list[LifecycleInput],
    kept: list[Any] | None = None,
) -> float:
    seen = 0

    def count(event: LifecycleEvent) -> None:
        nonlocal seen
        seen += 1

    def encode(event: LifecycleEvent) -> None:
        nonlocal seen
        dumps(event)
        seen += 1

    provider = None
    async with hub_factory() as hub:
        runner = HookRunner(hub)
        flush: Callable[[], object] = lambda: None  # noqa: E731
        if variant in ("otel", "otel-hub"):
            from opentelemetry.sdk.trace import TracerProvider  # noqa: F401

            from workflow_hub.otel import trace_hub, tracer_provider_from_env

            exporter = _encoding_exporter(kept)
            # A queue that holds every span: on a loaded machine the exporter's thread can fall
            # behind, and a dropped span is CPU not spent (the run would not be comparable).
            saved = os.environ.get("OTEL_BSP_MAX_QUEUE_SIZE")
            os.environ["OTEL_BSP_MAX_QUEUE_SIZE"] = str(len(events))
            try:
                provider, _ = tracer_provider_from_env(exporter=exporter)
            finally:
                if saved is None:
                    del os.environ["OTEL_BSP_MAX_QUEUE_SIZE"]
                else:
                    os.environ["OTEL_BSP_MAX_QUEUE_SIZE"] = saved
            trace_hub(runner, tracer_provider=provider)
            runner.extension("count").on("workflow_lifecycle", count)
            flush = provider.force_flush
        elif variant == "json":
            runner.extension("json").on("workflow_lifecycle", encode)
        else:
            runner.extension("no-op").on("workflow_lifecycle", count)
        runner.bind()
        publisher = hub.register_publisher()
        # "otel-hub": the hub's thread only (the hook task's span work), without the batch
        # processor's thread that encodes the spans to OTLP protobuf.
        clock = time.thread_time_ns if variant == "otel-hub" else time.process_time_ns
        start = clock()
        for index, event in enumerate(events):
            publisher.publish_lifecycle(event)
            if index % 1000 == 999:  # in batches: the hook buffer holds 10 000 events
                await wait_until(partial(_reached, lambda: seen, index + 1))
        await wait_until(lambda: seen == len(events))
        handled = clock()
        flush()
        # "otel-hub" stops before the flush: the SDK's force_flush exports in this thread.
        elapsed = (handled if variant == "otel-hub" else clock()) - start
        if variant in ("otel", "otel-hub") and exporter.spans != len(events) // 2:
            raise BenchmarkError(f"{exporter.spans} spans exported, expected {len(events) // 2}")
    if provider is not None:
        provider.shutdown()
    return elapsed


def otel_available() -> bool:
    try:
        import workflow_hub.otel  # noqa: F401
    except ImportError:
        return False
    return True


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the hub's own instrumentation is not what this measures
    if not otel_available():
        return [
            Row(
                benchmark="otel",
                case="skipped",
                variant=label,
                value=0.0,
                unit="",
                note="the otel extra is not installed",
            )
        ]
    count = scale.hook_events
    events = _events(count)
    spans: list[Any] = []  # the spans tracing makes of the events, as its exporter got them
    run_trio(_run, hub_factory, "otel", events, spans)
    best = best_of(
        scale,
        {
            **{
                variant: partial(run_trio, _run, hub_factory, variant, events)
                for variant in ("no-op", "json", "otel", "otel-hub")
            },
            "encoding": partial(_encode_only, spans),
        },
    )
    per = 10_000 / len(events)
    return [
        Row(
            benchmark="otel",
            case="tracing vs no-op runner",
            variant=label,
            value=best["otel"] * per / 1e6,
            unit="ms CPU/10k events",
            reference="no-op handler",
            reference_value=best["no-op"] * per / 1e6,
            goal=Goal(op="<=", threshold=GOAL),
        ),
        Row(
            benchmark="otel",
            case="tracing vs JSON-encoding",
            variant=label,
            value=best["otel"] * per / 1e6,
            unit="ms CPU/10k events",
            reference="wire.dumps handler",
            reference_value=best["json"] * per / 1e6,
        ),
        Row(
            benchmark="otel",
            case="tracing, hub thread only",
            variant=label,
            value=best["otel-hub"] * per / 1e6,
            unit="ms CPU/10k events",
            reference="no-op handler",
            reference_value=best["no-op"] * per / 1e6,
            note="the rest is the batch processor's thread (OTLP protobuf encoding)",
        ),
        Row(
            benchmark="otel",
            case="OTLP encoding of the same spans alone",
            variant=label,
            value=best["encoding"] * per / 1e6,
            unit="ms CPU/10k events",
            reference="no-op handler",
            reference_value=best["no-op"] * per / 1e6,
            note="the SDK exporter's encoder, no hub: a floor under the goal's ratio",
        ),
    ]


if __name__ == "__main__":
    run_script(run)
