"""Prometheus metrics for a hub: ``open_hub(metrics=HubMetrics(registry))``. See docs/metrics.md."""

from ._metrics import HubMetrics as HubMetrics
from ._public import claim

__all__ = ["HubMetrics"]

claim(__name__, globals(), __all__)
