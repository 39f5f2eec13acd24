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
    ToolNodeStatus,
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
    ToolRecord,
    nested_id,
)

__all__ = [
    "PENDING_TOOL_COUNTS",
    "PLAIN_PENDING_STAGE_COUNTS",
    "PLAIN_STAGE_COUNTS",
    "TOOL_COUNTS",
    "RootState",
    "graph_node",
    "node_counts",
    "refresh_run_prompts",
    "run_counts",
    "unpack",
]

# Built from values checked when they were reported, without validating again (issue 29).
_build_NodePrompt = unchecked_builder(NodePrompt)
_build_StageNode = unchecked_builder(StageNode)
_build_ToolNode = unchecked_builder(ToolNode)
_build_RunPrompt = unchecked_builder(RunPrompt)
_build_RootGraph = unchecked_builder(RootGraph)

# Counts are packed into one int, a lane of _LANE bits per count, so that folding a record's
# change into its run and root is one integer addition instead of a loop over a vector: lanes
# never borrow from each other in a sum, since every count is the non-negative sum of non-negative
# parts and stays below 2**_LANE (a count of nodes or runs).
_LANE = 32
_MASK = (1 << _LANE) - 1
# A node's counts, lane by lane. run_counts relies on the order of the top three: paused, then
# ready, then unsettled below them, so that it can tell whether they are zero by comparisons.
_EXECUTION, _RETRY, _HUMAN_WAIT, _RUNNING_HOST, _UNSETTLED, _READY, _PAUSED = (
    1 << (_LANE * lane) for lane in range(7)
)
_RETRY_SHIFT = _LANE
_HUMAN_WAIT_SHIFT = 2 * _LANE
# Lanes only tested for zero are tested through a mask: one operation instead of two.
_RUNNING_HOST_LANE = _MASK << (3 * _LANE)
_UNSETTLED_LANE = _MASK << (4 * _LANE)
_READY_LANE = _MASK << (5 * _LANE)
_RETRY_HUMAN_WAIT_LANES = (_MASK << _RETRY_SHIFT) | (_MASK << _HUMAN_WAIT_SHIFT)
# A run's counts: the fields of Totals, one lane each, in this order (a lane's unit each).
_TOTAL_FIELDS = tuple(field.name for field in Totals.__attrs_attrs__)
(
    _T_EXECUTIONS,
    _T_STOPPING_EXECUTIONS,
    _T_RETRIES,
    _T_INDEPENDENT_RETRIES,
    _T_HUMAN_WAITS,
    _T_MANUAL_WAITS,
    _T_SETTLED_FAILURES,
    _T_RUNNABLE,
    _T_RUNNABLE_THROUGH_HOST,
    _T_PAUSED,
) = (1 << (_LANE * lane) for lane in range(len(_TOTAL_FIELDS)))
_T_EXECUTIONS_STOPPING = _T_EXECUTIONS + _T_STOPPING_EXECUTIONS
# RootState.totals writes the lanes out in this order.
assert _TOTAL_FIELDS == (
    "executions",
    "stopping_executions",
    "retries",
    "independent_retries",
    "human_waits",
    "manual_waits",
    "settled_failures",
    "runnable",
    "runnable_through_host",
    "paused",
), _TOTAL_FIELDS
_T_RETRIES_INDEPENDENT = _T_RETRIES + _T_INDEPENDENT_RETRIES
# Summaries without a graph kept per root for reuse (a root moves between a few states).
SUMMARIES_KEPT = 16


def unpack(counts: int, lanes: int) -> tuple[int, ...]:
    """The counts packed in ``counts``, lane by lane (for reading and for tests)."""
    return tuple((counts >> (_LANE * lane)) & _MASK for lane in range(lanes))


def node_counts(node: NodeRecord) -> int:
    """What one node adds to its run's counts (D2, D4, D5, D6, D7 at the node's level), packed."""
    status = node.status
    if type(node) is StageRecord:
        waits = node.prompt is not None or status is StageStatus.AWAITING_INPUT
        counts = 0
        if status is StageStatus.RUNNING:
            if node.hosted > 0:
                counts = _RUNNING_HOST  # settled for its run while the nested run works
            else:
                counts = _UNSETTLED if waits else _UNSETTLED + _EXECUTION
        elif status not in SETTLED_STAGE:
            counts = _UNSETTLED
        if waits:
            if status is not StageStatus.PAUSED:
                counts += _HUMAN_WAIT
        else:
            if node.retrying:
                counts += _RETRY
            # D6: a pending stage with an open prompt is a wait, never runnable work.
            if status is StageStatus.PENDING and node.unmet_parents == 0:
                counts += _READY
        if status is StageStatus.PAUSED:
            counts += _PAUSED
        return counts
    counts = 0 if status in SETTLED_TOOL else _UNSETTLED
    if status is ToolNodeStatus.RUNNING:
        counts += _EXECUTION
    elif status is ToolNodeStatus.PENDING and node.unmet_parents == 0:
        counts += _READY
    return counts


def _counts_by_status() -> tuple[dict[str, int], dict[str, int]]:
    stage = StageRecord(node_id="", name="", parent_ids=(), status=StageStatus.PENDING)
    tool = ToolRecord(node_id="", name="", parent_ids=(), status=ToolNodeStatus.PENDING)
    stages: dict[str, int] = {}
    for stage.status in StageStatus:
        if stage.status is not StageStatus.PENDING:
            stages[stage.status] = node_counts(stage)
    tools: dict[str, int] = {}
    for tool.status in ToolNodeStatus:
        if tool.status is not ToolNodeStatus.PENDING:
            tools[tool.status] = node_counts(tool)
    return stages, tools


PLAIN_STAGE_COUNTS, TOOL_COUNTS = _counts_by_status()
"""What :func:`node_counts` returns, by status, for a stage with no open prompt, no hosted run and
no retry, and for a tool, in any status but ``pending``: such a node's counts depend on its status
alone (its parents not done count only while it is pending), so a fact can look them up. Computed
by ``node_counts`` itself, once."""


def _pending_counts() -> tuple[tuple[int, int], tuple[int, int]]:
    stage = StageRecord(node_id="", name="", parent_ids=(), status=StageStatus.PENDING)
    tool = ToolRecord(node_id="", name="", parent_ids=(), status=ToolNodeStatus.PENDING)
    stages = []
    tools = []
    for unmet_parents in (1, 0):
        stage.unmet_parents = tool.unmet_parents = unmet_parents
        stages.append(node_counts(stage))
        tools.append(node_counts(tool))
    return (stages[0], stages[1]), (tools[0], tools[1])


PLAIN_PENDING_STAGE_COUNTS, PENDING_TOOL_COUNTS = _pending_counts()
"""What :func:`node_counts` returns for a pending stage with no open prompt and no retry, and for
a pending tool, indexed by whether all its parents are done (``unmet_parents == 0``, D6: ready):
the counts of the usual dependent of a node that becomes done, or stops being done. Computed by
``node_counts`` itself, once."""


def run_counts(run: RunRecord) -> int:
    """What one run adds to its root: the fields of :class:`Totals`, packed, from its nodes'
    sums and its own flags. Mirrors ``_derive``'s rules one for one."""
    nodes = run.node_counts
    live = run.live
    status = run.status
    counts = 0
    # Each operation on the packed int allocates a new one (several hundred instructions), so
    # the lanes of retries and human waits, zero in most runs, are tested once, through a mask,
    # and read only when one is not zero (issue 29, fifth pass).
    waiting = nodes & _RETRY_HUMAN_WAIT_LANES
    if live:
        executions = nodes & _MASK
        if waiting:
            retries = (nodes >> _RETRY_SHIFT) & _MASK
            if run.stopping:
                counts = executions * _T_EXECUTIONS_STOPPING + retries * _T_RETRIES
            else:
                counts = executions + retries * _T_RETRIES_INDEPENDENT
        elif run.stopping:
            counts = executions * _T_EXECUTIONS_STOPPING
        else:
            counts = executions
    if status in ATTENTION_BEARING:
        human = run.open_run_prompts
        if waiting:
            human += (nodes >> _HUMAN_WAIT_SHIFT) & _MASK
        if human:
            counts += human * _T_HUMAN_WAITS
        if not run.acknowledged and (status in FAILURES or run.interventions):
            # D3: live or not, a failure is a manual wait until its executor has ended.
            if not run.executor_ended or run.budget_stop:
                counts += _T_MANUAL_WAITS
            else:
                counts += _T_SETTLED_FAILURES
    if status is RunStatus.RUNNING:
        # Paused, ready and unsettled are the top three lanes, in this order, so comparisons
        # (which allocate nothing) tell whether they are zero: the paused lane is not zero
        # exactly when the packed int reaches its unit; that lane being zero, so is the ready
        # lane; those two being zero, so is the unsettled one.
        paused = nodes >= _PAUSED
        if live and not run.stopping:
            if nodes & _READY_LANE if paused else nodes >= _READY:
                counts += _T_RUNNABLE
            elif (
                not run.prompts
                and not run.interventions
                and not (nodes & _UNSETTLED_LANE if paused else nodes >= _UNSETTLED)
            ):
                if nodes & _RUNNING_HOST_LANE:
                    counts += _T_RUNNABLE_THROUGH_HOST
                else:
                    counts += _T_RUNNABLE
        if paused:
            counts += _T_PAUSED
    elif status is RunStatus.PAUSED:
        counts += _T_PAUSED
    return counts


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

    __slots__ = (
        "_graph",
        "_order",
        "_summaries",
        "_summaries_owner",
        "_totals",
        "_values",
        "kept",
        "root_run_id",
        "summary",
    )

    def __init__(self, root_run_id: str) -> None:
        self.root_run_id = root_run_id
        # The fields of Totals, one lane each (see _LANE).
        self._totals = 0
        # The root's runs in derivation order (parents before children), or None when a run was
        # added or removed since it was last needed.
        self._order: list[RunRecord] | None = None
        self._graph: RootGraph | None = None
        # The current summary, or None when a fact changed it since it was last asked for.
        self.summary: RootActivity | None = None
        # Without a graph a summary is a function of the totals (and the owner) alone: the few
        # summaries a root goes back and forth between are kept, keyed by their totals, and
        # reused (immutable values) instead of being derived again. They are kept one object
        # per value (``_values``), so two kept summaries are equal exactly when they are the
        # same object: ``kept`` holds their ids, and a tracker that compares a summary it
        # published with the current one (both kept) needs no field-by-field comparison.
        # They are keyed by the totals alone: all are of one owner (``_summaries_owner``), and
        # a summary asked for another owner starts over.
        self._summaries: dict[int, RootActivity] = {}
        self._summaries_owner: str | None = None
        self._values: dict[RootActivity, RootActivity] = {}
        self.kept: set[int] = set()

    # --- keeping the totals -------------------------------------------------------------------

    def refresh_node(self, run: RunRecord, node: NodeRecord, *, graph: bool) -> None:
        """``node`` changed: fold the change of its counts into its run and root."""
        new = node_counts(node)
        old = node.counts
        if new != old:
            run.node_counts += new - old
            node.counts = new
            self.refresh_run(run)
        if graph:
            self.refresh_graph_node(run, node)

    def refresh_graph_node(self, run: RunRecord, node: NodeRecord) -> None:
        """``node`` changed: rebuild its graph node, if it differs (with ``include_graph``)."""
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
            self._totals += new - old
            run.counts = new
            self.summary = None

    def add_run(self, run: RunRecord) -> None:
        run.node_counts = 0
        run.counts = 0
        self._order = None
        self.refresh_run(run)

    def drop_runs(self, runs: Iterable[RunRecord]) -> None:
        for run in runs:
            self._totals -= run.counts
            run.counts = 0
        self._order = None
        self.graph_changed()

    def add_node(self, run: RunRecord, node: NodeRecord, *, graph: bool) -> None:
        node.counts = 0
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
        self.summary = None

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
        activity = self.summary
        if activity is None:
            graph = None
            if include_graph:
                graph = self._graph
                if graph is None:
                    graph = self._graph = self._build_graph(runs)
            if graph is None:
                if owner_session_id != self._summaries_owner:
                    self._forget_summaries()
                    self._summaries_owner = owner_session_id
                key = self._totals
                activity = self._summaries.get(key)
                if activity is None:
                    activity = self._keep(key, self._summary(owner_session_id, None))
            else:
                activity = self._summary(owner_session_id, graph)
            self.summary = activity
        return activity

    def _forget_summaries(self) -> None:
        self._summaries.clear()
        self._values.clear()
        self.kept.clear()

    def _keep(self, key: int, built: RootActivity) -> RootActivity:
        if len(self._summaries) >= SUMMARIES_KEPT:
            self._forget_summaries()
        activity = self._values.get(built)
        if activity is None:
            activity = self._values[built] = built
            self.kept.add(id(built))
        self._summaries[key] = activity
        return activity

    def totals(self) -> Totals:
        """The root's totals, unpacked (lane by lane, written out: with a graph, every fact
        unpacks them; ``tests/tracker`` holds them to :func:`unpack`)."""
        c = self._totals
        return Totals(
            executions=c & _MASK,
            stopping_executions=(c >> _LANE) & _MASK,
            retries=(c >> 2 * _LANE) & _MASK,
            independent_retries=(c >> 3 * _LANE) & _MASK,
            human_waits=(c >> 4 * _LANE) & _MASK,
            manual_waits=(c >> 5 * _LANE) & _MASK,
            settled_failures=(c >> 6 * _LANE) & _MASK,
            runnable=(c >> 7 * _LANE) & _MASK,
            runnable_through_host=(c >> 8 * _LANE) & _MASK,
            paused=(c >> 9 * _LANE) & _MASK,
        )

    def _summary(self, owner_session_id: str, graph: RootGraph | None) -> RootActivity:
        totals = self.totals()
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
