"""LangGraph's execution of one thread, told to a tracker as facts.

This module knows LangGraph's vocabulary (threads, super-steps, tasks and their checkpoint
namespaces, interrupts, retries) but imports nothing of it: the callback handler turns LangGraph's
callbacks into calls of a :class:`ThreadMapper`, one per root, and the mapper keeps what it needs
to turn them into RunTracker facts (docs/langgraph.md has the table):

* the thread is the root run; every invocation of the thread sets it ``running`` and ends it
  ``completed`` (or ``paused`` at a breakpoint, ``failed`` with its executor ended, ``killed``);
  while an interrupt waits for an answer it stays ``running`` with the prompt open;
* a turn (new input, and the resumes that continue it) is a run nested in the root, hosted by
  the root's one stage, ``thread``, which runs while a turn does and ends as the turn ends; the
  root keeps its last ``keep_turns`` turns, and the turns before them are folded into one
  summary stage of a run that is history (no events), so a thread that lives for months stays
  the size of a few turns;
* a task is a stage of the run of its graph (the turn's, or a subgraph's): its id is the task
  id, its name the node, its parents the stages of the previous super-step of the same graph;
* a subgraph's tasks belong to a nested run hosted by the task that runs the subgraph;
* a tool call inside a task is a tool of that stage;
* an interrupt is a prompt on its stage (``awaiting_input``), answered when the task runs again.

The mapper is not thread-safe: its caller serialises the calls (see ``_gates.py``).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Literal

import attrs

from .._contract import FailureDetail
from ..tracker import RunTracker
from ..tracker import SchedulerFacts as FactSink

__all__ = ["Outcome", "PromptSpec", "ThreadMapper"]

NS_SEP = "|"
NS_END = ":"

Outcome = Literal["completed", "paused", "failed", "killed"]

# The root's one stage, which hosts the turns.
THREAD_STAGE = "thread"
# The one stage of the run that counts the folded turns.
SUMMARY_STAGE = "summary"

# The thread's stage when a turn ends so.
_THREAD_STAGE: dict[str, str] = {
    "completed": "completed",
    "paused": "paused",
    "failed": "failed",
    "killed": "skipped",
}

_LEFTOVER_RUN: dict[str, str] = {
    "completed": "completed",
    "paused": "paused",
    "failed": "cancelled",
    "killed": "killed",
}


@attrs.frozen
class PromptSpec:
    """An interrupt as a prompt: its id, kind, message and choices."""

    prompt_id: str
    kind: str
    message: str
    choices: tuple[str, ...] | None = None


@attrs.define(eq=False)
class _Run:
    key: str  # the namespace prefix of its tasks ("" for the thread's own graph)
    run_id: str
    status: str
    host: _Stage | None
    # super-step -> the stages it ran, for the parents of the next step's stages
    steps: dict[int, list[str]] = attrs.Factory(dict)


@attrs.define(eq=False)
class _Stage:
    run: _Run
    stage_id: str
    status: str
    retrying: bool = False
    prompt_id: str | None = None
    tool_count: int = 0
    tools: dict[str, str] = attrs.Factory(dict)  # callback run id -> tool id, while running
    hosted: list[_Run] = attrs.Factory(list)


def split_task_ns(task_ns: str) -> tuple[str, str, str]:
    """(namespace of its graph, node name, task id) of a task's checkpoint namespace."""
    prefix, _, segment = task_ns.rpartition(NS_SEP)
    name, sep, task_id = segment.rpartition(NS_END)
    if not sep:
        return prefix, segment, segment
    return prefix, name, task_id


def host_task_ns(prefix: str) -> str:
    """The namespace of the task that runs the subgraph whose tasks have namespace ``prefix``.

    A task that runs subgraphs more than once numbers the later ones (``node:<id>|1``): such a
    counter segment belongs to the task before it.
    """
    segments = prefix.split(NS_SEP)
    while len(segments) > 1 and NS_END not in segments[-1]:
        segments.pop()
    return NS_SEP.join(segments)


class ThreadMapper:
    """Reports one LangGraph thread (a root) to ``sink``, fact by fact."""

    __slots__ = (
        "_folded",
        "_heartbeat",
        "_host",
        "_keep_turns",
        "_prompts",
        "_root",
        "_runs",
        "_sink",
        "_stages",
        "_summary",
        "_tools",
        "_turn_count",
        "_turns",
        "_untouched",
        "batching",
        "root_run_id",
        "users",
    )

    def __init__(
        self,
        sink: FactSink,
        root_run_id: str,
        *,
        heartbeat_interval_minutes: float | None,
        keep_turns: int | None = None,
    ) -> None:
        self._sink = sink
        self.root_run_id = root_run_id
        self._heartbeat = heartbeat_interval_minutes
        self._keep_turns = keep_turns
        self._forget()
        # True while the caller holds a batch around the calls: no nested one to pay for.
        self.batching = False
        # Invocations using this mapper (the wrappers' shared registry counts them, under its
        # lock): one in use is never forgotten.
        self.users = 0

    def _forget(self) -> None:
        """Know nothing of the thread: its next invocation starts its root."""
        self._root: _Run | None = None
        self._host: _Stage | None = None  # the root's stage that hosts the turns
        self._turns: deque[_Run] = deque()  # the turns the root keeps, oldest first
        self._turn_count = 0
        self._folded: Counter[str] = Counter()  # turns folded into the summary, by status
        self._summary: str | None = None  # the summary's run
        # by namespace prefix: "" is the current turn's run, the others its subgraphs' runs
        self._runs: dict[str, _Run] = {}
        self._stages: dict[str, _Stage] = {}  # by task checkpoint namespace
        self._tools: dict[str, _Stage] = {}  # by callback run id
        self._prompts: dict[str, tuple[_Run, _Stage | None]] = {}
        # True from the start of a resume of a waiting thread until a task of it starts: until
        # then LangGraph has taken no answer, and the thread still waits for them all.
        self._untouched = False

    def _batch(self) -> AbstractContextManager[None]:
        return nullcontext() if self.batching else self._sink.batch()

    @contextmanager
    def outer_batch(self) -> Iterator[None]:
        """One tracker batch around several calls of this mapper."""
        with self._sink.batch():
            self.batching = True
            try:
                yield
            finally:
                self.batching = False

    # --- reading ---------------------------------------------------------------------------

    @property
    def waiting(self) -> bool:
        """True while an interrupt of this thread waits for an answer."""
        return bool(self._prompts)

    # --- invocations -----------------------------------------------------------------------

    def begin(self, *, resume: bool) -> None:
        """An invocation of the thread starts; ``resume`` when it continues the thread (a
        ``Command`` or ``None`` input), not when it brings new input: that starts a turn."""
        sink = self._sink
        with self._batch():
            root = self._root
            if root is None:
                sink.add_run(
                    self.root_run_id,
                    status="running",
                    heartbeat_interval_minutes=self._heartbeat,
                )
                sink.add_stage(self.root_run_id, THREAD_STAGE, THREAD_STAGE, status="running")
                self._root = root = _Run("", self.root_run_id, "running", None)
                self._host = _Stage(root, THREAD_STAGE, "running")
                self._new_turn()
                return
            assert self._host is not None
            turn = self._runs.get("")
            self._untouched = resume and turn is not None and bool(self._prompts)
            if resume and turn is not None:
                self._set_run(root, "running")
                self._set_stage(self._host, "running")
                self._set_run(turn, "running")
                return
            # New input abandons what the thread was waiting for.
            self._abandon_prompts()
            for run in self._runs.values():
                if run.status == "running":
                    self._set_run(run, "cancelled")
            self._runs = {}
            self._stages.clear()
            self._tools.clear()
            self._set_run(root, "running")
            self._set_stage(self._host, "running")
            self._new_turn()

    def begin_again(self, *, resume: bool) -> None:
        """:meth:`begin` of a thread this mapper reported before, called where its tracker
        lives (a :class:`~workflow_hub.RunTracker`, asked directly): a root removed since
        (``remove_run`` behind the integration's back) starts the thread over."""
        sink = self._sink
        if self._root is not None and isinstance(sink, RunTracker) and self.root_run_id not in sink:
            self._forget()
        self.begin(resume=resume)

    def _new_turn(self) -> None:
        self._turn_count += 1
        run_id = f"{self.root_run_id}{NS_SEP}turn-{self._turn_count}"
        self._sink.add_run(
            run_id, parent_run_id=self.root_run_id, host_stage_id=THREAD_STAGE, status="running"
        )
        turn = _Run("", run_id, "running", None)
        self._runs[""] = turn
        self._turns.append(turn)
        keep = self._keep_turns
        if keep is not None and len(self._turns) > keep:
            while len(self._turns) > keep:
                old = self._turns.popleft()
                self._folded[old.status] += 1
                self._sink.remove_run(old.run_id)
            self._fold()

    def _fold(self) -> None:
        """The summary of the folded turns: one stage of a run that is history (no events),
        added at the first fold and renamed at each one after it."""
        sink = self._sink
        total = sum(self._folded.values())
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self._folded.items()))
        name = f"{total} earlier turn{'' if total == 1 else 's'} ({counts})"
        if self._summary is not None:
            sink.set_stage_name(self._summary, SUMMARY_STAGE, name)
            return
        self._summary = f"{self.root_run_id}{NS_SEP}earlier-turns"
        sink.add_run(self._summary, parent_run_id=self.root_run_id, live=False, status="completed")
        sink.add_stage(self._summary, SUMMARY_STAGE, name, status="completed")

    def end(self, outcome: Outcome, error: FailureDetail | None = None) -> None:
        """The invocation ended: normally (``completed``, or ``paused`` at a breakpoint),
        with an exception (``failed``) or cancelled by its caller (``killed``).

        A thread whose interrupt waits for an answer stays ``running`` after a normal end. Work
        LangGraph abandoned (a sibling of a failed task, anything cut short by a cancellation)
        ends too: running stages ``skipped``, tools ``cancelled``. An invocation that raised
        never gave its caller an interrupt to answer: its open prompts are cancelled (their
        stages ``skipped``); a later resume that asks again opens them again. ``error`` is why
        a ``failed`` invocation failed (C3), on the thread's run. A resume cancelled before any
        of its tasks started changed nothing: LangGraph took no answer and still waits for
        them, and so does the thread here.
        """
        if outcome == "killed" and self._untouched:
            outcome = "completed"
        self._untouched = False
        sink = self._sink
        root, host = self._root, self._host
        turn = self._runs[""]
        assert root is not None
        assert host is not None
        with self._batch():
            if outcome == "killed":
                sink.request_control(root.run_id, "kill")
            keep_waiting = outcome in ("completed", "paused")
            if not keep_waiting:
                self._abandon_prompts()
            for stage in list(self._stages.values()):
                self._close_tools(stage, "cancelled")
                if stage.status == "running" and not (
                    keep_waiting and any(self._has_prompts(run) for run in stage.hosted)
                ):
                    self._set_stage(stage, "skipped")
                elif stage.status == "pending" and stage.retrying:
                    self._set_stage(stage, "failed")
            for run in list(self._runs.values()):
                if run.host is None or run.status != "running":
                    continue
                if keep_waiting and self._has_prompts(run):
                    continue
                self._set_run(run, _LEFTOVER_RUN[outcome])
            if outcome == "completed" and self._prompts:
                return  # waiting for an answer: the thread's run goes on
            failed = outcome == "failed"
            detail = error if failed else None
            self._set_run(turn, outcome, executor_ended=failed, error=detail)
            self._set_stage(host, _THREAD_STAGE[outcome], error=detail)
            self._set_run(root, outcome, executor_ended=failed, error=detail)

    # --- tasks -----------------------------------------------------------------------------

    def task_started(self, task_ns: str, name: str, step: int | None) -> None:
        """A task (one attempt of it) starts running."""
        self._untouched = False
        stage = self._stages.get(task_ns)
        if stage is None:
            prefix, _, task_id = split_task_ns(task_ns)
            run = self._runs.get(prefix)
            if run is not None and run.status == "running":
                # The common case, one fact: no batch to pay for.
                self._add_stage(run, task_ns, task_id, name, step)
                return
            with self._batch():
                self._add_stage(self._run_for(prefix), task_ns, task_id, name, step)
            return
        sink = self._sink
        with self._batch():
            if stage.prompt_id is not None:
                prompt_id, stage.prompt_id = stage.prompt_id, None
                del self._prompts[prompt_id]
                sink.answer_prompt(stage.run.run_id, prompt_id)
            self._set_run(stage.run, "running")
            self._set_stage(stage, "running", retrying=stage.retrying)

    def task_finished(self, task_ns: str) -> None:
        """The task returned: its stage completed, and so did the subgraph runs it hosted."""
        stage = self._stages.get(task_ns)
        if stage is None:
            return
        if not stage.tools and not stage.hosted:
            self._set_stage(stage, "completed", retrying=False)  # one fact: no batch
            return
        with self._batch():
            self._close_tools(stage, "cancelled")
            for run in stage.hosted:
                if run.status == "running" and not self._has_prompts(run):
                    self._set_run(run, "completed")
            self._set_stage(stage, "completed", retrying=False)

    def task_interrupted(self, task_ns: str, prompts: Sequence[PromptSpec]) -> None:
        """The task raised an interrupt: a prompt on its stage, unless the interrupt is one of a
        subgraph's tasks on its way up (that prompt is already open where it was raised)."""
        stage = self._stages.get(task_ns)
        if stage is None:
            return
        fresh = [p for p in prompts if p.prompt_id not in self._prompts]
        if not fresh:
            return
        sink = self._sink
        run = stage.run
        with self._batch():
            self._close_tools(stage, "cancelled")
            for index, prompt in enumerate(fresh):
                on_stage = index == 0 and stage.prompt_id is None
                sink.open_prompt(
                    run.run_id,
                    prompt.prompt_id,
                    prompt.kind,
                    prompt.message,
                    stage_id=stage.stage_id if on_stage else None,
                    choices=prompt.choices,
                )
                self._prompts[prompt.prompt_id] = (run, stage if on_stage else None)
                if on_stage:
                    stage.prompt_id = prompt.prompt_id
            self._set_stage(stage, "awaiting_input", retrying=False)

    def task_failed(
        self, task_ns: str, *, retrying: bool, error: FailureDetail | None = None
    ) -> None:
        """The task raised (``error``, C3): a failed stage, or (``retrying``) one waiting for
        its next attempt."""
        stage = self._stages.get(task_ns)
        if stage is None:
            return
        with self._batch():
            self._close_tools(stage, "cancelled")
            for run in stage.hosted:
                if run.status == "running" and not self._has_prompts(run):
                    self._set_run(run, "failed", executor_ended=True)
            if retrying:
                self._set_stage(stage, "pending", retrying=True)
            else:
                self._set_stage(stage, "failed", retrying=False, error=error)

    # --- tools -----------------------------------------------------------------------------

    def tool_started(self, task_ns: str, key: str, name: str) -> None:
        """A tool starts inside a task: a tool of its stage (``key`` identifies the call)."""
        stage = self._stages.get(task_ns)
        if stage is None or stage.status != "running" or key in self._tools:
            return
        tool_id = f"{stage.stage_id}/tool-{stage.tool_count}"
        self._sink.add_tool(
            stage.run.run_id,
            tool_id,
            name,
            parent_ids=(stage.stage_id,),
            ordinal=stage.tool_count,
            status="running",
        )
        stage.tool_count += 1
        stage.tools[key] = tool_id
        self._tools[key] = stage

    def tool_ended(self, key: str, status: str, error: FailureDetail | None = None) -> None:
        """The tool call ended ``completed``, ``failed`` (``error``: why, C3) or ``cancelled``."""
        stage = self._tools.pop(key, None)
        if stage is None:
            return
        tool_id = stage.tools.pop(key)
        if error is None:
            self._sink.set_tool_status(stage.run.run_id, tool_id, status)
        else:
            self._sink.set_tool_status(stage.run.run_id, tool_id, status, error=error)

    # --- internals -------------------------------------------------------------------------

    def _run_for(self, prefix: str) -> _Run:
        run = self._runs.get(prefix)
        if run is not None:
            self._set_run(run, "running")
            return run
        if not prefix:  # the turn's own run: never started (its start was refused)
            raise LookupError(f"thread {self.root_run_id!r} has no turn started")
        host_ns = host_task_ns(prefix)
        parent_prefix, name, task_id = split_task_ns(host_ns)
        parent = self._run_for(parent_prefix)
        host = self._stages.get(host_ns)
        if host is None:  # never seen the hosting task start: it is running now
            host = self._add_stage(parent, host_ns, task_id, name, None)
        run_id = f"{self.root_run_id}{NS_SEP}{prefix}"
        self._sink.add_run(
            run_id, parent_run_id=parent.run_id, host_stage_id=host.stage_id, status="running"
        )
        run = _Run(prefix, run_id, "running", host)
        self._runs[prefix] = run
        host.hosted.append(run)
        return run

    def _add_stage(
        self, run: _Run, task_ns: str, task_id: str, name: str, step: int | None
    ) -> _Stage:
        parents: Sequence[str] = ()
        if step is not None:
            parents = run.steps.get(step - 1, ())
            for old in [s for s in run.steps if s < step - 1]:
                del run.steps[old]
            run.steps.setdefault(step, []).append(task_id)
        self._sink.add_stage(run.run_id, task_id, name, parent_ids=parents, status="running")
        stage = _Stage(run, task_id, "running")
        self._stages[task_ns] = stage
        return stage

    def _set_stage(
        self,
        stage: _Stage,
        status: str,
        *,
        retrying: bool = False,
        error: FailureDetail | None = None,
    ) -> None:
        if stage.status == status and stage.retrying == retrying:
            return
        sink, run_id, stage_id = self._sink, stage.run.run_id, stage.stage_id
        if error is None:
            sink.set_stage_status(run_id, stage_id, status, retrying=retrying)
        else:
            sink.set_stage_status(run_id, stage_id, status, retrying=retrying, error=error)
        stage.status = status
        stage.retrying = retrying

    def _set_run(
        self,
        run: _Run,
        status: str,
        *,
        executor_ended: bool = False,
        error: FailureDetail | None = None,
    ) -> None:
        if run.status == status and not executor_ended:
            return
        if error is None:
            self._sink.set_run_status(run.run_id, status, executor_ended=executor_ended)
        else:
            self._sink.set_run_status(
                run.run_id, status, executor_ended=executor_ended, error=error
            )
        run.status = status

    def _abandon_prompts(self) -> None:
        for prompt_id, (run, stage) in self._prompts.items():
            self._sink.cancel_prompt(run.run_id, prompt_id)
            if stage is not None:
                stage.prompt_id = None
                self._set_stage(stage, "skipped")
        self._prompts.clear()

    def _close_tools(self, stage: _Stage, status: str) -> None:
        for key, tool_id in stage.tools.items():
            del self._tools[key]
            self._sink.set_tool_status(stage.run.run_id, tool_id, status)
        stage.tools.clear()

    def _has_prompts(self, run: _Run) -> bool:
        nested = run.key + NS_SEP
        return any(
            owner.key == run.key or owner.key.startswith(nested)
            for owner, _ in self._prompts.values()
        )
