"""Prometheus metrics for a hub: ``open_hub(metrics=HubMetrics(registry))``. See docs/metrics.md."""

from ._instruments import LAG_SAMPLE_EVERY as LAG_SAMPLE_EVERY
from ._metrics import HubMetrics as HubMetrics
from ._public import fixup_module_metadata

__all__ = ["LAG_SAMPLE_EVERY", "HubMetrics"]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
