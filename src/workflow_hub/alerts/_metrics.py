"""Prometheus metrics of an alerter: what fires, what each sink sent, failed and dropped.

Read at scrape time from the alerter's own counts (plain numbers the alerter's thread writes):
nothing is counted twice and nothing costs the alerter a call per notification. Labels name an
alert's ``alertname`` and a sink, never a root: the cardinality is the number of sinks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import final

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from ._run import Alerter
from ._sinks import LATENCY_BUCKETS
from ._values import AlertName

__all__ = ["AlertMetrics"]


@final
class AlertMetrics:
    """The metrics of a running :class:`Alerter`, registered on ``registry`` (default: the
    global one), under ``namespace`` (default ``workflow_hub``)::

        alerter = await nursery.start(run_alerts, source, sinks)
        AlertMetrics(alerter, registry)
    """

    def __init__(
        self,
        alerter: Alerter,
        registry: CollectorRegistry | None = None,
        *,
        namespace: str = "workflow_hub",
    ) -> None:
        self._alerter = alerter
        self._namespace = namespace
        self.registry = REGISTRY if registry is None else registry
        self.registry.register(self)

    def unregister(self) -> None:
        self.registry.unregister(self)

    def collect(self) -> Iterator[Metric]:
        prefix = f"{self._namespace}_alert"
        firing = GaugeMetricFamily(
            f"{self._namespace}_alerts_firing", "Alerts firing now, by name.", labels=["alertname"]
        )
        counts = self._alerter.firing_counts()
        for name in AlertName:
            firing.add_metric([str(name)], counts.get(name, 0))
        yield firing
        sent = CounterMetricFamily(
            f"{prefix}_notifications_sent", "Notifications a sink delivered.", labels=["sink"]
        )
        failed = CounterMetricFamily(
            f"{prefix}_notification_attempts_failed",
            "Delivery attempts that failed (each retried within the sink's budget).",
            labels=["sink"],
        )
        dropped = CounterMetricFamily(
            f"{prefix}_notifications_dropped",
            "Notifications a sink gave up: its queue was full or its retry budget spent.",
            labels=["sink"],
        )
        queued = GaugeMetricFamily(
            f"{prefix}_notifications_queued", "Notifications waiting for a sink.", labels=["sink"]
        )
        latency = HistogramMetricFamily(
            f"{prefix}_sink_latency_seconds",
            "How long a successful delivery took.",
            labels=["sink"],
        )
        for stats in self._alerter.sink_statistics():
            sent.add_metric([stats.name], stats.sent)
            failed.add_metric([stats.name], stats.failed)
            dropped.add_metric([stats.name], stats.dropped)
            queued.add_metric([stats.name], stats.queued)
            buckets = [
                (f"{bound:g}", count)
                for bound, count in zip(LATENCY_BUCKETS, list(stats.latency_buckets), strict=True)
            ]
            buckets.append(("+Inf", stats.latency_count))
            latency.add_metric([stats.name], buckets, stats.latency_sum)
        yield from (sent, failed, dropped, queued, latency)
