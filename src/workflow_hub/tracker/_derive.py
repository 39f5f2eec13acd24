"""The readable definition of a root's summary (SPEC §5, D1-D8).

The tracker (``_tracker.py``, ``_ledger.py``) records facts in the records of ``_records.py``. :func:`derive_root`
is the *definition*: it reads the facts of one root's runs and applies the rules D1-D8 one by one,
each in its own small function, with nothing cached. The tracker does not call it on every fact:
``_rootstate.py`` keeps the same answer up to date incrementally, and the tests check after every
fact of random scenarios that the two agree, so this module stays the one a reader checks against
the contract (docs/contract.md, §5). A graph node is built from its record by ``_graph.py``, which both share: here afresh,
there incrementally.

"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs

from .._contract import (
    Labels,
    RootActivity,
    RootGraph,
    RunPrompt,
    RunStatus,
    StageNode,
    StageStatus,
    ToolNode,
    state_and_reason,
    unchecked_builder,
)
from ._graph import graph_node, run_prompts
from ._records import (
    ATTENTION_BEARING,
    FAILURES,
    SETTLED_STAGE,
    SETTLED_TOOL,
    RunRecord,
    StageRecord,
    nested_id,
)

__all__ = ["Totals", "derive_root"]

# Built from values checked when they were reported, without validating again (issue 29).
_build_RootActivity = unchecked_builder(RootActivity)

# --- D1-D8, one rule at a time ----------------------------------------------------------------


def _stopping_runs(runs: Sequence[RunRecord]) -> set[str]:
    """D1: runs with a quit or kill in effect on them or on an ancestor (parents come first)."""
    stopping: set[str] = set()
    for run in runs:
        if run.stop_requested or run.parent_run_id in stopping:
            stopping.add(run.run_id)
    return stopping


def _hosting_stages(runs: Sequence[RunRecord]) -> set[tuple[str, str]]:
    """(run id, stage id) of every stage that hosts a nested run of this root."""
    return {
        (run.parent_run_id, run.host_stage_id)
        for run in runs
        if run.parent_run_id is not None and run.host_stage_id is not None
    }


def _stages(run: RunRecord) -> list[StageRecord]:
    return [node for node in run.nodes.values() if isinstance(node, StageRecord)]


def _human_waits(run: RunRecord) -> int:
    """D2: open prompts on the run, and stages that wait for a human unless paused."""
    if run.status not in ATTENTION_BEARING:
        return 0
    on_run = sum(1 for prompt in run.prompts.values() if prompt.stage_id is None)
    on_stages = sum(
        1
        for stage in _stages(run)
        if stage.waits_for_human and stage.status is not StageStatus.PAUSED
    )
    return on_run + on_stages


def _failure(run: RunRecord) -> Literal["manual", "settled"] | None:
    """D3: an active failure or intervention is a manual wait while its executor has not ended,
    live or not (restored history that can still be resumed stays blocked); once the executor
    has ended it is a settled failure, except a budget stop; an acknowledged failure is neither."""
    if run.status not in ATTENTION_BEARING or run.acknowledged:
        return None
    if run.status not in FAILURES and not run.interventions:
        return None
    return "manual" if not run.executor_ended or run.budget_stop else "settled"


def _executions(run: RunRecord, hosting: set[tuple[str, str]]) -> int:
    """D4: running stages and tools of a live run, except stages that wait for a human or
    host a nested run."""
    if not run.live:
        return 0
    count = 0
    for node in run.nodes.values():
        if not node.running:
            continue
        if isinstance(node, StageRecord) and (
            node.waits_for_human or (run.run_id, node.node_id) in hosting
        ):
            continue
        count += 1
    return count


def _retries(run: RunRecord) -> int:
    """D5: stages of a live run marked retrying that do not wait for a human."""
    if not run.live:
        return 0
    return sum(1 for stage in _stages(run) if stage.retrying and not stage.waits_for_human)


def _runnable(
    run: RunRecord, hosting: set[tuple[str, str]], stopping: set[str]
) -> Literal["plain", "through_host"] | None:
    """D6: whether a live, running, non-stopping run has runnable work (a pending node whose
    parents are done and that does not wait for a human); ``through_host`` when it continues
    only through a running stage that hosts a nested run."""
    if not run.live or run.status is not RunStatus.RUNNING or run.run_id in stopping:
        return None
    for node in run.nodes.values():
        if (
            node.status == "pending"
            # A pending stage with an open prompt waits for a human: never runnable work.
            and not (isinstance(node, StageRecord) and node.waits_for_human)
            and all(parent in run.nodes and run.nodes[parent].done for parent in node.parent_ids)
        ):
            return "plain"
    if run.prompts or run.interventions:
        return None
    through_host = False
    for node in run.nodes.values():
        if isinstance(node, StageRecord):
            if node.status in SETTLED_STAGE:
                continue
            if node.running and (run.run_id, node.node_id) in hosting:
                through_host = True
                continue
            return None
        if node.status not in SETTLED_TOOL:
            return None
    return "through_host" if through_host else "plain"


def _paused(run: RunRecord) -> bool:
    """D7: a paused run, or a running run with a paused stage."""
    if run.status is RunStatus.PAUSED:
        return True
    return run.status is RunStatus.RUNNING and any(
        stage.status is StageStatus.PAUSED for stage in _stages(run)
    )


@attrs.frozen(kw_only=True)
class Totals:
    """What D1-D7 found in one root; :meth:`summary` applies D8."""

    executions: int = 0
    stopping_executions: int = 0
    retries: int = 0
    independent_retries: int = 0
    human_waits: int = 0
    manual_waits: int = 0
    settled_failures: int = 0
    runnable: int = 0
    runnable_through_host: int = 0
    paused: int = 0

    def summary(
        self,
        root_run_id: str,
        owner_session_id: str,
        graph: RootGraph | None,
        labels: Labels | None = None,
    ) -> RootActivity:
        blocks = self.human_waits + self.manual_waits
        # D6: continuing only through a stage that hosts a nested run counts only when the
        # root has no actionable block and nothing paused.
        runnable = self.runnable > 0 or (
            self.runnable_through_host > 0 and blocks == 0 and self.paused == 0
        )
        state, reason = state_and_reason(
            executions=self.executions,
            stopping_executions=self.stopping_executions,
            retrying=self.retries > 0,
            independent=runnable or self.independent_retries > 0,
            runnable=runnable,
            human_waits=self.human_waits,
            manual_waits=self.manual_waits,
            paused=self.paused > 0,
        )
        return _build_RootActivity(
            root_run_id=root_run_id,
            owner_session_id=owner_session_id,
            state=state,
            reason=reason,
            active_execution_count=self.executions,
            actionable_block_count=blocks,
            needs_attention=blocks > 0 or self.settled_failures > 0,
            graph=graph,
            labels=labels,
        )


def _totals(runs: Sequence[RunRecord]) -> Totals:
    stopping = _stopping_runs(runs)
    hosting = _hosting_stages(runs)
    executions = stopping_executions = retries = independent_retries = 0
    human = manual = settled = runnable = through_host = paused = 0
    for run in runs:
        own = _executions(run, hosting)
        executions += own
        retried = _retries(run)
        retries += retried
        if run.run_id in stopping:
            stopping_executions += own
        else:
            independent_retries += retried
        human += _human_waits(run)
        failure = _failure(run)
        manual += failure == "manual"
        settled += failure == "settled"
        continues = _runnable(run, hosting, stopping)
        runnable += continues == "plain"
        through_host += continues == "through_host"
        paused += _paused(run)
    return Totals(
        executions=executions,
        stopping_executions=stopping_executions,
        retries=retries,
        independent_retries=independent_retries,
        human_waits=human,
        manual_waits=manual,
        settled_failures=settled,
        runnable=runnable,
        runnable_through_host=through_host,
        paused=paused,
    )


def _graph(runs: Sequence[RunRecord]) -> RootGraph:
    nodes: list[StageNode | ToolNode] = []
    prompts: list[RunPrompt] = []
    for run in runs:
        for node in run.nodes.values():
            parent_ids = tuple(nested_id(run.run_id, parent) for parent in node.parent_ids)
            nodes.append(graph_node(run, node, nested_id(run.run_id, node.node_id), parent_ids))
        prompts.extend(run_prompts(run))
    return RootGraph(nodes=tuple(nodes), run_prompts=tuple(prompts) or None)


def derive_root(
    runs: Sequence[RunRecord], *, owner_session_id: str, include_graph: bool = False
) -> RootActivity:
    """The summary of one root from the records of its runs: the root first, parents before
    their children (the order :meth:`RunTracker` keeps). A pure function of the facts."""
    graph = _graph(runs) if include_graph else None
    root = runs[0]
    return _totals(runs).summary(root.root_run_id, owner_session_id, graph, root.labels)
