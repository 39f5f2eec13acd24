"""``trace_fleet``: every source of a fleet as traces, one span book per source.

What ``workflow-hub otel redis://…`` runs. The hook events come from the fleet engine's
``follow_events()`` (every source over one follower, each event naming its source, ordered per
source); the roots each source holds from its ``follow_fleet()`` frames, which feed each
source's sweep. A source gets its own :class:`HubTracing` (its own span book: run ids are the
source's, two schedulers may both run ``nightly-build``) with ``workflow_hub.source`` its name,
and every book shares one tracer provider (one exporter, one queue). A retired source's open
spans end as vanished; a continuity loss needs nothing: a run changed meanwhile is first seen
mid-flight, and one that ended meanwhile leaves the source's frames and is swept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import attrs
import trio
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import TracerProvider as ApiTracerProvider

from .._contract import ActivityChangedEvent, ContractError, LifecycleEvent
from ..fleet import FleetEngine, SourceEvent
from ._export import ExportCounts, tracer_provider_from_env
from ._follow import _Roots
from ._metrics import RootGauge
from ._tracing import (
    DEFAULT_SWEEP_INTERVAL,
    SHUTDOWN_TIMEOUT,
    HubTracing,
    TracingStatistics,
    build_tracing,
    check_interval,
    sweep_loop,
    wall_ms,
)

__all__ = ["FleetTracing", "trace_fleet"]


@attrs.define(eq=False)
class _Source:
    tracing: HubTracing
    roots: _Roots
    sweeping: trio.CancelScope = attrs.Factory(trio.CancelScope)


class FleetTracing:
    """The tracing of a fleet, from :func:`trace_fleet`: a :class:`HubTracing` per source."""

    def __init__(self, counts: ExportCounts | None) -> None:
        self._counts = counts
        self._sources: dict[str, _Source] = {}
        self._ended: list[TracingStatistics] = []

    @property
    def sources(self) -> Mapping[str, HubTracing]:
        """The sources traced now (seen, not retired), by name."""
        return {name: source.tracing for name, source in self._sources.items()}

    def statistics(self) -> TracingStatistics:
        """Every source's counts summed (retired ones included), and the exporter's."""
        every = self._ended + [source.tracing.statistics() for source in self._sources.values()]
        return TracingStatistics(
            spans_started=sum(s.spans_started for s in every),
            spans_ended=sum(s.spans_ended for s in every),
            open_runs=sum(s.open_runs for s in every),
            first_seen_mid_flight=sum(s.first_seen_mid_flight for s in every),
            vanished=sum(s.vanished for s in every),
            export=None if self._counts is None else self._counts.statistics(),
        )


async def trace_fleet(
    engine: FleetEngine,
    *,
    tracer_provider: ApiTracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
    clock: Callable[[], float] = wall_ms,
    task_status: trio.TaskStatus[FleetTracing] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Trace every source of the fleet ``engine`` reads (``workflow_hub.redis.RedisFleet``)
    until cancelled: ``tracing = await nursery.start(trace_fleet, engine)``.

    Each source's runs are :func:`open_tracing`'s spans, with ``workflow_hub.source`` the source's
    name. The tracer provider is built from the ``OTEL_*`` variables unless given (and then shut
    down at the end, at most 5 seconds); every span still open then ends, marked
    ``exporter_closed``. Events already in the fleet when it starts are not replayed.
    """
    if not isinstance(engine, FleetEngine):
        raise ContractError("engine", f"expected a FleetEngine, got {type(engine).__name__}")
    check_interval(sweep_interval)
    counts: ExportCounts | None = None
    owned: TracerProvider | None = None
    if tracer_provider is None:
        owned, counts = tracer_provider_from_env()
        tracer_provider = owned
    fleet = FleetTracing(counts)

    async with trio.open_nursery() as nursery:

        async def sweep(source: _Source) -> None:
            with source.sweeping:  # until the source retires
                await sweep_loop(source.roots.now, source.tracing, sweep_interval, clock)

        def source_of(name: str) -> _Source:
            found = fleet._sources.get(name)
            if found is None:
                tracing = build_tracing(
                    tracer_provider=tracer_provider, meter_provider=meter_provider, source=name
                )
                gauge = None if meter_provider is None else RootGauge(meter_provider, name)
                if gauge is not None:
                    tracing.count_roots(gauge, None)
                found = _Source(tracing, _Roots(gauge))
                fleet._sources[name] = found
                nursery.start_soon(sweep, found)
            return found

        async def follow_frames() -> None:
            async with engine.follow_fleet() as frames:
                async for name, frame in frames:
                    if frame is None:  # retired: its open spans end, vanished
                        gone = fleet._sources.pop(name, None)
                        if gone is not None:
                            gone.sweeping.cancel()
                            gone.tracing.sweep(set(), clock())
                            gone.tracing.close(clock())
                            fleet._ended.append(gone.tracing.statistics())
                        continue
                    source_of(name).roots.frame(frame)

        async def follow_events() -> None:
            async with engine.follow_events() as events:
                async for item in events:
                    if not isinstance(item, SourceEvent):
                        continue  # a gap: later events of changed runs are first seen mid-flight
                    event = item.event
                    if isinstance(event, LifecycleEvent):
                        source_of(item.source).tracing.lifecycle(event)
                    elif isinstance(event, ActivityChangedEvent):
                        source_of(item.source).tracing.activity(event)

        try:
            nursery.start_soon(follow_frames)
            nursery.start_soon(follow_events)
            task_status.started(fleet)
            await trio.sleep_forever()
        finally:
            nursery.cancel_scope.cancel()
            for source in fleet._sources.values():
                source.tracing.close(clock())
            if owned is not None:
                await _shut_down(owned)


async def _shut_down(provider: TracerProvider) -> None:
    """``provider.shutdown()`` in a thread, waited for at most 5 seconds, even when cancelled
    (as ``open_tracing`` shuts down the provider it built)."""
    thread = threading.Thread(target=provider.shutdown, name="otel-shutdown", daemon=True)
    thread.start()
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(thread.join, SHUTDOWN_TIMEOUT)
