"""The same graph through ``ainvoke`` and ``invoke`` reports the same thing; async-only graphs
and asyncio cancellation too.

``ainvoke``/``astream`` run on an asyncio loop (here in a worker thread of the test's trio hub).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.tools import tool
from langgraph.types import Command, interrupt

from workflow_hub import RunTarget
from workflow_hub.langgraph import watch

from .conftest import Scene
from .graphs import State, by_name, chain, config, log, parents, statuses, summary


@tool
def measure(text: str) -> int:
    """Measure a text."""
    return len(text)


def agent(state: State) -> dict[str, list[str]]:
    return {"log": [str(measure.invoke({"text": "hello"}))]}


def approve(state: State) -> dict[str, list[str]]:
    return {"log": [str(interrupt("Approve?"))]}


def graph() -> Any:
    review = chain(("approve", approve), checkpointer=False)
    return chain(
        ("prepare", log("prepare")), ("agent", agent), ("review", review), ("ship", log("ship"))
    )


def shape(scene: Scene, root_run_id: str) -> list[tuple[str, str, str, int, frozenset[str]]]:
    root = scene.published(root_run_id)
    assert root is not None
    assert root.graph is not None
    return [
        (node.kind, node.name, str(node.status), node.depth, frozenset(parents(root, node.name)))
        for node in root.graph.nodes
    ]


def changes(scene: Scene, root_run_id: str) -> list[Any]:
    return [summary(root) for root in scene.changes if root.root_run_id == root_run_id]


async def test_ainvoke_and_invoke_report_the_same(scene: Scene) -> None:
    """H1: the same graph, once through ``invoke`` and once through ``ainvoke``: the same
    sequence of published summaries, the same stages, tools, nested run and prompt."""
    watched = watch(graph(), scene.facts)
    await scene.run(watched.invoke, {"log": []}, config("sync"))
    await scene.run(watched.invoke, Command(resume="yes"), config("sync"))

    async def run_async() -> Any:
        await watched.ainvoke({"log": []}, config("async"))
        return await watched.ainvoke(Command(resume="yes"), config("async"))

    result = await scene.run_asyncio(run_async)
    assert result["log"][-2:] == ["yes", "ship"]
    assert changes(scene, "async") == changes(scene, "sync")
    assert shape(scene, "async") == shape(scene, "sync")
    blocked = ("blocked", "awaiting_input", 0, 1, True)
    assert blocked in changes(scene, "sync")
    assert changes(scene, "sync")[-1] == ("idle", "quiescent", 0, 0, False)
    assert {kind for kind, *_ in shape(scene, "sync")} == {"stage", "tool"}


async def test_astream_of_async_nodes_is_watched_on_the_loop(scene: Scene) -> None:
    """Async nodes report from the event loop's own thread; the stream's chunks are LangGraph's."""

    async def slow(state: State) -> dict[str, list[str]]:
        await asyncio.sleep(0)
        scene.look("inside an async node")
        return {"log": ["slow"]}

    watched = watch(chain(("slow", slow), ("after", log("after"))), scene.facts)

    async def run() -> list[Any]:
        return [
            chunk async for chunk in watched.astream({"log": []}, config(), stream_mode="updates")
        ]

    chunks = await scene.run_asyncio(run)
    assert chunks == [{"slow": {"log": ["slow"]}}, {"after": {"log": ["after"]}}]
    assert summary(scene.seen("inside an async node")) == ("working", "executing", 1, 0, False)
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert statuses(end) == {"slow": "completed", "after": "completed"}


async def test_cancelling_ainvoke_is_a_kill_request(scene: Scene) -> None:
    """D1 and the control-event rule: the asyncio task awaiting ``ainvoke`` is cancelled while a
    node runs: a kill request, the run killed, the abandoned stage no longer executing."""

    async def run() -> str:
        started = asyncio.Event()

        async def forever(state: State) -> dict[str, list[str]]:
            started.set()
            await asyncio.sleep(3600)
            return {"log": []}

        watched = watch(chain(("forever", forever)), scene.facts)
        task = asyncio.ensure_future(watched.ainvoke({"log": []}, config()))
        await started.wait()
        scene.look("while it runs")
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "finished"

    assert await scene.run_asyncio(run) == "cancelled"
    assert summary(scene.seen("while it runs")) == ("working", "executing", 1, 0, False)
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert str(by_name(end)["forever"].status) == "skipped"
    runs = [e.target for e in scene.lifecycle() if isinstance(e.target, RunTarget)]
    assert [(str(t.status), str(t.action) if t.action else None) for t in runs][-2:] == [
        ("running", "kill"),
        ("killed", None),
    ]
