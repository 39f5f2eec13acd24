"""Mirror hubs into Redis Streams and follow them, or a whole fleet, from anywhere.

Needs the ``redis`` extra (``pip install 'workflow-hub[redis]'``, the coredis client):

- :func:`mirror_hub` — in the scheduler: append every frame of a hub to ``{prefix}:{source}:frames``,
  checkpoint it, register the source, fenced so that the newest instance of a source wins.
  :func:`mirror_hub_at` does the same through a client of its own, opened from a URL.
- :func:`follow_source` — anywhere: the frames of one source with a local subscription's
  guarantees (snapshot first, FIFO, a fresh snapshot whenever continuity is lost).
- :class:`RedisFleet` — the :class:`~workflow_hub.fleet.FleetEngine` over Redis: what the fleet
  server, ``watch`` and ``status`` read a fleet with.
- :func:`follow_fleet` — every source under a prefix, discovered, with sources that stop
  refreshing marked unavailable.
- :func:`follow_events` — the hook events of one source or of a whole fleet (a mirror started
  with ``runner=``), in order per source, with a :class:`ContinuityLost` wherever events may be
  missing.

``SourceLiveness``, ``SourceEvent``, ``ContinuityLost``, ``EventItem``, ``GapReason`` and
``FleetView`` live in :mod:`workflow_hub.fleet` (every engine reports them); they are still
importable from here.

See ``docs/fleet.md`` for the keys and entry format, fencing and failure behaviour.
"""

from .._public import fixup_module_metadata
from ..fleet import ContinuityLost as ContinuityLost
from ..fleet import EventItem as EventItem
from ..fleet import FleetView as FleetView
from ..fleet import GapReason as GapReason
from ..fleet import SourceEvent as SourceEvent
from ..fleet import SourceLiveness as SourceLiveness
from ._engine import RedisFleet as RedisFleet
from ._events import EventStream as EventStream
from ._events import follow_events as follow_events
from ._follow import DEFAULT_BLOCK as DEFAULT_BLOCK
from ._follow import DEFAULT_READ_TIMEOUT as DEFAULT_READ_TIMEOUT
from ._follow import FollowerStatistics as FollowerStatistics
from ._follow import RedisSource as RedisSource
from ._follow import SourceStream as SourceStream
from ._follow import follow_source as follow_source
from ._follow_fleet import DEFAULT_STALE_AFTER as DEFAULT_STALE_AFTER
from ._follow_fleet import FleetStream as FleetStream
from ._follow_fleet import follow_fleet as follow_fleet
from ._keys import DEFAULT_PREFIX as DEFAULT_PREFIX
from ._keys import DEFAULT_RETIRE_AFTER as DEFAULT_RETIRE_AFTER
from ._metrics import FollowerMetrics as FollowerMetrics
from ._metrics import MirrorMetrics as MirrorMetrics
from ._mirror import Mirror as Mirror
from ._mirror import mirror_hub as mirror_hub
from ._mirror_at import mirror_hub_at as mirror_hub_at
from ._mirror_events import DEFAULT_EVENTS_BUFFER as DEFAULT_EVENTS_BUFFER
from ._mirror_events import DEFAULT_EVENTS_MAXLEN as DEFAULT_EVENTS_MAXLEN
from ._statistics import MirrorStatistics as MirrorStatistics

__all__ = [
    "DEFAULT_BLOCK",
    "DEFAULT_EVENTS_BUFFER",
    "DEFAULT_EVENTS_MAXLEN",
    "DEFAULT_PREFIX",
    "DEFAULT_READ_TIMEOUT",
    "DEFAULT_RETIRE_AFTER",
    "DEFAULT_STALE_AFTER",
    "EventStream",
    "FleetStream",
    "FollowerMetrics",
    "FollowerStatistics",
    "Mirror",
    "MirrorMetrics",
    "MirrorStatistics",
    "RedisFleet",
    "RedisSource",
    "SourceStream",
    "follow_events",
    "follow_fleet",
    "follow_source",
    "mirror_hub",
    "mirror_hub_at",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
