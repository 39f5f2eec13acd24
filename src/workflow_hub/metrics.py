"""Prometheus metrics for a hub: ``open_hub(metrics=HubMetrics(registry))``. See docs/metrics.md."""

from ._metrics import HubMetrics as HubMetrics

__all__ = ["HubMetrics"]

HubMetrics.__module__ = __name__
