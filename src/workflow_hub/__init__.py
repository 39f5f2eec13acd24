"""workflow-hub: a trio hub between workflow publishers and the observers and hooks that watch them.

The public API is what this module exports; everything in a ``_private`` module is an internal.
``workflow_hub.__version__`` is the installed distribution's version.
"""

from typing import TYPE_CHECKING

from ._core import HOOK_EVENT_TYPES as HOOK_EVENT_TYPES
from ._core import Dispatch as Dispatch
from ._core import ExtensionHooks as ExtensionHooks
from ._core import FrameCallback as FrameCallback
from ._core import FrameStream as FrameStream
from ._core import HandlerFailure as HandlerFailure
from ._core import HookEventType as HookEventType
from ._core import HookRunner as HookRunner
from ._core import HubStatistics as HubStatistics
from ._core import ObserverLease as ObserverLease
from ._core import WorkflowActivityHub as WorkflowActivityHub
from ._core import WorkflowActivityPublisher as WorkflowActivityPublisher
from ._core import open_hub as open_hub
from ._public import fixup_module_metadata
from ._threads import ThreadPublisher as ThreadPublisher
from .contract import *  # noqa: F403  (the contract's own __all__ is the list)
from .contract import __all__ as _contract_all
from .tracker import RunTracker as RunTracker
from .tracker import run_heartbeats as run_heartbeats

__all__ = [
    *_contract_all,
    "Dispatch",
    "ExtensionHooks",
    "HOOK_EVENT_TYPES",
    "HandlerFailure",
    "HookEventType",
    "HookRunner",
    "FrameCallback",
    "FrameStream",
    "HubStatistics",
    "ObserverLease",
    "RunTracker",
    "ThreadPublisher",
    "WorkflowActivityHub",
    "WorkflowActivityPublisher",
    "open_hub",
    "run_heartbeats",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata

if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> object:
        # Read from the installed metadata when first asked for, not on every import: loading
        # importlib.metadata costs about 10 ms, some 7% of importing the package.
        if name == "__version__":
            from importlib.metadata import version

            globals()["__version__"] = found = version("workflow-hub")
            return found
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


del TYPE_CHECKING
