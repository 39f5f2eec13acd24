"""What watching costs a LangGraph graph on each host (issue 38): wall time against the plain
graph, for nodes that do 1 ms of work, on ``workflow_hub.sync`` (``invoke``) and on
``workflow_hub.asyncio`` (``ainvoke``). Goal: <= 1.1x on both.

Two shapes, each run plain and watched, interleaved:

- **a chain** (the asyncio host; benchmark ``langgraph`` has the thread host's): one invocation
  of N super-steps (a node that loops back to itself), each node waiting 1 ms: the steady cost
  per node, best of the scale's repeats;
- **requests** (both hosts): R invocations of a four-node graph (1 ms nodes) with a
  checkpointer, on one thread, a new wrapper per invocation, as a web service builds it: the
  cost per invocation (the report starting and ending, the hand-overs to the reporter and the
  hub), which a chain hides. Plain and watched alternate request by request (R times the
  scale's repeats each), and the row is R times the median request: the best of whole runs
  of R requests drifted with the machine's load (1.08 to 1.22x for the same code).

Sync nodes wait with ``time.sleep`` (LangGraph runs them in its thread pool); async nodes with
``asyncio.sleep``. Each case also reports the CPU the watching adds, per node or per request,
in CPU time of the whole process (every thread): the figure that does not depend on how busy
the machine is.

Run alone: ``.venv/bin/python benchmarks/bench_langgraph_hosts.py [--quick | --smoke]``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import workflow_hub.asyncio
import workflow_hub.sync
from _harness import BenchmarkError, Goal, HubFactory, Row, Scale, best_of, run_script
from workflow_hub import WorkflowActivityHub
from workflow_hub.langgraph import watch

WAIT = 0.001
"""Seconds each node waits."""
CHAIN: dict[str, int] = {"full": 500, "quick": 200, "smoke": 10}
REQUESTS: dict[str, int] = {"full": 100, "quick": 40, "smoke": 3}
STEPS = ("plan", "search", "act", "reply")


class _State(TypedDict):
    count: int


def _step(asynchronous: bool) -> Callable[[_State], Any]:
    def step(state: _State) -> dict[str, int]:
        time.sleep(WAIT)
        return {"count": state["count"] + 1}

    async def astep(state: _State) -> dict[str, int]:
        await asyncio.sleep(WAIT)
        return {"count": state["count"] + 1}

    return astep if asynchronous else step


def chain_graph(nodes: int, asynchronous: bool) -> Any:
    def again(state: _State) -> str:
        return "step" if state["count"] < nodes else END

    builder = StateGraph(_State)
    builder.add_node("step", _step(asynchronous))
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", again)
    return builder.compile()


def request_graph(asynchronous: bool) -> Any:
    builder = StateGraph(_State)
    previous = START
    for name in STEPS:
        builder.add_node(name, _step(asynchronous))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=InMemorySaver())


# --- one timing loop for both hosts -----------------------------------------------------------
#
# A host is a tracker and a way to run one invocation to its end from this (sync) code: the
# thread host calls ``invoke`` here; the asyncio host runs ``ainvoke`` on one event loop, kept
# for the whole measurement (its hub lives there). Everything else is shared.

Invoke = Callable[[Any, Any, dict[str, Any]], Any]
"""Runs ``graph`` (plain or watched) on ``input`` with ``config`` to its end; its result."""


@contextmanager
def _sync_host() -> Iterator[tuple[Any, Invoke]]:
    with workflow_hub.sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench")
        tracker.start()
        yield tracker, lambda graph, input, config: graph.invoke(input, config)


@contextmanager
def _asyncio_host() -> Iterator[tuple[Any, Invoke]]:
    with asyncio.Runner() as runner:
        opened = workflow_hub.asyncio.open_hub()
        hub = runner.run(opened.__aenter__())
        try:
            tracker = hub.tracker(owner_session_id="bench")
            tracker.start()

            def invoke(graph: Any, input: Any, config: dict[str, Any]) -> Any:
                call: Callable[..., Awaitable[Any]] = graph.ainvoke
                return runner.run(call(input, config))

            yield tracker, invoke
        finally:
            runner.run(opened.__aexit__(None, None, None))


HOSTS = {"sync": (_sync_host, "invoke"), "asyncio": (_asyncio_host, "ainvoke")}


class _Pair:
    """Plain and watched runs of one case: best wall (kept by best_of) and best CPU seconds."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}

    def timed(self, name: str, run: Callable[[], None]) -> float:
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        self.cpu[name] = min(self.cpu.get(name, cpu), cpu)
        return wall


def _measure(
    scale: Scale, plain: Callable[[], None], watched: Callable[[], None]
) -> dict[str, float]:
    pair = _Pair()
    wall = best_of(
        scale,
        {
            "plain": lambda: pair.timed("plain", plain),
            "watched": lambda: pair.timed("watched", watched),
        },
    )
    return {**wall, "plain_cpu": pair.cpu["plain"], "watched_cpu": pair.cpu["watched"]}


def _rows(
    case: str, host: str, per: int, unit: str, method: str, best: dict[str, float], label: str
) -> list[Row]:
    return [
        Row(
            benchmark="langgraph_hosts",
            case=f"{host}: {case}",
            variant=label,
            value=best["watched"] * 1e9,
            unit="ns",
            reference=f"plain graph.{method}",
            reference_value=best["plain"] * 1e9,
            goal=Goal(op="<=", threshold=1.1),
        ),
        Row(
            benchmark="langgraph_hosts",
            case=f"{host}: CPU per {unit}, {case.split(' of ')[0]}",
            variant=label,
            value=max(best["watched_cpu"] - best["plain_cpu"], 0.0) / per * 1e9,
            unit="ns",
            reference=f"plain CPU per {unit}",
            reference_value=best["plain_cpu"] / per * 1e9,
            note="all threads",
        ),
    ]


def _host_rows(scale: Scale, host: str, label: str) -> list[Row]:
    open_host, method = HOSTS[host]
    asynchronous = host == "asyncio"
    nodes = CHAIN.get(scale.name, CHAIN["full"])
    requests = REQUESTS.get(scale.name, REQUESTS["full"])
    rows: list[Row] = []
    with open_host() as (tracker, invoke):
        if asynchronous:
            chain = chain_graph(nodes, asynchronous=True)
            watched_chain = watch(chain, tracker)
            config = {"recursion_limit": nodes + 10}

            def run_chain(graph: Any) -> None:
                result = invoke(graph, {"count": 0}, config)
                if result != {"count": nodes}:
                    raise BenchmarkError(f"the chain did not run {nodes} nodes: {result}")

            best = _measure(scale, lambda: run_chain(chain), lambda: run_chain(watched_chain))
            case = f"a chain of {nodes} 1 ms nodes"
            rows += _rows(case, host, nodes, "node", method, best, label)

        graphs = {"plain": request_graph(asynchronous), "watched": request_graph(asynchronous)}
        threads = {name: {"configurable": {"thread_id": f"{name}-1"}} for name in graphs}
        times: dict[str, list[tuple[float, float]]] = {"plain": [], "watched": []}

        def one_request(name: str) -> tuple[float, float]:
            graph = graphs[name]
            # A new wrapper per request, as a web service builds it.
            target = graph if name == "plain" else watch(graph, tracker)
            cpu, wall = time.process_time(), time.perf_counter()
            result = invoke(target, {"count": 0}, threads[name])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if result != {"count": len(STEPS)}:
                raise BenchmarkError(f"a request did not run its nodes: {result}")
            return wall, cpu

        # Request by request, plain and watched alternating (which goes first alternating too),
        # medians: a run of 100 requests is 1 s, long enough for the machine's load to drift
        # between the two, and its best of five spread 1.08 to 1.22x for the same code.
        for _ in range(5):  # warm up
            one_request("plain")
            one_request("watched")
        for index in range(requests * scale.repeats):
            order = ("plain", "watched") if index % 2 else ("watched", "plain")
            for name in order:
                times[name].append(one_request(name))
        best = {
            "plain": requests * statistics.median(wall for wall, _ in times["plain"]),
            "watched": requests * statistics.median(wall for wall, _ in times["watched"]),
            "plain_cpu": requests * statistics.median(cpu for _, cpu in times["plain"]),
            "watched_cpu": requests * statistics.median(cpu for _, cpu in times["watched"]),
        }
        case = f"{requests} requests of {len(STEPS)} 1 ms nodes, a wrapper each (medians)"
        rows += _rows(case, host, requests, "request", method, best, label)
    return rows


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the hosts build their own hub: one variant is the measurement
    return [row for host in HOSTS for row in _host_rows(scale, host, label)]


if __name__ == "__main__":
    run_script(run)
