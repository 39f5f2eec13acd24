"""The contract's values, enumerations and error: everything the hub exchanges (§2 of
docs/contract.md, whose requirement ids the entries below cite: C1, P6, O4…).

Every value is immutable and checked when it is built, so a value that exists is one the hub can
trust (C1); each has one JSON form (:mod:`workflow_hub.wire`). The enumerations are plain strings
on the wire and ``StrEnum`` members in Python, and a constructor takes either. All these names are
re-exported by ``workflow_hub``: ``from workflow_hub import Cursor`` is the same class.
"""

from ._contract import ActivityChangedEvent as ActivityChangedEvent
from ._contract import Attribution as Attribution
from ._contract import Availability as Availability
from ._contract import ChangedFrame as ChangedFrame
from ._contract import ContractError as ContractError
from ._contract import ControlAction as ControlAction
from ._contract import Cursor as Cursor
from ._contract import Delivery as Delivery
from ._contract import Diagnostic as Diagnostic
from ._contract import DiagnosticKind as DiagnosticKind
from ._contract import FailureDetail as FailureDetail
from ._contract import Frame as Frame
from ._contract import GraphNode as GraphNode
from ._contract import HeartbeatEvent as HeartbeatEvent
from ._contract import Labels as Labels
from ._contract import LifecycleEvent as LifecycleEvent
from ._contract import LifecycleInput as LifecycleInput
from ._contract import LifecycleTarget as LifecycleTarget
from ._contract import NodePrompt as NodePrompt
from ._contract import PromptKind as PromptKind
from ._contract import PromptStatus as PromptStatus
from ._contract import PromptTarget as PromptTarget
from ._contract import Reason as Reason
from ._contract import RemovedFrame as RemovedFrame
from ._contract import RootActivity as RootActivity
from ._contract import RootGraph as RootGraph
from ._contract import RunPrompt as RunPrompt
from ._contract import RunStatus as RunStatus
from ._contract import RunTarget as RunTarget
from ._contract import SnapshotFrame as SnapshotFrame
from ._contract import StageCompletedEvent as StageCompletedEvent
from ._contract import StageNode as StageNode
from ._contract import StageStatus as StageStatus
from ._contract import StageTarget as StageTarget
from ._contract import State as State
from ._contract import Timestamp as Timestamp
from ._contract import ToolNode as ToolNode
from ._contract import ToolNodeStatus as ToolNodeStatus
from ._contract import ToolTarget as ToolTarget
from ._contract import WorkflowEvent as WorkflowEvent

__all__ = [
    "ActivityChangedEvent",
    "Attribution",
    "Availability",
    "ChangedFrame",
    "ContractError",
    "ControlAction",
    "Cursor",
    "Delivery",
    "Diagnostic",
    "DiagnosticKind",
    "FailureDetail",
    "Frame",
    "GraphNode",
    "HeartbeatEvent",
    "Labels",
    "LifecycleEvent",
    "LifecycleInput",
    "LifecycleTarget",
    "NodePrompt",
    "PromptKind",
    "PromptStatus",
    "PromptTarget",
    "Reason",
    "RemovedFrame",
    "RootActivity",
    "RootGraph",
    "RunPrompt",
    "RunStatus",
    "RunTarget",
    "SnapshotFrame",
    "StageCompletedEvent",
    "StageNode",
    "StageStatus",
    "StageTarget",
    "State",
    "Timestamp",
    "ToolNode",
    "ToolNodeStatus",
    "ToolTarget",
    "WorkflowEvent",
]
