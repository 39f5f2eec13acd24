"""The contract's values and the rules written once for them (SPEC §2, R4, the §5 priorities).

Everything here is pure: immutable attrs values, their enumerations and field converters, the
wire codec and the cursor's text form. It imports nothing of the package but this folder, so
every other part of workflow_hub can build on it. Siblings import from this ``__init__``, never
from the private modules inside; the public homes of these names are ``workflow_hub.contract``
and ``workflow_hub.wire``.

The package root exports the contract's values and loads them on first access (PEP 562), so
this folder may be reached first by any module of the package: it ends by claiming the root's
names (they say ``workflow_hub`` however they were first imported).
"""

from .._public import claim_root_names
from ._builders import generate_builder as generate_builder
from ._builders import slot_stores as slot_stores
from ._builders import unchecked as unchecked
from ._builders import unchecked_builder as unchecked_builder
from ._cursor_text import epoch_text_problem as epoch_text_problem
from ._cursor_text import format_cursor as format_cursor
from ._cursor_text import parse_cursor as parse_cursor
from ._enums import Attribution as Attribution
from ._enums import Availability as Availability
from ._enums import ControlAction as ControlAction
from ._enums import Delivery as Delivery
from ._enums import DiagnosticKind as DiagnosticKind
from ._enums import PromptKind as PromptKind
from ._enums import PromptStatus as PromptStatus
from ._enums import Reason as Reason
from ._enums import RunStatus as RunStatus
from ._enums import StageStatus as StageStatus
from ._enums import State as State
from ._enums import ToolNodeStatus as ToolNodeStatus
from ._errors import ContractError as ContractError
from ._reuse import FrameDecoder as FrameDecoder
from ._rules import BLOCKED_PRIORITY as BLOCKED_PRIORITY
from ._rules import WORKING_PRIORITY as WORKING_PRIORITY
from ._rules import state_and_reason as state_and_reason
from ._validate import DETAIL_MAX as DETAIL_MAX
from ._validate import FAILURE_MESSAGE_MAX as FAILURE_MESSAGE_MAX
from ._validate import FAILURE_TYPE_MAX as FAILURE_TYPE_MAX
from ._validate import LABEL_KEY_MAX as LABEL_KEY_MAX
from ._validate import LABEL_VALUE_MAX as LABEL_VALUE_MAX
from ._validate import LABELS_MAX as LABELS_MAX
from ._validate import LONGEST as LONGEST
from ._validate import check_bool as check_bool
from ._validate import check_count as check_count
from ._validate import check_detail as check_detail
from ._validate import check_number as check_number
from ._validate import check_positive_number as check_positive_number
from ._validate import check_str as check_str
from ._validate import enum_check as enum_check
from ._validate import instance_check as instance_check
from ._validate import optional as optional
from ._validate import tuple_check as tuple_check
from ._values import ActivityChangedEvent as ActivityChangedEvent
from ._values import ChangedFrame as ChangedFrame
from ._values import Cursor as Cursor
from ._values import Diagnostic as Diagnostic
from ._values import FailureDetail as FailureDetail
from ._values import Frame as Frame
from ._values import GraphNode as GraphNode
from ._values import HeartbeatEvent as HeartbeatEvent
from ._values import Labels as Labels
from ._values import LifecycleEvent as LifecycleEvent
from ._values import LifecycleInput as LifecycleInput
from ._values import LifecycleTarget as LifecycleTarget
from ._values import NodePrompt as NodePrompt
from ._values import PromptTarget as PromptTarget
from ._values import RemovedFrame as RemovedFrame
from ._values import RootActivity as RootActivity
from ._values import RootGraph as RootGraph
from ._values import RunPrompt as RunPrompt
from ._values import RunTarget as RunTarget
from ._values import SnapshotFrame as SnapshotFrame
from ._values import StageCompletedEvent as StageCompletedEvent
from ._values import StageNode as StageNode
from ._values import StageTarget as StageTarget
from ._values import Timestamp as Timestamp
from ._values import ToolNode as ToolNode
from ._values import ToolTarget as ToolTarget
from ._values import WorkflowEvent as WorkflowEvent
from ._values import check_error as check_error
from ._values import snapshot_arguments as snapshot_arguments
from ._values import unknown_detail as unknown_detail
from ._wire import discriminator_of as discriminator_of
from ._wire import dumps as dumps
from ._wire import from_wire as from_wire
from ._wire import loads as loads
from ._wire import to_wire as to_wire
from ._wire import union_members as union_members

claim_root_names(globals())
del claim_root_names
