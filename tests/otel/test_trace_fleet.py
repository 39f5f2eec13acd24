"""A fleet as the source of traces (issue 41, N6): every source's runs, through a real
redis-server, the sources' mirrors and ``trace_fleet``, each source a span book of its own with
``workflow_hub.source`` its name (two schedulers may run the same run id)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable

import coredis
import trio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.fleet_events import hooked
from tests.support.redis_server import RedisServer
from workflow_hub import RunTracker
from workflow_hub.otel import FleetTracing, trace_fleet
from workflow_hub.redis import RedisFleet


async def _scheduler(
    nursery: trio.Nursery,
    redis: coredis.Redis[bytes],
    prefix: str,
    source: str,
    play: Callable[[RunTracker], None],
) -> None:
    """A scheduler mirrored with its hook events (tests/support's), reporting through a tracker."""
    scheduler = await hooked(nursery, redis, prefix, source)
    tracker = RunTracker(scheduler.hub.register_publisher(), owner_session_id=source)
    tracker.start()
    play(tracker)


def _build(tracker: RunTracker) -> None:
    tracker.add_run("build-1", status="running")
    tracker.add_stage("build-1", "compile", "compile")
    tracker.set_stage_status("build-1", "compile", "running")
    tracker.set_stage_status("build-1", "compile", "completed")
    tracker.set_run_status("build-1", "completed")


def _failing(tracker: RunTracker) -> None:
    tracker.add_run("build-1", status="running")
    tracker.set_run_status("build-1", "failed", error="disk full")


async def _eventually(condition: Callable[[], bool]) -> None:
    while not condition():  # noqa: ASYNC110 (bounded by the test's fail_after)
        await trio.sleep(0.05)


async def test_every_source_of_a_fleet_is_traced_with_its_name(
    redis_server: RedisServer,
) -> None:
    prefix = f"otel-{uuid.uuid4().hex[:8]}"
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def spans() -> list[ReadableSpan]:
        return list(exporter.get_finished_spans())

    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            engine = RedisFleet(redis, prefix=prefix, read_timeout=10.0, block=0.2)
            tracing: FleetTracing = await nursery.start(
                functools.partial(trace_fleet, engine, tracer_provider=provider)
            )
            await trio.sleep(0.3)  # the follower has looked once: later sources start at 0
            await _scheduler(nursery, redis, prefix, "sched-1", _build)
            await _scheduler(nursery, redis, prefix, "sched-2", _failing)
            await _eventually(lambda: len(spans()) == 3)
            assert set(tracing.sources) == {"sched-1", "sched-2"}
            nursery.cancel_scope.cancel()

    by_source = {
        (span.name, (span.attributes or {}).get("workflow_hub.source")): span for span in spans()
    }
    assert set(by_source) == {
        ("RUN build-1", "sched-1"),
        ("compile", None),
        ("RUN build-1", "sched-2"),
    }
    run_1 = by_source["RUN build-1", "sched-1"]
    compile_span = by_source["compile", None]
    assert compile_span.parent is not None
    assert compile_span.parent.span_id == run_1.context.span_id
    assert run_1.status.status_code.name == "UNSET"
    run_2 = by_source["RUN build-1", "sched-2"]
    assert run_2.status.status_code.name == "ERROR"
    assert run_2.status.description == "disk full"
    assert run_2.context.trace_id != run_1.context.trace_id
    statistics = tracing.statistics()
    assert statistics.spans_started == statistics.spans_ended == 3
    assert statistics.open_runs == 0


def _left_running(tracker: RunTracker) -> None:
    tracker.add_run("deploy-7", status="running")


async def test_a_retired_source_ends_its_open_spans_as_vanished(
    redis_server: RedisServer,
) -> None:
    """A source whose scheduler died mid-run (its mirror stops refreshing) retires, and its open
    spans end, marked ``vanished``: no span stays open forever (issue 41, N5)."""
    prefix = f"otel-{uuid.uuid4().hex[:8]}"
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with trio.fail_after(30):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            engine = RedisFleet(
                redis,
                prefix=prefix,
                read_timeout=10.0,
                block=0.2,
                stale_after=0.5,
                retire_after=1.0,
            )
            tracing: FleetTracing = await nursery.start(
                functools.partial(trace_fleet, engine, tracer_provider=provider)
            )
            await trio.sleep(0.3)
            async with trio.open_nursery() as scheduler:  # the scheduler's process
                await _scheduler(scheduler, redis, prefix, "sched-9", _left_running)
                await _eventually(lambda: tracing.statistics().open_runs == 1)
                scheduler.cancel_scope.cancel()  # dies without a word
            await _eventually(lambda: "sched-9" not in tracing.sources)
            nursery.cancel_scope.cancel()

    (span,) = exporter.get_finished_spans()
    assert span.name == "RUN deploy-7"
    assert (span.attributes or {})["workflow_hub.ended_by"] == "vanished"
    assert (span.attributes or {})["workflow_hub.source"] == "sched-9"
    assert tracing.statistics().vanished == 1
