"""One LangGraph thread, turn after turn (issue 38): does a turn cost more as the thread ages?

A chat thread lives for months. One thread of a four-node graph with a checkpointer is given
new input ``--turns`` times through ``watch(graph, tracker).invoke`` on the thread host
(``workflow_hub.sync``); for the first and the last ``--window`` turns it measures, per turn,
the wall time, the CPU time of the whole process, the root's snapshot size on the wire
(``wire.dumps`` of its ``RootActivity``) and its node count. The plain graph's turns, measured
the same way in the same run, are the reference: LangGraph's own checkpointer grows with the
thread too, so the figure that belongs to the integration is the watched turn's cost over the
plain turn's, at the start and at the end. Goal: turn N costs <= 1.2x turn 1 (the watched
turn's CPU, every thread; its wall time is shown too) and its snapshot is <= 1.2x as large.

In ``make bench`` (``run_all.py``) at 1 000 turns (200 with ``--quick``); run alone for other
shapes: ``.venv/bin/python benchmarks/bench_langgraph_turns.py [--turns 1000] [--keep-turns N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import workflow_hub.sync
from _harness import BenchmarkError, Goal, HubFactory, Row, Scale
from workflow_hub import WorkflowActivityHub, wire
from workflow_hub.langgraph import watch
from workflow_hub.langgraph._watch import KEEP_TURNS


class State(TypedDict):
    # The last node's name, not a growing list: the plain graph's turn stays the same size, so
    # what grows (or not) with the thread is the integration's.
    last: str


def node(name: str) -> Callable[[State], dict[str, str]]:
    def run(state: State) -> dict[str, str]:
        return {"last": name}

    return run


def graph() -> Any:
    builder = StateGraph(State)
    previous = START
    for name in ("plan", "search", "act", "reply"):
        builder.add_node(name, node(name))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=InMemorySaver())


def timed(call: Callable[[], None]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return 1000 * (time.perf_counter() - wall), 1000 * (time.process_time() - cpu)


def turns(
    plain: Callable[[], None],
    watched: Callable[[], None],
    count: int,
    window: int,
    look: Callable[[], tuple[int, int]],
) -> dict[str, list[float]]:
    """Per end (first and last ``window`` turns): median plain wall and CPU ms, median watched
    wall and CPU ms, then the root's nodes and bytes after the window. The plain and the
    watched turn alternate, so both see the same machine."""
    found: dict[str, list[float]] = {}
    rows: list[tuple[float, float, float, float]] = []
    for turn in range(1, count + 1):
        rows.append((*timed(plain), *timed(watched)))
        if turn in (window, count):
            recent = rows[-window:]
            medians = [statistics.median(row[i] for row in recent) for i in range(4)]
            found["first" if turn == window else "last"] = [*medians, *look()]
    return found


TURNS: dict[str, tuple[int, int]] = {"full": (1000, 20), "quick": (200, 10), "smoke": (6, 2)}
"""Turns of the thread, and turns measured at each end, by scale."""


def measure(count: int, window: int, keep_turns: int | None = KEEP_TURNS) -> dict[str, list[float]]:
    """One thread of ``count`` turns, plain and watched (see :func:`turns`)."""
    config = {"configurable": {"thread_id": "chat"}}
    # LangGraph's checkpoints grow with the thread on both sides alike: one thread each.
    with workflow_hub.sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="bench", include_graph=True)
        tracker.start()
        plain = graph()
        watched_graph = graph()

        def plain_turn() -> None:
            plain.invoke({"last": ""}, config)

        def watched_turn() -> None:
            watch(watched_graph, tracker, keep_turns=keep_turns).invoke({"last": ""}, config)

        # One turn of another thread first: what the first invocation of anything costs once
        # (imports, caches) is not turn 1's.
        warm = {"configurable": {"thread_id": "warm-up"}}
        plain.invoke({"last": ""}, warm)
        watch(watched_graph, tracker, keep_turns=keep_turns).invoke({"last": ""}, warm)

        def look() -> tuple[int, int]:
            root = tracker.activity("chat")
            if root.graph is None:
                raise BenchmarkError("the thread's root has no graph")
            return len(root.graph.nodes), len(wire.dumps(root))

        return turns(plain_turn, watched_turn, count, window, look)


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the thread host builds its own hub: one variant is the measurement
    count, window = TURNS.get(scale.name, TURNS["full"])
    measured = measure(count, window)
    first, last = measured["first"], measured["last"]
    ends = f"turns {count - window + 1}-{count}"
    starts = f"turns 1-{window}"
    # The goal is on CPU (the issue's own measure: "CPU per turn rose from about 20 ms to 95
    # ms"): a median of wall times on a shared machine moves by a third between runs.
    return [
        Row(
            benchmark="langgraph_turns",
            case=f"one thread, watched CPU per turn, {ends}",
            variant=label,
            value=last[3] * 1e6,
            unit="ns",
            reference=f"the same, {starts}",
            reference_value=first[3] * 1e6,
            goal=Goal(op="<=", threshold=1.2),
            note=f"all threads; plain: {last[1]:.2f} against {first[1]:.2f} ms",
        ),
        Row(
            benchmark="langgraph_turns",
            case=f"one thread, watched wall per turn, {ends}",
            variant=label,
            value=last[2] * 1e6,
            unit="ns",
            reference=f"the same, {starts}",
            reference_value=first[2] * 1e6,
            note=f"plain: {last[0]:.2f} against {first[0]:.2f} ms",
        ),
        Row(
            benchmark="langgraph_turns",
            case=f"one thread, CPU the watching adds per turn, {ends}",
            variant=label,
            value=max(last[3] - last[1], 0.0) * 1e6,
            unit="ns",
            reference=f"the same, {starts}",
            reference_value=max(first[3] - first[1], 0.0) * 1e6,
            note="medians, all threads",
        ),
        Row(
            benchmark="langgraph_turns",
            case=f"one thread, root's snapshot after turn {count}",
            variant=label,
            value=last[5],
            unit="B",
            reference=f"after turn {window}",
            reference_value=first[5],
            goal=Goal(op="<=", threshold=1.2),
            note=f"{last[4]:.0f} against {first[4]:.0f} nodes",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=20, help="turns measured at each end")
    parser.add_argument(
        "--keep-turns",
        type=lambda text: None if text == "none" else int(text),
        default=KEEP_TURNS,
        help="turns a root keeps ('none': all of them, the unbounded behaviour before issue 38)",
    )
    options = parser.parse_args()
    measured = measure(options.turns, options.window, options.keep_turns)

    print(f"one thread, {options.turns} turns of 4 nodes, keep_turns={options.keep_turns}")
    print(f"medians of {options.window} turns at each end, ms per turn")
    header = "turns", "plain wall", "plain CPU", "watched wall", "watched CPU", "nodes", "bytes"
    print("{:>8} {:>11} {:>10} {:>13} {:>12} {:>6} {:>8}".format(*header))
    for end in ("first", "last"):
        plain_wall, plain_cpu, wall, cpu, nodes, size = measured[end]
        label = f"1-{options.window}" if end == "first" else f"-{options.window}"
        print(
            f"{label:>8} {plain_wall:11.2f} {plain_cpu:10.2f} {wall:13.2f} {cpu:12.2f} "
            f"{nodes:6.0f} {size:8.0f}"
        )
    first, last = measured["first"], measured["last"]
    print(
        f"turn {options.turns} / turn 1 (goal <= 1.2): watched wall {last[2] / first[2]:.2f}, "
        f"watched CPU {last[3] / first[3]:.2f}, snapshot {last[5] / first[5]:.2f}; "
        f"plain wall {last[0] / first[0]:.2f}"
    )
    print(
        f"watched / plain wall: first {first[2] / first[0]:.2f}, last {last[2] / last[0]:.2f}; "
        f"CPU the watching adds per turn: first {first[3] - first[1]:.2f} ms, "
        f"last {last[3] - last[1]:.2f} ms"
    )


if __name__ == "__main__":
    main()
