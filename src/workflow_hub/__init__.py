"""workflow-hub: a trio hub between workflow publishers and the observers and hooks that watch them.

The public API is what this module exports; everything in a ``_private`` module is an internal.
``workflow_hub.__version__`` is the installed distribution's version.

The contract's values are imported with the package; the hub, the thread publisher and the tracker
(which load trio) are imported on first access (PEP 562), so a command or a reporter that needs
only values and wire decoding does not pay for trio: ``from workflow_hub import open_hub`` works
as ever and loads them then.
"""

from typing import TYPE_CHECKING

from ._public import declare_root_names, fixup_module_metadata
from .contract import *  # noqa: F403  (the contract's own __all__ is the list)
from .contract import __all__ as _contract_all

if TYPE_CHECKING:
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
    from ._threads import ThreadPublisher as ThreadPublisher
    from .tracker import RunTracker as RunTracker
    from .tracker import run_heartbeats as run_heartbeats

# name -> the module it is loaded from on first access
_LAZY = {
    "Dispatch": "_core",
    "ExtensionHooks": "_core",
    "HOOK_EVENT_TYPES": "_core",
    "HandlerFailure": "_core",
    "HookEventType": "_core",
    "HookRunner": "_core",
    "FrameCallback": "_core",
    "FrameStream": "_core",
    "HubStatistics": "_core",
    "ObserverLease": "_core",
    "WorkflowActivityHub": "_core",
    "WorkflowActivityPublisher": "_core",
    "open_hub": "_core",
    "RunTracker": "tracker",
    "ThreadPublisher": "_threads",
    "run_heartbeats": "tracker",
}

__all__ = [*_contract_all, *_LAZY]

# Declared before any lazy module can load: each of them ends with ``claim_root_names()``, so what
# the package exports says ``workflow_hub`` whichever way (and whenever) it is first imported.
declare_root_names(__all__)
fixup_module_metadata(__name__, {**globals(), "__all__": _contract_all})
del fixup_module_metadata, declare_root_names

if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> object:
        where = _LAZY.get(name)
        if where == "_core":
            from . import _core as module
        elif where == "tracker":
            from . import tracker as module
        elif where == "_threads":
            from . import _threads as module
        elif name == "__version__":
            # Read from the installed metadata when first asked for, not on every import:
            # loading importlib.metadata costs about 10 ms.
            from importlib.metadata import version

            globals()["__version__"] = found = version("workflow-hub")
            return found
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        loaded = {each: getattr(module, each) for each, home in _LAZY.items() if home == where}
        globals().update(loaded)
        return loaded[name]

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})


del TYPE_CHECKING
