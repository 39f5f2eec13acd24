"""Mirror hubs into Redis Streams and follow them, or a whole fleet, from anywhere.

Needs the ``redis`` extra (``pip install 'workflow-hub[redis]'``, the coredis client):

- :func:`mirror_hub` — in the scheduler: append every frame of a hub to ``{prefix}:{source}:frames``,
  checkpoint it, register the source, fenced so that the newest instance of a source wins.
- :func:`follow_source` — anywhere: the frames of one source with a local subscription's
  guarantees (snapshot first, FIFO, a fresh snapshot whenever continuity is lost).
- :func:`follow_fleet` and :class:`FleetView` — every source under a prefix, discovered, with
  sources that stop refreshing marked unavailable.

See ``docs/fleet.md`` for the keys and entry format, fencing and failure behaviour.
"""

from ._public import fixup_module_metadata
from ._redis_fleet import FleetStream as FleetStream
from ._redis_fleet import FleetView as FleetView
from ._redis_fleet import follow_fleet as follow_fleet
from ._redis_follow import FollowerStatistics as FollowerStatistics
from ._redis_follow import RedisSource as RedisSource
from ._redis_follow import SourceStream as SourceStream
from ._redis_follow import follow_source as follow_source
from ._redis_keys import DEFAULT_PREFIX as DEFAULT_PREFIX
from ._redis_metrics import MirrorMetrics as MirrorMetrics
from ._redis_mirror import Mirror as Mirror
from ._redis_mirror import MirrorStatistics as MirrorStatistics
from ._redis_mirror import mirror_hub as mirror_hub

__all__ = [
    "DEFAULT_PREFIX",
    "FleetStream",
    "FleetView",
    "FollowerStatistics",
    "Mirror",
    "MirrorMetrics",
    "MirrorStatistics",
    "RedisSource",
    "SourceStream",
    "follow_fleet",
    "follow_source",
    "mirror_hub",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
