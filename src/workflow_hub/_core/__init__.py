"""The hub and its friends: the code that has to deal with the hub's private data structures.

The hub, its publisher handles, observer queues and streams, the resume history, the hook runner
and the instrumentation interface share state that nobody else may touch, so inside this folder
modules may use each other's private names (as trio's ``_core`` does); that friendship is the
only import circle the package allows. Everything outside imports from this ``__init__``,
never from a module inside; the public homes of these names are ``workflow_hub`` and
``workflow_hub.metrics``.
"""

from .._public import claim_root_names
from ._hooks import HOOK_EVENT_TYPES as HOOK_EVENT_TYPES
from ._hooks import ExtensionHooks as ExtensionHooks
from ._hooks import HandlerFailure as HandlerFailure
from ._hooks import HookEventType as HookEventType
from ._hooks import HookRunner as HookRunner
from ._hub import Dispatch as Dispatch
from ._hub import HubStatistics as HubStatistics
from ._hub import WorkflowActivityHub as WorkflowActivityHub
from ._hub import check_hub_thread as check_hub_thread
from ._hub import host_hub as host_hub
from ._hub import open_hub as open_hub
from ._instruments import LAG_SAMPLE_EVERY as LAG_SAMPLE_EVERY
from ._observers import FrameCallback as FrameCallback
from ._observers import FrameReceiver as FrameReceiver
from ._observers import FrameStream as FrameStream
from ._observers import ObserverLease as ObserverLease
from ._publisher import WorkflowActivityPublisher as WorkflowActivityPublisher

# The package root exports these names lazily; they say workflow_hub however they are loaded.
claim_root_names(globals())
del claim_root_names
