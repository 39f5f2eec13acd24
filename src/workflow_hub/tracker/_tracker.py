"""The run tracker: a scheduler reports facts, the tracker derives and publishes root activity.

A scheduler that embeds the hub should not compute :class:`RootActivity` by hand. It tells a
:class:`RunTracker` what happens (a run was added, a stage started, a prompt opened, a kill was
requested ...) and the tracker keeps the records, keeps each root's summary by SPEC §5's rules D1-D8
up to date fact by fact (``_rootstate.py``; ``_derive.py`` is the readable definition it must
equal), and publishes through a :class:`WorkflowActivityPublisher`:

* a ``changed`` frame only when a root's summary really changed, ``removed`` when a root goes away;
* lifecycle events only for live runs and only on a real status change (control requests always);
* an initial ``ready`` snapshot from :meth:`RunTracker.start`, and ``recovering`` then a full
  ``ready`` snapshot around :meth:`RunTracker.hydrating`, during which nothing is published one
  change at a time and no lifecycle event is synthesised.

Every method validates all of its arguments, looks up every id, reads the clock and builds its
lifecycle event (so the clock's value and the ``event_id_factory``'s id are checked too) before it
changes anything, so a call that raises leaves the tracker exactly as it was (C1). Runs nest to any
depth: nothing walks them recursively. The tracker is not thread-safe: call it from the hub's trio
thread (other threads use ``ThreadPublisher.call_soon``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, final

import attrs
import trio

from .._contract import (
    Attribution,
    Availability,
    ContractError,
    ControlAction,
    Delivery,
    HeartbeatEvent,
    LifecycleInput,
    LifecycleTarget,
    PromptKind,
    PromptStatus,
    PromptTarget,
    RootActivity,
    RunStatus,
    RunTarget,
    StageStatus,
    StageTarget,
    Timestamp,
    ToolNodeStatus,
    ToolTarget,
    check_bool,
    check_count,
    check_number,
    check_str,
    enum_check,
    instance_check,
    optional,
    tuple_check,
    unchecked_builder,
)
from .._core import WorkflowActivityPublisher
from ._heartbeat import HeartbeatSchedule, check_interval
from ._records import (
    ADVANCING,
    DONE_STAGE,
    DONE_TOOL,
    NodeRecord,
    PromptRecord,
    RunRecord,
    StageRecord,
    ToolRecord,
    nested_id,
)
from ._rootstate import (
    PENDING_TOOL_COUNTS,
    PLAIN_PENDING_STAGE_COUNTS,
    PLAIN_STAGE_COUNTS,
    TOOL_COUNTS,
    RootState,
    node_counts,
    refresh_run_prompts,
    run_counts,
)

__all__ = ["RunTracker", "run_heartbeats"]

# Built from values checked when they were reported, without validating again (issue 29).


def _slot_stores(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...]:
    # The slot store of each attrs field, in field order: what unchecked_builder's function
    # calls, for a path that builds the value written out (tests/tracker: the targets a
    # tracker emits equal the constructor's).
    return tuple(cls.__dict__[field.name].__set__ for field in attrs.fields(cls))


_new = object.__new__
(
    _stage_run_id,
    _stage_stage_id,
    _stage_stage_name,
    _stage_previous_status,
    _stage_status,
) = _slot_stores(StageTarget)
(
    _tool_run_id,
    _tool_tool_node_id,
    _tool_tool_name,
    _tool_previous_status,
    _tool_status,
) = _slot_stores(ToolTarget)
_build_LifecycleInput = unchecked_builder(LifecycleInput)

# The statuses a fact names, by value (a member looks up as its value): the written-out checks.
_STAGE_STATUSES: dict[str, StageStatus] = {member.value: member for member in StageStatus}
_TOOL_STATUSES: dict[str, ToolNodeStatus] = {member.value: member for member in ToolNodeStatus}
_STATUS_TYPES = frozenset({str, StageStatus, ToolNodeStatus})
# A node's ``done`` (D6) by its status, whatever its kind: no stage status is a tool's "cached".
_DONE = DONE_STAGE | DONE_TOOL

_check_run_status = enum_check(RunStatus)
_check_stage_status = enum_check(StageStatus)
_check_tool_status = enum_check(ToolNodeStatus)
_check_action = enum_check(ControlAction)
_check_attribution = optional(enum_check(Attribution))
_check_prompt_kind = enum_check(PromptKind)
_check_ids = tuple_check(check_str)
_check_choices = optional(tuple_check(check_str))
_check_interval = optional(check_interval)
_check_timestamp = optional(check_number)
_check_publisher = instance_check(WorkflowActivityPublisher)

_STOP_ACTIONS = frozenset({ControlAction.QUIT, ControlAction.KILL})
_LIVE = Delivery.LIVE
_REPLAY = Delivery.REPLAY

_NOT_STARTED = (
    "the tracker has not published its first snapshot: call tracker.start(), "
    "or restore state inside `with tracker.hydrating():`, before reporting changes"
)


def _wall_clock_ms() -> float:
    return time.time() * 1000


# The hex digit at a uuid4's variant position, from the random digit it replaces: its top two
# bits become 10 (RFC 4122), its low two stay random.
_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def _uuid4() -> str:
    """``str(uuid.uuid4())``, written out: the same 122 random bits from ``os.urandom`` and the
    same text, without building a ``UUID`` (a third of the cost; every lifecycle event pays it)."""
    digits = os.urandom(16).hex()
    return (
        f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-"
        f"{_VARIANT_DIGIT[digits[16]]}{digits[17:20]}-{digits[20:]}"
    )


def _node_target(
    run: RunRecord,
    node: NodeRecord,
    status: StageStatus | ToolNodeStatus,
    previous: StageStatus | ToolNodeStatus | None,
) -> StageTarget | ToolTarget:
    # Every field was checked when it was reported (ids and names) or is the tracker's own enum
    # member of the node's kind: the target is built without validating again (issue 29), with
    # the builder's slot stores written out (as the hub's publish paths are), from the node's
    # canonical id kept since it was declared.
    if type(node) is StageRecord:
        target = _new(StageTarget)
        _stage_run_id(target, run.run_id)
        _stage_stage_id(target, node.nested)
        _stage_stage_name(target, node.name)
        _stage_previous_status(target, previous)
        _stage_status(target, status)
        return target
    tool = _new(ToolTarget)
    _tool_run_id(tool, run.run_id)
    _tool_tool_node_id(tool, node.nested)
    _tool_tool_name(tool, node.name)
    _tool_previous_status(tool, previous)
    _tool_status(tool, status)
    return tool


def _check_callable(value: object, path: str) -> None:
    if not callable(value):
        raise ContractError(path, f"expected a callable, got {type(value).__name__}")


@final
class RunTracker:
    """Derives every root's :class:`RootActivity` from facts a scheduler reports, and publishes it.

    ``publisher`` is the scheduler's publisher (``hub.register_publisher()``). ``owner_session_id``
    goes into every root and event. ``clock`` returns the time in epoch milliseconds (default: the
    wall clock); it stamps lifecycle events, prompts and run starts, and heartbeats are scheduled
    by it. ``event_id_factory`` makes a fresh id for every lifecycle event (default: a uuid4).
    With ``include_graph``, every root carries a :class:`RootGraph` of its stages, tools and
    prompts.

    Call :meth:`start` (or restore state inside :meth:`hydrating`) before reporting anything:
    the first ready snapshot is what makes the source's roots known.
    """

    __slots__ = (
        "_batch_depth",
        "_clock",
        "_dirty",
        "_event_id_factory",
        "_heartbeats",
        "_hydrating",
        "_include_graph",
        "_next_execution_order",
        "_owner_session_id",
        "_published",
        "_publisher",
        "_root_states",
        "_roots",
        "_runs",
        "_started",
    )

    def __init__(
        self,
        publisher: WorkflowActivityPublisher,
        *,
        owner_session_id: str,
        clock: Callable[[], float] | None = None,
        event_id_factory: Callable[[], str] | None = None,
        include_graph: bool = False,
    ) -> None:
        self._publisher = _check_publisher(publisher, "publisher")
        self._owner_session_id = check_str(owner_session_id, "owner_session_id")
        if clock is not None:
            _check_callable(clock, "clock")
        if event_id_factory is not None:
            _check_callable(event_id_factory, "event_id_factory")
        self._clock: Callable[[], float] = clock or _wall_clock_ms
        self._event_id_factory: Callable[[], str] = event_id_factory or _uuid4
        self._include_graph = check_bool(include_graph, "include_graph")
        self._runs: dict[str, RunRecord] = {}
        # Top-level runs, in the order they were added: the order of roots in a snapshot.
        self._roots: dict[str, None] = {}
        self._published: dict[str, RootActivity] = {}
        self._next_execution_order: dict[str, int] = {}
        self._started = False
        self._hydrating = False
        self._batch_depth = 0
        self._dirty: dict[str, None] = {}
        self._root_states: dict[str, RootState] = {}
        self._heartbeats = HeartbeatSchedule(
            emit=self._publish_heartbeat, clock=self._now, owner_session_id=owner_session_id
        )

    # --- reading ---------------------------------------------------------------------------

    @property
    def publisher(self) -> WorkflowActivityPublisher:
        return self._publisher

    @property
    def owner_session_id(self) -> str:
        return self._owner_session_id

    @property
    def started(self) -> bool:
        """True once :meth:`start` or a :meth:`hydrating` block has published a ready snapshot."""
        return self._started

    @property
    def is_hydrating(self) -> bool:
        return self._hydrating

    def now(self) -> float:
        """The tracker's clock, in epoch milliseconds."""
        return self._now()

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs

    def activity(self, root_run_id: str) -> RootActivity:
        """The summary of one root as derived from the current facts (published or not)."""
        run = self._run(root_run_id)
        if run.parent_run_id is not None:
            raise KeyError(f"run {root_run_id!r} is nested in {run.parent_run_id!r}, not a root")
        return self._derive(root_run_id)

    def activities(self) -> tuple[RootActivity, ...]:
        """Every root's current summary, in the order the roots were added."""
        return tuple(self._derive(root_id) for root_id in self._roots)

    def run_status(self, run_id: str) -> RunStatus:
        return self._run(run_id).status

    # --- publication framing ---------------------------------------------------------------

    def start(self) -> None:
        """Publish a full ``ready`` snapshot of every root (P3) and begin publishing changes.

        Calling it again republishes the full snapshot (a snapshot replaces all prior knowledge).
        """
        if self._hydrating:
            raise RuntimeError("start() inside hydrating(): the snapshot is published on exit")
        self._publish_ready()

    @contextmanager
    def hydrating(self) -> Iterator[None]:
        """Restore state: publish ``recovering`` now and a full ``ready`` snapshot on exit.

        Inside the block, report facts as usual (typically restored runs with ``live=False``).
        Nothing is published one change at a time and no lifecycle event is synthesised: recovery
        is not a change. If the block raises, the source is published ``unavailable`` (its
        activity is not known) and the exception propagates; the facts recorded so far are kept,
        so a later :meth:`start` or :meth:`hydrating` can still publish them.
        """
        if self._hydrating:
            raise RuntimeError("hydrating() blocks do not nest")
        now = self._now()
        self._hydrating = True
        self._dirty.clear()
        self._refresh_heartbeats(now)
        self._publisher.publish_snapshot(Availability.RECOVERING)
        try:
            yield
        except BaseException:
            self._hydrating = False
            self._started = False
            self._published.clear()
            self._publisher.publish_snapshot(Availability.UNAVAILABLE)
            self._refresh_heartbeats(now)  # nothing is eligible while not started
            raise
        self._hydrating = False
        self._publish_ready()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Report several facts and publish each changed root once, when the block ends.

        Lifecycle events are still emitted as each fact is reported; only the ``changed`` frames
        wait, so observers never see the half-way summaries in between. Blocks may nest: the
        outermost one publishes. Inside :meth:`hydrating` it does nothing more.
        """
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0:
                self._flush()

    # --- runs ------------------------------------------------------------------------------

    def add_run(
        self,
        run_id: str,
        *,
        parent_run_id: str | None = None,
        host_stage_id: str | None = None,
        live: bool = True,
        status: RunStatus | str = RunStatus.PENDING,
        executor_ended: bool = False,
        heartbeat_interval_minutes: float | None = None,
        started_at: Timestamp | None = None,
    ) -> None:
        """Track a new run: a root, or (``parent_run_id``) a run nested in an existing one.

        A nested run belongs to its parent's root. ``host_stage_id`` names the stage of the parent
        run that started it (that stage is then no execution of its own: the nested run's stages
        and tools are). ``live`` says whether this scheduler's executor owns the run now (restored
        history is ``live=False``; see :meth:`take_ownership`). ``executor_ended`` is as for
        :meth:`set_run_status`. ``heartbeat_interval_minutes`` (at least one millisecond) makes a
        running top-level run beat at ``started_at + n * interval``; ``started_at`` defaults to the
        moment the run is first seen running. A run added in a status other than ``pending``
        emits its run event (without a previous status).
        """
        check_str(run_id, "run_id")
        check_bool(live, "live")
        run_status = _check_run_status(status, "status")
        check_bool(executor_ended, "executor_ended")
        interval = _check_interval(heartbeat_interval_minutes, "heartbeat_interval_minutes")
        start = _check_timestamp(started_at, "started_at")
        if run_id in self._runs:
            raise ValueError(f"run {run_id!r} is already tracked")
        parent = None
        host = None
        if parent_run_id is not None:
            parent = self._run(check_str(parent_run_id, "parent_run_id"))
        if host_stage_id is not None:
            if parent is None:
                raise ContractError("host_stage_id", "only a nested run has a host stage")
            host = self._stage(parent, check_str(host_stage_id, "host_stage_id"))
        self._require_started()

        now = self._now()
        record = RunRecord(
            run_id=run_id,
            root_run_id=run_id if parent is None else parent.root_run_id,
            parent_run_id=parent_run_id,
            host_stage_id=host_stage_id,
            depth=0 if parent is None else parent.depth + 1,
            live=live,
            status=run_status,
            executor_ended=executor_ended,
            stopping=parent is not None and parent.stopping,
        )
        event = None
        if run_status is not RunStatus.PENDING:
            event = self._event(record, RunTarget(run_id=run_id, status=run_status), now)
        self._runs[run_id] = record
        if parent is None:
            self._roots[run_id] = None
            self._root_states[run_id] = RootState(run_id)
            if interval is not None:
                self._heartbeats.watch(run_id, interval, start)
        else:
            parent.children.append(run_id)
        state = self._root_states[record.root_run_id]
        state.add_run(record)
        if parent is not None and host is not None:
            host.hosted += 1
            state.refresh_node(parent, host, graph=False)
        self._emit(event)
        self._touched(record, now)

    def set_run_status(
        self, run_id: str, status: RunStatus | str, *, executor_ended: bool = False
    ) -> None:
        """Record a run's new status; a live run emits a run event with its previous status.

        ``executor_ended=True`` says the executor has finished with the run: a ``failed`` or
        ``blocked`` run then is a *settled* failure (it needs attention, but nobody can act on
        it), where without it the failure is *active*: the executor waits for an intervention
        (``blocked / manual_intervention``). The flag holds until the next call; reporting the same
        status with another flag changes the flag and emits nothing.

        A run that comes back to ``pending``/``running`` from any other status starts afresh: an
        earlier quit or kill request and an acknowledged failure no longer apply to it.
        """
        run = self._run(run_id)
        new = _check_run_status(status, "status")
        check_bool(executor_ended, "executor_ended")
        self._require_started()
        previous = run.status
        if new is previous and executor_ended is run.executor_ended:
            return
        now = self._now()
        event = None
        if new is not previous:
            event = self._event(
                run, RunTarget(run_id=run_id, previous_status=previous, status=new), now
            )
        run.status = new
        run.executor_ended = executor_ended
        restarted = new in ADVANCING and previous not in ADVANCING
        if restarted:
            run.acknowledged = False
        if restarted and run.stop_requested:
            run.stop_requested = False
            self._restop(run)
        self._root_states[run.root_run_id].refresh_run(run)
        self._emit(event)
        self._touched(run, now)

    def take_ownership(self, run_id: str) -> None:
        """This scheduler's executor now owns the run and its nested runs: they are live.

        Ownership is not a status change and emits nothing; from now on the runs' work counts as
        executing and their changes emit lifecycle events.
        """
        self._set_live(run_id, True)

    def release_ownership(self, run_id: str) -> None:
        """The run and its nested runs are history now: they never work and never emit events."""
        self._set_live(run_id, False)

    def request_control(
        self,
        run_id: str,
        action: ControlAction | str,
        *,
        attribution: Attribution | str | None = None,
    ) -> None:
        """Record a control request (quit, kill, pause, resume) and emit it as a run event.

        The event describes the *request*: its status is the run's current status and its
        ``action`` the request, whatever the outcome will be; it is emitted for every request on a
        live run, even one whose run has already ended (an already-aborted caller still emits
        ``kill``). Quit and kill make the run *stopping* while its work drains; report the outcome
        with :meth:`set_run_status`. Resume cancels a pending quit or kill; pause changes nothing
        until the run reports ``paused``.
        """
        run = self._run(run_id)
        requested = _check_action(action, "action")
        by = _check_attribution(attribution, "attribution")
        self._require_started()
        now = self._now()
        target = RunTarget(run_id=run_id, status=run.status, action=requested)
        event = self._event(run, target, now, attribution=by)
        stop = run.stop_requested
        if requested in _STOP_ACTIONS:
            stop = True
        elif requested is ControlAction.RESUME:
            stop = False
        if stop is not run.stop_requested:
            run.stop_requested = stop
            self._restop(run)
        self._emit(event)
        self._touched(run, now)

    def remove_run(self, run_id: str) -> None:
        """Forget a run and everything nested in it. Removing a root publishes ``removed``."""
        run = self._run(run_id)
        self._require_started()
        now = self._now()
        doomed = self._subtree(run)
        for member in doomed:
            del self._runs[member.run_id]
        if run.parent_run_id is None:
            del self._roots[run_id]
            del self._root_states[run_id]
            self._next_execution_order.pop(run_id, None)
            self._dirty.pop(run_id, None)
            if self._publishing and self._published.pop(run_id, None) is not None:
                self._publisher.publish_removed(run_id)
            self._heartbeats.forget(run_id)
            return
        parent = self._runs[run.parent_run_id]
        parent.children.remove(run_id)
        state = self._root_states[run.root_run_id]
        state.drop_runs(doomed)
        if run.host_stage_id is not None:
            host = self._stage(parent, run.host_stage_id)
            host.hosted -= 1
            state.refresh_node(parent, host, graph=False)
        self._touched(parent, now)

    # --- stages and tools ------------------------------------------------------------------

    def add_stage(
        self,
        run_id: str,
        stage_id: str,
        name: str,
        *,
        parent_ids: Iterable[str] = (),
        status: StageStatus | str = StageStatus.PENDING,
    ) -> None:
        """Declare a stage of a run. ``parent_ids`` are ids of stages or tools of the same run,
        declared before it (an unknown id raises ``KeyError``; the stage's own id is refused).

        Its canonical id is ``"{run_id}:{stage_id}"``. A stage added in a status other than
        ``pending`` emits its stage event (without a previous status).
        """
        run = self._run(run_id)
        node = StageRecord(
            node_id=check_str(stage_id, "stage_id"),
            name=check_str(name, "name"),
            parent_ids=_check_ids(parent_ids, "parent_ids"),
            status=_check_stage_status(status, "status"),
        )
        self._add_node(run, node)

    def add_tool(
        self,
        run_id: str,
        tool_id: str,
        name: str,
        *,
        parent_ids: Iterable[str] = (),
        ordinal: int = 0,
        status: ToolNodeStatus | str = ToolNodeStatus.PENDING,
    ) -> None:
        """Declare a tool node of a run (``ordinal`` orders tools that share a parent).

        ``parent_ids`` are as for :meth:`add_stage`.
        """
        run = self._run(run_id)
        node = ToolRecord(
            node_id=check_str(tool_id, "tool_id"),
            name=check_str(name, "name"),
            parent_ids=_check_ids(parent_ids, "parent_ids"),
            status=_check_tool_status(status, "status"),
            ordinal=check_count(ordinal, "ordinal"),
        )
        self._add_node(run, node)

    def set_stage_status(
        self,
        run_id: str,
        stage_id: str,
        status: StageStatus | str,
        *,
        retrying: bool = False,
        replay: bool = False,
    ) -> None:
        """Record a stage's status; a live run emits a stage event when the status changed.

        ``retrying=True`` marks the stage as being retried: while its run is live and the stage
        does not wait for a human (no open prompt, not ``awaiting_input``), the root works with
        reason ``retrying``, whatever the stage's or the run's status (D5: the executor says it
        retries, so a retry waiting ``pending`` in a paused or ended run is still retrying). It
        is independent continuation unless the run is stopping. The flag holds until the next
        call.
        ``replay=True`` says an explicit continuation is re-running the stage: its event has
        ``delivery: replay``.
        """
        # The hottest call of a tracker, so the checks are written out for the usual arguments
        # (ids of tracked records, a status member or its value, bools, a finite clock); any
        # other argument goes through the full check, which raises what it always raised, in
        # the same order (C1: nothing has changed yet).
        run = self._runs.get(run_id) if type(run_id) is str else None
        if run is None:
            run = self._run(run_id)
        stage = run.nodes.get(stage_id) if type(stage_id) is str else None
        if type(stage) is not StageRecord:
            stage = self._stage(run, stage_id)
        new = _STAGE_STATUSES.get(status) if type(status) in _STATUS_TYPES else None
        if new is None:
            new = _check_stage_status(status, "status")
        if type(retrying) is not bool:
            check_bool(retrying, "retrying")
        if type(replay) is not bool:
            check_bool(replay, "replay")
        self._node_fact(run, stage, new, replay, retrying)

    def set_tool_status(
        self,
        run_id: str,
        tool_id: str,
        status: ToolNodeStatus | str,
        *,
        replay: bool = False,
    ) -> None:
        """Record a tool's status; a live run emits a tool event when the status changed."""
        # Written out as set_stage_status is.
        run = self._runs.get(run_id) if type(run_id) is str else None
        if run is None:
            run = self._run(run_id)
        tool = run.nodes.get(tool_id) if type(tool_id) is str else None
        if type(tool) is not ToolRecord:
            tool = self._tool(run, tool_id)
        new = _TOOL_STATUSES.get(status) if type(status) in _STATUS_TYPES else None
        if new is None:
            new = _check_tool_status(status, "status")
        if type(replay) is not bool:
            check_bool(replay, "replay")
        self._node_fact(run, tool, new, replay, None)

    # --- prompts and interventions ---------------------------------------------------------

    def open_prompt(
        self,
        run_id: str,
        prompt_id: str,
        kind: PromptKind | str,
        message: str,
        *,
        stage_id: str | None = None,
        choices: Iterable[str] | None = None,
        created_at: Timestamp | None = None,
    ) -> None:
        """A question now waits for a human, on the run or on one of its stages.

        Each open prompt is a human wait (``actionable_block_count``). A stage holds at most one
        open prompt. ``created_at`` defaults to now; pass the original time when restoring.
        """
        run = self._run(run_id)
        check_str(prompt_id, "prompt_id")
        prompt_kind = _check_prompt_kind(kind, "kind")
        check_str(message, "message")
        stage = None
        if stage_id is not None:
            stage = self._stage(run, stage_id)
        options = _check_choices(choices, "choices")
        created = _check_timestamp(created_at, "created_at")
        if prompt_id in run.prompts:
            raise ValueError(f"prompt {prompt_id!r} of run {run_id!r} is already open")
        if stage is not None and stage.prompt is not None:
            raise ValueError(
                f"stage {stage_id!r} of run {run_id!r} already has open prompt "
                f"{stage.prompt.prompt_id!r}"
            )
        self._require_started()
        now = self._now()
        prompt = PromptRecord(
            prompt_id=prompt_id,
            kind=prompt_kind,
            message=message,
            choices=options,
            created_at=now if created is None else created,
            stage_id=stage_id,
        )
        event = self._prompt_event(run, prompt, PromptStatus.OPENED, now)
        run.prompts[prompt_id] = prompt
        if stage is not None:
            stage.prompt = prompt
        self._prompts_changed(run, stage, opened=1)
        self._emit(event)
        self._touched(run, now)

    def answer_prompt(self, run_id: str, prompt_id: str) -> None:
        """The human answered: the prompt closes (``answered``)."""
        self._close_prompt(run_id, prompt_id, PromptStatus.ANSWERED)

    def cancel_prompt(self, run_id: str, prompt_id: str) -> None:
        """The question was withdrawn: the prompt closes (``cancelled``)."""
        self._close_prompt(run_id, prompt_id, PromptStatus.CANCELLED)

    def require_intervention(
        self, run_id: str, *, stage_id: str | None = None, budget_stop: bool = False
    ) -> None:
        """An active failure needs intervention, or (``budget_stop=True``) a budget stop needs
        approval, on the run or one of its stages.

        A run with at least one is a manual wait while its executor is there; once the run
        ended (``executor_ended``) it is a settled failure instead, except a budget stop, which
        keeps needing approval. Requiring the same (run, stage) again updates ``budget_stop``.
        Emits no lifecycle event (report stage or run statuses for that).
        """
        run = self._run(run_id)
        if stage_id is not None:
            self._stage(run, stage_id)
        check_bool(budget_stop, "budget_stop")
        self._require_started()
        if run.interventions.get(stage_id) is not budget_stop:
            now = self._now()
            run.interventions[stage_id] = budget_stop
            self._root_states[run.root_run_id].refresh_run(run)
            self._touched(run, now)

    def clear_intervention(self, run_id: str, *, stage_id: str | None = None) -> None:
        """The intervention or approval is no longer needed. Clearing an absent one is allowed."""
        run = self._run(run_id)
        if stage_id is not None:
            self._stage(run, stage_id)
        self._require_started()
        if stage_id in run.interventions:
            now = self._now()
            del run.interventions[stage_id]
            self._root_states[run.root_run_id].refresh_run(run)
            self._touched(run, now)

    def acknowledge_failure(self, run_id: str) -> None:
        """Someone has seen the run's failure: it no longer needs attention or intervention.

        An acknowledged run counts neither as a manual wait nor as a settled failure (its open
        prompts still count as human waits). The acknowledgement holds until the run starts
        afresh (comes back to ``pending``/``running`` from another status). Emits nothing.
        """
        run = self._run(run_id)
        self._require_started()
        if not run.acknowledged:
            now = self._now()
            run.acknowledged = True
            self._root_states[run.root_run_id].refresh_run(run)
            self._touched(run, now)

    def replace_publisher(self, publisher: WorkflowActivityPublisher) -> None:
        """Publish through ``publisher`` from now on: the way to follow a reload.

        When the hub is replaced (``HookRunner.retire()`` and a new hub, or another
        ``register_publisher()``), the old publisher is fenced and every call on it only
        records ``PublisherFenced``. Hand the tracker the new generation's publisher: it
        publishes what the new hub must know at once (a full ``ready`` snapshot, or
        ``recovering`` inside :meth:`hydrating`; nothing before the first :meth:`start`), and
        every later fact goes there. Heartbeats follow too.
        """
        checked = _check_publisher(publisher, "publisher")
        self._publisher = checked
        if self._hydrating:
            checked.publish_snapshot(Availability.RECOVERING)
        elif self._started:
            self._publish_ready()

    # --- heartbeats ------------------------------------------------------------------------

    async def run_heartbeats(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Emit heartbeats until cancelled: ``await nursery.start(tracker.run_heartbeats)``.

        See :func:`workflow_hub.run_heartbeats`.
        """
        await self._heartbeats.run(task_status=task_status)

    # --- internals -------------------------------------------------------------------------

    @property
    def _publishing(self) -> bool:
        return self._started and not self._hydrating

    def _require_started(self) -> None:
        if not self._started and not self._hydrating:
            raise RuntimeError(_NOT_STARTED)

    def _run(self, run_id: str) -> RunRecord:
        check_str(run_id, "run_id")
        try:
            return self._runs[run_id]
        except KeyError:
            raise KeyError(f"no run {run_id!r} is tracked") from None

    def _stage(self, run: RunRecord, stage_id: str) -> StageRecord:
        node = run.nodes.get(check_str(stage_id, "stage_id"))
        if not isinstance(node, StageRecord):
            raise KeyError(f"run {run.run_id!r} has no stage {stage_id!r}")
        return node

    def _tool(self, run: RunRecord, tool_id: str) -> ToolRecord:
        node = run.nodes.get(check_str(tool_id, "tool_id"))
        if not isinstance(node, ToolRecord):
            raise KeyError(f"run {run.run_id!r} has no tool {tool_id!r}")
        return node

    def _now(self) -> float:
        # Checked where it is read, before anything changes: a clock that returns a bad value
        # raises ContractError and leaves the tracker as it was (C1).
        return check_number(self._clock(), "clock")

    def _subtree(self, run: RunRecord) -> list[RunRecord]:
        """The run and its nested runs, depth first, parents before children, in the order added.

        A loop rather than recursion, so nesting depth is limited by memory, not the stack.
        """
        found: list[RunRecord] = []
        stack = [run.run_id]
        while stack:
            member = self._runs[stack.pop()]
            found.append(member)
            stack.extend(reversed(member.children))
        return found

    def _derive(self, root_run_id: str) -> RootActivity:
        return self._root_states[root_run_id].activity(
            self._runs, self._owner_session_id, include_graph=self._include_graph
        )

    def _restop(self, run: RunRecord) -> None:
        """D1: the run's stop request changed; so may the stopping of every run nested in it."""
        state = self._root_states[run.root_run_id]
        for member in self._subtree(run):
            parent = None if member.parent_run_id is None else self._runs[member.parent_run_id]
            stopping = member.stop_requested or (parent is not None and parent.stopping)
            if stopping is not member.stopping:
                member.stopping = stopping
                state.refresh_run(member)

    def _set_live(self, run_id: str, live: bool) -> None:
        run = self._run(run_id)
        self._require_started()
        now = self._now()
        state = self._root_states[run.root_run_id]
        for member in self._subtree(run):
            if member.live is not live:
                member.live = live
                state.refresh_run(member)
        self._touched(run, now)

    def _add_node(self, run: RunRecord, node: NodeRecord) -> None:
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
        self._require_started()
        now = self._now()
        node.nested = nested_id(run.run_id, node.node_id)
        started = node.status != "pending"
        event = (
            self._event(run, _node_target(run, node, node.status, None), now) if started else None
        )
        run.nodes[node.node_id] = node
        for parent in parents:
            parent.dependents.append(node)
            if not parent.done:
                node.unmet_parents += 1
        if started:
            self._order(run, node)
        self._root_states[run.root_run_id].add_node(run, node, graph=self._include_graph)
        self._emit(event)
        self._touched(run, now)

    def _node_fact(
        self,
        run: RunRecord,
        node: NodeRecord,
        status: StageStatus | ToolNodeStatus,
        replay: bool,
        retrying: bool | None,
    ) -> None:
        """A node's fact, its arguments checked (``retrying`` is a stage's, None for a tool).

        Everything that can raise (a tracker not started, the clock, the event id) comes
        first, so a fact that raises changes nothing (C1); then the node, its dependents, its
        counts, the event and the root, in that order."""
        if not self._started and not self._hydrating:
            raise RuntimeError(_NOT_STARTED)
        now = self._clock()
        if type(now) is not float or now - now != 0.0:  # not a finite float: the full check
            now = check_number(now, "clock")
        previous = node.status
        publishing = self._started and not self._hydrating
        event_id = None
        if status is not previous and run.live and publishing:
            event_id = self._event_id_factory()
            if type(event_id) is not str or not event_id.isascii():
                event_id = check_str(event_id, "event_id")
        was_done = previous in _DONE
        node.status = status
        if retrying is not None:
            node.retrying = retrying  # type: ignore[union-attr]  # a stage: only stages retry
        root_run_id = run.root_run_id
        if node.execution_order is None and status != "pending":
            # _order, written out: the order in which it first left pending, per root.
            order = node.execution_order = self._next_execution_order.get(root_run_id, 0)
            self._next_execution_order[root_run_id] = order + 1
        state = self._root_states[root_run_id]
        # RootState.refresh_node of the node and of its dependents, written out for the counts,
        # and its refresh_run once for all of them (a run's counts are a function of its nodes'
        # sums and its flags: folding them once after every node is folding them after each).
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
                    if counts != dependent.counts:
                        run.node_counts += counts - dependent.counts
                        dependent.counts = counts
                        changed = True
        # node_counts(node), looked up for a plain stage (no prompt, hosted run or retry) or a
        # tool that is not pending: the usual fact.
        own = None
        if type(node) is StageRecord:
            if node.prompt is None and not node.retrying and not node.hosted:
                own = PLAIN_STAGE_COUNTS.get(status)
        else:
            own = TOOL_COUNTS.get(status)
        counts = node_counts(node) if own is None else own
        if counts != node.counts:
            run.node_counts += counts - node.counts
            node.counts = counts
            changed = True
        if changed:
            # RootState.refresh_run, written out.
            counts = run_counts(run)
            if counts != run.counts:
                state._totals += counts - run.counts
                run.counts = counts
                state.summary = None
        include_graph = self._include_graph
        if include_graph:
            state.refresh_graph_node(run, node)
        if event_id is not None:
            # The move's target (_node_target written out): checked values only, nothing can
            # raise past this point. A target is built per event, not kept per node and move: a
            # workflow that runs each stage once makes every move once, and a kept target (a
            # dict per node) costs memory a fact reads (issue 29, fifth pass).
            if retrying is not None:  # a stage
                target: StageTarget | ToolTarget = _new(StageTarget)
                _stage_run_id(target, run.run_id)
                _stage_stage_id(target, node.nested)
                _stage_stage_name(target, node.name)
                _stage_previous_status(target, previous)
                _stage_status(target, status)
            else:
                target = _new(ToolTarget)
                _tool_run_id(target, run.run_id)
                _tool_tool_node_id(target, node.nested)
                _tool_tool_name(target, node.name)
                _tool_previous_status(target, previous)
                _tool_status(target, status)
            # publish_lifecycle of the event's LifecycleInput, without building that value: every
            # field is a checked value (docs/decisions.md, "A private entry for the tracker's
            # lifecycle events").
            self._publisher._publish_checked_lifecycle(
                event_id,
                run.run_id,
                root_run_id,
                self._owner_session_id,
                now,
                now,
                _REPLAY if replay else _LIVE,
                target,
                None,
            )
        if root_run_id in self._heartbeats.watched or self._batch_depth:
            self._touched(run, now)
            return
        if not publishing:
            return
        # _publish_root, written out; without a graph the kept summary of the root's totals is
        # looked up here (RootState.activity's first step).
        activity = state.summary
        # Whether the summary is one the state keeps (one object per value), known when it was
        # just looked up among them.
        kept_activity = False
        if activity is None:
            if not include_graph and state._summaries_owner == self._owner_session_id:
                activity = state._summaries.get(state._totals)  # RootState.activity's look-up
                state.summary = activity
                kept_activity = activity is not None
            if activity is None:
                activity = state.activity(
                    self._runs, self._owner_session_id, include_graph=include_graph
                )
        published = self._published.get(root_run_id)
        if published is activity:
            return
        kept = state.kept
        if (
            published is None
            or (id(published) in kept and (kept_activity or id(activity) in kept))
            or published != activity
        ):
            self._published[root_run_id] = activity
            self._publisher.publish_changed(activity)

    def _prompts_changed(self, run: RunRecord, stage: StageRecord | None, *, opened: int) -> None:
        state = self._root_states[run.root_run_id]
        if stage is None:
            run.open_run_prompts += opened
            if self._include_graph:
                refresh_run_prompts(run)
                state.graph_changed()
        else:
            state.refresh_node(run, stage, graph=self._include_graph)
        state.refresh_run(run)

    def _order(self, run: RunRecord, node: NodeRecord) -> None:
        # A node's execution order is the order in which it first left ``pending``, per root.
        if node.execution_order is None:
            order = self._next_execution_order.get(run.root_run_id, 0)
            node.execution_order = order
            self._next_execution_order[run.root_run_id] = order + 1

    def _close_prompt(self, run_id: str, prompt_id: str, status: PromptStatus) -> None:
        run = self._run(run_id)
        check_str(prompt_id, "prompt_id")
        prompt = run.prompts.get(prompt_id)
        if prompt is None:
            raise KeyError(f"run {run_id!r} has no open prompt {prompt_id!r}")
        self._require_started()
        now = self._now()
        event = self._prompt_event(run, prompt, status, now)
        del run.prompts[prompt_id]
        stage = None
        if prompt.stage_id is not None:
            found = run.nodes.get(prompt.stage_id)
            if isinstance(found, StageRecord) and found.prompt is prompt:
                found.prompt = None
                stage = found
        self._prompts_changed(run, stage, opened=-1)
        self._emit(event)
        self._touched(run, now)

    def _prompt_event(
        self, run: RunRecord, prompt: PromptRecord, status: PromptStatus, now: float
    ) -> LifecycleInput | None:
        stage_id = None if prompt.stage_id is None else nested_id(run.run_id, prompt.stage_id)
        target = PromptTarget(
            run_id=run.run_id, stage_id=stage_id, prompt_id=prompt.prompt_id, status=status
        )
        return self._event(run, target, now)

    def _event(
        self,
        run: RunRecord,
        target: LifecycleTarget,
        now: float,
        *,
        delivery: Delivery = Delivery.LIVE,
        attribution: Attribution | None = None,
    ) -> LifecycleInput | None:
        """The lifecycle event a fact emits, or None when it emits none.

        Every fact builds its event *before* it changes a record: building it validates the id
        from ``event_id_factory`` and the time from the clock, so a bad one raises ContractError
        with the tracker unchanged (C1). :meth:`_emit` publishes it once the records changed.
        """
        # Lifecycle events describe what a live executor does; recovery and history are silent.
        if not run.live or not self._publishing:
            return None
        # Only the id is new; the other fields were checked when they were reported (the time by
        # _now, the target when it was built), so the envelope is built as is (issue 29).
        return _build_LifecycleInput(
            event_id=check_str(self._event_id_factory(), "event_id"),
            run_id=run.run_id,
            root_run_id=run.root_run_id,
            owner_session_id=self._owner_session_id,
            occurred_at=now,
            observed_at=now,
            delivery=delivery,
            target=target,
            attribution=attribution,
        )

    def _emit(self, event: LifecycleInput | None) -> None:
        if event is not None:
            self._publisher.publish_lifecycle(event)

    def _touched(self, run: RunRecord, now: float) -> None:
        root_run_id = run.root_run_id
        if root_run_id in self._heartbeats.watched:
            root = self._runs[root_run_id]
            self._heartbeats.update(
                root_run_id,
                status=root.status,
                live=root.live,
                publishing=self._publishing,
                now=now,
            )
        if not self._started or self._hydrating:
            return
        if self._batch_depth:
            self._dirty[root_run_id] = None
        else:
            self._publish_root(root_run_id)

    def _publish_root(self, root_run_id: str) -> None:
        state = self._root_states[root_run_id]
        activity = state.summary  # the summary, unless a fact changed it since it was derived
        if activity is None:
            activity = state.activity(
                self._runs, self._owner_session_id, include_graph=self._include_graph
            )
        published = self._published.get(root_run_id)
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
            self._published[root_run_id] = activity
            self._publisher.publish_changed(activity)

    def _flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if not self._publishing:
            return
        for root_run_id in dirty:
            if root_run_id in self._roots:
                self._publish_root(root_run_id)

    def _publish_ready(self) -> None:
        now = self._now()
        activities = {root_id: self._derive(root_id) for root_id in self._roots}
        self._started = True
        self._dirty.clear()
        self._published = activities
        self._publisher.publish_snapshot(Availability.READY, list(activities.values()))
        self._refresh_heartbeats(now)

    def _refresh_heartbeats(self, now: float) -> None:
        for root_id in self._roots:
            root = self._runs[root_id]
            self._heartbeats.update(
                root_id, status=root.status, live=root.live, publishing=self._publishing, now=now
            )

    def _publish_heartbeat(self, event: HeartbeatEvent) -> None:
        self._publisher.publish_heartbeat(event)


async def run_heartbeats(
    tracker: RunTracker, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Emit the tracker's heartbeats until cancelled. Start it in a nursery you own:
    ``await nursery.start(run_heartbeats, tracker)`` (or ``nursery.start(tracker.run_heartbeats)``).

    Boundaries that passed before the task started are skipped. One task per tracker: a second
    one raises :class:`RuntimeError`. The task wakes at the next boundary and whenever the
    tracker's facts change, so a run that starts, pauses or resumes is picked up at once.
    """
    await tracker.run_heartbeats(task_status=task_status)
