"""The conformance kit: check any implementation of the hub contract against the reference model.

Write an adapter (:class:`ConformanceAdapter`, a dozen small coroutines) for your hub, then::

    from workflow_hub.testing.conformance import check_conformance

    def test_my_hub_conforms() -> None:
        check_conformance(MyHubAdapter, max_examples=200)

Hypothesis generates scenarios (operation sequences), each is played on your adapter and on
:class:`~workflow_hub.testing.model.HubModel`, and the first disagreement is shrunk to a minimal
scenario and raised as :class:`ConformanceFailure`, printed as a numbered script. The run
checks the *profiles* the adapter declares (:data:`PROFILES`: source, resume, stream, threads; a
``profiles`` attribute on the factory, or the ``hello`` answer of a process; silence means all)
and its report says which it checked. The pytest
plugin (fixture ``workflow_hub_conformance``) and the ``workflow-hub conformance`` command (for
implementations in other languages, through the JSON-lines protocol) build on the same harness.
See ``docs/conformance.md``. This module needs hypothesis (the ``testing`` extra).
"""

from .._public import fixup_module_metadata
from ._adapter import AdapterConfig as AdapterConfig
from ._adapter import AdapterFactory as AdapterFactory
from ._adapter import ConformanceAdapter as ConformanceAdapter
from ._adapter import HubAdapter as HubAdapter
from ._adapter import ObserverStyle as ObserverStyle
from ._adapter import ThreadsAdapter as ThreadsAdapter
from ._adapter import ThreadSafePublisher as ThreadSafePublisher
from ._adapter import offers_threads as offers_threads
from ._bursts import ThreadBadInput as ThreadBadInput
from ._bursts import ThreadCall as ThreadCall
from ._bursts import ThreadChanged as ThreadChanged
from ._bursts import ThreadDispose as ThreadDispose
from ._bursts import ThreadRemoved as ThreadRemoved
from ._harness import Checkpoint as Checkpoint
from ._harness import ConformanceFailure as ConformanceFailure
from ._harness import ConformancePlan as ConformancePlan
from ._harness import ConformanceReport as ConformanceReport
from ._harness import ConformanceSuite as ConformanceSuite
from ._harness import SettleHook as SettleHook
from ._harness import check_conformance as check_conformance
from ._harness import conformance_plan as conformance_plan
from ._harness import play_scenario as play_scenario
from ._jsonl import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._jsonl import JsonLinesAdapter as JsonLinesAdapter
from ._jsonl import JsonLinesError as JsonLinesError
from ._jsonl import JsonLinesProcess as JsonLinesProcess
from ._jsonl import serve as serve
from ._operations import ROOT_IDS as ROOT_IDS
from ._operations import At as At
from ._operations import Behind as Behind
from ._operations import BindDispatcher as BindDispatcher
from ._operations import DisposeHub as DisposeHub
from ._operations import DisposeObserver as DisposeObserver
from ._operations import DisposePublisher as DisposePublisher
from ._operations import Observe as Observe
from ._operations import Operation as Operation
from ._operations import Player as Player
from ._operations import PublishChanged as PublishChanged
from ._operations import PublishHeartbeat as PublishHeartbeat
from ._operations import PublishLifecycle as PublishLifecycle
from ._operations import PublishRemoved as PublishRemoved
from ._operations import PublishSnapshot as PublishSnapshot
from ._operations import RegisterPublisher as RegisterPublisher
from ._operations import ReleaseObserver as ReleaseObserver
from ._operations import Scenario as Scenario
from ._operations import SeenBy as SeenBy
from ._operations import Settle as Settle
from ._operations import Since as Since
from ._operations import StallObserver as StallObserver
from ._operations import ThreadBurst as ThreadBurst
from ._operations import playable as playable
from ._profiles import PROFILE_REQUIREMENTS as PROFILE_REQUIREMENTS
from ._profiles import PROFILES as PROFILES
from ._profiles import Profile as Profile

__all__ = [
    "PROFILES",
    "PROFILE_REQUIREMENTS",
    "PROTOCOL_VERSION",
    "ROOT_IDS",
    "AdapterConfig",
    "AdapterFactory",
    "At",
    "Behind",
    "BindDispatcher",
    "Checkpoint",
    "ConformanceAdapter",
    "ConformanceFailure",
    "ConformancePlan",
    "ConformanceReport",
    "ConformanceSuite",
    "DisposeHub",
    "DisposeObserver",
    "DisposePublisher",
    "HubAdapter",
    "JsonLinesAdapter",
    "JsonLinesError",
    "JsonLinesProcess",
    "Observe",
    "ObserverStyle",
    "Operation",
    "Player",
    "Profile",
    "PublishChanged",
    "PublishHeartbeat",
    "PublishLifecycle",
    "PublishRemoved",
    "PublishSnapshot",
    "RegisterPublisher",
    "ReleaseObserver",
    "Scenario",
    "SeenBy",
    "Settle",
    "SettleHook",
    "Since",
    "StallObserver",
    "ThreadBadInput",
    "ThreadBurst",
    "ThreadCall",
    "ThreadChanged",
    "ThreadDispose",
    "ThreadRemoved",
    "ThreadSafePublisher",
    "ThreadsAdapter",
    "check_conformance",
    "conformance_plan",
    "offers_threads",
    "play_scenario",
    "playable",
    "serve",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
