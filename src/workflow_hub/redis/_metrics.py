"""Prometheus metrics of Redis mirrors, read from their statistics at scrape time.

Its own module so that the mirror (and the ``watch``/``serve`` commands) never load
prometheus_client unless metrics are asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, final

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ._statistics import MirrorStatistics


class _Reporting(Protocol):
    """What the metrics need of a mirror: its statistics, read at scrape time."""

    def statistics(self) -> MirrorStatistics: ...


class _Follower(Protocol):
    # (A FollowerStatistics; named by duck type: the follower imports the mirror, which imports
    # these metrics.)
    def statistics(self) -> Any: ...


class _Fleet(Protocol):
    """What the metrics need of a fleet follower (a ``FleetStream``)."""

    @property
    def streams(self) -> Mapping[str, _Follower]: ...

    @property
    def bad_members(self) -> int: ...

    @property
    def readable(self) -> bool: ...

    @property
    def unexpected_errors(self) -> int: ...


__all__ = ["FollowerMetrics", "MirrorMetrics"]


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
        ("unexpected_errors", "Round trips that failed otherwise (client library, bug), retried"),
        ("events", "Hook events appended to the events stream"),
        ("events_dropped", "Hook events dropped because the mirror's buffer was full"),
    )

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self._mirrors: list[_Reporting] = []
        if registry is not None:
            registry.register(self)

    def bind(self, mirror: _Reporting) -> None:
        self._mirrors.append(mirror)

    def collect(self) -> Iterator[Metric]:
        statistics = [mirror.statistics() for mirror in list(self._mirrors)]
        yield from _per_source("workflow_hub_mirror_", self._COUNTERS, statistics)
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


@final
class FollowerMetrics(Collector):
    """Prometheus metrics of fleet followers: ``FollowerMetrics(registry).bind(fleet)`` with the
    ``FleetStream`` of ``follow_fleet`` (or ``bind_source(stream)`` for one ``SourceStream``).

    Read at scrape time, labelled by source: what each follower delivered, resynced, skipped
    (foreign entries) and could not read (errors), and whether it is unreadable right now; for a
    fleet also the registry members that are not source names and whether it is readable.
    """

    _COUNTERS = (
        ("frames", "Frames delivered"),
        ("resyncs", "Times continuity was lost and a checkpoint restarted it"),
        ("connection_errors", "Reads that failed on the connection or timed out"),
        ("foreign_entries", "Stream entries not written by a mirror, skipped"),
        ("errors", "Reads Redis refused or whose data could not be read"),
        ("unexpected_errors", "Reads that failed otherwise (client library, bug), retried"),
    )

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self._fleets: list[_Fleet] = []
        self._sources: list[_Follower] = []
        if registry is not None:
            registry.register(self)

    def bind(self, fleet: _Fleet) -> None:
        self._fleets.append(fleet)

    def bind_source(self, stream: _Follower) -> None:
        self._sources.append(stream)

    def collect(self) -> Iterator[Metric]:
        followers = [stream for fleet in self._fleets for stream in fleet.streams.values()]
        statistics = [follower.statistics() for follower in [*followers, *self._sources]]
        yield from _per_source("workflow_hub_follower_", self._COUNTERS, statistics)
        unreadable = GaugeMetricFamily(
            "workflow_hub_follower_unreadable",
            "1 while no read completed within read_timeout (the source is shown unknown)",
            labels=["source"],
        )
        for stats in statistics:
            unreadable.add_metric([stats.source], int(stats.unreadable))
        yield unreadable
        bad = CounterMetricFamily(
            "workflow_hub_fleet_bad_members",
            "Members of the sources registry that are not source names, skipped",
        )
        bad.add_metric([], sum(fleet.bad_members for fleet in self._fleets))
        yield bad
        unexpected = CounterMetricFamily(
            "workflow_hub_fleet_unexpected_errors",
            "Rounds of fleet readers that failed otherwise (client library, bug), retried",
        )
        unexpected.add_metric([], sum(fleet.unexpected_errors for fleet in self._fleets))
        yield unexpected
        readable = GaugeMetricFamily(
            "workflow_hub_fleet_readable", "1 while every followed fleet can be read"
        )
        readable.add_metric([], int(all(fleet.readable for fleet in self._fleets)))
        yield readable


def _per_source(
    prefix: str, counters: Sequence[tuple[str, str]], statistics: Sequence[Any]
) -> Iterator[Metric]:
    """One counter family per statistic in ``counters``, labelled by source."""
    for name, documentation in counters:
        family = CounterMetricFamily(prefix + name, documentation, labels=["source"])
        for stats in statistics:
            family.add_metric([stats.source], getattr(stats, name))
        yield family
