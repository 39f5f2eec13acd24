"""Prometheus metrics for a hub: ``open_hub(metrics=HubMetrics(registry))``. See docs/metrics.md."""

from .._core import LAG_SAMPLE_EVERY as LAG_SAMPLE_EVERY
from .._public import fixup_module_metadata
from ._hub_metrics import HubMetrics as HubMetrics

__all__ = ["LAG_SAMPLE_EVERY", "HubMetrics"]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
