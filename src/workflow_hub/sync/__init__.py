"""The hub from plain threads: trio runs in a background thread the host owns.

``with workflow_hub.sync.open_hub() as hub:`` gives threads thread-safe handles:
``hub.register_publisher()`` and ``hub.tracker(...)`` (every method callable from any thread,
``with tracker.batch():`` included), ``with hub.subscribe() as frames: for frame in frames``
(blocking, with ``frames.receive(timeout=...)``), and ``url = hub.serve()``. Leaving the block
delivers the final ``unavailable`` frame to every observer, local or remote, before the servers
close (SPEC H1). ``workflow_hub.ThreadPublisher`` stays for code that owns the trio side itself.
See ``docs/hosts.md``.
"""

from .._public import fixup_module_metadata
from ._hub import Hub as Hub
from ._hub import open_hub as open_hub
from ._hub_thread import HubThread as HubThread
from ._portal import HostClosedError as HostClosedError
from ._publisher import Publisher as Publisher
from ._stream import FrameStream as FrameStream
from ._tracker import Tracker as Tracker

__all__ = [
    "FrameStream",
    "HostClosedError",
    "Hub",
    "HubThread",
    "Publisher",
    "Tracker",
    "open_hub",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
