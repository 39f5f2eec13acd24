"""Fleets: many schedulers' hubs mirrored into one store, read through one interface.

- :class:`FleetEngine` — what a reader needs of a fleet, whatever the store: its sources and
  their liveness, one source's frames, every source's frames, the hooks' events. The fleet
  server (:func:`~workflow_hub.server.serve_fleet`), ``workflow-hub watch`` and ``status`` read
  a fleet through it. :class:`workflow_hub.redis.RedisFleet` implements it over Redis Streams.
- :class:`FleetFollower` and :class:`EventFollower` — what its followers yield.
- :class:`SourceLiveness`, :class:`SourceEvent`, :class:`ContinuityLost` — what every engine
  reports; :class:`FleetView` folds a fleet's frames into one status.

This package imports no store's client: an engine's own folder does (``workflow_hub.redis``
needs the ``redis`` extra). See ``docs/fleet.md``.
"""

from .._public import fixup_module_metadata
from ._engine import EventFollower as EventFollower
from ._engine import FleetEngine as FleetEngine
from ._engine import FleetFollower as FleetFollower
from ._values import ContinuityLost as ContinuityLost
from ._values import EventItem as EventItem
from ._values import GapReason as GapReason
from ._values import SourceEvent as SourceEvent
from ._values import SourceLiveness as SourceLiveness
from ._view import FleetView as FleetView

__all__ = [
    "ContinuityLost",
    "EventFollower",
    "EventItem",
    "FleetEngine",
    "FleetFollower",
    "FleetView",
    "GapReason",
    "SourceEvent",
    "SourceLiveness",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
