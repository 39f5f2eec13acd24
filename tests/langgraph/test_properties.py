"""Random LangGraph graphs, run to the end with random answers: what is published stays true.

A drawn graph is a random DAG of plain-function nodes, each of which returns, fails, fails a few
times under a ``RetryPolicy``, or asks for approval with ``interrupt()``. The thread is invoked (with the thread host, ``workflow_hub.sync``),
then resumed with drawn answers (``Command(resume=...)``, or new input), then with "yes" until
nothing waits any more.
After every invocation:

* the published root equals ``derive_root`` of the tracker's facts (SPEC §5, D1-D8);
* every node attempt LangGraph made is exactly one stage event into ``running``;
* per stage, tool and run, the lifecycle events form one unbroken chain: each event's previous
  status is the status of the event before it, no status is reported twice in a row, the last
  one is the node's current status, and no event id repeats (P6);
* every prompt opened is closed at most once (answered or cancelled);

and when the thread is done (a run that failed is done too) its root is idle.
"""

from __future__ import annotations

import asyncio
import operator
from collections import Counter, defaultdict
from functools import partial
from typing import Annotated, Any, TypedDict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy, interrupt

import workflow_hub.sync
from tests.support.consumers import RecordingDispatcher
from workflow_hub import (
    LifecycleEvent,
    PromptTarget,
    RunTarget,
    RunTracker,
    StageTarget,
    ToolTarget,
)

from .conftest import SyncScene

BEHAVIOURS = ("ok", "ok", "ok", "fail", "flaky", "ask", "tool")


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


class State(TypedDict):
    log: Annotated[list[str], operator.add]


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[str], list[tuple[int, int]]]:
    size = draw(st.integers(1, 6))
    behaviours = draw(st.lists(st.sampled_from(BEHAVIOURS), min_size=size, max_size=size))
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, size - 1), st.integers(0, size - 1))
            .filter(lambda e: e[0] < e[1])
            .map(tuple),
            max_size=2 * size,
            unique=True,
        )
        if size > 1
        else st.just([])
    )
    return behaviours, edges


class Nodes:
    """The drawn behaviours as node functions; counts every attempt LangGraph makes."""

    def __init__(self, behaviours: list[str]) -> None:
        self.behaviours = behaviours
        self.attempts: Counter[str] = Counter()
        self.flaky: Counter[str] = Counter()

    def function(self, index: int) -> Any:
        name = f"n{index}"
        behaviour = self.behaviours[index]

        def node(state: State) -> dict[str, list[str]]:
            self.attempts[name] += 1
            if behaviour == "fail":
                raise RuntimeError(f"{name} fails")
            if behaviour == "flaky":
                self.flaky[name] += 1
                if self.flaky[name] % 3 != 0:
                    raise ConnectionError(f"{name} is flaky")
            if behaviour == "tool":
                return {"log": [echo.invoke({"text": name})]}
            if behaviour == "ask":
                return {"log": [f"{name}={interrupt(f'{name}?')}"]}
            return {"log": [name]}

        return node


def build(nodes: Nodes, edges: list[tuple[int, int]]) -> Any:
    builder = StateGraph(State)
    size = len(nodes.behaviours)
    policy = RetryPolicy(initial_interval=0.0001, jitter=False, retry_on=ConnectionError)
    for index in range(size):
        options = {"retry_policy": policy} if nodes.behaviours[index] == "flaky" else {}
        builder.add_node(f"n{index}", nodes.function(index), **options)
    targets = {b for _, b in edges}
    sources = {a for a, _ in edges}
    for index in range(size):
        if index not in targets:
            builder.add_edge(START, f"n{index}")
        if index not in sources:
            builder.add_edge(f"n{index}", END)
    for a, b in edges:
        builder.add_edge(f"n{a}", f"n{b}")
    return builder.compile(checkpointer=InMemorySaver())


def target_key(event: LifecycleEvent) -> tuple[str, str] | None:
    target = event.target
    if isinstance(target, StageTarget):
        return ("node", target.stage_id)
    if isinstance(target, ToolTarget):
        return ("node", target.tool_node_id)
    if isinstance(target, RunTarget) and target.action is None:
        return ("run", target.run_id)
    return None


def check_lifecycle(tracker: RunTracker, hooks: RecordingDispatcher, root_run_id: str) -> None:
    events = hooks.lifecycle()
    assert len({event.event_id for event in events}) == len(events)
    chains: dict[tuple[str, str], list[Any]] = defaultdict(list)
    prompts: Counter[tuple[str, str]] = Counter()
    for event in events:
        key = target_key(event)
        if key is not None:
            target = event.target
            assert not isinstance(target, PromptTarget)
            chains[key].append(target)
        if isinstance(event.target, PromptTarget):
            prompt = (event.target.run_id, event.target.prompt_id)
            if str(event.target.status) == "opened":
                assert prompts[prompt] % 2 == 0, "opened twice"
            else:
                assert prompts[prompt] % 2 == 1, "closed without being open"
            prompts[prompt] += 1
    for key, chain in chains.items():
        previous = None
        for target in chain:
            assert target.previous_status == previous, (key, chain)
            assert target.status != previous, (key, chain)
            previous = target.status
    root = tracker.activity(root_run_id)
    assert root.graph is not None
    for node in root.graph.nodes:
        if node.run_id == f"{root_run_id}|earlier-turns":
            continue  # the folded turns' summary is history: a run that emits no events
        chain = chains[("node", node.id)]
        assert chain, node
        assert chain[-1].status == node.status, node


def stage_runs(hooks: RecordingDispatcher) -> Counter[str]:
    return Counter(
        event.target.stage_name
        for event in hooks.lifecycle()
        if isinstance(event.target, StageTarget)
        and str(event.target.status) == "running"
        and event.target.run_id != "t"  # the root's own stage, which hosts the turns
    )


def scenario(
    behaviours: list[str], edges: list[tuple[int, int]], answers: list[str], data: st.DataObject
) -> None:
    nodes = Nodes(behaviours)
    graph = build(nodes, edges)
    with workflow_hub.sync.open_hub() as hub:
        scene = SyncScene(hub)
        watched = scene.watch(graph)
        config = {"configurable": {"thread_id": "t"}}
        pending: Any = {"log": []}
        for step in range(20):
            if data.draw(st.booleans(), label="through ainvoke"):
                call = partial(asyncio.run, watched.ainvoke(pending, config))
            else:
                call = partial(watched.invoke, pending, config)
            failed = False
            try:
                result = scene.run(call)
            except (RuntimeError, ConnectionError):
                result, failed = None, True
            published = scene.look(f"after invocation {step}")
            assert published is not None
            hub.call(check_lifecycle, scene.tracker, scene.hooks, "t")
            # A sibling LangGraph abandoned may go on in its thread after the invocation raised
            # (docs/langgraph.md, limits): its attempts are not all reported, nor all counted yet.
            if not failed:
                assert stage_runs(scene.hooks) == nodes.attempts
            if not (isinstance(result, dict) and result.get("__interrupt__")):
                break
            assert str(published.state) == "blocked"
            answer = answers[step] if step < len(answers) else "yes"
            pending = {"log": []} if answer == "new input" else Command(resume=answer)
        final = scene.look("final")
        assert final is not None
        assert str(final.state) == "idle", final


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    graph=graphs(),
    answers=st.lists(st.sampled_from(["yes", "no", "new input"]), max_size=4),
    data=st.data(),
)
def test_random_graphs_publish_what_their_facts_say(
    graph: tuple[list[str], list[tuple[int, int]]], answers: list[str], data: st.DataObject
) -> None:
    """D1-D8, P6: random graphs, failures, retries, interrupts and resumes; see the module."""
    behaviours, edges = graph
    scenario(behaviours, edges, answers, data)
