"""What a run tracker knows, and the pure derivation of a root's summary from it (SPEC §5).

The tracker (``_tracker.py``) records facts in the small mutable records below; :func:`derive_root`
turns the records of one root into its :class:`RootActivity`. Derivation reads nothing else: no
clock, no hub, no history of earlier summaries, so the same facts always give the same summary and
every row of the state table can be tested without a running hub.

The rules, in the order they are applied (``docs/scheduler-guide.md`` tells the same story for
scheduler authors):

* Only *live* runs (an executor owns them now) contribute work. A running stage or tool of a live
  run is one active execution; so is a live ``running`` run with no stages or tools of its own and
  no unfinished child runs (a run that reports no graph is its own unit of work).
* A run whose quit or kill request is in effect is *stopping*, and so is everything nested in it.
  The request is in effect while the run is ``pending``/``running`` or still has work running.
* A live ``pending``/``running`` run that is not stopping, runs nothing, retries nothing, has no
  wait and no paused stage of its own, no unfinished child run and no paused ancestor, is an
  *automatic continuation*: its executor will move it on without anyone's help.
* Waits come from every run, live or restored: each open prompt and each stage in
  ``awaiting_input`` without one is a human wait; each intervention is a manual wait.
* If anything works, the root is ``working``; the reason is ``stopping`` when every working unit
  belongs to a stopping run, otherwise the best of ``retrying`` > ``executing`` >
  ``automatic_continuation`` among the independent units. Otherwise waits make it ``blocked``
  (``manual_intervention`` before ``awaiting_input``); otherwise a paused run or stage makes it
  ``idle``/``paused``; otherwise it is ``idle``/``quiescent``.
* ``needs_attention`` is true when there is a wait or a run that ended ``failed`` or ``blocked``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal, TypeAlias

import attrs

from ._contract import (
    NodePrompt,
    RootActivity,
    RootGraph,
    RunPrompt,
    StageNode,
    Timestamp,
    ToolNode,
)
from ._enums import PromptKind, Reason, RunStatus, StageStatus, State, ToolNodeStatus

__all__ = [
    "NodeRecord",
    "PromptRecord",
    "RunRecord",
    "StageRecord",
    "ToolRecord",
    "derive_root",
    "nested_id",
]

# Statuses in which an executor moves a run forward by itself.
ADVANCING = frozenset({RunStatus.PENDING, RunStatus.RUNNING})
# Statuses of a run that has not finished: it may still advance, or resume.
UNFINISHED = ADVANCING | {RunStatus.PAUSED}
# Ended outcomes that need someone to look (the last row of the state table).
ENDED_FAILURES = frozenset({RunStatus.FAILED, RunStatus.BLOCKED})
# A stage that is retried is retrying while it waits to run again and while it runs.
RETRY_STATUSES = frozenset({StageStatus.PENDING, StageStatus.RUNNING})


def nested_id(run_id: str, node_id: str) -> str:
    """A node's canonical identity within a root: ``"{run_id}:{node_id}"``."""
    return f"{run_id}:{node_id}"


@attrs.define(kw_only=True)
class PromptRecord:
    """An open prompt, on a run or (``stage_id`` set) on one of its stages."""

    prompt_id: str
    kind: PromptKind
    message: str
    choices: tuple[str, ...] | None
    created_at: Timestamp
    stage_id: str | None


@attrs.define(kw_only=True)
class StageRecord:
    """A stage of one run. ``node_id`` is the scheduler's raw id, unique in its run."""

    kind: ClassVar[Literal["stage"]] = "stage"

    node_id: str
    name: str
    parent_ids: tuple[str, ...]
    status: StageStatus
    retrying: bool = False
    execution_order: int | None = None
    prompt: PromptRecord | None = None

    @property
    def running(self) -> bool:
        return self.status is StageStatus.RUNNING


@attrs.define(kw_only=True)
class ToolRecord:
    """A tool node of one run. ``node_id`` is the scheduler's raw id, unique in its run."""

    kind: ClassVar[Literal["tool"]] = "tool"

    node_id: str
    name: str
    parent_ids: tuple[str, ...]
    status: ToolNodeStatus
    ordinal: int = 0
    execution_order: int | None = None

    @property
    def running(self) -> bool:
        return self.status is ToolNodeStatus.RUNNING


NodeRecord: TypeAlias = StageRecord | ToolRecord


@attrs.define(kw_only=True)
class RunRecord:
    """Everything the tracker knows about one run (root or nested)."""

    run_id: str
    root_run_id: str
    parent_run_id: str | None
    depth: int
    live: bool
    status: RunStatus
    stop_requested: bool = False
    children: list[str] = attrs.field(factory=list)
    nodes: dict[str, NodeRecord] = attrs.field(factory=dict)
    prompts: dict[str, PromptRecord] = attrs.field(factory=dict)
    # Keys are a stage id, or None for an intervention on the run itself.
    interventions: set[str | None] = attrs.field(factory=set)
    heartbeat_interval_minutes: int | float | None = None
    started_at: Timestamp | None = None
    # Heartbeat bookkeeping (see _heartbeat.py): since when the run has been eligible, and the
    # last boundary emitted for it.
    beat_since: Timestamp | None = None
    last_beat: Timestamp | None = None

    def running_nodes(self) -> int:
        return sum(1 for node in self.nodes.values() if node.running)


@attrs.frozen
class _Tally:
    """What one root's runs add up to, before the state table turns it into a summary."""

    executions: int
    stopping_units: int
    reasons: frozenset[Reason]
    human_waits: int
    manual_waits: int
    paused: bool
    ended_failure: bool


def _subtree_running(run: RunRecord, by_id: dict[str, RunRecord]) -> bool:
    if run.live and run.running_nodes():
        return True
    return any(_subtree_running(by_id[child], by_id) for child in run.children if child in by_id)


def _stopping_runs(runs: Sequence[RunRecord], by_id: dict[str, RunRecord]) -> set[str]:
    stopping: set[str] = set()
    for run in runs:  # parents come before their children
        in_effect = run.stop_requested and (run.status in ADVANCING or _subtree_running(run, by_id))
        if in_effect or run.parent_run_id in stopping:
            stopping.add(run.run_id)
    return stopping


def _paused_runs(runs: Sequence[RunRecord]) -> set[str]:
    paused: set[str] = set()
    for run in runs:  # parents come before their children
        if run.status is RunStatus.PAUSED or run.parent_run_id in paused:
            paused.add(run.run_id)
    return paused


def _tally(runs: Sequence[RunRecord]) -> _Tally:
    by_id = {run.run_id: run for run in runs}
    stopping = _stopping_runs(runs, by_id)
    # A run inside a paused run does not continue by itself (work already running still drains).
    paused_scope = _paused_runs(runs)
    executions = 0
    stopping_units = 0
    reasons: set[Reason] = set()
    human_waits = 0
    manual_waits = 0
    paused = False
    ended_failure = False

    for run in runs:
        stages = [node for node in run.nodes.values() if isinstance(node, StageRecord)]
        waiting_stages = sum(
            1
            for stage in stages
            if stage.prompt is not None or stage.status is StageStatus.AWAITING_INPUT
        )
        run_prompts = sum(1 for prompt in run.prompts.values() if prompt.stage_id is None)
        own_waits = waiting_stages + run_prompts + len(run.interventions)
        human_waits += waiting_stages + run_prompts
        manual_waits += len(run.interventions)
        ended_failure = ended_failure or run.status in ENDED_FAILURES
        paused_stage = run.status in UNFINISHED and any(
            stage.status is StageStatus.PAUSED for stage in stages
        )
        paused = paused or run.status is RunStatus.PAUSED or paused_stage

        if not run.live:
            continue  # restored history never works
        unfinished_children = any(
            by_id[child].status in UNFINISHED for child in run.children if child in by_id
        )
        retrying = [stage for stage in stages if stage.retrying and stage.status in RETRY_STATUSES]
        running = run.running_nodes()
        nodeless_running = (
            run.status is RunStatus.RUNNING and not run.nodes and not unfinished_children
        )
        executions += running + (1 if nodeless_running else 0)

        if run.run_id in stopping:
            if running or retrying or nodeless_running or run.status in ADVANCING:
                stopping_units += 1
            continue
        if retrying:
            reasons.add(Reason.RETRYING)
        if running > len([stage for stage in retrying if stage.running]) or nodeless_running:
            reasons.add(Reason.EXECUTING)
        if (
            run.status in ADVANCING
            and not running
            and not retrying
            and not nodeless_running
            and not own_waits
            and not paused_stage
            and not unfinished_children
            and run.run_id not in paused_scope
        ):
            reasons.add(Reason.AUTOMATIC_CONTINUATION)

    return _Tally(
        executions=executions,
        stopping_units=stopping_units,
        reasons=frozenset(reasons),
        human_waits=human_waits,
        manual_waits=manual_waits,
        paused=paused,
        ended_failure=ended_failure,
    )


_WORKING_PRIORITY = (Reason.RETRYING, Reason.EXECUTING, Reason.AUTOMATIC_CONTINUATION)


def _state_and_reason(tally: _Tally) -> tuple[State, Reason]:
    for reason in _WORKING_PRIORITY:
        if reason in tally.reasons:
            return State.WORKING, reason
    if tally.stopping_units:
        # Every working unit belongs to a stopping run: nothing independent continues.
        return State.WORKING, Reason.STOPPING
    if tally.manual_waits:
        return State.BLOCKED, Reason.MANUAL_INTERVENTION
    if tally.human_waits:
        return State.BLOCKED, Reason.AWAITING_INPUT
    if tally.paused:
        return State.IDLE, Reason.PAUSED
    return State.IDLE, Reason.QUIESCENT


def _node_prompt(prompt: PromptRecord) -> NodePrompt:
    return NodePrompt(
        id=prompt.prompt_id,
        kind=prompt.kind,
        message=prompt.message,
        choices=prompt.choices,
        created_at=prompt.created_at,
    )


def _graph(runs: Sequence[RunRecord]) -> RootGraph:
    nodes: list[StageNode | ToolNode] = []
    run_prompts: list[RunPrompt] = []
    for run in runs:
        for node in run.nodes.values():
            node_id = nested_id(run.run_id, node.node_id)
            parent_ids = tuple(nested_id(run.run_id, parent) for parent in node.parent_ids)
            if isinstance(node, StageRecord):
                nodes.append(
                    StageNode(
                        id=node_id,
                        run_id=run.run_id,
                        node_id=node.node_id,
                        name=node.name,
                        parent_ids=parent_ids,
                        execution_order=node.execution_order,
                        depth=run.depth,
                        status=node.status,
                        pending_prompt=None if node.prompt is None else _node_prompt(node.prompt),
                    )
                )
            else:
                nodes.append(
                    ToolNode(
                        id=node_id,
                        run_id=run.run_id,
                        node_id=node.node_id,
                        name=node.name,
                        parent_ids=parent_ids,
                        execution_order=node.execution_order,
                        depth=run.depth,
                        status=node.status,
                        ordinal=node.ordinal,
                    )
                )
        run_prompts.extend(
            RunPrompt(
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
    return RootGraph(nodes=tuple(nodes), run_prompts=tuple(run_prompts) or None)


def derive_root(
    runs: Sequence[RunRecord], *, owner_session_id: str, include_graph: bool = False
) -> RootActivity:
    """The summary of one root from the records of its runs: the root first, parents before
    their children (the order :meth:`RunTracker` keeps). A pure function of its arguments."""
    tally = _tally(runs)
    state, reason = _state_and_reason(tally)
    blocks = tally.human_waits + tally.manual_waits
    return RootActivity(
        root_run_id=runs[0].root_run_id,
        owner_session_id=owner_session_id,
        state=state,
        reason=reason,
        active_execution_count=tally.executions,
        actionable_block_count=blocks,
        needs_attention=blocks > 0 or tally.ended_failure,
        graph=_graph(runs) if include_graph else None,
    )
