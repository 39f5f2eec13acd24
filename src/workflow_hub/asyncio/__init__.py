"""The hub from asyncio: trio runs as a guest on the running asyncio loop, in the same thread.

``async with workflow_hub.asyncio.open_hub() as hub:`` gives asyncio code the hub's synchronous
API as it is (``hub.register_publisher()``, the publisher's ``publish_*``, a
:class:`~workflow_hub.RunTracker` from ``hub.tracker(...)`` with its heartbeats running),
observation in asyncio terms (``hub.observe(async_callback)``, ``async with hub.subscribe() as
frames: async for frame in frames``), hooks with asyncio handlers (``hub.hook_runner()``) and the
HTTP server (``url = await hub.serve()``). Leaving the block delivers the final ``unavailable``
frame to every observer, local or remote, before the servers close (SPEC H1). Importing this
module loads trio and asyncio, nothing else. See ``docs/hosts.md``.
"""

from .._public import fixup_module_metadata
from ._hooks import ExtensionHooks as ExtensionHooks
from ._hooks import HookRunner as HookRunner
from ._hub import Hub as Hub
from ._hub import open_hub as open_hub
from ._stream import FrameStream as FrameStream

__all__ = ["ExtensionHooks", "FrameStream", "HookRunner", "Hub", "open_hub"]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
