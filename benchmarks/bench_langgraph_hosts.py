"""What watching costs a LangGraph graph on each host (issue 38): wall time against the plain
graph, for nodes that do 1 ms of work, on ``workflow_hub.sync`` (``invoke``) and on
``workflow_hub.asyncio`` (``ainvoke``). Goal: <= 1.1x on both.

Two shapes, each run plain and watched alternately, best of ``--repeats``:

- **a chain**: one invocation of ``--nodes`` super-steps (a node that loops back to itself), each
  node waiting 1 ms: the steady cost per node;
- **requests**: ``--requests`` invocations of a four-node graph (1 ms nodes) on one thread, a
  new wrapper per invocation, as a web service builds it: the cost per invocation (the report
  starting and ending, the reporter's wake-ups), which a chain hides.

Sync nodes wait with ``time.sleep`` (LangGraph runs them in its thread pool); async nodes with
``asyncio.sleep``. CPU is the whole process's (every thread). Not part of ``make bench``.

Run alone: ``.venv/bin/python benchmarks/bench_langgraph_hosts.py [--nodes 500]``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import workflow_hub.asyncio
import workflow_hub.sync
from workflow_hub.langgraph import watch

WAIT = 0.001


class State(TypedDict):
    count: int


def chain_graph(nodes: int, asynchronous: bool) -> Any:
    def step(state: State) -> dict[str, int]:
        time.sleep(WAIT)
        return {"count": state["count"] + 1}

    async def astep(state: State) -> dict[str, int]:
        await asyncio.sleep(WAIT)
        return {"count": state["count"] + 1}

    def again(state: State) -> str:
        return "step" if state["count"] < nodes else END

    builder = StateGraph(State)
    builder.add_node("step", astep if asynchronous else step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", again)
    return builder.compile()


def request_graph(asynchronous: bool) -> Any:
    builder = StateGraph(State)
    previous = START
    for name in ("plan", "search", "act", "reply"):

        def step(state: State) -> dict[str, int]:
            time.sleep(WAIT)
            return {"count": state["count"] + 1}

        async def astep(state: State) -> dict[str, int]:
            await asyncio.sleep(WAIT)
            return {"count": state["count"] + 1}

        builder.add_node(name, astep if asynchronous else step)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=InMemorySaver())


class Best:
    """Best wall and CPU seconds per variant."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name] = min(self.wall.get(name, wall), wall)
        self.cpu[name] = min(self.cpu.get(name, cpu), cpu)

    def line(self, case: str, per: int, unit: str) -> str:
        ratio = self.wall["watched"] / self.wall["plain"]
        added = (self.cpu["watched"] - self.cpu["plain"]) / per * 1e6
        return (
            f"{case:<44} plain {self.wall['plain']:7.3f} s  watched {self.wall['watched']:7.3f} s"
            f"  ratio {ratio:5.2f}{'  (goal <= 1.1)' if ratio > 1.1 else ''}"
            f"  +{added:6.0f} us CPU per {unit}"
        )


def sync_case(options: argparse.Namespace) -> list[str]:
    lines = []
    with workflow_hub.sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench")
        tracker.start()
        chain = chain_graph(options.nodes, asynchronous=False)
        watched = watch(chain, tracker)
        config = {"recursion_limit": options.nodes + 10}
        best = Best()
        for _ in range(options.repeats):
            for name, invoke in (("plain", chain.invoke), ("watched", watched.invoke)):
                wall, cpu = time.perf_counter(), time.process_time()
                invoke({"count": 0}, config)
                best.add(name, time.perf_counter() - wall, time.process_time() - cpu)
        lines.append(
            best.line(f"sync: a chain of {options.nodes} 1 ms nodes", options.nodes, "node")
        )

        graphs = {"plain": request_graph(False), "watched": request_graph(False)}
        best = Best()
        for repeat in range(options.repeats):
            for name, graph in graphs.items():
                thread = {"configurable": {"thread_id": f"r{repeat}"}}
                wall, cpu = time.perf_counter(), time.process_time()
                for _ in range(options.requests):
                    if name == "plain":
                        graph.invoke({"count": 0}, thread)
                    else:
                        watch(graph, tracker).invoke({"count": 0}, thread)
                best.add(name, time.perf_counter() - wall, time.process_time() - cpu)
        case = f"sync: {options.requests} requests of 4 1 ms nodes"
        lines.append(best.line(case, options.requests, "request"))
    return lines


async def asyncio_case(options: argparse.Namespace) -> list[str]:
    lines = []
    async with workflow_hub.asyncio.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench")
        tracker.start()
        chain = chain_graph(options.nodes, asynchronous=True)
        watched = watch(chain, tracker)
        config = {"recursion_limit": options.nodes + 10}
        best = Best()
        invocations: tuple[tuple[str, Callable[..., Awaitable[Any]]], ...] = (
            ("plain", chain.ainvoke),
            ("watched", watched.ainvoke),
        )
        for _ in range(options.repeats):
            for name, ainvoke in invocations:
                wall, cpu = time.perf_counter(), time.process_time()
                await ainvoke({"count": 0}, config)
                best.add(name, time.perf_counter() - wall, time.process_time() - cpu)
        case = f"asyncio: a chain of {options.nodes} 1 ms nodes"
        lines.append(best.line(case, options.nodes, "node"))

        graphs = {"plain": request_graph(True), "watched": request_graph(True)}
        best = Best()
        for repeat in range(options.repeats):
            for name, graph in graphs.items():
                thread = {"configurable": {"thread_id": f"r{repeat}"}}
                wall, cpu = time.perf_counter(), time.process_time()
                for _ in range(options.requests):
                    if name == "plain":
                        await graph.ainvoke({"count": 0}, thread)
                    else:
                        await watch(graph, tracker).ainvoke({"count": 0}, thread)
                best.add(name, time.perf_counter() - wall, time.process_time() - cpu)
        case = f"asyncio: {options.requests} requests of 4 1 ms nodes"
        lines.append(best.line(case, options.requests, "request"))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    for line in sync_case(options) + asyncio.run(asyncio_case(options)):
        print(line)


if __name__ == "__main__":
    main()
