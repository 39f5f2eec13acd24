"""The one door for scheduler bridges: the facts a tracker accepts, as a protocol.

A bridge (Celery, LangGraph, the next scheduler) produces facts and never needs to know whose
tracker takes them: a :class:`~workflow_hub.tracker.RunTracker` called from its hub's thread, the
thread-safe tracker of ``workflow_hub.sync`` (``hub.tracker(...)``), the asyncio host's, or a
test's recorder. :class:`SchedulerFacts` names those methods once, with the tracker's own
signatures; each bridge types its tracker with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from .._contract import (
    Attribution,
    ControlAction,
    FailureDetail,
    PromptKind,
    RunStatus,
    StageStatus,
    Timestamp,
    ToolNodeStatus,
)

__all__ = ["SchedulerFacts"]


@runtime_checkable
class SchedulerFacts(Protocol):
    """Something that accepts the facts a scheduler reports: what a bridge reports to.

    Every method is :class:`~workflow_hub.tracker.RunTracker`'s, with its signature and meaning
    (see there, and docs/scheduler-guide.md, for the rules each one follows); ``RunTracker`` and
    the thread host's tracker (``workflow_hub.sync``) implement it. A status, action, kind or
    attribution may be given as the enum member or its value. ``isinstance(x, SchedulerFacts)``
    checks that the methods are there, not their signatures (type checkers do that).
    """

    def hydrating(self, detail: str | None = None) -> AbstractContextManager[None]:
        """Restore state: ``recovering`` now (saying why, if ``detail``: C3), a full ``ready``
        snapshot when the block ends."""
        ...

    def recovering_because(self, detail: str | None) -> None:
        """Inside ``hydrating()``: a new reason why the source is unknown (C3), published on a
        new ``recovering`` snapshot."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Report several facts; each changed root is published once, when the block ends."""
        ...

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
        """Track a new run: a root, or a run nested in ``parent_run_id`` (started by its stage
        ``host_stage_id``)."""
        ...

    def set_run_status(
        self,
        run_id: str,
        status: RunStatus | str,
        *,
        executor_ended: bool = False,
        error: FailureDetail | BaseException | str | None = None,
        attribution: Attribution | str | None = None,
    ) -> None:
        """A run's new status (``executor_ended``: its executor has finished with it; ``error``:
        why a failed run failed; ``attribution``: who changed it, on its event)."""
        ...

    def set_labels(self, root_run_id: str, labels: Mapping[str, str] | None) -> None:
        """Replace a root's labels (team, env, deployment, queue …); None removes them."""
        ...

    def take_ownership(self, run_id: str) -> None:
        """This scheduler's executor now owns the run and its nested runs: they are live."""
        ...

    def release_ownership(self, run_id: str) -> None:
        """The run and its nested runs are history now: they never work nor emit events."""
        ...

    def request_control(
        self,
        run_id: str,
        action: ControlAction | str,
        *,
        attribution: Attribution | str | None = None,
    ) -> None:
        """A control request (quit, kill, pause, resume) on a run."""
        ...

    def remove_run(self, run_id: str) -> None:
        """Forget a run and everything nested in it."""
        ...

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
        """Declare a stage of a run, after its parents (ids of the run's stages and tools)."""
        ...

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
        """Declare a tool node of a run (``ordinal`` orders tools that share a parent)."""
        ...

    def set_stage_name(self, run_id: str, stage_id: str, name: str) -> None:
        """A stage's new name (no status change: no event of its own)."""
        ...

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
        """A stage's status (``retrying``: it is being retried; ``replay``: a continuation
        re-runs it; ``error``: why a failed stage failed; ``attribution``: who changed it, on
        its event, e.g. ``user`` for a person's "mark success")."""
        ...

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
        """A tool's status (``error``: why a failed tool failed; ``attribution``: who changed
        it)."""
        ...

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
        """A question now waits for a human, on the run or on one of its stages."""
        ...

    def answer_prompt(self, run_id: str, prompt_id: str) -> None:
        """The human answered: the prompt closes (``answered``)."""
        ...

    def cancel_prompt(self, run_id: str, prompt_id: str) -> None:
        """The question was withdrawn: the prompt closes (``cancelled``)."""
        ...

    def require_intervention(
        self, run_id: str, *, stage_id: str | None = None, budget_stop: bool = False
    ) -> None:
        """An active failure needs intervention (or a budget stop, approval), on the run or
        one of its stages."""
        ...

    def clear_intervention(self, run_id: str, *, stage_id: str | None = None) -> None:
        """The intervention or approval is no longer needed."""
        ...

    def acknowledge_failure(self, run_id: str) -> None:
        """Someone has seen the run's failure: it no longer needs attention."""
        ...
