"""Prometheus metrics of Redis mirrors, read from their statistics at scrape time.

Its own module so that the mirror (and the ``watch``/``serve`` commands) never load
prometheus_client unless metrics are asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, final

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ._statistics import MirrorStatistics


class _Reporting(Protocol):
    """What the metrics need of a mirror: its statistics, read at scrape time."""

    def statistics(self) -> MirrorStatistics: ...


__all__ = ["MirrorMetrics"]


@final
class MirrorMetrics(Collector):
    """Prometheus metrics of the mirrors given it: ``mirror_hub(..., metrics=MirrorMetrics())``.

    Read from each mirror's statistics when the registry is scraped (nothing is counted on the
    append path). The label is the source name, whose number the operator chooses.
    """

    _COUNTERS = (
        ("frames", "Frames appended to the source's stream"),
        ("batches", "Append round trips that succeeded"),
        ("checkpoints", "Checkpoints written"),
        ("reclaims", "Claims again after the owner key was lost (a Redis restart)"),
        ("connection_errors", "Round trips that failed on the connection and were retried"),
        ("server_errors", "Round trips Redis refused (a key of the wrong type ...), retried later"),
    )

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self._mirrors: list[_Reporting] = []
        if registry is not None:
            registry.register(self)

    def bind(self, mirror: _Reporting) -> None:
        self._mirrors.append(mirror)

    def collect(self) -> Iterator[Metric]:
        statistics = [mirror.statistics() for mirror in list(self._mirrors)]
        for name, documentation in self._COUNTERS:
            family = CounterMetricFamily(
                f"workflow_hub_mirror_{name}", documentation, labels=["source"]
            )
            for stats in statistics:
                family.add_metric([stats.source], getattr(stats, name))
            yield family
        fenced = CounterMetricFamily(
            "workflow_hub_mirror_fenced",
            "Mirrors stopped because a newer instance claimed their source",
            labels=["source"],
        )
        owned = GaugeMetricFamily(
            "workflow_hub_mirror_claimed", "1 while the mirror owns its source", labels=["source"]
        )
        for stats in statistics:
            fenced.add_metric([stats.source], int(stats.fenced))
            owned.add_metric([stats.source], int(stats.claimed))
        yield fenced
        yield owned
