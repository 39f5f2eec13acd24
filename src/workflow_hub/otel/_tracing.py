"""``open_tracing``: a hub's lifecycle events as OpenTelemetry traces, in process.

The span book is fed by a ``HookRunner`` extension (``otel``), so it sees every lifecycle event
in publication order (K6), after the publisher moved on: tracing never slows a publish (P9).
A sweep task ends the spans of roots that left the hub without an ending event (removed while
running, a crashed scheduler's snapshot): a root absent from two sweeps in a row has vanished.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Final, cast, final

import attrs
import trio
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import TracerProvider as ApiTracerProvider

from .._contract import (
    ActivityChangedEvent,
    Availability,
    ContractError,
    LifecycleEvent,
)
from .._core import HookRunner, ObserverLease
from ..tracker import SchedulerFacts
from . import _attributes
from ._export import ExportCounts, ExportStatistics, tracer_provider_from_env
from ._light import light_tracer
from ._metrics import RootGauge, SpanMetrics
from ._spans import HostHint, HostHints, SpanBook

__all__ = [
    "DEFAULT_SWEEP_INTERVAL",
    "HubTracing",
    "TracingStatistics",
    "open_tracing",
    "trace_hub",
]

DEFAULT_SWEEP_INTERVAL: Final = 30.0
"""Seconds between two looks for roots that vanished with spans still open."""

SHUTDOWN_TIMEOUT: Final = 5.0
_TRACER_NAME: Final = "workflow_hub.otel"


@attrs.frozen
class TracingStatistics:
    """What the tracing did so far."""

    spans_started: int
    """Spans started: runs, stages, tools and human waits."""
    spans_ended: int
    """Spans ended (every started span ends exactly once)."""
    open_runs: int
    """Runs whose span is still open."""
    first_seen_mid_flight: int
    """Spans of runs, stages and tools that started at first sight, after the run or node had
    started (each marked ``workflow_hub.first_seen_mid_flight``)."""
    vanished: int
    """Runs whose span ended because their root left the hub without an ending event."""
    export: ExportStatistics | None
    """What the exporter sent, failed to send and dropped; None with a provider of your own."""


@final
class HubTracing:
    """The tracing of one hub, from :func:`open_tracing`."""

    def __init__(
        self, book: SpanBook, counts: ExportCounts | None, owned: TracerProvider | None
    ) -> None:
        self._book = book
        self._counts = counts
        self._owned = owned
        self.source = book.source
        self._gauge: RootGauge | None = None
        self._lease: ObserverLease | None = None
        self.closed = False
        self.reached = False
        """For :func:`trace_source`: whether the source's event stream was ever open."""

    def count_roots(self, gauge: RootGauge, lease: ObserverLease | None) -> None:
        """Own the roots' gauge and the observer that feeds it (with a meter provider)."""
        self._gauge = gauge
        self._lease = lease

    def statistics(self) -> TracingStatistics:
        """Spans started and ended, runs open, and the exporter's counts."""
        counts = self._book.counts
        return TracingStatistics(
            spans_started=counts.started,
            spans_ended=counts.ended,
            open_runs=self._book.open_runs,
            first_seen_mid_flight=counts.mid_flight,
            vanished=counts.vanished,
            export=None if self._counts is None else self._counts.statistics(),
        )

    def facts(self, tracker: SchedulerFacts) -> SchedulerFacts:
        """``tracker``, remembering for each run it adds the stage that hosts it and the OTel
        span current where ``add_run`` was called: a root run added inside a span of yours
        becomes that span's child, and a nested run the child of its host stage's span.

        Give the result to your scheduler (or a bridge: ``workflow_hub.langgraph.watch``)
        instead of the tracker itself. Safe from any thread the tracker itself accepts.
        """
        if not isinstance(tracker, SchedulerFacts):
            raise ContractError("tracker", f"expected SchedulerFacts, got {type(tracker).__name__}")
        return cast(SchedulerFacts, _TracedFacts(tracker, self._book.hints))

    def lifecycle(self, event: LifecycleEvent) -> None:
        """Fold one lifecycle event in (the hook handler, and a followed source's stream)."""
        if not self.closed:
            self._book.lifecycle(event)

    def activity(self, event: ActivityChangedEvent) -> None:
        """A root's new activity: its labels go on its spans."""
        if not self.closed:
            self._book.activity(event.root)

    def sweep(self, present_roots: set[str], now_ms: float) -> int:
        """End the spans of roots not in ``present_roots``; how many runs ended."""
        return 0 if self.closed else self._book.sweep(present_roots, now_ms)

    def open_roots(self) -> set[str]:
        """The roots that have runs with open spans."""
        return self._book.open_roots()

    def close(self, now_ms: float | None = None) -> None:
        """End every open span (at ``now_ms``, the wall clock by default), marked
        ``workflow_hub.ended_by = exporter_closed``; later events are ignored. Idempotent.
        Call it in the hub's thread."""
        if not self.closed:
            self._book.close(wall_ms() if now_ms is None else now_ms)
            self.closed = True
            if self._lease is not None:
                self._lease.dispose()
            if self._gauge is not None:
                self._gauge.close()

    def shutdown(self) -> None:
        """Flush and shut down the tracer provider :func:`trace_hub` built (nothing for a
        provider of your own). Blocks while the exporter sends what is queued: call it from a
        thread (``open_tracing`` does, for at most 5 seconds). Idempotent."""
        if self._owned is not None:
            owned, self._owned = self._owned, None
            owned.shutdown()


class _TracedFacts:
    """A tracker's facts, with ``add_run`` noting where each run was added."""

    def __init__(self, inner: SchedulerFacts, hints: HostHints) -> None:
        self._inner = inner
        self._hints = hints

    def add_run(self, run_id: str, **options: Any) -> None:
        current = trace.get_current_span().get_span_context()
        self._hints.put(
            run_id,
            HostHint(
                parent_run_id=options.get("parent_run_id"),
                host_stage_id=options.get("host_stage_id"),
                span_context=current if current.is_valid else None,
            ),
        )
        try:
            self._inner.add_run(run_id, **options)
        except BaseException:
            self._hints.discard(run_id)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def check_interval(sweep_interval: object) -> None:
    """A sweep interval is a positive, finite number of seconds (C1: refused before anything)."""
    if isinstance(sweep_interval, bool) or not isinstance(sweep_interval, int | float):
        raise ContractError("sweep_interval", "expected a number of seconds")
    if not math.isfinite(sweep_interval) or sweep_interval <= 0:
        raise ContractError("sweep_interval", "expected a positive, finite number of seconds")


def wall_ms() -> float:
    """Now, in epoch milliseconds (the contract's timestamps)."""
    return time.time() * 1000


def trace_hub(
    runner: HookRunner,
    *,
    tracer_provider: ApiTracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    source: str | None = None,
) -> HubTracing:
    """Start tracing ``runner``'s hub: register the ``otel`` extension, and return the handle.

    Call it where the runner lives (the hub's thread: ``host.call(trace_hub, runner)`` from a
    ``workflow_hub.sync`` host). :func:`open_tracing` does this, sweeps vanished roots and
    shuts down for you; use ``trace_hub`` when a host owns the trio side. Without
    ``tracer_provider`` one is built from the standard ``OTEL_*`` variables (OTLP over HTTP,
    protobuf, by default: :func:`tracer_provider_from_env`), and :meth:`HubTracing.shutdown`
    shuts it down. ``source`` names the source on every run's span (``workflow_hub.source``).

    With ``meter_provider`` the tracing also records metrics (docs/otel.md lists them): runs
    active and ended, stage and tool durations and failures by name, human waits, and the hub's
    roots by state and reason (an observer of the hub: the hub must be running).
    """
    if not isinstance(runner, HookRunner):
        raise ContractError("runner", f"expected a HookRunner, got {type(runner).__name__}")
    tracing = build_tracing(
        tracer_provider=tracer_provider, meter_provider=meter_provider, source=source
    )
    if meter_provider is not None:
        gauge = RootGauge(meter_provider, source)
        tracing.count_roots(gauge, runner.hub.observe(gauge))
    hooks = runner.extension("otel")
    hooks.on("workflow_lifecycle", tracing.lifecycle)
    hooks.on("workflow_activity_changed", tracing.activity)
    return tracing


def build_tracing(
    *,
    tracer_provider: ApiTracerProvider | None,
    meter_provider: MeterProvider | None,
    source: str | None,
) -> HubTracing:
    """The tracing, checked and built, fed by nothing yet (``trace_hub`` and ``trace_source``
    feed it)."""
    if source is not None and not isinstance(source, str):
        raise ContractError("source", f"expected a string, got {type(source).__name__}")
    if tracer_provider is not None and not isinstance(tracer_provider, ApiTracerProvider):
        raise ContractError(
            "tracer_provider",
            f"expected an OpenTelemetry TracerProvider, got {type(tracer_provider).__name__}",
        )
    if meter_provider is not None and not isinstance(meter_provider, MeterProvider):
        raise ContractError(
            "meter_provider",
            f"expected an OpenTelemetry MeterProvider, got {type(meter_provider).__name__}",
        )
    counts: ExportCounts | None = None
    owned: TracerProvider | None = None
    if tracer_provider is None:
        owned, counts = tracer_provider_from_env()
        tracer_provider = owned
    tracer = tracer_provider.get_tracer(_TRACER_NAME, schema_url=_attributes.SCHEMA_URL)
    metrics = None if meter_provider is None else SpanMetrics(meter_provider, source)
    book = SpanBook(
        light_tracer(tracer), source=source, genai_names=_attributes.genai_names(), metrics=metrics
    )
    return HubTracing(book, counts, owned)


@asynccontextmanager
async def open_tracing(
    runner: HookRunner,
    *,
    tracer_provider: ApiTracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    source: str | None = None,
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
    clock: Callable[[], float] = wall_ms,
) -> AsyncIterator[HubTracing]:
    """Trace ``runner``'s hub while the block runs: a span per run, stage, tool and human wait.

    :func:`trace_hub` (bind the runner as usual), plus a task that ends the spans of roots that
    left the hub without an ending event (absent from its snapshot at two sweeps
    ``sweep_interval`` seconds apart), and on the way out: every open span ended (marked), and
    a provider the block built shut down, waiting at most 5 seconds for a backend that does not
    answer. ``clock`` gives the time, in epoch milliseconds, at which those spans end.
    """
    check_interval(sweep_interval)
    tracing = trace_hub(
        runner, tracer_provider=tracer_provider, meter_provider=meter_provider, source=source
    )
    try:
        async with trio.open_nursery() as nursery:
            hub = runner.hub
            nursery.start_soon(sweep_loop, partial(_hub_roots, hub), tracing, sweep_interval, clock)
            try:
                yield tracing
            finally:
                nursery.cancel_scope.cancel()
    finally:
        tracing.close(clock())
        await shut_down(tracing)


async def shut_down(tracing: HubTracing) -> None:
    """``tracing.shutdown()`` in a thread, waited for at most 5 seconds, even when cancelled.

    Bounded in real time by a thread's join, not by trio's clock (a test's MockClock would jump
    past any trio timeout while the exporter sends)."""
    shutdown = threading.Thread(target=tracing.shutdown, name="otel-shutdown", daemon=True)
    shutdown.start()
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(shutdown.join, SHUTDOWN_TIMEOUT)


def _hub_roots(hub: Any) -> set[str] | None:
    frame = hub.snapshot_frame()
    if frame.availability is not Availability.READY or frame.roots is None:
        return None  # unknown is not gone (N4)
    return {root.root_run_id for root in frame.roots}


async def sweep_loop(
    present_roots: Callable[[], set[str] | None],
    tracing: HubTracing,
    interval: float,
    clock: Callable[[], float],
) -> None:
    """Every ``interval`` seconds, end the spans of roots absent from the source twice in a
    row; ``present_roots`` gives None while the source is not ready (nothing ends then)."""
    absent_before: set[str] = set()
    while True:
        await trio.sleep(interval)
        present = present_roots()
        if present is None:
            continue
        absent = tracing.open_roots() - present
        tracing.sweep(present | (absent - absent_before), clock())
        absent_before = absent
