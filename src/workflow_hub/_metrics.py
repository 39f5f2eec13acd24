"""Prometheus metrics for one hub.

Counters are incremented where things happen; every gauge is computed when the registry is
scraped, from ``hub.statistics()``, so a gauge costs the hot path nothing. A hub created without
a ``HubMetrics`` does no metric work at all. No label names an observer, root or run: the
cardinality is fixed by the contract's own enumerations.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, final

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ._enums import Availability, DiagnosticKind

if TYPE_CHECKING:
    from ._hub import WorkflowActivityHub

__all__ = ["HubMetrics"]

_FRAME_KINDS = ("snapshot", "changed", "removed")
_EVENT_TYPES = (
    "workflow_lifecycle",
    "workflow_stage_completed",
    "workflow_activity_changed",
    "workflow_heartbeat",
)
# Delivery lag is mostly microseconds; the tail (a stalled observer) reaches seconds.
_LAG_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)

clock = time.monotonic
"""The clock delivery lag is measured with (publication and delivery use the same one)."""


@final
class HubMetrics:
    """The metrics of one hub: pass it as ``open_hub(metrics=HubMetrics())``.

    ``registry`` defaults to prometheus-client's global ``REGISTRY``; tests and programs that
    run several hubs pass their own ``CollectorRegistry``. One ``HubMetrics`` serves one hub.
    """

    def __init__(
        self, registry: CollectorRegistry | None = None, namespace: str = "workflow_hub"
    ) -> None:
        self.registry = REGISTRY if registry is None else registry
        self.namespace = namespace
        self._hub: WorkflowActivityHub | None = None

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, namespace=namespace, registry=self.registry)

        published = counter("frames_published", "Frames published to observers.", ("kind",))
        self.frames_published = {kind: published.labels(kind) for kind in _FRAME_KINDS}
        self.frames_delivered = counter(
            "frames_delivered", "Frames whose delivery to an observer started."
        )
        self.observer_overflows = counter(
            "observer_overflows", "Observer queues cleared and replaced by a fresh snapshot."
        )
        self.delivery_failures = counter(
            "delivery_failures", "Observer callbacks or hook dispatchers that raised."
        )
        self.fenced_publications = counter(
            "fenced_publications", "Calls on publishers that were no longer current."
        )
        dispatched = counter(
            "hook_events_dispatched", "Hook events handed to the dispatcher.", ("type",)
        )
        self.hook_events_dispatched = {kind: dispatched.labels(kind) for kind in _EVENT_TYPES}
        self.hook_handler_failures = counter(
            "hook_handler_failures", "Hook handlers that raised (reported by HookRunner)."
        )
        recorded = counter("diagnostics_recorded", "Diagnostics recorded, by kind.", ("kind",))
        self.diagnostics_recorded = {kind: recorded.labels(kind.value) for kind in DiagnosticKind}
        self.delivery_lag = Histogram(
            "delivery_lag_seconds",
            "Time from a frame's publication to the start of an observer's processing of it.",
            namespace=namespace,
            registry=self.registry,
            buckets=_LAG_BUCKETS,
        )
        self.registry.register(_HubStateCollector(self))

    def bind(self, hub: WorkflowActivityHub) -> None:
        """Attach to ``hub`` (the hub does this); a second hub is refused."""
        if self._hub is not None and self._hub is not hub:
            raise RuntimeError("a HubMetrics serves one hub; create another for this one")
        self._hub = hub

    def record_diagnostic(self, kind: DiagnosticKind) -> None:
        self.diagnostics_recorded[kind].inc()
        if kind is DiagnosticKind.OBSERVER_OVERFLOW:
            self.observer_overflows.inc()
        elif kind is DiagnosticKind.OBSERVER_DELIVERY_FAILED:
            self.delivery_failures.inc()
        elif kind is DiagnosticKind.PUBLISHER_FENCED:
            self.fenced_publications.inc()

    def record_delivery(self, published_at: float) -> None:
        self.frames_delivered.inc()
        self.delivery_lag.observe(clock() - published_at)

    def gauges(self) -> Iterator[GaugeMetricFamily]:
        """The scrape-time gauges (empty until bound to a hub)."""
        if self._hub is None:
            return
        stats = self._hub.statistics()
        prefix = f"{self.namespace}_" if self.namespace else ""

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            return GaugeMetricFamily(prefix + name, doc, value=value)

        yield gauge("observers", "Observer leases attached and not disposed.", stats.observers)
        yield gauge(
            "pending_frames", "Frames waiting in all observer queues.", stats.pending_frames
        )
        yield gauge(
            "deepest_queue_frames", "Frames waiting in the fullest queue.", stats.deepest_queue
        )
        yield gauge("revision", "The current revision within the current epoch.", stats.revision)
        yield gauge("epochs_started", "Epochs this hub has started.", stats.epochs_started)
        yield gauge(
            "hook_events_pending", "Hook events waiting for dispatch.", stats.hook_events_pending
        )
        yield gauge(
            "hook_events_dropped",
            "Hook events dropped because the hook buffer was full.",
            stats.hook_events_dropped,
        )
        availability = GaugeMetricFamily(
            prefix + "availability",
            "1 for the source's current availability, 0 for the others.",
            labels=["state"],
        )
        for state in Availability:
            availability.add_metric([state.value], 1.0 if stats.availability is state else 0.0)
        yield availability


@final
class _HubStateCollector(Collector):
    def __init__(self, metrics: HubMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self._metrics.gauges()
