"""The run tracker: a scheduler reports facts, the tracker derives and publishes root activity.

A scheduler that embeds the hub should not compute :class:`RootActivity` by hand. It tells a
:class:`RunTracker` what happens (a run was added, a stage started, a prompt opened, a kill was
requested ...) and the tracker keeps the records, keeps each root's summary by the contract's
rules D1-D8 up to date fact by fact, and publishes through a :class:`WorkflowActivityPublisher`:

* a ``changed`` frame only when a root's summary really changed, ``removed`` when a root goes away;
* lifecycle events only for live runs and only on a real status change (control requests always);
* an initial ``ready`` snapshot from :meth:`RunTracker.start`, and ``recovering`` then a full
  ``ready`` snapshot around :meth:`RunTracker.hydrating`, during which nothing is published one
  change at a time and no lifecycle event is synthesised.

Four rooms share the work. This module is the fact API: it checks a fact's arguments and looks
its ids up. ``_ledger.py`` keeps the records (``_records.py``) and applies a checked fact to
them; ``_rootstate.py`` folds each fact into its root's state (counts, execution order, graph,
summary; ``_derive.py`` is the readable definition it must equal); ``_publication.py``
publishes: the framing, the summaries that changed and the lifecycle events. The facts, with
``batch()`` and ``hydrating()``, are the protocol every bridge reports to
(``_scheduler_facts.py``).

Every method validates all of its arguments, looks up every id, reads the clock and takes its
lifecycle event's id (so the clock's value and the ``event_id_factory``'s id are checked too)
before it changes anything, so a call that raises leaves the tracker exactly as it was (C1). Runs
nest to any depth: nothing walks them recursively. The tracker is not thread-safe: call it from
the hub's trio thread (other threads use ``ThreadPublisher.call_soon``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import final

import trio

from .._contract import (
    Attribution,
    ContractError,
    ControlAction,
    FailureDetail,
    Labels,
    PromptKind,
    PromptStatus,
    RootActivity,
    RunStatus,
    StageStatus,
    Timestamp,
    ToolNodeStatus,
    check_bool,
    check_count,
    check_detail,
    check_error,
    check_number,
    check_str,
    enum_check,
    instance_check,
    optional,
    tuple_check,
)
from .._core import WorkflowActivityPublisher
from ._heartbeat import check_interval
from ._ledger import STAGE, TOOL, Ledger
from ._publication import Publication, uuid4
from ._records import RunRecord, StageRecord, ToolRecord

__all__ = ["RunTracker", "run_heartbeats"]


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


def _check_labels(labels: object) -> Labels | None:
    """Labels as given (a :class:`Labels`, any mapping of str to str, or None), checked."""
    if labels is None or type(labels) is Labels:
        return labels or None
    if isinstance(labels, Mapping) and not labels:
        return None
    return Labels(labels)  # type: ignore[arg-type]  # it checks the type and every item


def _wall_clock_ms() -> float:
    return time.time() * 1000


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

    __slots__ = ("__weakref__", "_ledger")

    def __init__(
        self,
        publisher: WorkflowActivityPublisher,
        *,
        owner_session_id: str,
        clock: Callable[[], float] | None = None,
        event_id_factory: Callable[[], str] | None = None,
        include_graph: bool = False,
    ) -> None:
        checked = _check_publisher(publisher, "publisher")
        check_str(owner_session_id, "owner_session_id")
        if clock is not None:
            _check_callable(clock, "clock")
        if event_id_factory is not None:
            _check_callable(event_id_factory, "event_id_factory")
        publication = Publication(
            checked,
            owner_session_id=owner_session_id,
            event_id_factory=event_id_factory or uuid4,
        )
        self._ledger = Ledger(
            publication,
            owner_session_id=owner_session_id,
            clock=clock or _wall_clock_ms,
            graph=check_bool(include_graph, "include_graph"),
        )

    # --- reading ---------------------------------------------------------------------------

    @property
    def publisher(self) -> WorkflowActivityPublisher:
        return self._ledger.publication.publisher

    @property
    def owner_session_id(self) -> str:
        return self._ledger.owner_session_id

    @property
    def started(self) -> bool:
        """True once :meth:`start` or a :meth:`hydrating` block has published a ready snapshot."""
        return self._ledger.publication.started

    @property
    def is_hydrating(self) -> bool:
        return self._ledger.publication.hydrating

    def now(self) -> float:
        """The tracker's clock, in epoch milliseconds."""
        return self._ledger.now()

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._ledger.runs

    def activity(self, root_run_id: str) -> RootActivity:
        """The summary of one root as derived from the current facts (published or not)."""
        run = self._ledger.run(root_run_id)
        if run.parent_run_id is not None:
            raise KeyError(f"run {root_run_id!r} is nested in {run.parent_run_id!r}, not a root")
        return self._ledger.states[root_run_id].activity()

    def activities(self) -> tuple[RootActivity, ...]:
        """Every root's current summary, in the order the roots were added."""
        states = self._ledger.states
        return tuple(states[root_id].activity() for root_id in self._ledger.roots)

    def run_status(self, run_id: str) -> RunStatus:
        return self._ledger.run(run_id).status

    # --- publication framing ---------------------------------------------------------------

    def start(self) -> None:
        """Publish a full ``ready`` snapshot of every root (P3) and begin publishing changes.

        Calling it again republishes the full snapshot (a snapshot replaces all prior knowledge).
        """
        if self._ledger.publication.hydrating:
            raise RuntimeError("start() inside hydrating(): the snapshot is published on exit")
        self._ledger.publish_ready()

    def hydrating(self, detail: str | None = None) -> AbstractContextManager[None]:
        """Restore state: publish ``recovering`` now and a full ``ready`` snapshot on exit.

        Inside the block, report facts as usual (typically restored runs with ``live=False``).
        Nothing is published one change at a time and no lifecycle event is synthesised: recovery
        is not a change. If the block raises, the source is published ``unavailable`` (its
        activity is not known) and the exception propagates; the facts recorded so far are kept,
        so a later :meth:`start` or :meth:`hydrating` can still publish them.

        ``detail`` says why the source is unknown meanwhile (C3: one printable line of at most
        200 characters, e.g. ``"broker unreachable: ConnectionError: …"``), on the recovering
        snapshot and every view; a bad one is a ``ContractError`` on ``detail``, raised here.
        """
        return self._hydrating(None if detail is None else check_detail(detail, "detail"))

    def recovering_because(self, detail: str | None) -> None:
        """Inside :meth:`hydrating`: say a new reason why the source is unknown (C3's
        ``detail``; None for none), e.g. once a first connection attempt has failed. The
        ``recovering`` snapshot is published again with it (not when it is unchanged). Outside a
        ``hydrating()`` block it is a ``RuntimeError``; a bad detail a ``ContractError`` on
        ``detail``, both before anything is published."""
        checked = None if detail is None else check_detail(detail, "detail")
        self._ledger.publication.say_detail(checked)

    @contextmanager
    def _hydrating(self, detail: str | None) -> Iterator[None]:
        ledger = self._ledger
        publication = ledger.publication
        if publication.hydrating:
            raise RuntimeError("hydrating() blocks do not nest")
        now = ledger.now()
        publication.begin_hydrating(detail)
        ledger.refresh_heartbeats(now)
        try:
            yield
        except BaseException:
            publication.hydrating_failed()
            ledger.refresh_heartbeats(now)  # nothing is eligible while not started
            raise
        publication.hydrating = False
        ledger.publish_ready()

    def batch(self) -> AbstractContextManager[None]:
        """Report several facts and publish each changed root once, when the block ends.

        Lifecycle events are still emitted as each fact is reported; only the ``changed`` frames
        wait, so observers never see the half-way summaries in between. Blocks may nest: the
        outermost one publishes. Inside :meth:`hydrating` it does nothing more.
        """
        return self._ledger.publication.batch()

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
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """Track a new run: a root, or (``parent_run_id``) a run nested in an existing one.

        A nested run belongs to its parent's root. ``host_stage_id`` names the stage of the parent
        run that started it (that stage is then no execution of its own: the nested run's stages
        and tools are). ``live`` says whether this scheduler's executor owns the run now (restored
        history is ``live=False``; see :meth:`take_ownership`). ``executor_ended`` is as for
        :meth:`set_run_status`. ``heartbeat_interval_minutes`` (at least one millisecond) makes a
        running top-level run beat at ``started_at + n * interval``; ``started_at`` defaults to the
        moment the run is first seen running. A run added in a status other than ``pending``
        emits its run event (without a previous status). ``labels`` are a root's (C3; see
        :meth:`set_labels`); a nested run has none.
        """
        check_str(run_id, "run_id")
        root_labels = _check_labels(labels)
        if root_labels is not None and parent_run_id is not None:
            raise ContractError("labels", "only a root run has labels")
        check_bool(live, "live")
        run_status = _check_run_status(status, "status")
        check_bool(executor_ended, "executor_ended")
        interval = _check_interval(heartbeat_interval_minutes, "heartbeat_interval_minutes")
        start = _check_timestamp(started_at, "started_at")
        if run_id in self._ledger.runs:
            raise ValueError(f"run {run_id!r} is already tracked")
        parent = None
        host = None
        if parent_run_id is not None:
            parent = self._ledger.run(check_str(parent_run_id, "parent_run_id"))
        if host_stage_id is not None:
            if parent is None:
                raise ContractError("host_stage_id", "only a nested run has a host stage")
            host = self._ledger.node(parent, check_str(host_stage_id, "host_stage_id"), StageRecord)
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
            labels=root_labels,
        )
        self._ledger.add_run(record, parent, host, interval, start)

    def set_labels(self, root_run_id: str, labels: Mapping[str, str] | None) -> None:
        """Replace a root's labels (C3): a small map of str to str the scheduler sets (team,
        env, deployment, queue …), on every summary of the root; ``None`` or ``{}`` removes
        them. At most 16; a key is a letter, then letters, digits, ``_ . - /`` (at most 63
        characters), a value 1 to 256 printable characters. A bad one, or a nested run's id,
        is refused before anything changes."""
        run = self._ledger.run(root_run_id)
        new = _check_labels(labels)
        if run.parent_run_id is not None:
            raise ContractError("root_run_id", f"{root_run_id!r} is a nested run, not a root")
        self._ledger.set_labels(run, new)

    def set_run_status(
        self,
        run_id: str,
        status: RunStatus | str,
        *,
        executor_ended: bool = False,
        error: FailureDetail | BaseException | str | None = None,
        attribution: Attribution | str | None = None,
    ) -> None:
        """Record a run's new status; a live run emits a run event with its previous status.

        ``executor_ended=True`` says the executor has finished with the run: a ``failed`` or
        ``blocked`` run then is a *settled* failure (it needs attention, but nobody can act on
        it), where without it the failure is *active*: the executor waits for an intervention
        (``blocked / manual_intervention``). The flag holds until the next call; reporting the same
        status with another flag changes the flag and emits nothing.

        A run that comes back to ``pending``/``running`` from any other status starts afresh: an
        earlier quit or kill request and an acknowledged failure no longer apply to it.

        ``error`` says why a ``failed`` run failed (C3), as for :meth:`set_stage_status`: it is
        on the run's event. ``attribution`` says who made the change (as for
        :meth:`set_stage_status`): it is on the run's event.
        """
        run = self._ledger.run(run_id)
        new = _check_run_status(status, "status")
        ended = check_bool(executor_ended, "executor_ended")
        detail = None if error is None else check_error(error, new)
        by = _check_attribution(attribution, "attribution")
        self._ledger.set_run_status(run, new, ended, detail, by)

    def take_ownership(self, run_id: str) -> None:
        """This scheduler's executor now owns the run and its nested runs: they are live.

        Ownership is not a status change and emits nothing; from now on the runs' work counts as
        executing and their changes emit lifecycle events.
        """
        self._ledger.set_live(self._ledger.run(run_id), True)

    def release_ownership(self, run_id: str) -> None:
        """The run and its nested runs are history now: they never work and never emit events."""
        self._ledger.set_live(self._ledger.run(run_id), False)

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
        run = self._ledger.run(run_id)
        requested = _check_action(action, "action")
        self._ledger.request_control(run, requested, _check_attribution(attribution, "attribution"))

    def remove_run(self, run_id: str) -> None:
        """Forget a run and everything nested in it. Removing a root publishes ``removed``."""
        self._ledger.remove_run(self._ledger.run(run_id))

    # --- stages and tools ------------------------------------------------------------------

    def add_stage(
        self,
        run_id: str,
        stage_id: str,
        name: str,
        *,
        parent_ids: Iterable[str] = (),
        status: StageStatus | str = StageStatus.PENDING,
        error: FailureDetail | BaseException | str | None = None,
    ) -> None:
        """Declare a stage of a run. ``parent_ids`` are ids of stages or tools of the same run,
        declared before it (an unknown id raises ``KeyError``; the stage's own id is refused).

        Its canonical id is ``"{run_id}:{stage_id}"``. A stage added in a status other than
        ``pending`` emits its stage event (without a previous status). A stage restored
        ``failed`` may say why (``error``, as for :meth:`set_stage_status`).
        """
        run = self._ledger.run(run_id)
        new = _check_stage_status(status, "status")
        node = StageRecord(
            node_id=check_str(stage_id, "stage_id"),
            name=check_str(name, "name"),
            parent_ids=_check_ids(parent_ids, "parent_ids"),
            status=new,
            error=None if error is None else check_error(error, new),
        )
        self._ledger.add_node(run, node)

    def add_tool(
        self,
        run_id: str,
        tool_id: str,
        name: str,
        *,
        parent_ids: Iterable[str] = (),
        ordinal: int = 0,
        status: ToolNodeStatus | str = ToolNodeStatus.PENDING,
        error: FailureDetail | BaseException | str | None = None,
    ) -> None:
        """Declare a tool node of a run (``ordinal`` orders tools that share a parent).

        ``parent_ids`` and ``error`` are as for :meth:`add_stage`.
        """
        run = self._ledger.run(run_id)
        new = _check_tool_status(status, "status")
        node = ToolRecord(
            node_id=check_str(tool_id, "tool_id"),
            name=check_str(name, "name"),
            parent_ids=_check_ids(parent_ids, "parent_ids"),
            status=new,
            ordinal=check_count(ordinal, "ordinal"),
            error=None if error is None else check_error(error, new),
        )
        self._ledger.add_node(run, node)

    def set_stage_status(
        self,
        run_id: str,
        stage_id: str,
        status: StageStatus | str,
        *,
        retrying: bool = False,
        replay: bool = False,
        error: FailureDetail | BaseException | str | None = None,
        attribution: Attribution | str | None = None,
    ) -> None:
        """Record a stage's status; a live run emits a stage event when the status changed.

        ``error`` says why a ``failed`` stage failed (C3): a :class:`FailureDetail`, or an
        exception or a message made into one by :meth:`FailureDetail.of` (its first line, cut
        to 500 characters, with the exception's type). It is on the stage's graph node and its
        event, and goes with the next status; any other status with an error is refused.

        ``retrying=True`` marks the stage as being retried: while its run is live and the stage
        does not wait for a human (no open prompt, not ``awaiting_input``), the root works with
        reason ``retrying``, whatever the stage's or the run's status (D5: the executor says it
        retries, so a retry waiting ``pending`` in a paused or ended run is still retrying). It
        is independent continuation unless the run is stopping. The flag holds until the next
        call.
        ``replay=True`` says an explicit continuation is re-running the stage: its event has
        ``delivery: replay``.
        ``attribution`` says who made the change when it is not the scheduler's own work
        (``user``: a person marked the stage done or failed, or cleared it to run again;
        ``agent``, ``scheduler``, ``recovery``, ``unknown``): it is on the event (the
        contract's ``attribution?``), and goes with this call only. Without it the event has
        none, as before.
        """
        self._ledger.node_status(
            STAGE, run_id, stage_id, status, replay, retrying, error, attribution
        )

    def set_stage_name(self, run_id: str, stage_id: str, name: str) -> None:
        """Rename a stage (a name learned late, a count that grows): its graph node and its
        later events carry ``name``. No status changed, so it emits no event of its own."""
        run = self._ledger.run(run_id)
        self._ledger.rename_node(run, self._ledger.node(run, stage_id, StageRecord), name)

    def set_tool_status(
        self,
        run_id: str,
        tool_id: str,
        status: ToolNodeStatus | str,
        *,
        replay: bool = False,
        error: FailureDetail | BaseException | str | None = None,
        attribution: Attribution | str | None = None,
    ) -> None:
        """Record a tool's status; a live run emits a tool event when the status changed.
        ``error`` and ``attribution`` are as for :meth:`set_stage_status`."""
        self._ledger.node_status(TOOL, run_id, tool_id, status, replay, None, error, attribution)

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
        run = self._ledger.run(run_id)
        check_str(prompt_id, "prompt_id")
        prompt_kind = _check_prompt_kind(kind, "kind")
        check_str(message, "message")
        stage = None
        if stage_id is not None:
            stage = self._ledger.node(run, stage_id, StageRecord)
        options = _check_choices(choices, "choices")
        created = _check_timestamp(created_at, "created_at")
        self._ledger.open_prompt(run, stage, prompt_id, prompt_kind, message, options, created)

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
        run = self._ledger.run(run_id)
        if stage_id is not None:
            self._ledger.node(run, stage_id, StageRecord)
        self._ledger.set_intervention(run, stage_id, check_bool(budget_stop, "budget_stop"))

    def clear_intervention(self, run_id: str, *, stage_id: str | None = None) -> None:
        """The intervention or approval is no longer needed. Clearing an absent one is allowed."""
        run = self._ledger.run(run_id)
        if stage_id is not None:
            self._ledger.node(run, stage_id, StageRecord)
        self._ledger.set_intervention(run, stage_id, None)

    def acknowledge_failure(self, run_id: str) -> None:
        """Someone has seen the run's failure: it no longer needs attention or intervention.

        An acknowledged run counts neither as a manual wait nor as a settled failure (its open
        prompts still count as human waits). The acknowledgement holds until the run starts
        afresh (comes back to ``pending``/``running`` from another status). Emits nothing.
        """
        self._ledger.acknowledge_failure(self._ledger.run(run_id))

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
        if self._ledger.publication.replace_publisher(checked):
            self._ledger.publish_ready()

    # --- heartbeats ------------------------------------------------------------------------

    async def run_heartbeats(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Emit heartbeats until cancelled: ``await nursery.start(tracker.run_heartbeats)``.

        See :func:`workflow_hub.run_heartbeats`.
        """
        await self._ledger.heartbeats.run(task_status=task_status)

    # --- internals -------------------------------------------------------------------------

    def _close_prompt(self, run_id: str, prompt_id: str, status: PromptStatus) -> None:
        run = self._ledger.run(run_id)
        self._ledger.close_prompt(run, check_str(prompt_id, "prompt_id"), status)


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
