"""Prometheus metrics for one hub.

A delivery is the hub's hottest path (a few hundred nanoseconds), so metrics stay off it as far
as they can. Deliveries are not counted one by one: the hub counts frames queued (once per
publication: one per observer attached) and frames dropped unseen (overflows, disposals), and the
scrape subtracts those and what is still pending. The delivery lag is *sampled* (one delivery in
``LAG_SAMPLE_EVERY`` per observer, its first included), and publication times are kept once per
frame, not per observer. Everything becomes Prometheus metric families when the
registry is scraped; every gauge is read from ``hub.statistics()`` at that moment.
(prometheus-client's own ``Counter.inc`` plus ``Histogram.observe`` per delivery cost about a
microsecond: more than the delivery.) A hub created without a ``HubMetrics`` does no metric work
at all. No label names an observer, root or run: the cardinality is fixed by the contract's own
enumerations.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, final

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ._contract import Frame
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

LAG_SAMPLE_EVERY = 32
"""Each observer's delivery lag is measured for its 1st, 33rd, 65th … delivery."""


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
        self._frames_published = dict.fromkeys(_FRAME_KINDS, 0)
        # Frames put in observer queues, and those taken out unseen (overflow, disposal).
        self._frames_queued = 0
        self._frames_dropped = 0
        # When each recent frame was published, by id(frame): frames are shared by every queue,
        # so one entry serves every observer. Two generations, so that bounding them never
        # deletes single entries (which costs a dict more than inserting): see bind().
        self._published_at: dict[int, float] = {}
        self._published_before: dict[int, float] = {}
        self._generation_size = 0
        self._hook_events_dispatched = dict.fromkeys(_EVENT_TYPES, 0)
        self._hook_handler_failures = 0
        self._diagnostics = dict.fromkeys(DiagnosticKind, 0)
        # One count per bucket (the last is +Inf), not cumulative: cumulated when scraped.
        self._lag_counts = [0] * (len(_LAG_BUCKETS) + 1)
        self._lag_sum = 0.0
        self.registry.register(_HubCollector(self))

    def bind(self, hub: WorkflowActivityHub) -> None:
        """Attach to ``hub`` (the hub does this); a second hub is refused."""
        if self._hub is not None and self._hub is not hub:
            raise RuntimeError("a HubMetrics serves one hub; create another for this one")
        self._hub = hub
        # A pending frame is one of the last queue_limit frames broadcast, or a snapshot built
        # since (at most one per broadcast): a generation of twice that, plus slack, holds them.
        self._generation_size = 2 * hub._queue_limit + 32

    # --- the hot path: plain additions -------------------------------------------------------

    def frame_published(self, frame: Frame, observers: int) -> None:
        self._frames_published[frame.kind] += 1
        self._frames_queued += observers
        self.frame_built(frame)

    def frames_queued(self, count: int) -> None:
        self._frames_queued += count

    def frames_dropped(self, count: int) -> None:
        self._frames_dropped += count

    def frame_built(self, frame: Frame) -> None:
        published_at = self._published_at
        published_at[id(frame)] = clock()
        if len(published_at) >= self._generation_size:
            self._published_before = published_at
            self._published_at = {}

    def sample_lag(self, frame: Frame) -> None:
        key = id(frame)
        # The newer generation first: an id reused by a newer frame shadows the older entry.
        published = self._published_at.get(key)
        if published is None:
            published = self._published_before.get(key)
            if published is None:  # older than every frame still pending anywhere
                return
        lag = clock() - published
        self._lag_sum += lag
        self._lag_counts[bisect_left(_LAG_BUCKETS, lag)] += 1

    def hook_dispatched(self, event_type: str) -> None:
        self._hook_events_dispatched[event_type] += 1

    def handler_failed(self) -> None:
        self._hook_handler_failures += 1

    def record_diagnostic(self, kind: DiagnosticKind) -> None:
        self._diagnostics[kind] += 1

    # --- the scrape ------------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        """Every metric family, with its value now."""
        prefix = f"{self.namespace}_" if self.namespace else ""
        diagnostics = dict(self._diagnostics)

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            return CounterMetricFamily(prefix + name, doc, value=value)

        def by_label(
            name: str, doc: str, label: str, values: dict[str, int]
        ) -> CounterMetricFamily:
            family = CounterMetricFamily(prefix + name, doc, labels=[label])
            for key, value in values.items():
                family.add_metric([key], value)
            return family

        yield by_label(
            "frames_published",
            "Frames published to observers (once each, however many observers).",
            "kind",
            dict(self._frames_published),
        )
        pending = 0 if self._hub is None else self._hub.statistics().pending_frames
        delivered = self._frames_queued - self._frames_dropped - pending
        yield counter(
            "frames_delivered", "Frames whose delivery to an observer started.", delivered
        )
        yield counter(
            "observer_overflows",
            "Observer queues cleared and replaced by a fresh snapshot.",
            diagnostics[DiagnosticKind.OBSERVER_OVERFLOW],
        )
        yield counter(
            "delivery_failures",
            "Observer callbacks or hook dispatchers that raised.",
            diagnostics[DiagnosticKind.OBSERVER_DELIVERY_FAILED],
        )
        yield counter(
            "fenced_publications",
            "Calls on publishers that were no longer current.",
            diagnostics[DiagnosticKind.PUBLISHER_FENCED],
        )
        yield by_label(
            "hook_events_dispatched",
            "Hook events handed to the dispatcher.",
            "type",
            dict(self._hook_events_dispatched),
        )
        yield counter(
            "hook_handler_failures",
            "Hook handlers that raised (reported by HookRunner).",
            self._hook_handler_failures,
        )
        yield by_label(
            "diagnostics_recorded",
            "Diagnostics recorded, by kind.",
            "kind",
            {kind.value: count for kind, count in diagnostics.items()},
        )
        yield self._lag_histogram(prefix)
        yield from self._gauges(prefix)

    def _lag_histogram(self, prefix: str) -> HistogramMetricFamily:
        counts = list(self._lag_counts)  # one consistent copy: _count equals the +Inf bucket
        cumulative: list[tuple[str, float]] = []
        total = 0
        for bound, count in zip([*map(str, _LAG_BUCKETS), "+Inf"], counts, strict=True):
            total += count
            cumulative.append((bound, total))
        return HistogramMetricFamily(
            prefix + "delivery_lag_seconds",
            "Time from a frame's publication to the start of an observer's processing of it"
            f" (sampled: one delivery in {LAG_SAMPLE_EVERY} per observer).",
            buckets=cumulative,
            sum_value=self._lag_sum,
        )

    def _gauges(self, prefix: str) -> Iterator[GaugeMetricFamily]:
        if self._hub is None:
            return
        stats = self._hub.statistics()

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
class _HubCollector(Collector):
    def __init__(self, metrics: HubMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return self._metrics.collect()
