"""What a run tracker knows: the small mutable records of runs, stages, tools and prompts.

The tracker (``_tracker.py``) writes facts into them; :func:`~._derive.derive_root` reads them to
define a root's summary, and ``_rootstate.py`` keeps that summary up to date incrementally.
Besides the facts, the records carry a few fields the incremental bookkeeping owns (marked
*bookkeeping* below); ``derive_root`` never reads them. The status sets are the vocabulary both
sides share.
"""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

import attrs

from .._contract import (
    FailureDetail,
    GraphNode,
    Labels,
    PromptKind,
    RunPrompt,
    RunStatus,
    StageStatus,
    Timestamp,
    ToolNodeStatus,
)

__all__ = [
    "ADVANCING",
    "ATTENTION_BEARING",
    "DONE_STAGE",
    "DONE_TOOL",
    "FAILURES",
    "SETTLED_STAGE",
    "SETTLED_TOOL",
    "NodeRecord",
    "PromptRecord",
    "RunRecord",
    "StageRecord",
    "ToolRecord",
    "nested_id",
]

# Statuses in which an executor moves a run forward by itself.
ADVANCING = frozenset({RunStatus.PENDING, RunStatus.RUNNING})
# D2: only runs in these statuses carry waits.
ATTENTION_BEARING = frozenset(
    {RunStatus.RUNNING, RunStatus.PENDING, RunStatus.FAILED, RunStatus.BLOCKED}
)
# D3: failures that need intervention while their executor is there.
FAILURES = frozenset({RunStatus.FAILED, RunStatus.BLOCKED})
# D6: a parent in one of these statuses lets its children run.
DONE_STAGE = frozenset({StageStatus.COMPLETED})
DONE_TOOL = frozenset({ToolNodeStatus.COMPLETED, ToolNodeStatus.CACHED})
# D6: statuses that let a run continue past its nodes (a running stage hosting a child too).
SETTLED_STAGE = frozenset({StageStatus.COMPLETED, StageStatus.SKIPPED})
SETTLED_TOOL = frozenset({ToolNodeStatus.COMPLETED, ToolNodeStatus.CACHED, ToolNodeStatus.FAILED})


def nested_id(run_id: str, node_id: str) -> str:
    """A node's canonical identity within a root: ``"{run_id}:{node_id}"``."""
    return f"{run_id}:{node_id}"


@attrs.define(kw_only=True, eq=False)
class PromptRecord:
    """An open prompt, on a run or (``stage_id`` set) on one of its stages."""

    prompt_id: str
    kind: PromptKind
    message: str
    choices: tuple[str, ...] | None
    created_at: Timestamp
    stage_id: str | None


@attrs.define(kw_only=True, eq=False)
class _Node:
    """What a stage and a tool share. ``node_id`` is the scheduler's raw id, unique in its run;
    ``status`` is each kind's own field, after these (so that ``status`` has its kind's type)."""

    # Bookkeeping: what it adds to its run's counts, the order in which it first left
    # ``pending``, parents not yet done, nodes whose parent it is; then its canonical id
    # (nested_id of its run's id and its own), set when the tracker adds it: every event target
    # of the node names it. A status fact reads these first.
    counts: int = 0
    execution_order: int | None = None
    unmet_parents: int = 0
    dependents: list[NodeRecord] = attrs.field(factory=list)
    nested: str = ""
    name: str
    node_id: str
    parent_ids: tuple[str, ...]
    # Bookkeeping: its position among its run's nodes, its graph node.
    position: int = 0
    graph_node: GraphNode | None = None
    # Why it failed (C3), while its status is failed; None otherwise.
    error: FailureDetail | None = None


@attrs.define(kw_only=True, eq=False)
class StageRecord(_Node):
    """A stage of one run."""

    kind: ClassVar[Literal["stage"]] = "stage"

    status: StageStatus
    retrying: bool = False
    prompt: PromptRecord | None = None
    # Bookkeeping: child runs this stage hosts.
    hosted: int = 0

    @property
    def running(self) -> bool:
        return self.status is StageStatus.RUNNING

    @property
    def done(self) -> bool:
        """Whether its dependents may run (D6)."""
        return self.status in DONE_STAGE

    @property
    def waits_for_human(self) -> bool:
        """D4, D5: an open prompt or ``awaiting_input``."""
        return self.prompt is not None or self.status is StageStatus.AWAITING_INPUT


@attrs.define(kw_only=True, eq=False)
class ToolRecord(_Node):
    """A tool node of one run (``ordinal`` orders tools that share a parent)."""

    kind: ClassVar[Literal["tool"]] = "tool"

    status: ToolNodeStatus
    ordinal: int = 0

    @property
    def running(self) -> bool:
        return self.status is ToolNodeStatus.RUNNING

    @property
    def done(self) -> bool:
        return self.status in DONE_TOOL


NodeRecord: TypeAlias = StageRecord | ToolRecord


@attrs.define(kw_only=True, eq=False)
class RunRecord:
    """Everything the tracker knows about one run (root or nested)."""

    run_id: str
    root_run_id: str
    parent_run_id: str | None
    depth: int
    live: bool
    status: RunStatus
    # The stage of the parent run that hosts this run (a nested run started by a stage).
    host_stage_id: str | None = None
    stop_requested: bool = False
    # The executor reported that it has finished with the run (D3: a failure then is settled).
    executor_ended: bool = False
    acknowledged: bool = False
    # A root's labels (C3), set by the scheduler; a nested run has none.
    labels: Labels | None = None
    children: list[str] = attrs.field(factory=list)
    nodes: dict[str, NodeRecord] = attrs.field(factory=dict)
    prompts: dict[str, PromptRecord] = attrs.field(factory=dict)
    # Keys are a stage id, or None for an intervention on the run itself; the value says
    # whether it is a budget stop.
    interventions: dict[str | None, bool] = attrs.field(factory=dict)
    # Bookkeeping: whether a stop covers the run (D1), the sums of its nodes' counts, what it
    # adds to its root's totals.
    stopping: bool = False
    open_run_prompts: int = 0
    node_counts: int = 0
    counts: int = 0
    # Bookkeeping for the graph: the run's graph nodes in declaration order, its run prompts.
    graph_nodes: list[GraphNode] = attrs.field(factory=list)
    graph_prompts: tuple[RunPrompt, ...] = ()

    @property
    def budget_stop(self) -> bool:
        return any(self.interventions.values())
