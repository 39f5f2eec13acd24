"""Over random tracker facts: every run, stage and tool that started has its span, ended
exactly once, never two at once for one id, with a parent chain that mirrors the graph (issue 41).

The facts go through a real tracker, hub and ``HookRunner``; the spans through the real SDK to
its in-memory exporter (the OTLP path has its own tests: here the examples must be quick).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import trio
import trio.testing
from hypothesis import event as label
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from workflow_hub import ContractError, HookRunner, LifecycleEvent, RunTracker, open_hub
from workflow_hub.otel import trace_hub

RUN_IDS = ("r0", "r1", "r2", "r3")
NODE_IDS = ("a", "b", "c")
PROMPT_IDS = ("p0", "p1")
RUN_STATUSES = st.sampled_from(
    (
        *("running", "running", "running", "pending", "paused", "completed"),
        *("skipped", "cancelled", "blocked", "failed", "killed"),
    )
)
STAGE_STATUSES = st.sampled_from(
    (
        *("running", "running", "completed", "failed", "pending"),
        *("awaiting_input", "paused", "blocked", "skipped"),
    )
)
TOOL_STATUSES = st.sampled_from(
    ("pending", "running", "completed", "failed", "cached", "cancelled")
)


class Driver:
    def __init__(self, data: st.DataObject, tracker: Any, clock: Callable[[], float]) -> None:
        self.data = data
        self.tracker = tracker
        self.runs: dict[str, tuple[str | None, str | None]] = {}  # run -> (parent, host)

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def run_id(self) -> str:
        return str(self.draw(st.sampled_from(sorted(self.runs) or RUN_IDS)))

    def new_run(self) -> None:
        run_id = str(self.draw(st.sampled_from(RUN_IDS)))
        parent = host = None
        if self.runs and self.draw(st.booleans()):
            parent = str(self.draw(st.sampled_from(sorted(self.runs))))
            if self.draw(st.booleans()):
                host = str(self.draw(st.sampled_from(NODE_IDS)))
        self.tracker.add_run(
            run_id, parent_run_id=parent, host_stage_id=host, status=self.draw(RUN_STATUSES)
        )
        self.runs[run_id] = (parent, host)

    def remove(self) -> None:
        run_id = self.run_id()
        self.tracker.remove_run(run_id)
        for gone in [r for r in self.runs if r == run_id or self.runs[r][0] == run_id]:
            self.runs.pop(gone, None)

    def step(self) -> None:
        t, d = self.tracker, self.draw
        operations: list[Callable[[], None]] = [
            self.new_run,
            self.new_run,
            lambda: t.set_run_status(
                self.run_id(), d(RUN_STATUSES), error=d(st.sampled_from([None, "boom"]))
            ),
            lambda: t.request_control(
                self.run_id(), d(st.sampled_from(("quit", "kill", "pause", "resume")))
            ),
            lambda: t.add_stage(self.run_id(), d(st.sampled_from(NODE_IDS)), "stage"),
            lambda: t.add_tool(self.run_id(), "t" + d(st.sampled_from(NODE_IDS)), "tool"),
            lambda: t.set_stage_status(
                self.run_id(), d(st.sampled_from(NODE_IDS)), d(STAGE_STATUSES)
            ),
            lambda: t.set_stage_status(
                self.run_id(), d(st.sampled_from(NODE_IDS)), d(STAGE_STATUSES)
            ),
            lambda: t.set_tool_status(
                self.run_id(), "t" + d(st.sampled_from(NODE_IDS)), d(TOOL_STATUSES)
            ),
            lambda: t.open_prompt(
                self.run_id(),
                d(st.sampled_from(PROMPT_IDS)),
                "confirm",
                "?",
                stage_id=d(st.sampled_from((None, *NODE_IDS))),
            ),
            lambda: t.answer_prompt(self.run_id(), d(st.sampled_from(PROMPT_IDS))),
            lambda: t.cancel_prompt(self.run_id(), d(st.sampled_from(PROMPT_IDS))),
            self.remove,
        ]
        operation = operations[d(st.integers(0, len(operations) - 1))]
        with contextlib.suppress(KeyError, ValueError, ContractError, RuntimeError):
            operation()


def _play(
    data: st.DataObject, steps: int
) -> tuple[list[ReadableSpan], list[LifecycleEvent], Any, dict[str, tuple[str | None, str | None]]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ticks = itertools.count(1_000)
    events: list[LifecycleEvent] = []
    result: dict[str, Any] = {}

    def clock() -> float:
        return float(next(ticks))

    async def main() -> None:
        async with open_hub() as hub:
            runner = HookRunner(hub)
            tracing = trace_hub(runner, tracer_provider=provider)
            runner.extension("record").on("workflow_lifecycle", events.append)
            runner.bind()
            tracker = RunTracker(hub.register_publisher(), owner_session_id="s", clock=clock)
            tracker.start()
            driver = Driver(data, tracing.facts(tracker), clock)
            for _ in range(steps):
                driver.step()
            await trio.testing.wait_all_tasks_blocked()
            tracing.close(clock())
            result["statistics"] = tracing.statistics()
            result["runs"] = driver.runs

    trio.run(main)
    return (
        list(exporter.get_finished_spans()),
        events,
        result["statistics"],
        result.get("hosts", {}),
    )


def _id(span: ReadableSpan) -> tuple[str, str]:
    attributes = span.attributes or {}
    kind = str(attributes["workflow_hub.span.kind"])
    if kind == "run":
        return kind, str(attributes["cicd.pipeline.run.id"])
    if kind == "human_wait":
        return kind, f"{attributes['cicd.pipeline.run.id']}/{attributes['workflow_hub.prompt.id']}"
    return kind, str(attributes["cicd.pipeline.task.run.id"])


@settings(deadline=None)
@given(data=st.data(), steps=st.integers(1, 50))
def test_every_started_run_stage_and_tool_has_one_span_ended_once_under_its_parent(
    data: st.DataObject, steps: int
) -> None:
    spans, events, statistics, _ = _play(data, steps)
    # Ended exactly once: the processor got each span once, and nothing stayed open.
    assert statistics.spans_started == statistics.spans_ended == len(spans)
    assert statistics.open_runs == 0
    assert len({span.context.span_id for span in spans}) == len(spans)

    # Whatever started has a span: a run with any event that was not an ending at its start,
    # a stage or tool that left pending.
    ids = {_id(span) for span in spans}
    label(f"{len(spans) // 5 * 5}+ spans")
    label(f"nested runs: {sum(1 for kind, _ in ids if kind == 'run') > 1}")
    for event in events:
        target = event.target
        status = str(target.status)
        if target.kind == "stage" and status not in ("pending", "skipped"):
            assert ("stage", target.stage_id) in ids
        elif target.kind == "tool" and status not in ("pending", "cancelled"):
            assert ("tool", target.tool_node_id) in ids
        elif target.kind == "run" and (status in ("running", "pending", "paused", "blocked")):
            assert ("run", event.run_id) in ids

    # One span at a time for one id: a later span of the same id starts after the earlier ended.
    by_id: dict[tuple[str, str], list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        by_id[_id(span)].append(span)
    for same in by_id.values():
        same.sort(key=lambda span: span.start_time or 0)
        for earlier, later in itertools.pairwise(same):
            assert (earlier.end_time or 0) <= (later.start_time or 0)

    # The parent chain mirrors the graph.
    spans_by_id = {span.context.span_id: span for span in spans}
    for span in spans:
        kind, key = _id(span)
        attributes = span.attributes or {}
        parent = spans_by_id.get(span.parent.span_id) if span.parent is not None else None
        if kind == "run" and attributes["workflow_hub.root_run_id"] == key:
            assert span.parent is None, key
            continue
        if kind == "run" and attributes.get("workflow_hub.parent_lost"):
            # An earlier run of the same ids, whose tree newer facts replaced before its events
            # were dispatched: no record of its host is left. A root of its own, marked.
            assert span.parent is None, key
            continue
        assert parent is not None, (kind, key)
        assert parent.context.trace_id == span.context.trace_id
        parent_kind, parent_key = _id(parent)
        run_id = str(attributes["cicd.pipeline.run.id"])
        if kind in ("stage", "tool"):
            assert (parent_kind, parent_key) == ("run", run_id)
        elif kind == "human_wait":
            assert (parent_kind, (parent.attributes or {})["cicd.pipeline.run.id"]) in {
                ("run", run_id),
                ("stage", run_id),
            }
        else:
            # A nested run: under a run or stage of its own root's tree, never another root's.
            assert parent_kind in ("run", "stage")
            assert (parent.attributes or {})["workflow_hub.root_run_id"] == attributes[
                "workflow_hub.root_run_id"
            ], (key, parent_kind, parent_key, dict(attributes), dict(parent.attributes or {}))
