"""What a run tracker knows, and the pure derivation of a root's summary from it (SPEC §5).

The tracker (``_tracker.py``) records facts in the small mutable records below; :func:`derive_root`
turns the records of one root into its :class:`RootActivity`. Derivation reads nothing else: no
clock, no hub, no history of earlier summaries, so the same facts always give the same summary and
every row of the state table can be tested without a running hub.

The rules, in the order they are applied (``docs/scheduler-guide.md`` tells the same story for
scheduler authors):

* Only *live* runs (an executor owns them now) contribute work. A unit of work is a running stage
  or tool (one active execution each); a ``running`` run with no stages or tools of its own and no
  unfinished child runs (a run that reports no graph is its own unit of work: one execution); or
  an active retry: a stage flagged ``retrying`` that runs, or that waits ``pending`` for its next
  attempt while its run is ``pending``/``running`` with no paused ancestor (nobody starts the next
  attempt in a paused or ended run). :func:`_own_work` is the one place that says so.
* A run whose quit or kill request is in effect is *stopping*, and so is everything nested in it.
  The request is in effect while the run is ``pending``/``running`` or while a unit of work remains
  in it or in a run nested in it.
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


@attrs.frozen
class _OwnWork:
    """The units of work one run has of its own (the work of its nested runs is theirs)."""

    # Running stages and tools: one active execution each.
    running: int = 0
    # Running stages flagged ``retrying`` (already counted in ``running``).
    running_retries: int = 0
    # Stages flagged ``retrying`` that wait, ``pending``, for their next attempt.
    waiting_retries: int = 0
    # A running run with no stages or tools and no unfinished nested run: one execution.
    nodeless: bool = False

    @property
    def executions(self) -> int:
        return self.running + (1 if self.nodeless else 0)

    @property
    def retrying(self) -> bool:
        return bool(self.running_retries or self.waiting_retries)

    @property
    def draining(self) -> bool:
        """Whether anything works in the run itself: this is what keeps a stop in effect."""
        return bool(self.running or self.waiting_retries or self.nodeless)


_NO_WORK = _OwnWork()


def _own_work(run: RunRecord, *, paused_scope: set[str], waits_for_child: set[str]) -> _OwnWork:
    """The one definition of a unit of work, shared by the counts, the reasons and stopping."""
    if not run.live:
        return _NO_WORK  # restored history never works
    # A retry waiting for its next attempt is work only while its run moves on by itself: in a
    # paused run (or one nested in a paused run) or an ended one, nobody starts that attempt.
    retries_advance = run.status in ADVANCING and run.run_id not in paused_scope
    running = running_retries = waiting_retries = 0
    for node in run.nodes.values():
        retried = isinstance(node, StageRecord) and node.retrying
        if node.running:
            running += 1
            if retried:
                running_retries += 1
        elif retried and retries_advance and node.status is StageStatus.PENDING:
            waiting_retries += 1
    nodeless = (
        run.status is RunStatus.RUNNING and not run.nodes and run.run_id not in waits_for_child
    )
    return _OwnWork(
        running=running,
        running_retries=running_retries,
        waiting_retries=waiting_retries,
        nodeless=nodeless,
    )


def _tally(runs: Sequence[RunRecord]) -> _Tally:
    # Runs that are paused or nested in a paused run (parents come before their children). A run
    # in this scope does not continue by itself; work already running still drains.
    paused_scope: set[str] = set()
    for run in runs:
        if run.status is RunStatus.PAUSED or run.parent_run_id in paused_scope:
            paused_scope.add(run.run_id)
    # Runs with an unfinished nested run of their own: what happens is the nested run's story.
    waits_for_child = {
        run.parent_run_id
        for run in runs
        if run.parent_run_id is not None and run.status in UNFINISHED
    }
    work = {
        run.run_id: _own_work(run, paused_scope=paused_scope, waits_for_child=waits_for_child)
        for run in runs
    }
    # Runs with work draining in them or in a run nested in them, in one pass from the leaves up
    # (children come after their parents, so the reversed order meets them first).
    draining: set[str] = set()
    for run in reversed(runs):
        if work[run.run_id].draining or any(child in draining for child in run.children):
            draining.add(run.run_id)
    # A quit or kill is in effect while its run still advances or still drains, and it covers
    # every run nested in it.
    stopping: set[str] = set()
    for run in runs:
        in_effect = run.stop_requested and (run.status in ADVANCING or run.run_id in draining)
        if in_effect or run.parent_run_id in stopping:
            stopping.add(run.run_id)

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
        own = work[run.run_id]
        executions += own.executions
        if run.run_id in stopping:
            if own.draining or run.status in ADVANCING:
                stopping_units += 1
            continue
        if own.retrying:
            reasons.add(Reason.RETRYING)
        if own.running > own.running_retries or own.nodeless:
            reasons.add(Reason.EXECUTING)
        if (
            run.status in ADVANCING
            and not own.draining
            and not own_waits
            and not paused_stage
            and run.run_id not in waits_for_child
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
