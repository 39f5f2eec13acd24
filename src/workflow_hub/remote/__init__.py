"""Observe a hub served by ``workflow_hub.server`` from another process or machine.

``async with open_remote(url) as stream: async for frame in stream:`` yields the same frames a
local ``hub.subscribe()`` stream would, reconnecting and resuming by itself. ``RemoteHub(url)``
has ``subscribe()`` like a hub, for :func:`~workflow_hub.reporting.run_reporter`. Needs the
``server`` extra. See ``docs/network.md``.
"""

from .._public import fixup_module_metadata
from ._client import Backoff as Backoff
from ._client import RemoteAuthError as RemoteAuthError
from ._client import RemoteError as RemoteError
from ._client import RemoteHub as RemoteHub
from ._client import RemoteLease as RemoteLease
from ._client import RemoteStream as RemoteStream
from ._client import open_remote as open_remote

__all__ = [
    "Backoff",
    "RemoteAuthError",
    "RemoteError",
    "RemoteHub",
    "RemoteLease",
    "RemoteStream",
    "open_remote",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
