"""The fold: every fact's change to one root's state, kept up to date fact by fact.

:func:`~._derive.derive_root` is the definition of D1-D8; :class:`RootState` gives the same
answer at a cost that does not grow with the workflow. The tracker checks a fact and looks its
records up (``_tracker.py``), and writes what the scheduler said into them (``_ledger.py``);
everything that follows from it is folded in here, in one place: the packed counts of the
records it touched (``_counts.py``) and the differences they make to the root's totals, the
root's execution order, its graph, and its summary. A fact costs O(1), plus:

* the dependents of a node that becomes, or stops being, done (their "parents not done" count);
* the runs nested in a run whose stop request or ownership changed (D1 and "live" cover them).

With ``include_graph`` every node keeps its immutable graph node; a fact rebuilds only the graph
nodes it changed, and the published :class:`RootGraph` is a new tuple of the shared node values
(one C-level copy), built only when something in it changed and a summary is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._contract import (
    GraphNode,
    RootActivity,
    RootGraph,
    StageStatus,
    ToolNodeStatus,
    unchecked_builder,
)
from ._counts import (
    PENDING_TOOL_COUNTS,
    PLAIN_PENDING_STAGE_COUNTS,
    PLAIN_STAGE_COUNTS,
    TOOL_COUNTS,
    node_counts,
    run_counts,
    totals,
)
from ._derive import Totals
from ._graph import graph_node, run_prompts
from ._records import DONE_STAGE, DONE_TOOL, NodeRecord, RunRecord, StageRecord, nested_id

__all__ = ["SUMMARIES_KEPT", "RootState"]

_build_RootGraph = unchecked_builder(RootGraph)

# Summaries without a graph kept per root for reuse (a root moves between a few states).
SUMMARIES_KEPT = 16
# A node's ``done`` (D6) by its status, whatever its kind: no stage status is a tool's "cached".
_DONE = DONE_STAGE | DONE_TOOL


def _graph_node(run: RunRecord, node: NodeRecord) -> GraphNode:
    # The node's graph node; the ids of a node never change, so a rebuild reuses them.
    previous = node.graph_node
    if previous is None:
        parents = tuple(nested_id(run.run_id, parent) for parent in node.parent_ids)
        return graph_node(run, node, node.nested, parents)
    return graph_node(run, node, previous.id, previous.parent_ids)


class RootState:
    """One root's state: its runs' counts folded into its totals, its execution order, its graph
    (with ``graph``) and its summary.

    ``runs`` is the tracker's table of every run by id (this root's among them); the state reads
    it, the tracker writes it. ``owner_session_id`` goes into every summary.
    """

    __slots__ = (
        "_graph",
        "_order",
        "_runs",
        "_summaries",
        "_totals",
        "_values",
        "graph",
        "kept",
        "next_order",
        "owner_session_id",
        "root_run_id",
        "summary",
    )

    def __init__(
        self, root_run_id: str, runs: dict[str, RunRecord], *, owner_session_id: str, graph: bool
    ) -> None:
        self.root_run_id = root_run_id
        self.owner_session_id = owner_session_id
        self.graph = graph
        self._runs = runs
        # The fields of Totals, one lane each (``_counts.py``).
        self._totals = 0
        # The execution order the next node to leave ``pending`` gets.
        self.next_order = 0
        # The root's runs in derivation order (parents before children), or None when a run was
        # added or removed since it was last needed.
        self._order: list[RunRecord] | None = None
        self._graph: RootGraph | None = None
        # The current summary, or None when a fact changed it since it was last asked for (a
        # fact that changes the totals looks the summary of its new totals up among those kept:
        # without a graph, the usual fact then finds its summary here).
        self.summary: RootActivity | None = None
        # Without a graph a summary is a function of the totals alone (the owner is the
        # tracker's): the few summaries a root goes back and forth between are kept, keyed by
        # their totals, and reused (immutable values) instead of being derived again. They are
        # kept one object per value (``_values``), so two kept summaries are equal exactly when
        # they are the same object: ``kept`` holds their ids, and a tracker that compares a
        # summary it published with the current one (both kept) needs no field-by-field
        # comparison.
        self._summaries: dict[int, RootActivity] = {}
        self._values: dict[RootActivity, RootActivity] = {}
        self.kept: set[int] = set()

    # --- folding facts ------------------------------------------------------------------------

    def add_run(self, run: RunRecord) -> None:
        """``run`` (the root, or a run nested in one of its runs) is new."""
        run.node_counts = 0
        run.counts = 0
        self._order = None
        self.refresh_run(run)

    def drop_runs(self, runs: Iterable[RunRecord]) -> None:
        """``runs`` (a nested run and everything nested in it) are gone."""
        for run in runs:
            self._totals -= run.counts
            run.counts = 0
        self._order = None
        self.graph_changed()

    def add_node(self, run: RunRecord, node: NodeRecord, parents: Iterable[NodeRecord]) -> None:
        """``node`` is new in ``run``, with ``parents`` (its parents' records, in order)."""
        node.nested = nested_id(run.run_id, node.node_id)
        run.nodes[node.node_id] = node
        for parent in parents:
            parent.dependents.append(node)
            if not parent.done:
                node.unmet_parents += 1
        if node.status != "pending":
            self.order_node(node)
        node.counts = 0
        if self.graph:
            node.position = len(run.graph_nodes)
            node.graph_node = None
            built = _graph_node(run, node)
            run.graph_nodes.append(built)
            node.graph_node = built
            self.graph_changed()
        self.refresh_node(run, node, graph=False)

    def order_node(self, node: NodeRecord) -> None:
        """A node's execution order is the order in which it first left ``pending``, per root."""
        if node.execution_order is None:
            node.execution_order = self.next_order
            self.next_order += 1

    def node_status(
        self,
        run: RunRecord,
        node: NodeRecord,
        status: StageStatus | ToolNodeStatus,
        retrying: bool | None,
    ) -> None:
        """A node's new status, and a stage's retry flag (None for a tool): the most frequent
        fact, so :meth:`refresh_node` of the node and of its dependents is written out (its
        counts looked up in ``_counts``'s tables, its fold generated from its source), and
        :meth:`refresh_run` folds the run once for all of them (a run's counts are a function of
        its nodes' sums and its flags: folding them once after every node is folding them after
        each)."""
        was_done = node.status in _DONE
        node.status = status
        if retrying is not None:
            node.retrying = retrying  # type: ignore[union-attr]  # a stage: only stages retry
        if node.execution_order is None and status != "pending":
            self.order_node(node)  # once per node
        changed = False
        done = status in _DONE
        if done is not was_done:
            # D6: its dependents may have become runnable, or stopped being runnable.
            step = -1 if done else 1
            for dependent in node.dependents:
                dependent.unmet_parents += step
                # node_counts reads the parents not done only of a pending node (D6: ready);
                # a pending tool's, or plain stage's (no prompt, no retry), are looked up.
                if dependent.status == "pending":
                    if type(dependent) is StageRecord:
                        if dependent.prompt is None and not dependent.retrying:
                            counts = PLAIN_PENDING_STAGE_COUNTS[dependent.unmet_parents == 0]
                        else:
                            counts = node_counts(dependent)
                    else:
                        counts = PENDING_TOOL_COUNTS[dependent.unmet_parents == 0]
                    # <copy-of RootState.refresh_node node=dependent>
                    if counts != dependent.counts:
                        run.node_counts += counts - dependent.counts
                        dependent.counts = counts
                        changed = True
                    # </copy-of>
        # node_counts(node), looked up for a plain stage (no prompt, hosted run or retry) or a
        # tool that is not pending: the usual fact.
        own = None
        if type(node) is StageRecord:
            if node.prompt is None and not node.retrying and not node.hosted:
                own = PLAIN_STAGE_COUNTS.get(status)
        else:
            own = TOOL_COUNTS.get(status)
        counts = node_counts(node) if own is None else own
        # <copy-of RootState.refresh_node>
        if counts != node.counts:
            run.node_counts += counts - node.counts
            node.counts = counts
            changed = True
        # </copy-of>
        if changed:
            # <copy-of RootState.refresh_run>
            counts = run_counts(run)
            if counts != run.counts:
                self._totals += counts - run.counts
                run.counts = counts
                self.summary = self._summaries.get(self._totals)
            # </copy-of>
        if self.graph:
            self.refresh_graph_node(run, node)

    def refresh_node(self, run: RunRecord, node: NodeRecord, *, graph: bool) -> None:
        """``node`` changed: fold the change of its counts into its run and root."""
        counts = node_counts(node)
        changed = False
        # <copy-source RootState.refresh_node>
        if counts != node.counts:
            run.node_counts += counts - node.counts
            node.counts = counts
            changed = True
        # </copy-source>
        if changed:
            self.refresh_run(run)
        if graph:
            self.refresh_graph_node(run, node)

    def refresh_graph_node(self, run: RunRecord, node: NodeRecord) -> None:
        """``node`` changed: rebuild its graph node, if it differs (with ``graph``)."""
        built = _graph_node(run, node)
        if built != node.graph_node:
            node.graph_node = built
            run.graph_nodes[node.position] = built
            self.graph_changed()

    def refresh_run(self, run: RunRecord) -> None:
        """``run``'s flags or node sums changed: fold the change of its counts into the root."""
        # <copy-source RootState.refresh_run>
        counts = run_counts(run)
        if counts != run.counts:
            self._totals += counts - run.counts
            run.counts = counts
            self.summary = self._summaries.get(self._totals)
        # </copy-source>

    def host_changed(self, run: RunRecord, host: StageRecord, step: int) -> None:
        """``host`` (a stage of ``run``) hosts ``step`` more nested runs (or fewer)."""
        host.hosted += step
        self.refresh_node(run, host, graph=False)

    def prompts_changed(self, run: RunRecord, stage: StageRecord | None, *, opened: int) -> None:
        """``opened`` prompts more (or fewer) are open on ``run`` itself, or one was opened or
        closed on ``stage``."""
        if stage is None:
            run.open_run_prompts += opened
            if self.graph:
                run.graph_prompts = run_prompts(run)
                self.graph_changed()
        else:
            self.refresh_node(run, stage, graph=self.graph)
        self.refresh_run(run)

    def stop_changed(self, run: RunRecord) -> None:
        """D1: ``run``'s stop request changed; so may the stopping of every run nested in it."""
        runs = self._runs
        for member in self.subtree(run):
            parent = None if member.parent_run_id is None else runs[member.parent_run_id]
            stopping = member.stop_requested or (parent is not None and parent.stopping)
            if stopping is not member.stopping:
                member.stopping = stopping
                self.refresh_run(member)

    def set_live(self, run: RunRecord, live: bool) -> None:
        """``run`` and the runs nested in it are owned by this scheduler's executor (live), or
        history."""
        for member in self.subtree(run):
            if member.live is not live:
                member.live = live
                self.refresh_run(member)

    def graph_changed(self) -> None:
        self._graph = None
        self.summary = None

    # --- reading ------------------------------------------------------------------------------

    def subtree(self, run: RunRecord) -> list[RunRecord]:
        """``run`` and the runs nested in it, depth first, parents before children, in the
        order added. A loop rather than recursion, so nesting depth is limited by memory, not
        the stack."""
        runs = self._runs
        found: list[RunRecord] = []
        stack = [run.run_id]
        while stack:
            member = runs[stack.pop()]
            found.append(member)
            stack.extend(reversed(member.children))
        return found

    def order(self) -> list[RunRecord]:
        """The root's runs, depth first, parents before children, in the order added."""
        if self._order is None:
            self._order = self.subtree(self._runs[self.root_run_id])
        return self._order

    def activity(self) -> RootActivity:
        """The root's current summary (the same object until a fact changes it)."""
        activity = self.summary
        if activity is None:
            if self.graph:
                graph = self._graph
                if graph is None:
                    graph = self._graph = self._build_graph()
                activity = self._summary(graph)
            else:
                key = self._totals
                activity = self._summaries.get(key)
                if activity is None:
                    activity = self._keep(key, self._summary(None))
            self.summary = activity
        return activity

    def totals(self) -> Totals:
        """The root's totals, unpacked."""
        return totals(self._totals)

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

    def _summary(self, graph: RootGraph | None) -> RootActivity:
        labels = self._runs[self.root_run_id].labels
        return totals(self._totals).summary(self.root_run_id, self.owner_session_id, graph, labels)

    def labels_changed(self) -> None:
        """The root's labels changed: every kept summary has the old ones."""
        self._forget_summaries()
        self.summary = None

    def _build_graph(self) -> RootGraph:
        order = self.order()
        if len(order) == 1:
            nodes = tuple(order[0].graph_nodes)
            prompts = order[0].graph_prompts
        else:
            nodes = tuple(node for run in order for node in run.graph_nodes)
            prompts = tuple(prompt for run in order for prompt in run.graph_prompts)
        return _build_RootGraph(nodes=nodes, run_prompts=prompts or None)
