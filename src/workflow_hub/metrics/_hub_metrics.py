"""Prometheus metrics for a hub, across reloads.

A delivery is the hub's hottest path (a few hundred nanoseconds), so metrics stay off it as far
as they can. Deliveries are not counted one by one: the hub reports frames queued (once per
publication: one per observer attached) and frames dropped unseen (overflows, disposals), and the
scrape subtracts those and what is still pending. The delivery lag is *sampled* (one delivery in
``LAG_SAMPLE_EVERY`` per observer, its first included), and publication times are kept once per
frame, not per observer. Everything becomes Prometheus metric families when the registry is
scraped; every gauge is read from ``hub.statistics()`` at that moment. (prometheus-client's own
``Counter.inc`` plus ``Histogram.observe`` per delivery cost about a microsecond: more than the
delivery.) No label names an observer, root or run: the cardinality is fixed by the contract's own
enumerations.

One :class:`HubMetrics` follows the newest hub it was given, so a host that reloads (a new hub per
generation) keeps one set of series: each hub reports to a :class:`_HubProbe` of its own (the
core's ``HubInstruments``), and when a new hub arrives the old probe's counts are folded into a
base the new one adds to. Only a weak reference to the hub is kept: metrics never keep a hub alive.
"""

from __future__ import annotations

import threading
import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import final

import attrs
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from .._contract import Availability, DiagnosticKind, Frame
from .._core import LAG_SAMPLE_EVERY, HubStatistics, WorkflowActivityHub

__all__ = ["HubMetrics"]

_FRAME_KINDS = ("snapshot", "changed", "removed")


def _generation_size(queue_limit: int) -> int:
    """How many publication times one generation keeps.

    A pending frame is one of the last ``queue_limit`` frames broadcast, or a snapshot built since
    (at most one per broadcast): twice that, plus slack, holds them.
    """
    return 2 * queue_limit + 32


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
class _HubProbe:
    """The ``HubInstruments`` of one hub: plain additions on the hub's own thread."""

    __slots__ = (
        "_diagnostics",
        "_epochs_started",
        "_frames_dropped",
        "_frames_published",
        "_frames_queued",
        "_generation_size",
        "_handler_failures",
        "_hook_events_dispatched",
        "_hook_events_dropped",
        "_lag_counts",
        "_lag_sum",
        "_published_at",
        "_published_before",
    )

    def __init__(self, queue_limit: int) -> None:
        self._frames_published = dict.fromkeys(_FRAME_KINDS, 0)
        # Frames put in observer queues, and those taken out unseen (overflow, disposal).
        self._frames_queued = 0
        self._frames_dropped = 0
        # When each recent frame was published, by id(frame): frames are shared by every queue,
        # so one entry serves every observer. Two generations (of _generation_size), so that
        # bounding them never deletes single entries (which costs a dict more than inserting).
        self._published_at: dict[int, float] = {}
        self._published_before: dict[int, float] = {}
        self._generation_size = _generation_size(queue_limit)
        self._epochs_started = 0
        self._hook_events_dispatched = dict.fromkeys(_EVENT_TYPES, 0)
        self._hook_events_dropped = 0
        self._handler_failures = 0
        self._diagnostics = dict.fromkeys(DiagnosticKind, 0)
        # One count per bucket (the last is +Inf), not cumulative: cumulated when scraped.
        self._lag_counts = [0] * (len(_LAG_BUCKETS) + 1)
        self._lag_sum = 0.0

    def epoch_started(self) -> None:
        self._epochs_started += 1

    def frame_published(self, frame: Frame, observers: int) -> None:
        self._frames_published[frame.kind] += 1
        self._frames_queued += observers

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

    def hook_events_dropped(self, count: int) -> None:
        self._hook_events_dropped += count

    def handler_failed(self) -> None:
        self._handler_failures += 1

    def record_diagnostic(self, kind: DiagnosticKind) -> None:
        self._diagnostics[kind] += 1

    def counts(self, pending: Callable[[], int]) -> dict[tuple[str, str], float]:
        """Every counter of this probe, keyed by (metric, label value); read from any thread.

        Frames delivered are frames queued, minus those pending (``pending()``: the hub's
        queues), minus those dropped, read in that order while the hub's thread changes them. A
        frame is counted as queued only once a queue holds it, and as dropped before it leaves
        its queue, so the result can be low (a frame counted twice on its way out), never high.
        """
        queued = self._frames_queued
        in_queues = pending()
        counts: dict[tuple[str, str], float] = {
            ("frames_delivered", ""): queued - in_queues - self._frames_dropped
        }
        for kind, count in list(self._frames_published.items()):
            counts["frames_published", kind] = count
        for event_type, count in list(self._hook_events_dispatched.items()):
            counts["hook_events_dispatched", event_type] = count
        for diagnostic, count in list(self._diagnostics.items()):
            counts["diagnostics_recorded", diagnostic.value] = count
        counts["epochs_started", ""] = self._epochs_started
        counts["hook_events_dropped", ""] = self._hook_events_dropped
        counts["hook_handler_failures", ""] = self._handler_failures
        for bucket, count in enumerate(list(self._lag_counts)):
            counts["lag_bucket", str(bucket)] = count
        counts["lag_sum", ""] = self._lag_sum
        return counts


@attrs.frozen
class _Generation:
    """The hub being followed, its probe, and what earlier hubs counted: replaced as one value."""

    hub: weakref.ref[WorkflowActivityHub] | None
    probe: _HubProbe | None
    base: dict[tuple[str, str], float]


def _pending_frames(hub: WorkflowActivityHub | None) -> Callable[[], int]:
    """Frames waiting in ``hub``'s queues, when called (none once the hub is gone)."""
    if hub is None:
        return lambda: 0
    return lambda: hub.statistics().pending_frames


def _added(
    first: dict[tuple[str, str], float], second: dict[tuple[str, str], float]
) -> dict[tuple[str, str], float]:
    return {key: first.get(key, 0) + second.get(key, 0) for key in first.keys() | second.keys()}


@final
class HubMetrics:
    """The metrics of a hub: pass it as ``open_hub(metrics=HubMetrics())``.

    ``registry`` defaults to prometheus-client's global ``REGISTRY``; tests and programs that
    run several hubs at once pass their own ``CollectorRegistry`` (or another ``namespace``).

    One ``HubMetrics`` follows the newest hub it is given: a host that reloads gives the same
    object to each generation's hub and keeps one set of series. Counters go on from where the
    previous hub left them; gauges read the newest hub. Only a weak reference to it is kept.
    """

    def __init__(
        self, registry: CollectorRegistry | None = None, namespace: str = "workflow_hub"
    ) -> None:
        self.registry = REGISTRY if registry is None else registry
        self.namespace = namespace
        self._generation = _Generation(hub=None, probe=None, base={})
        # Scrapes may come from several threads; the lock keeps what each reported in order.
        self._scrape_lock = threading.Lock()
        self._reported: dict[tuple[str, str], float] = {}
        self._collector = _HubCollector(self)
        try:
            self.registry.register(self._collector)
        except ValueError as error:
            raise ValueError(
                f"a HubMetrics with namespace {namespace!r} is already registered on this "
                "registry: give that one to each new hub (it follows the newest), or call its "
                f"unregister() first ({error})"
            ) from None
        self._registered = True

    @property
    def hub(self) -> WorkflowActivityHub | None:
        """The hub these metrics follow now (None before the first, or once it is gone)."""
        hub = self._generation.hub
        return None if hub is None else hub()

    def unregister(self) -> None:
        """Remove these metrics from their registry (idempotent); hubs may go on reporting."""
        if self._registered:
            self._registered = False
            self.registry.unregister(self._collector)

    def instrument(self, hub: WorkflowActivityHub, *, queue_limit: int) -> _HubProbe:
        """Follow ``hub`` from now on (its constructor calls this); the previous hub is let go.

        What the previous hub counted stays in every counter; what it does from now on is no
        longer counted.
        """
        probe = _HubProbe(queue_limit)
        previous = self._generation
        base = previous.base
        if previous.probe is not None:
            previous_hub = None if previous.hub is None else previous.hub()
            base = _added(base, previous.probe.counts(_pending_frames(previous_hub)))
        # One assignment: a scrape sees the old generation or the new one, never a mix.
        self._generation = _Generation(hub=weakref.ref(hub), probe=probe, base=base)
        return probe

    # --- the scrape ------------------------------------------------------------------------

    def _counts(self) -> tuple[dict[tuple[str, str], float], HubStatistics | None]:
        """Every counter, never below what a scrape reported before, and the hub's statistics.

        Counts are read on another thread while the hub changes them, so a value derived from
        several of them can come out low (never high, given the order they are read in); and a
        hub left behind may still count after its totals were taken. Reporting the highest value
        seen keeps every counter monotonic; it catches up with the exact value when the hub is
        quiet.
        """
        generation = self._generation
        probe = generation.probe
        hub = None if generation.hub is None else generation.hub()
        counts = generation.base
        if probe is not None:
            counts = _added(counts, probe.counts(_pending_frames(hub)))
        stats = None if hub is None else hub.statistics()
        with self._scrape_lock:
            reported = self._reported
            for key, value in counts.items():
                previous = reported.get(key, 0)
                if value > previous:
                    reported[key] = value
            return dict(reported), stats

    def collect(self) -> Iterator[Metric]:
        """Every metric family, with its value now."""
        counts, stats = self._counts()
        return iter(self._families(counts, stats))

    def _families(
        self, counts: dict[tuple[str, str], float], stats: HubStatistics | None
    ) -> list[Metric]:
        prefix = f"{self.namespace}_" if self.namespace else ""

        def count(name: str, label: str = "") -> float:
            return counts.get((name, label), 0)

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            return CounterMetricFamily(prefix + name, doc, value=value)

        def by_label(
            name: str, doc: str, label: str, values: tuple[str, ...]
        ) -> CounterMetricFamily:
            family = CounterMetricFamily(prefix + name, doc, labels=[label])
            for key in values:
                family.add_metric([key], count(name, key))
            return family

        def diagnostic(kind: DiagnosticKind) -> float:
            return count("diagnostics_recorded", kind.value)

        families: list[Metric] = [
            by_label(
                "frames_published",
                "Frames published to observers (once each, however many observers).",
                "kind",
                _FRAME_KINDS,
            ),
            counter(
                "frames_delivered",
                "Frames whose delivery to an observer started.",
                count("frames_delivered"),
            ),
            counter(
                "observer_overflows",
                "Observer queues cleared and replaced by a fresh snapshot.",
                diagnostic(DiagnosticKind.OBSERVER_OVERFLOW),
            ),
            counter(
                "delivery_failures",
                "Observer callbacks or hook dispatchers that raised.",
                diagnostic(DiagnosticKind.OBSERVER_DELIVERY_FAILED),
            ),
            counter(
                "fenced_publications",
                "Calls on publishers that were no longer current.",
                diagnostic(DiagnosticKind.PUBLISHER_FENCED),
            ),
            by_label(
                "hook_events_dispatched",
                "Hook events handed to the dispatcher.",
                "type",
                _EVENT_TYPES,
            ),
            counter(
                "hook_handler_failures",
                "Hook handlers that raised (reported by HookRunner).",
                count("hook_handler_failures"),
            ),
            by_label(
                "diagnostics_recorded",
                "Diagnostics recorded, by kind.",
                "kind",
                tuple(kind.value for kind in DiagnosticKind),
            ),
            counter(
                "epochs_started",
                "Epochs started (a hub's first, and one per publisher registration).",
                count("epochs_started"),
            ),
            counter(
                "hook_events_dropped",
                "Hook events dropped because the hook buffer was full.",
                count("hook_events_dropped"),
            ),
            self._lag_histogram(prefix, counts),
        ]
        if stats is not None:
            families.extend(self._gauges(prefix, stats))
        return families

    def _lag_histogram(
        self, prefix: str, counts: dict[tuple[str, str], float]
    ) -> HistogramMetricFamily:
        cumulative: list[tuple[str, float]] = []
        total = 0.0
        for bucket, bound in enumerate([*map(str, _LAG_BUCKETS), "+Inf"]):
            total += counts.get(("lag_bucket", str(bucket)), 0)
            cumulative.append((bound, total))
        return HistogramMetricFamily(
            prefix + "delivery_lag_seconds",
            "Time from a frame's publication to the start of an observer's processing of it"
            f" (sampled: one delivery in {LAG_SAMPLE_EVERY} per observer).",
            buckets=cumulative,
            sum_value=counts.get(("lag_sum", ""), 0.0),
        )

    def _gauges(self, prefix: str, stats: HubStatistics) -> Iterator[GaugeMetricFamily]:
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
        yield gauge(
            "hook_events_pending", "Hook events waiting for dispatch.", stats.hook_events_pending
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

    def describe(self) -> Iterator[Metric]:
        # Every family, gauges included, so that a registry refuses a second HubMetrics with the
        # same names whether or not it describes collectors by collecting them.
        stats = HubStatistics(
            epoch="",
            revision=0,
            availability=Availability.UNAVAILABLE,
            roots=0,
            observers=0,
            pending_frames=0,
            deepest_queue=0,
            hook_events_pending=0,
            hook_events_dropped=0,
            epochs_started=0,
            running=False,
            disposed=False,
        )
        return iter(self._metrics._families({}, stats))
