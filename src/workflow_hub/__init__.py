"""workflow-hub: a trio hub between workflow publishers and the observers and hooks that watch them.

The public API is what this module exports; everything in a ``_private`` module is an internal.
``workflow_hub.__version__`` is the installed distribution's version.

Every name is imported on first access (PEP 562): the contract's values (which load attrs), and
the hub, the thread publisher and the tracker (which load trio). ``import workflow_hub`` alone
costs almost nothing, so a command that needs none of them (``workflow-hub status`` reading a
plain snapshot) does not pay for them; ``from workflow_hub import open_hub`` works as ever and
loads them then. ``WorkflowHubError``, the base of every exception the package raises, costs
nothing and is there at once.
"""

# ``typing`` is not imported: this module runs before every command of the package.
TYPE_CHECKING = False
from ._exceptions import WorkflowHubError as WorkflowHubError  # noqa: E402
from ._public import declare_root_names  # noqa: E402

# The base of every exception of the package (docs/exceptions.md), loaded at once: its module is
# one class and imports nothing. It says where users catch it from (fixup_module_metadata would
# load inspect and attrs here).
WorkflowHubError.__module__ = __name__

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
    from .contract import *  # noqa: F403  (the contract's own __all__ is the list)
    from .tracker import RunTracker as RunTracker
    from .tracker import run_heartbeats as run_heartbeats

# name -> the module it is loaded from on first access; the contract's names are exactly
# ``workflow_hub.contract.__all__`` (tests/package/test_lazy_root.py holds them to it)
_LAZY = {
    "ActivityChangedEvent": "contract",
    "Attribution": "contract",
    "Availability": "contract",
    "ChangedFrame": "contract",
    "ContractError": "contract",
    "ControlAction": "contract",
    "Cursor": "contract",
    "Delivery": "contract",
    "Diagnostic": "contract",
    "DiagnosticKind": "contract",
    "FailureDetail": "contract",
    "Frame": "contract",
    "GraphNode": "contract",
    "HeartbeatEvent": "contract",
    "Labels": "contract",
    "LifecycleEvent": "contract",
    "LifecycleInput": "contract",
    "LifecycleTarget": "contract",
    "NodePrompt": "contract",
    "PromptKind": "contract",
    "PromptStatus": "contract",
    "PromptTarget": "contract",
    "Reason": "contract",
    "RemovedFrame": "contract",
    "RootActivity": "contract",
    "RootGraph": "contract",
    "RunPrompt": "contract",
    "RunStatus": "contract",
    "RunTarget": "contract",
    "SnapshotFrame": "contract",
    "StageCompletedEvent": "contract",
    "StageNode": "contract",
    "StageStatus": "contract",
    "StageTarget": "contract",
    "State": "contract",
    "Timestamp": "contract",
    "ToolNode": "contract",
    "ToolNodeStatus": "contract",
    "ToolTarget": "contract",
    "WorkflowEvent": "contract",
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

__all__ = ["WorkflowHubError", *_LAZY]

# Declared before any lazy module can load: each of them (``_contract`` among them) ends with
# ``claim_root_names()``, so what the package exports says ``workflow_hub`` whichever way (and
# whenever) it is first imported.
declare_root_names(__all__)
del declare_root_names

if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> object:
        where = _LAZY.get(name)
        if where == "contract":
            from . import contract as module
        elif where == "_core":
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
