"""Prometheus metrics for a hub: ``open_hub(metrics=HubMetrics(registry))``. See docs/metrics.md."""

from ._metrics import HubMetrics as HubMetrics
from ._public import fixup_module_metadata

__all__ = ["HubMetrics"]
fixup_module_metadata(__name__, globals())
del fixup_module_metadata
