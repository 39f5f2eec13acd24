"""The tracker's ledger: every run it tracks, and what a checked fact does to them.

:class:`~._tracker.RunTracker` is the fact API: it checks a fact's arguments and looks its ids
up. A :class:`Ledger` method takes the fact from there: it reads the clock and takes the id of
the fact's lifecycle event first (both are checked, so a fact that raises changes nothing: C1),
then writes what the scheduler said into the records (``_records.py``), has the root's
:class:`~._rootstate.RootState` fold it in, and has the :class:`~._publication.Publication`
publish the event and, when it changed, the root's summary. Heartbeats follow every fact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, TypeVar, final

from .._contract import (
    Attribution,
    ContractError,
    ControlAction,
    FailureDetail,
    Labels,
    PromptKind,
    PromptStatus,
    PromptTarget,
    RunStatus,
    StageStatus,
    Timestamp,
    ToolNodeStatus,
    check_bool,
    check_error,
    check_number,
    check_str,
    enum_check,
)
from ._heartbeat import HeartbeatSchedule
from ._publication import NOT_STARTED, Publication
from ._records import (
    ADVANCING,
    NodeRecord,
    PromptRecord,
    RunRecord,
    StageRecord,
    ToolRecord,
    nested_id,
)
from ._rootstate import RootState

__all__ = ["STAGE", "TOOL", "Ledger", "NodeKind"]

_Node = TypeVar("_Node", bound=StageRecord | ToolRecord)

# What a status fact of each kind of node looks up and checks: its record, its statuses by value
# (a member looks up as its value: the written-out check) and the full check.
NodeKind: TypeAlias = tuple[
    type[StageRecord | ToolRecord],
    dict[str, StageStatus] | dict[str, ToolNodeStatus],
    Callable[[object, str], StageStatus | ToolNodeStatus],
]
STAGE: NodeKind = (
    StageRecord,
    {member.value: member for member in StageStatus},
    enum_check(StageStatus),
)
TOOL: NodeKind = (
    ToolRecord,
    {member.value: member for member in ToolNodeStatus},
    enum_check(ToolNodeStatus),
)
_STATUS_TYPES = frozenset({str, StageStatus, ToolNodeStatus})
check_attribution = enum_check(Attribution)
_STOP_ACTIONS = frozenset({ControlAction.QUIT, ControlAction.KILL})


@final
class Ledger:
    """A tracker's records and what a checked fact does to them.

    ``runs`` holds every run by id, ``roots`` the top-level ones in the order they were added (the
    order of roots in a snapshot), ``states`` each root's :class:`RootState`. ``clock`` is the
    tracker's (epoch milliseconds), ``heartbeats`` its :class:`HeartbeatSchedule`.
    """

    __slots__ = (
        "clock",
        "graph",
        "heartbeats",
        "owner_session_id",
        "publication",
        "roots",
        "runs",
        "states",
    )

    def __init__(
        self,
        publication: Publication,
        *,
        owner_session_id: str,
        clock: Callable[[], float],
        graph: bool,
    ) -> None:
        self.publication = publication
        self.owner_session_id = owner_session_id
        self.clock = clock
        self.graph = graph
        self.runs: dict[str, RunRecord] = {}
        self.roots: dict[str, None] = {}
        self.states: dict[str, RootState] = {}
        self.heartbeats = HeartbeatSchedule(
            emit=publication.heartbeat, clock=self.now, owner_session_id=owner_session_id
        )

    # --- looking up -------------------------------------------------------------------------

    def run(self, run_id: str) -> RunRecord:
        check_str(run_id, "run_id")
        try:
            return self.runs[run_id]
        except KeyError:
            raise KeyError(f"no run {run_id!r} is tracked") from None

    def node(self, run: RunRecord, node_id: str, record: type[_Node]) -> _Node:
        """The stage (``record``: ``StageRecord``) or tool (``ToolRecord``) of ``run``."""
        node = run.nodes.get(check_str(node_id, f"{record.kind}_id"))
        if not isinstance(node, record):
            raise KeyError(f"run {run.run_id!r} has no {record.kind} {node_id!r}")
        return node

    def now(self) -> float:
        """The clock, checked where it is read, before anything changes: a clock that returns a
        bad value raises ContractError and leaves the tracker as it was (C1)."""
        # <copy-source Ledger.now>
        now = self.clock()
        if type(now) is not float or now - now != 0.0:  # not a finite float: the full check
            now = check_number(now, "clock")
        # </copy-source>
        return now

    def subtree(self, run: RunRecord) -> list[RunRecord]:
        """The run and its nested runs, parents before children (:meth:`RootState.subtree`)."""
        return self.states[run.root_run_id].subtree(run)

    # --- runs -------------------------------------------------------------------------------

    def add_run(
        self,
        record: RunRecord,
        parent: RunRecord | None,
        host: StageRecord | None,
        interval: float | None,
        start: Timestamp | None,
    ) -> None:
        """Track ``record``, a new run (nested in ``parent``, started by its stage ``host``)."""
        run_id = record.run_id
        publication = self.publication
        publication.require_started()
        now = self.now()
        event_id = None
        if record.status is not RunStatus.PENDING:
            event_id = publication.event_id(record)
        self.runs[run_id] = record
        if parent is None:
            self.roots[run_id] = None
            self.states[run_id] = RootState(
                run_id, self.runs, owner_session_id=self.owner_session_id, graph=self.graph
            )
            if interval is not None:
                self.heartbeats.watch(run_id, interval, start)
        else:
            parent.children.append(run_id)
        state = self.states[record.root_run_id]
        state.add_run(record)
        if parent is not None and host is not None:
            state.host_changed(parent, host, 1)
        if event_id is not None:
            publication.run_moved(event_id, record, None, record.status, now)
        self.touched(record, now)

    def set_run_status(
        self,
        run: RunRecord,
        new: RunStatus,
        executor_ended: bool,
        error: FailureDetail | None = None,
        by: Attribution | None = None,
    ) -> None:
        publication = self.publication
        publication.require_started()
        previous = run.status
        if new is previous and executor_ended is run.executor_ended:
            return
        now = self.now()
        event_id = None if new is previous else publication.event_id(run)
        run.status = new
        run.executor_ended = executor_ended
        state = self.states[run.root_run_id]
        restarted = new in ADVANCING and previous not in ADVANCING
        if restarted:
            run.acknowledged = False
        if restarted and run.stop_requested:
            run.stop_requested = False
            state.stop_changed(run)
        state.refresh_run(run)
        if event_id is not None:
            publication.run_moved(event_id, run, previous, new, now, error=error, attribution=by)
        self.touched(run, now)

    def set_labels(self, run: RunRecord, labels: Labels | None) -> None:
        self.publication.require_started()
        now = self.now()
        if labels != run.labels:
            run.labels = labels
            self.states[run.root_run_id].labels_changed()
        self.touched(run, now)

    def set_live(self, run: RunRecord, live: bool) -> None:
        self.publication.require_started()
        now = self.now()
        self.states[run.root_run_id].set_live(run, live)
        self.touched(run, now)

    def request_control(
        self, run: RunRecord, requested: ControlAction, by: Attribution | None
    ) -> None:
        publication = self.publication
        publication.require_started()
        now = self.now()
        event_id = publication.event_id(run)
        stop = run.stop_requested
        if requested in _STOP_ACTIONS:
            stop = True
        elif requested is ControlAction.RESUME:
            stop = False
        if stop is not run.stop_requested:
            run.stop_requested = stop
            self.states[run.root_run_id].stop_changed(run)
        if event_id is not None:
            publication.run_moved(
                event_id, run, None, run.status, now, action=requested, attribution=by
            )
        self.touched(run, now)

    def remove_run(self, run: RunRecord) -> None:
        self.publication.require_started()
        now = self.now()
        state = self.states[run.root_run_id]
        doomed = state.subtree(run)
        for member in doomed:
            del self.runs[member.run_id]
        if run.parent_run_id is None:
            del self.roots[run.run_id]
            del self.states[run.run_id]
            self.publication.removed(run.run_id)
            self.heartbeats.forget(run.run_id)
            return
        parent = self.runs[run.parent_run_id]
        parent.children.remove(run.run_id)
        state.drop_runs(doomed)
        if run.host_stage_id is not None:
            state.host_changed(parent, self.node(parent, run.host_stage_id, StageRecord), -1)
        self.touched(parent, now)

    # --- stages and tools -------------------------------------------------------------------

    def add_node(self, run: RunRecord, node: NodeRecord) -> None:
        """Declare ``node`` in ``run``; its parents are looked up here."""
        if node.node_id in run.nodes:
            raise ValueError(f"run {run.run_id!r} already has a stage or tool {node.node_id!r}")
        parents = []
        for parent_id in node.parent_ids:
            if parent_id == node.node_id:
                raise ContractError("parent_ids", f"{parent_id!r} cannot be its own parent")
            parent = run.nodes.get(parent_id)
            if parent is None:
                raise KeyError(f"run {run.run_id!r} has no stage or tool {parent_id!r}")
            parents.append(parent)
        publication = self.publication
        publication.require_started()
        now = self.now()
        event_id = None if node.status == "pending" else publication.event_id(run)
        self.states[run.root_run_id].add_node(run, node, parents)
        if event_id is not None:
            publication.node_moved(event_id, run, node, None, node.status, now, False)
        self.touched(run, now)

    def rename_node(self, run: RunRecord, node: NodeRecord, name: object) -> None:
        """``node`` of ``run`` is called ``name`` now: its graph node follows. The same name
        again changes nothing, and publishes nothing."""
        checked = check_str(name, "name")
        self.publication.require_started()
        now = self.now()
        if checked == node.name:
            return
        node.name = checked
        if self.graph:
            self.states[run.root_run_id].refresh_graph_node(run, node)
        self.touched(run, now)

    def node_status(
        self,
        kind: NodeKind,
        run_id: str,
        node_id: str,
        status: StageStatus | ToolNodeStatus | str,
        replay: bool,
        retrying: bool | None,
        error: object = None,
        attribution: object = None,
    ) -> None:
        """A stage's or tool's status (``retrying`` is a stage's, None for a tool), why it
        failed (``error``, C3) and who changed it (``attribution``), its arguments not checked
        yet.

        The most frequent fact, so the checks take a shortcut for the usual arguments (ids of
        tracked records, a status member or its value, bools): any other argument goes through
        the full check (:meth:`run`, :meth:`node`, the status's ``enum_check``, ``check_bool``),
        which raises what it always raised, in the same order (C1: nothing has changed yet;
        tests/tracker/test_tracker_refusals.py holds the shortcuts to the full checks).
        :meth:`now`, ``Publication.require_started``, ``Publication.event_id`` and
        ``Publication.publish_root`` are written out, generated from their sources
        (``tools/written_out.py``); :meth:`touched` is taken only for a batch or heartbeats."""
        record, statuses, check_status = kind
        run = self.runs.get(run_id) if type(run_id) is str else None
        if run is None:
            run = self.run(run_id)
        node = run.nodes.get(node_id) if type(node_id) is str else None
        if type(node) is not record:
            node = self.node(run, node_id, record)
        new = statuses.get(status) if type(status) in _STATUS_TYPES else None
        if new is None:
            new = check_status(status, "status")
        if retrying is not None and type(retrying) is not bool:
            check_bool(retrying, "retrying")
        if type(replay) is not bool:
            check_bool(replay, "replay")
        if error is not None:
            error = check_error(error, new)
        by = None if attribution is None else check_attribution(attribution, "attribution")
        publication = self.publication
        # <copy-of Publication.require_started self=publication>
        if not publication.started and not publication.hydrating:
            raise RuntimeError(NOT_STARTED)
        publication.publisher._require_hub_thread("a tracker fact")
        # </copy-of>
        # <copy-of Ledger.now>
        now = self.clock()
        if type(now) is not float or now - now != 0.0:  # not a finite float: the full check
            now = check_number(now, "clock")
        # </copy-of>
        previous = node.status
        event_id = None
        if new is not previous and run.live and publication.publishing:
            # <copy-of Publication.event_id self=publication>
            event_id = publication.event_id_factory()
            # Not plain text: the full check.
            if type(event_id) is not str or not event_id.isascii():
                event_id = check_str(event_id, "event_id")
            # </copy-of>
        state = self.states[run.root_run_id]
        node.error = error  # checked above: a FailureDetail or None
        state.node_status(run, node, new, retrying)
        if event_id is not None:
            publication.node_moved(event_id, run, node, previous, new, now, replay, by)
        if publication.batch_depth or run.root_run_id in self.heartbeats.watched:
            self.touched(run, now)
            return
        if not publication.publishing:
            return
        # The usual fact: its summary is a kept one.
        # <copy-of Publication.publish_root self=publication>
        activity = state.summary  # the summary, unless a fact changed it since it was derived
        if activity is None:
            activity = state.activity()
        root_run_id = state.root_run_id
        published = publication.published.get(root_run_id)
        if published is activity:
            return  # the state caches its summary: the same object means nothing changed
        # Two summaries the state keeps are equal only if they are the same object; otherwise
        # compare (an equal graph shares its nodes, so that is cheap too).
        kept = state.kept
        if (
            published is None
            or (id(published) in kept and id(activity) in kept)
            or published != activity
        ):
            publication.published[root_run_id] = activity
            publication.publisher.publish_changed(activity)
        # </copy-of>

    # --- prompts and interventions ------------------------------------------------------------

    def open_prompt(
        self,
        run: RunRecord,
        stage: StageRecord | None,
        prompt_id: str,
        kind: PromptKind,
        message: str,
        choices: tuple[str, ...] | None,
        created_at: Timestamp | None,
    ) -> None:
        """Open a prompt on ``run`` or its ``stage`` (``created_at`` None: now)."""
        if prompt_id in run.prompts:
            raise ValueError(f"prompt {prompt_id!r} of run {run.run_id!r} is already open")
        if stage is not None and stage.prompt is not None:
            raise ValueError(
                f"stage {stage.node_id!r} of run {run.run_id!r} already has open prompt "
                f"{stage.prompt.prompt_id!r}"
            )
        publication = self.publication
        publication.require_started()
        now = self.now()
        prompt = PromptRecord(
            prompt_id=prompt_id,
            kind=kind,
            message=message,
            choices=choices,
            created_at=now if created_at is None else created_at,
            stage_id=None if stage is None else stage.node_id,
        )
        event_id = publication.event_id(run)
        run.prompts[prompt.prompt_id] = prompt
        if stage is not None:
            stage.prompt = prompt
        self.states[run.root_run_id].prompts_changed(run, stage, opened=1)
        self._prompt_event(event_id, run, prompt, PromptStatus.OPENED, now)
        self.touched(run, now)

    def close_prompt(self, run: RunRecord, prompt_id: str, status: PromptStatus) -> None:
        prompt = run.prompts.get(prompt_id)
        if prompt is None:
            raise KeyError(f"run {run.run_id!r} has no open prompt {prompt_id!r}")
        publication = self.publication
        publication.require_started()
        now = self.now()
        event_id = publication.event_id(run)
        del run.prompts[prompt_id]
        stage = None
        if prompt.stage_id is not None:
            found = run.nodes.get(prompt.stage_id)
            if isinstance(found, StageRecord) and found.prompt is prompt:
                found.prompt = None
                stage = found
        self.states[run.root_run_id].prompts_changed(run, stage, opened=-1)
        self._prompt_event(event_id, run, prompt, status, now)
        self.touched(run, now)

    def _prompt_event(
        self,
        event_id: str | None,
        run: RunRecord,
        prompt: PromptRecord,
        status: PromptStatus,
        now: float,
    ) -> None:
        if event_id is not None:
            stage_id = None if prompt.stage_id is None else nested_id(run.run_id, prompt.stage_id)
            target = PromptTarget(
                run_id=run.run_id, stage_id=stage_id, prompt_id=prompt.prompt_id, status=status
            )
            self.publication.lifecycle(event_id, run, target, now)

    def set_intervention(self, run: RunRecord, stage_id: str | None, budget: bool | None) -> None:
        """Require an intervention on ``run`` or its stage (``budget``: whether it is a budget
        stop), or clear it (``budget`` None)."""
        self.publication.require_started()
        interventions = run.interventions
        if budget is None and stage_id not in interventions:
            return
        if budget is not None and interventions.get(stage_id) is budget:
            return
        now = self.now()
        if budget is None:
            del interventions[stage_id]
        else:
            interventions[stage_id] = budget
        self.states[run.root_run_id].refresh_run(run)
        self.touched(run, now)

    def acknowledge_failure(self, run: RunRecord) -> None:
        self.publication.require_started()
        if not run.acknowledged:
            now = self.now()
            run.acknowledged = True
            self.states[run.root_run_id].refresh_run(run)
            self.touched(run, now)

    # --- publishing -------------------------------------------------------------------------

    def touched(self, run: RunRecord, now: float) -> None:
        """A fact on ``run`` is folded in: its root's heartbeats and summary follow."""
        root_run_id = run.root_run_id
        if root_run_id in self.heartbeats.watched:
            root = self.runs[root_run_id]
            self.heartbeats.update(
                root_run_id,
                status=root.status,
                live=root.live,
                publishing=self.publication.publishing,
                now=now,
            )
        self.publication.changed(self.states[root_run_id])

    def publish_ready(self) -> None:
        """A full ``ready`` snapshot of every root, in the order added."""
        now = self.now()
        states = self.states
        self.publication.ready(states[root_id] for root_id in self.roots)
        self.refresh_heartbeats(now)

    def refresh_heartbeats(self, now: float) -> None:
        publishing = self.publication.publishing
        for root_id in self.roots:
            root = self.runs[root_id]
            self.heartbeats.update(
                root_id, status=root.status, live=root.live, publishing=publishing, now=now
            )
