"""Hypothesis strategies for every contract value and union (§2 of docs/contract.md), and for
the conformance kit's operations, operation sequences and scenarios.

Every strategy draws values that construct without error, with optional fields both present and
absent, and with the identifiers real hosts send: empty, padded with whitespace, unicode. They are
deliberately small (graphs of at most four nodes, at most five roots) so that property tests stay
fast; pass a strategy to the keyword parameters to steer a field, e.g.
``root_activities(root_run_ids=st.sampled_from(["a", "b"]))`` to make collisions likely.

Users build their own properties on these, and so does the conformance kit, so each one covers
the whole domain of its type, not only the values this library happens to produce. Needs
hypothesis (the ``testing`` extra).
"""

from .._public import fixup_module_metadata
from ._operation_strategies import operation_sequences as operation_sequences
from ._operation_strategies import operations as operations
from ._operation_strategies import scenarios as scenarios
from ._operation_strategies import thread_bursts as thread_bursts
from ._operation_strategies import thread_scenarios as thread_scenarios
from ._value_strategies import activity_changed_events as activity_changed_events
from ._value_strategies import changed_frames as changed_frames
from ._value_strategies import cursors as cursors
from ._value_strategies import diagnostics as diagnostics
from ._value_strategies import failure_details as failure_details
from ._value_strategies import frames as frames
from ._value_strategies import graph_nodes as graph_nodes
from ._value_strategies import heartbeat_events as heartbeat_events
from ._value_strategies import ids as ids
from ._value_strategies import labels as labels
from ._value_strategies import lifecycle_events as lifecycle_events
from ._value_strategies import lifecycle_inputs as lifecycle_inputs
from ._value_strategies import lifecycle_targets as lifecycle_targets
from ._value_strategies import node_prompts as node_prompts
from ._value_strategies import prompt_targets as prompt_targets
from ._value_strategies import removed_frames as removed_frames
from ._value_strategies import root_activities as root_activities
from ._value_strategies import root_graphs as root_graphs
from ._value_strategies import run_prompts as run_prompts
from ._value_strategies import run_targets as run_targets
from ._value_strategies import snapshot_frames as snapshot_frames
from ._value_strategies import stage_completed_events as stage_completed_events
from ._value_strategies import stage_nodes as stage_nodes
from ._value_strategies import stage_targets as stage_targets
from ._value_strategies import timestamps as timestamps
from ._value_strategies import tool_nodes as tool_nodes
from ._value_strategies import tool_targets as tool_targets
from ._value_strategies import unknown_details as unknown_details
from ._value_strategies import workflow_events as workflow_events

__all__ = [
    "activity_changed_events",
    "changed_frames",
    "cursors",
    "diagnostics",
    "failure_details",
    "frames",
    "graph_nodes",
    "heartbeat_events",
    "ids",
    "labels",
    "lifecycle_events",
    "lifecycle_inputs",
    "lifecycle_targets",
    "node_prompts",
    "operation_sequences",
    "operations",
    "prompt_targets",
    "removed_frames",
    "root_activities",
    "root_graphs",
    "run_prompts",
    "run_targets",
    "scenarios",
    "snapshot_frames",
    "stage_completed_events",
    "stage_nodes",
    "stage_targets",
    "thread_bursts",
    "thread_scenarios",
    "timestamps",
    "tool_nodes",
    "tool_targets",
    "unknown_details",
    "workflow_events",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
