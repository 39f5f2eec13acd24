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
  case, where every microsecond of reporting shows; the per-node cost row is
  ``(watched - plain) / N``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

import workflow_hub.sync
from _harness import (
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


def _timed(invoke: Callable[..., Any], executions: int) -> float:
    config = {"recursion_limit": executions + 10}
    started = now_ns()
    result = invoke({"count": 0}, config)
    elapsed = now_ns() - started
    if result != {"count": executions}:
        raise RuntimeError(f"the graph did not run {executions} nodes: {result}")
    return float(elapsed)


def _measure(scale: Scale, executions: int, wait: float) -> tuple[float, float]:
    """Best wall-clock ns of (plain invoke, watched invoke) of one graph."""
    graph = _graph(executions, wait)
    with workflow_hub.sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench")
        tracker.start()
        watched = watch(graph, tracker)
        best = best_of(
            scale,
            {
                "plain": partial(_timed, graph.invoke, executions),
                "watched": partial(_timed, watched.invoke, executions),
            },
        )
    return best["plain"], best["watched"]


def _measure_direct(scale: Scale, executions: int, wait: float) -> tuple[float, float]:
    """The same with a RunTracker on a hub that is not running, called by the reporter thread
    alone: the integration's own cost and the tracker's, without a host's hand-over per fact."""
    graph = _graph(executions, wait)
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="bench")
    tracker.start()
    watched = watch(graph, tracker)
    best = best_of(
        scale,
        {
            "plain": partial(_timed, graph.invoke, executions),
            "watched": partial(_timed, watched.invoke, executions),
        },
    )
    hub.dispose()
    return best["plain"], best["watched"]


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
        plain, watched = _measure(scale, executions, wait)
        rows.append(
            Row(
                benchmark="langgraph",
                case=case,
                variant=label,
                value=watched,
                unit="ns",
                reference="plain graph.invoke",
                reference_value=plain,
                goal=goal,
            )
        )
        rows.append(
            Row(
                benchmark="langgraph",
                case=f"per node, {case.split(', ')[0].split(' ', 1)[1]}",
                variant=label,
                value=max(watched - plain, 0.0) / executions,
                unit="ns",
                reference="plain per node",
                reference_value=plain / executions,
            )
        )
    plain, watched = _measure_direct(scale, executions, WAIT)
    rows.append(
        Row(
            benchmark="langgraph",
            case=f"{executions} nodes waiting 1 ms, invoke, RunTracker without a host",
            variant=label,
            value=watched,
            unit="ns",
            reference="plain graph.invoke",
            reference_value=plain,
        )
    )
    return rows


if __name__ == "__main__":
    run_script(run)
