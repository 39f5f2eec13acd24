"""A root's summary kept up to date fact by fact, instead of re-derived from all its facts.

:func:`~workflow_hub._derive.derive_root` is the definition of D1-D8; this module gives the same
answer at a cost that does not grow with the workflow. Every node has a small vector of counts
(is it an execution, a retry, a human wait, unsettled, a running host, ready to run, paused), each
run keeps the sums of its nodes' vectors, and from those sums and its own flags a vector of what
it adds to its root (the fields of :class:`~workflow_hub._derive.Totals`); the root keeps the sums
of its runs' vectors. A fact recomputes the vectors of the few records it touched and adds the
differences, so it costs O(1), plus:

* the dependents of a node that becomes, or stops being, done (their "parents not done" count);
* the runs nested in a run whose stop request or ownership changed (D1 and "live" cover them).

With ``include_graph`` every node keeps its immutable graph node; a fact rebuilds only the graph
nodes it changed, and the published :class:`RootGraph` is a new tuple of the shared node values
(one C-level copy), built only when something in it changed and a summary is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._contract import (
    NodePrompt,
    RootActivity,
    RootGraph,
    RunPrompt,
    RunStatus,
    StageNode,
    StageStatus,
    ToolNode,
    unchecked_builder,
)
from ._derive import Totals
from ._records import (
    ATTENTION_BEARING,
    FAILURES,
    SETTLED_STAGE,
    SETTLED_TOOL,
    NodeRecord,
    PromptRecord,
    RunRecord,
    StageRecord,
    nested_id,
)

__all__ = ["RootState", "graph_node", "node_counts", "refresh_run_prompts"]

# Built from values checked when they were reported, without validating again (issue 29).
_build_NodePrompt = unchecked_builder(NodePrompt)
_build_StageNode = unchecked_builder(StageNode)
_build_ToolNode = unchecked_builder(ToolNode)
_build_RunPrompt = unchecked_builder(RunPrompt)
_build_RootGraph = unchecked_builder(RootGraph)

# A node's counts, in this order.
_EXECUTION, _RETRY, _HUMAN_WAIT, _UNSETTLED, _RUNNING_HOST, _READY, _PAUSED = range(7)
NODE_FIELDS = 7
# A run's counts: the fields of Totals, in this order.
_TOTAL_FIELDS = tuple(field.name for field in Totals.__attrs_attrs__)
# Summaries without a graph kept per root for reuse (a root moves between a few states).
SUMMARIES_KEPT = 16


def node_counts(node: NodeRecord) -> tuple[int, ...]:
    """What one node adds to its run's counts (D2, D4, D5, D6, D7 at the node's level)."""
    ready = node.status == "pending" and node.unmet_parents == 0
    if isinstance(node, StageRecord):
        waits = node.waits_for_human
        hosting = node.hosted > 0
        running = node.running
        return (
            int(running and not waits and not hosting),
            int(node.retrying and not waits),
            int(waits and node.status is not StageStatus.PAUSED),
            int(node.status not in SETTLED_STAGE and not (running and hosting)),
            int(running and hosting),
            # D6: a pending stage with an open prompt is a wait, never runnable work.
            int(ready and not waits),
            int(node.status is StageStatus.PAUSED),
        )
    return (
        int(node.running),
        0,
        0,
        int(node.status not in SETTLED_TOOL),
        0,
        int(ready),
        0,
    )


def run_counts(run: RunRecord) -> tuple[int, ...]:
    """What one run adds to its root: the fields of :class:`Totals`, from its nodes' sums and
    its own flags. Mirrors ``_derive``'s rules one for one."""
    nodes = run.node_counts
    live = run.live
    executions = nodes[_EXECUTION] if live else 0
    retries = nodes[_RETRY] if live else 0
    status = run.status
    human = run.open_run_prompts + nodes[_HUMAN_WAIT] if status in ATTENTION_BEARING else 0
    manual = settled = 0
    if (
        status in ATTENTION_BEARING
        and not run.acknowledged
        and (status in FAILURES or run.interventions)
    ):
        # D3: live or not, a failure is a manual wait until its executor has ended.
        if not run.executor_ended or run.budget_stop:
            manual = 1
        else:
            settled = 1
    runnable = through_host = 0
    if live and status is RunStatus.RUNNING and not run.stopping:
        if nodes[_READY]:
            runnable = 1
        elif not run.prompts and not run.interventions and not nodes[_UNSETTLED]:
            if nodes[_RUNNING_HOST]:
                through_host = 1
            else:
                runnable = 1
    paused = int(status is RunStatus.PAUSED or (status is RunStatus.RUNNING and nodes[_PAUSED] > 0))
    return (
        executions,
        executions if run.stopping else 0,
        retries,
        0 if run.stopping else retries,
        human,
        manual,
        settled,
        runnable,
        through_host,
        paused,
    )


def _node_prompt(prompt: PromptRecord) -> NodePrompt:
    return _build_NodePrompt(
        id=prompt.prompt_id,
        kind=prompt.kind,
        message=prompt.message,
        choices=prompt.choices,
        created_at=prompt.created_at,
    )


def graph_node(run: RunRecord, node: NodeRecord) -> StageNode | ToolNode:
    """The node's graph node. Every value comes from a checked fact, so it is built without
    re-validating (``unchecked``); the parent ids of a node never change and are reused."""
    previous = node.graph_node
    parent_ids = (
        previous.parent_ids
        if previous is not None
        else tuple(nested_id(run.run_id, parent) for parent in node.parent_ids)
    )
    if isinstance(node, StageRecord):
        return _build_StageNode(
            id=nested_id(run.run_id, node.node_id) if previous is None else previous.id,
            run_id=run.run_id,
            node_id=node.node_id,
            name=node.name,
            parent_ids=parent_ids,
            execution_order=node.execution_order,
            depth=run.depth,
            status=node.status,
            pending_prompt=None if node.prompt is None else _node_prompt(node.prompt),
        )
    return _build_ToolNode(
        id=nested_id(run.run_id, node.node_id) if previous is None else previous.id,
        run_id=run.run_id,
        node_id=node.node_id,
        name=node.name,
        parent_ids=parent_ids,
        execution_order=node.execution_order,
        depth=run.depth,
        status=node.status,
        ordinal=node.ordinal,
    )


def refresh_run_prompts(run: RunRecord) -> None:
    """Rebuild the run's prompts for the graph (a run holds few prompts)."""
    run.graph_prompts = tuple(
        _build_RunPrompt(
            id=prompt.prompt_id,
            kind=prompt.kind,
            message=prompt.message,
            choices=prompt.choices,
            created_at=prompt.created_at,
            run_id=run.run_id,
        )
        for prompt in run.prompts.values()
        if prompt.stage_id is None
    )


class RootState:
    """The running totals of one root, and its graph when asked for."""

    __slots__ = ("_activity", "_graph", "_order", "_summaries", "_totals", "root_run_id")

    def __init__(self, root_run_id: str) -> None:
        self.root_run_id = root_run_id
        self._totals = [0] * len(_TOTAL_FIELDS)
        # The root's runs in derivation order (parents before children), or None when a run was
        # added or removed since it was last needed.
        self._order: list[RunRecord] | None = None
        self._graph: RootGraph | None = None
        self._activity: RootActivity | None = None
        # Without a graph a summary is a function of the totals (and the owner) alone: the few
        # summaries a root goes back and forth between are kept, keyed by their totals, and
        # reused (immutable values) instead of being derived again.
        self._summaries: dict[tuple[object, ...], RootActivity] = {}

    # --- keeping the totals -------------------------------------------------------------------

    def refresh_node(self, run: RunRecord, node: NodeRecord, *, graph: bool) -> None:
        """``node`` changed: fold the change of its counts into its run and root."""
        new = node_counts(node)
        old = node.counts
        if new != old:
            sums = run.node_counts
            for index in range(NODE_FIELDS):
                sums[index] += new[index] - old[index]
            node.counts = new
            self.refresh_run(run)
        if graph:
            built = graph_node(run, node)
            if built != node.graph_node:
                node.graph_node = built
                run.graph_nodes[node.position] = built
                self.graph_changed()

    def refresh_run(self, run: RunRecord) -> None:
        """``run``'s flags or node sums changed: fold the change of its counts into the root."""
        new = run_counts(run)
        old = run.counts
        if new != old:
            totals = self._totals
            for index, value in enumerate(new):
                totals[index] += value - old[index]
            run.counts = new
            self._activity = None

    def add_run(self, run: RunRecord) -> None:
        run.node_counts = [0] * NODE_FIELDS
        run.counts = (0,) * len(_TOTAL_FIELDS)
        self._order = None
        self.refresh_run(run)

    def drop_runs(self, runs: Iterable[RunRecord]) -> None:
        totals = self._totals
        for run in runs:
            for index, value in enumerate(run.counts):
                totals[index] -= value
            run.counts = (0,) * len(_TOTAL_FIELDS)
        self._order = None
        self.graph_changed()

    def add_node(self, run: RunRecord, node: NodeRecord, *, graph: bool) -> None:
        node.counts = (0,) * NODE_FIELDS
        if graph:
            node.position = len(run.graph_nodes)
            node.graph_node = None
            built = graph_node(run, node)
            run.graph_nodes.append(built)
            node.graph_node = built
            self.graph_changed()
        self.refresh_node(run, node, graph=False)

    def graph_changed(self) -> None:
        self._graph = None
        self._activity = None

    def invalidate_order(self) -> None:
        self._order = None

    # --- reading ------------------------------------------------------------------------------

    def order(self, runs: dict[str, RunRecord]) -> list[RunRecord]:
        """The root's runs, depth first, parents before children, in the order added."""
        if self._order is None:
            found: list[RunRecord] = []
            stack = [self.root_run_id]
            while stack:
                member = runs[stack.pop()]
                found.append(member)
                stack.extend(reversed(member.children))
            self._order = found
        return self._order

    def activity(
        self, runs: dict[str, RunRecord], owner_session_id: str, *, include_graph: bool
    ) -> RootActivity:
        activity = self._activity
        if activity is None:
            graph = None
            if include_graph:
                graph = self._graph
                if graph is None:
                    graph = self._graph = self._build_graph(runs)
            if graph is None:
                key = (owner_session_id, *self._totals)
                activity = self._summaries.get(key)
                if activity is None:
                    if len(self._summaries) >= SUMMARIES_KEPT:
                        self._summaries.clear()
                    activity = self._summaries[key] = self._summary(owner_session_id, None)
            else:
                activity = self._summary(owner_session_id, graph)
            self._activity = activity
        return activity

    def _summary(self, owner_session_id: str, graph: RootGraph | None) -> RootActivity:
        totals = Totals(**dict(zip(_TOTAL_FIELDS, self._totals, strict=True)))
        return totals.summary(self.root_run_id, owner_session_id, graph)

    def _build_graph(self, runs: dict[str, RunRecord]) -> RootGraph:
        order = self.order(runs)
        if len(order) == 1:
            nodes = tuple(order[0].graph_nodes)
            prompts = order[0].graph_prompts
        else:
            nodes = tuple(node for run in order for node in run.graph_nodes)
            prompts = tuple(prompt for run in order for prompt in run.graph_prompts)
        return _build_RootGraph(nodes=nodes, run_prompts=prompts or None)
