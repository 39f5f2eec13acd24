"""The span book: lifecycle events in, OpenTelemetry spans out, one span per run, stage, tool
and human wait.

The book is plain synchronous code over an OTel ``Tracer``: the hook handler and the event
stream of a followed source feed it the same way. Times are the events' ``occurredAt``, so a
span's duration is what the scheduler reported, whenever the event reached the exporter.

Rules a reader could not guess from the code (docs/otel.md says them for users):

- A run's span starts at the first event of the run (its ``add_run``). A stage or a tool gets a
  span when it first leaves ``pending``; a node that is skipped or cancelled while pending never
  started and has none.
- A failure does not end a stage's or tool's span at once: the executor may retry it. The span
  ends, with status ERROR, at the failure's time when its run ends; a retry adds a
  ``workflow_hub.retry`` event instead (one span per node, its attempts as events).
- When a run ends, whatever of it is still open ends with it (``workflow_hub.ended_by``).
- A run first seen after it started (an event for an unknown run that is not its first: a change
  from a started status, a control request, an event of one of its nodes) starts at first
  sight and is marked ``workflow_hub.first_seen_mid_flight``; so does a stage or tool first seen
  changing from a started status (ending included: it ran, and gets its span).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Final

import attrs
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanContext, SpanKind, Status, StatusCode, Tracer

from .._contract import (
    FailureDetail,
    LifecycleEvent,
    PromptTarget,
    RootActivity,
    RunStatus,
    RunTarget,
    StageStatus,
    StageTarget,
    ToolNodeStatus,
    ToolTarget,
)
from . import _attributes as A
from ._light import LightTracer
from ._metrics import SpanMetrics

__all__ = ["HostHint", "HostHints", "SpanBook", "SpanCounts"]

_RUN_ENDS: Final = frozenset(
    {
        RunStatus.COMPLETED,
        RunStatus.SKIPPED,
        RunStatus.CANCELLED,
        RunStatus.FAILED,
        RunStatus.KILLED,
    }
)
_STAGE_ENDS: Final = frozenset({StageStatus.COMPLETED, StageStatus.SKIPPED})
_TOOL_ENDS: Final = frozenset(
    {ToolNodeStatus.COMPLETED, ToolNodeStatus.CACHED, ToolNodeStatus.CANCELLED}
)
# Said by the span's end (its status and result) or its failure event, not a status event.
_NODE_OUTCOMES: Final = frozenset({"failed", "completed", "skipped", "cached", "cancelled"})
# Back to running from these is a new attempt; from paused or awaiting_input it is not.
_RETRY_FROM: Final = frozenset({"failed", "pending", "blocked"})

_HINTS_LIMIT: Final = 10_000
_MAX_NESTING: Final = 64  # a chain of hosts that long is a loop of stale hints


def _ns(ms: float) -> int:
    return int(ms * 1_000_000)


@attrs.frozen
class HostHint:
    """What the scheduler said when it added a run, taken where it said it (``traced_facts``):
    the run that hosts it, the stage of that run, and the OTel span that was current."""

    parent_run_id: str | None
    host_stage_id: str | None
    span_context: SpanContext | None


class HostHints:
    """Hints by run id, put from any thread (where the scheduler adds its runs), taken on the
    hub's. Bounded: a run that never sends an event (restored history) leaves its hint behind
    until newer ones push it out."""

    def __init__(self, limit: int = _HINTS_LIMIT) -> None:
        self._lock = threading.Lock()
        self._hints: OrderedDict[str, HostHint] = OrderedDict()
        self._limit = limit

    def put(self, run_id: str, hint: HostHint) -> None:
        with self._lock:
            self._hints[run_id] = hint
            self._hints.move_to_end(run_id)
            while len(self._hints) > self._limit:
                self._hints.popitem(last=False)

    def discard(self, run_id: str) -> None:
        with self._lock:
            self._hints.pop(run_id, None)

    def get(self, run_id: str) -> HostHint | None:
        with self._lock:
            return self._hints.get(run_id)


@attrs.define
class SpanCounts:
    """How many spans the book started and ended, by what ended them."""

    started: int = 0
    ended: int = 0
    ended_by_run: int = 0
    vanished: int = 0
    mid_flight: int = 0


@attrs.define(eq=False)
class _Node:
    span: Span
    status: str
    run_id: str
    kind: str
    name: str
    started_at: float
    attempts: int = 1
    failed_at: float | None = None
    error: FailureDetail | None = None
    by: str | None = None  # the attribution of the outcome it ends with, when not its executor's


@attrs.define(eq=False)
class _Run:
    span: Span
    run_id: str
    root_run_id: str
    started_at: float
    state: str
    action: str | None = None
    nodes: dict[str, _Node] = attrs.Factory(dict)
    waits: dict[str, tuple[Span, float]] = attrs.Factory(dict)


def _seen_late(target: RunTarget | StageTarget | ToolTarget) -> bool:
    """Whether the first event tracing sees of a run or node says it had begun before: a
    change from a started status, or a control request of a run under way."""
    previous = target.previous_status
    if previous is not None and str(previous) != "pending":
        return True
    return (
        isinstance(target, RunTarget)
        and target.action is not None
        and target.status is not RunStatus.PENDING
    )


def _node_attributes(
    run: _Run, node_id: str, name: str, is_stage: bool, delivery: str
) -> dict[str, str | bool]:
    attributes: dict[str, str | bool] = {
        A.KIND: "stage" if is_stage else "tool",
        A.TASK_NAME: name,
        A.TASK_RUN_ID: node_id,
        A.PIPELINE_RUN_ID: run.run_id,
        A.ROOT_RUN_ID: run.root_run_id,
    }
    if not is_stage:
        attributes[A.GENAI_OPERATION] = "execute_tool"
        attributes[A.GENAI_TOOL_NAME] = name
        attributes[A.GENAI_TOOL_CALL_ID] = node_id
    if delivery == "replay":
        attributes[A.DELIVERY] = "replay"
    return attributes


class SpanBook:
    """Open spans by run, node and prompt, and the rules that start and end them."""

    def __init__(
        self,
        tracer: Tracer | LightTracer,
        *,
        source: str | None = None,
        genai_names: bool = False,
        hints: HostHints | None = None,
        metrics: SpanMetrics | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self._metrics = metrics
        self._tracer = tracer
        self.source = source
        self._genai = genai_names
        self._runs: dict[str, _Run] = {}
        # stage id (nested) -> its run, for child runs looking for their host
        self._stages: dict[str, _Node] = {}
        self._labels: dict[str, Mapping[str, str]] = {}
        self.hints = hints if hints is not None else HostHints()
        # Ended runs' and stages' span contexts, for children that start late (bounded).
        self._ended: OrderedDict[str, tuple[SpanContext, str]] = OrderedDict()
        self.counts = SpanCounts()
        self._on_end = on_end

    # ---- what callers tell the book -------------------------------------------------------

    def activity(self, root: RootActivity) -> None:
        """A root's latest activity: its labels go on its runs' spans."""
        labels: Mapping[str, str] = root.labels or {}
        self._labels[root.root_run_id] = labels
        for run in self._runs.values():
            if run.root_run_id == root.root_run_id:
                self._label(run.span, labels)

    def lifecycle(self, event: LifecycleEvent) -> None:
        """Fold one lifecycle event into the spans."""
        target = event.target
        if isinstance(target, RunTarget):
            self._run_event(event, target)
            return
        run = self._runs.get(event.run_id)
        if run is None:
            run = self._start_run(
                event.run_id,
                event.root_run_id,
                event.owner_session_id,
                event.occurred_at,
                mid_flight=True,
            )
        if isinstance(target, StageTarget):
            self._node_event(event, run, target.stage_id, target.stage_name, target.status, True)
        elif isinstance(target, ToolTarget):
            self._node_event(
                event, run, target.tool_node_id, target.tool_name, target.status, False
            )
        elif isinstance(target, PromptTarget):
            self._prompt_event(event, run, target)

    def sweep(self, present_roots: Iterable[str], at_ms: float) -> int:
        """End the spans of every root not in ``present_roots`` (it vanished from the source's
        snapshot), marked ``workflow_hub.ended_by = vanished``. Returns how many runs ended."""
        present = set(present_roots)
        gone = [run for run in self._runs.values() if run.root_run_id not in present]
        for run in gone:
            if run.run_id in self._runs:
                self._end_run(run, at_ms, ended_by="vanished")
        return len(gone)

    def close(self, at_ms: float) -> None:
        """End every open span (the exporter stops), marked ``ended_by = exporter_closed``."""
        for run in list(self._runs.values()):
            if run.run_id in self._runs:
                self._end_run(run, at_ms, ended_by="exporter_closed")

    @property
    def open_runs(self) -> int:
        return len(self._runs)

    def open_roots(self) -> set[str]:
        return {run.root_run_id for run in self._runs.values()}

    # ---- runs ---------------------------------------------------------------------------

    def _start_run(
        self,
        run_id: str,
        root_run_id: str,
        owner_session_id: str,
        at_ms: float,
        *,
        mid_flight: bool,
        by_child: bool = False,
        starting: tuple[str, ...] = (),
        state: str = "executing",
    ) -> _Run:
        existing = self._runs.get(run_id)
        if existing is not None:
            return existing  # one open span per run, whatever asks for it
        hint = self.hints.get(run_id)
        parent: Span | None = None
        inferred = lost = False
        starting = (*starting, run_id)
        if run_id == root_run_id:
            # A root has no parent in the graph: only a span of the caller's can hold it.
            if hint is not None and hint.span_context is not None:
                parent = trace.NonRecordingSpan(hint.span_context)
        elif hint is not None and hint.parent_run_id is not None:
            outer_id = hint.parent_run_id
            if hint.host_stage_id is not None:
                parent = self._context_of(f"{outer_id}:{hint.host_stage_id}", root_run_id)
            if parent is None:
                parent = self._context_of(outer_id, root_run_id)
            if (
                parent is None
                and outer_id not in starting
                and len(starting) < _MAX_NESTING
                and self._root_of(outer_id) in (None, root_run_id)
            ):
                # The hosting run never sent an event (added pending, say): it starts now,
                # with its first child, so the root stays one trace.
                outer = self._start_run(
                    outer_id,
                    root_run_id,
                    owner_session_id,
                    at_ms,
                    mid_flight=False,
                    by_child=True,
                    starting=starting,
                )
                parent = outer.span
        if parent is None and run_id != root_run_id:
            parent = self._infer_host(root_run_id)
            if parent is None and self._root_of(root_run_id) in (None, root_run_id):
                outer = self._start_run(
                    root_run_id,
                    root_run_id,
                    owner_session_id,
                    at_ms,
                    mid_flight=False,
                    by_child=True,
                    starting=starting,
                )
                parent = outer.span
            inferred = parent is not None
            if parent is None:
                # Events of an earlier run of these ids, queued behind newer facts: its tree is
                # gone from every record. A root span of its own, marked.
                lost = True
        name = run_id
        attributes: dict[str, str | bool | int] = {
            A.KIND: "run",
            A.PIPELINE_NAME: name,
            A.PIPELINE_RUN_ID: run_id,
            A.PIPELINE_ACTION: "RUN",
            A.GENAI_OPERATION: "invoke_workflow",
            A.GENAI_WORKFLOW_NAME: name,
            A.GENAI_CONVERSATION_ID: root_run_id,
            A.ROOT_RUN_ID: root_run_id,
            A.OWNER_SESSION_ID: owner_session_id,
        }
        if self.source is not None:
            attributes[A.SOURCE] = self.source
        if mid_flight:
            attributes[A.FIRST_SEEN_MID_FLIGHT] = True
            self.counts.mid_flight += 1
        if inferred:
            attributes[A.PARENT_INFERRED] = True
        if by_child:
            attributes[A.STARTED_BY_CHILD] = True
        if lost:
            attributes[A.PARENT_LOST] = True
        span = self._start(
            f"invoke_workflow {name}" if self._genai else f"RUN {name}", parent, attributes, at_ms
        )
        self.counts.started += 1
        run = _Run(span=span, run_id=run_id, root_run_id=root_run_id, started_at=at_ms, state=state)
        if self._metrics is not None:
            self._metrics.run_state(None, state)
        self._label(span, self._labels.get(root_run_id, {}))
        self._runs[run_id] = run
        return run

    def _root_of(self, run_id: str) -> str | None:
        """The root a run's open or ended span belongs to; None for a run never seen. A hint is
        the latest ``add_run`` of an id: events queued before it may be of an earlier run of that
        id, in another root (the hint is then stale for them)."""
        run = self._runs.get(run_id)
        if run is not None:
            return run.root_run_id
        ended = self._ended.get(run_id)
        return None if ended is None else ended[1]

    def _context_of(self, key: str, root_run_id: str) -> Span | None:
        """The span of a run (by run id) or stage (by nested id) of ``root_run_id``'s tree, open
        or ended: a child that starts after its host ended still joins it."""
        run = self._runs.get(key)
        if run is not None and run.root_run_id == root_run_id:
            return run.span
        stage = self._stages.get(key)
        if stage is not None:
            outer = self._runs.get(stage.run_id)
            if outer is not None and outer.root_run_id == root_run_id:
                return stage.span
        ended = self._ended.get(key)
        if ended is not None and ended[1] == root_run_id:
            return trace.NonRecordingSpan(ended[0])
        return None

    def _infer_host(self, root_run_id: str) -> Span | None:
        # Without the scheduler's word: the latest started stage of the same root still running.
        for node in reversed(self._stages.values()):
            outer = self._runs.get(node.run_id)
            if outer is not None and outer.root_run_id == root_run_id and node.status == "running":
                return node.span
        return self._context_of(root_run_id, root_run_id)

    def _run_event(self, event: LifecycleEvent, target: RunTarget) -> None:
        run = self._runs.get(event.run_id)
        status = target.status
        if run is None:
            if status in _RUN_ENDS and target.previous_status is None:
                return  # added already ended: nothing ran that a span could show
            run = self._start_run(
                event.run_id,
                event.root_run_id,
                event.owner_session_id,
                event.occurred_at,
                mid_flight=_seen_late(target),
                state=A.RUN_STATES.get(str(status), "executing"),
            )
        span = run.span
        if target.action is not None:
            run.action = str(target.action)
            attributes: dict[str, str] = {A.ACTION: str(target.action)}
            if event.attribution is not None:
                attributes[A.ATTRIBUTION] = str(event.attribution)
            span.add_event(A.EVENT_CONTROL, attributes, timestamp=_ns(event.occurred_at))
        elif target.previous_status is not None and status not in _RUN_ENDS:
            changed = {
                A.STATUS: str(status),
                "workflow_hub.previous_status": str(target.previous_status),
            }
            if event.attribution is not None:
                changed[A.ATTRIBUTION] = str(event.attribution)
            span.add_event(A.EVENT_STATUS, changed, timestamp=_ns(event.occurred_at))
        if str(status) in A.RUN_STATES:
            state = A.RUN_STATES[str(status)]
            span.set_attribute(A.PIPELINE_RUN_STATE, state)
            if self._metrics is not None:
                self._metrics.run_state(run.state, state)
            run.state = state
        if status in _RUN_ENDS and target.action is None:
            if event.attribution is not None:
                span.set_attribute(A.ATTRIBUTION, str(event.attribution))  # who ended it
            error_type = None
            if status is RunStatus.FAILED:
                span.set_status(Status(StatusCode.ERROR, _message(target.error)))
                error_type = _error_attributes(span, target.error)
            self._end_run(
                run, event.occurred_at, ended_by=None, status=str(status), error_type=error_type
            )

    def _end_run(
        self,
        run: _Run,
        at_ms: float,
        *,
        ended_by: str | None,
        status: str | None = None,
        error_type: str | None = None,
    ) -> None:
        del self._runs[run.run_id]
        # Nested runs first: they end with the run that hosts them.
        for other in list(self._runs.values()):
            if other.run_id in self._runs and (
                other.root_run_id == run.root_run_id and run.run_id == run.root_run_id
            ):
                self._end_run(other, at_ms, ended_by=ended_by or "run")
        for prompt_span, _ in run.waits.values():
            prompt_span.set_attribute(A.ENDED_BY, ended_by or "run")
            self._end(prompt_span, at_ms)
        for node_id, node in run.nodes.items():
            if self._stages.pop(node_id, None) is not None:
                self._remember(node_id, node.span, run.root_run_id)
            if node.failed_at is not None:
                self._end_node(node, node.failed_at, "failed")
            else:
                node.span.set_attribute(A.ENDED_BY, ended_by or "run")
                self._end(node.span, at_ms)
                self.counts.ended_by_run += 1
        span = run.span
        span.set_attribute(A.STATUS, status or "unknown")
        if status is not None and status in A.RUN_RESULTS:
            span.set_attribute(A.PIPELINE_RESULT, A.RUN_RESULTS[status])
        if status is not None:
            # It ended. One that tracing stopped watching (vanished, exporter closed, its host's
            # end) keeps the state it was last seen in: nothing said it was finishing.
            span.set_attribute(A.PIPELINE_RUN_STATE, "finalizing")
        if run.action is not None:
            span.set_attribute(A.ACTION, run.action)
        if ended_by is not None:
            span.set_attribute(A.ENDED_BY, ended_by)
            if ended_by == "vanished":
                self.counts.vanished += 1
        self._label(span, self._labels.get(run.root_run_id, {}))
        self._end(span, at_ms)
        self._remember(run.run_id, span, run.root_run_id)
        if self._metrics is not None:
            self._metrics.run_state(run.state, None)
            result = A.RUN_RESULTS.get(status or "", ended_by or "unknown")
            self._metrics.run_ended((at_ms - run.started_at) / 1000, result, error_type)
        if run.run_id == run.root_run_id:
            self._labels.pop(run.root_run_id, None)

    # ---- stages and tools -----------------------------------------------------------------

    def _node_event(
        self,
        event: LifecycleEvent,
        run: _Run,
        node_id: str,
        name: str,
        status: StageStatus | ToolNodeStatus,
        is_stage: bool,
    ) -> None:
        at = event.occurred_at
        node = run.nodes.get(node_id)
        value = str(status)
        if node is None:
            begun = isinstance(event.target, (StageTarget, ToolTarget)) and _seen_late(event.target)
            if value in ("pending", "skipped", "cancelled") and not begun:
                return  # never started
            node = self._start_node(event, run, node_id, name, is_stage, mid_flight=begun)
            node.status = value
        elif value == "running" and node.status in _RETRY_FROM:
            node.attempts += 1
            attributes: dict[str, str | int] = {A.ATTEMPTS: node.attempts}
            attributes[A.DELIVERY] = str(event.delivery)
            if node.error is not None:
                attributes[A.ERROR_MESSAGE] = node.error.message
            if event.attribution is not None:
                attributes[A.ATTRIBUTION] = str(event.attribution)
            node.span.add_event(A.EVENT_RETRY, attributes, timestamp=_ns(at))
            node.failed_at = None
            node.error = None
            node.by = None
        elif value != node.status and value not in _NODE_OUTCOMES:
            changed = {A.STATUS: value, "workflow_hub.previous_status": node.status}
            if event.attribution is not None:
                changed[A.ATTRIBUTION] = str(event.attribution)
            node.span.add_event(A.EVENT_STATUS, changed, timestamp=_ns(at))
        if value in _NODE_OUTCOMES:
            # Who decided the outcome (a person's "mark success"), for the span's end (a
            # failure ends it later, when its run ends without a retry).
            node.by = None if event.attribution is None else str(event.attribution)
        node.status = value
        if value == "failed":
            error = getattr(event.target, "error", None)
            node.failed_at = at
            node.error = error
            failed: dict[str, str] = {}
            if event.attribution is not None:
                failed[A.ATTRIBUTION] = str(event.attribution)
            if error is not None:
                failed[A.ERROR_MESSAGE] = error.message
                if error.type is not None:
                    failed[A.ERROR_TYPE] = error.type
            node.span.add_event(A.EVENT_FAILED, failed, timestamp=_ns(at))
            if self._metrics is not None:
                error_type = "_OTHER" if error is None or error.type is None else error.type
                self._metrics.task_failed(node.kind, node.name, error_type)
        elif (is_stage and status in _STAGE_ENDS) or (not is_stage and status in _TOOL_ENDS):
            del run.nodes[node_id]
            if self._stages.pop(node_id, None) is not None:
                self._remember(node_id, node.span, run.root_run_id)
            self._end_node(node, at, value)

    def _start_node(
        self,
        event: LifecycleEvent,
        run: _Run,
        node_id: str,
        name: str,
        is_stage: bool,
        *,
        mid_flight: bool = False,
    ) -> _Node:
        attributes = _node_attributes(run, node_id, name, is_stage, str(event.delivery))
        if mid_flight:
            attributes[A.FIRST_SEEN_MID_FLIGHT] = True
            self.counts.mid_flight += 1
        span_name = f"execute_tool {name}" if self._genai and not is_stage else name
        span = self._start(span_name, run.span, attributes, event.occurred_at)
        self.counts.started += 1
        node = _Node(
            span=span,
            status="pending",
            run_id=run.run_id,
            kind="stage" if is_stage else "tool",
            name=name,
            started_at=event.occurred_at,
        )
        run.nodes[node_id] = node
        if is_stage:
            self._stages[node_id] = node
        return node

    def _end_node(self, node: _Node, at_ms: float, status: str) -> None:
        span = node.span
        span.set_attribute(A.STATUS, status)
        if node.by is not None and status in _NODE_OUTCOMES:
            span.set_attribute(A.ATTRIBUTION, node.by)
        span.set_attribute(A.ATTEMPTS, node.attempts)
        if status in A.TASK_RESULTS:
            span.set_attribute(A.TASK_RUN_RESULT, A.TASK_RESULTS[status])
        if status == "failed":
            span.set_status(Status(StatusCode.ERROR, _message(node.error)))
            _error_attributes(span, node.error)
        self._end(span, at_ms)
        if self._metrics is not None:
            result = A.TASK_RESULTS.get(status, status)
            self._metrics.task_ended(node.kind, node.name, (at_ms - node.started_at) / 1000, result)

    # ---- human waits ----------------------------------------------------------------------

    def _prompt_event(self, event: LifecycleEvent, run: _Run, target: PromptTarget) -> None:
        status = str(target.status)
        if status == "opened":
            host = run.nodes.get(target.stage_id) if target.stage_id is not None else None
            parent = host.span if host is not None else run.span
            attributes = {
                A.KIND: "human_wait",
                A.PROMPT_ID: target.prompt_id,
                A.PIPELINE_RUN_ID: run.run_id,
                A.ROOT_RUN_ID: run.root_run_id,
            }
            span = self._start("human wait", parent, attributes, event.occurred_at)
            self.counts.started += 1
            old = run.waits.pop(target.prompt_id, None)
            if old is not None:
                self._end(old[0], event.occurred_at)
            run.waits[target.prompt_id] = (span, event.occurred_at)
            return
        waited = run.waits.pop(target.prompt_id, None)
        if waited is not None:
            span, opened_at = waited
            span.set_attribute(A.PROMPT_RESULT, status)
            self._end(span, event.occurred_at)
            if self._metrics is not None:
                self._metrics.wait_ended((event.occurred_at - opened_at) / 1000, status)

    # ---- helpers --------------------------------------------------------------------------

    def _start(
        self,
        name: str,
        parent: Span | None,
        attributes: Mapping[str, str | bool | int],
        at_ms: float,
    ) -> Span:
        """A span under ``parent`` (a root span without one: never the ambient context of the
        hook task)."""
        if isinstance(self._tracer, LightTracer):
            return self._tracer.start_child(name, parent, attributes, _ns(at_ms))
        context = Context() if parent is None else trace.set_span_in_context(parent)
        return self._tracer.start_span(
            name,
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(at_ms),
        )

    def _end(self, span: Span, at_ms: float) -> None:
        span.end(end_time=_ns(at_ms))
        self.counts.ended += 1
        if self._on_end is not None:
            self._on_end()

    def _remember(self, key: str, span: Span, root_run_id: str) -> None:
        self._ended[key] = (span.get_span_context(), root_run_id)
        self._ended.move_to_end(key)
        while len(self._ended) > _HINTS_LIMIT:
            self._ended.popitem(last=False)

    @staticmethod
    def _label(span: Span, labels: Mapping[str, str]) -> None:
        for key, value in labels.items():
            span.set_attribute(A.LABEL_PREFIX + key, value)


def _message(error: FailureDetail | None) -> str | None:
    return None if error is None else error.message


def _error_attributes(span: Span, error: FailureDetail | None) -> str:
    """Set the error's attributes; returns its ``error.type``."""
    error_type = "_OTHER" if error is None or error.type is None else error.type
    span.set_attribute(A.ERROR_TYPE, error_type)
    if error is not None:
        span.set_attribute(A.ERROR_MESSAGE, error.message)
    return error_type
