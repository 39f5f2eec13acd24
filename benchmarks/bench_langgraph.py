"""Watching LangGraph (issue 27): what ``workflow_hub.langgraph`` costs the graph it watches.

One graph, N node executions (a node that loops back to itself until it ran N times: N
super-steps, N tasks, N stages), run with ``graph.invoke`` and with ``watch(graph, tracker).invoke``
in the same run, interleaved, best of several repeats, on the wall clock (what the user waits
for). The tracker is the thread host's (``workflow_hub.sync``), the one ``invoke`` is for.

- **Nodes that wait 1 ms** (``time.sleep(0.001)``: the cheapest node that talks to anything, a
  local service or a cache). Goal: <= 1.1x the plain graph: watching must not slow the
  scheduler. The reporting runs in the integration's reporter thread and the hub's thread while
  the node waits.
- **Without a host** (informational): the waiting graph watched through a ``RunTracker`` on a
  hub that is not running, which only the integration's reporter thread calls: what the
  integration and the tracker cost, without the thread host's hand-over of every fact.
- **Empty nodes** (return at once: LangGraph's own per-task cost only). Informational: the worst
  case, where every microsecond of reporting shows.

Each case also reports the cost per node in CPU time of the whole process (LangGraph's thread,
the integration's reporter thread and the hub's thread): ``(watched - plain) / N``, the figure
that does not depend on how busy the machine is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple, TypedDict

from langgraph.graph import END, START, StateGraph

import workflow_hub.sync
from _harness import (
    BenchmarkError,
    Goal,
    HubFactory,
    Row,
    Scale,
    best_of,
    now_ns,
    run_script,
)
from workflow_hub import RunTracker, WorkflowActivityHub
from workflow_hub.langgraph import watch

NODES: dict[str, int] = {"full": 1_000, "quick": 300, "smoke": 20}
WAIT = 0.001
"""Seconds each node of the waiting graph sleeps."""


class _State(TypedDict):
    count: int


def _graph(executions: int, wait: float) -> Any:
    def step(state: _State) -> dict[str, int]:
        if wait:
            time.sleep(wait)
        return {"count": state["count"] + 1}

    def again(state: _State) -> str:
        return "step" if state["count"] < executions else END

    builder = StateGraph(_State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", again)
    return builder.compile()


class _Timer:
    """Times invocations: wall clock returned (what best_of keeps), the CPU time of the whole
    process (every thread: LangGraph's, the reporter's, the hub's) remembered, best of each."""

    def __init__(self, executions: int) -> None:
        self.executions = executions
        self.cpu: dict[str, float] = {}

    def timed(self, name: str, invoke: Callable[..., Any]) -> float:
        config = {"recursion_limit": self.executions + 10}
        cpu = time.process_time_ns()
        started = now_ns()
        result = invoke({"count": 0}, config)
        elapsed = now_ns() - started
        cpu = time.process_time_ns() - cpu
        if result != {"count": self.executions}:
            raise BenchmarkError(f"the graph did not run {self.executions} nodes: {result}")
        self.cpu[name] = min(self.cpu.get(name, cpu), cpu)
        return float(elapsed)

    def best(self, scale: Scale, plain: Callable[..., Any], watched: Callable[..., Any]) -> _Best:
        wall = best_of(
            scale,
            {
                "plain": partial(self.timed, "plain", plain),
                "watched": partial(self.timed, "watched", watched),
            },
        )
        return _Best(wall["plain"], wall["watched"], self.cpu["plain"], self.cpu["watched"])


class _Best(NamedTuple):
    plain: float
    watched: float
    plain_cpu: float
    watched_cpu: float


def _measure(scale: Scale, executions: int, wait: float) -> _Best:
    """Best wall-clock and CPU ns of (plain invoke, watched invoke) of one graph."""
    graph = _graph(executions, wait)
    with workflow_hub.sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench")
        tracker.start()
        watched = watch(graph, tracker)
        return _Timer(executions).best(scale, graph.invoke, watched.invoke)


def _measure_direct(scale: Scale, executions: int, wait: float) -> _Best:
    """The same with a RunTracker on a hub that is not running, called by the reporter thread
    alone: the integration's own cost and the tracker's, without a host's hand-over per fact."""
    graph = _graph(executions, wait)
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="bench")
    tracker.start()
    watched = watch(graph, tracker)
    best = _Timer(executions).best(scale, graph.invoke, watched.invoke)
    hub.dispose()
    return best


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the hosts build their own hub: one variant is the measurement
    executions = NODES.get(scale.name, NODES["full"])
    rows: list[Row] = []
    for case, wait, goal in (
        (f"{executions} nodes waiting 1 ms, invoke", WAIT, Goal(op="<=", threshold=1.1)),
        (f"{executions} empty nodes, invoke", 0.0, None),
    ):
        best = _measure(scale, executions, wait)
        rows.append(
            Row(
                benchmark="langgraph",
                case=case,
                variant=label,
                value=best.watched,
                unit="ns",
                reference="plain graph.invoke",
                reference_value=best.plain,
                goal=goal,
            )
        )
        rows.append(
            Row(
                benchmark="langgraph",
                case=f"CPU per node, {case.split(', ')[0].split(' ', 1)[1]}",
                variant=label,
                value=max(best.watched_cpu - best.plain_cpu, 0.0) / executions,
                unit="ns",
                reference="plain CPU per node",
                reference_value=best.plain_cpu / executions,
                note="all threads",
            )
        )
    best = _measure_direct(scale, executions, WAIT)
    rows.append(
        Row(
            benchmark="langgraph",
            case=f"{executions} nodes waiting 1 ms, invoke, RunTracker without a host",
            variant=label,
            value=best.watched,
            unit="ns",
            reference="plain graph.invoke",
            reference_value=best.plain,
        )
    )
    rows.append(
        Row(
            benchmark="langgraph",
            case="CPU per node, RunTracker without a host",
            variant=label,
            value=max(best.watched_cpu - best.plain_cpu, 0.0) / executions,
            unit="ns",
            reference="plain CPU per node",
            reference_value=best.plain_cpu / executions,
            note="all threads",
        )
    )
    return rows


if __name__ == "__main__":
    run_script(run)
