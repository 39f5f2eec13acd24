"""The same graph through ``ainvoke`` and ``invoke`` reports the same thing; async-only graphs
and asyncio cancellation too.

``invoke`` runs with the thread host (``workflow_hub.sync``), ``ainvoke``/``astream`` with the
asyncio host (``workflow_hub.asyncio``: trio as a guest on the test's asyncio loop).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from langchain_core.tools import tool
from langgraph.types import Command, interrupt

from workflow_hub import RunTarget
from workflow_hub.langgraph import _gates

from .conftest import AsyncioScene, Scene, SyncScene, asyncio_scene
from .graphs import State, by_name, chain, config, log, nodes, parents, statuses, summary


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
        for node in nodes(root)
    ]


def history(scene: Scene) -> list[tuple[str, str, str | None, str]]:
    """Every lifecycle event as (kind, name, previous status, status): ids aside, what happened."""
    rows: list[tuple[str, str, str | None, str]] = []
    for event in scene.lifecycle():
        target = event.target
        name = getattr(target, "stage_name", None) or getattr(target, "tool_name", None)
        if name is None:
            name = getattr(target, "prompt_id", None) and "prompt"
        previous = getattr(target, "previous_status", None)
        rows.append(
            (
                target.kind,
                str(name or "run"),
                None if previous is None else str(previous),
                str(getattr(target, "action", None) or target.status),
            )
        )
    return rows


def test_ainvoke_and_invoke_report_the_same(scene: SyncScene) -> None:
    """H1: the same graph, once through ``invoke`` (thread host) and once through ``ainvoke``
    (asyncio host): the same lifecycle history, the same roots at the interrupt and at the end,
    the same stages, tools, nested run and prompt."""
    built = graph()
    watched = scene.watch(built)
    scene.run(watched.invoke, {"log": []}, config())
    waiting = scene.look("at the interrupt")
    scene.run(watched.invoke, Command(resume="yes"), config())
    end = scene.look("end")

    async def run_async(ascene: AsyncioScene) -> Any:
        awatched = ascene.watch(built)
        await awatched.ainvoke({"log": []}, config())
        await ascene.settle()
        awaiting = ascene.look("at the interrupt")
        result = await awatched.ainvoke(Command(resume="yes"), config())
        await ascene.settle()
        return result, history(ascene), awaiting, ascene.look("end"), shape(ascene, "t")

    result, async_history, async_waiting, async_end, async_shape = asyncio_scene(run_async)
    assert result["log"][-2:] == ["yes", "ship"]
    assert async_history == history(scene)
    assert summary(async_waiting) == summary(waiting) == ("blocked", "awaiting_input", 0, 1, True)
    assert summary(async_end) == summary(end) == ("idle", "quiescent", 0, 0, False)
    assert async_shape == shape(scene, "t")
    assert {kind for kind, *_ in shape(scene, "t")} == {"stage", "tool"}
    assert ("prompt", "prompt", None, "answered") in history(scene)


def test_astream_of_async_nodes_is_watched_on_the_loop() -> None:
    """Async nodes report from the event loop's own thread; the stream's chunks are LangGraph's."""

    async def main(scene: AsyncioScene) -> None:
        async def slow(state: State) -> dict[str, list[str]]:
            await asyncio.sleep(0)
            scene.look("inside an async node")
            return {"log": ["slow"]}

        watched = scene.watch(chain(("slow", slow), ("after", log("after"))))
        chunks = [
            chunk async for chunk in watched.astream({"log": []}, config(), stream_mode="updates")
        ]
        assert chunks == [{"slow": {"log": ["slow"]}}, {"after": {"log": ["after"]}}]
        assert summary(scene.seen("inside an async node")) == ("working", "executing", 1, 0, False)
        end = scene.look("end")
        assert summary(end) == ("idle", "quiescent", 0, 0, False)
        assert end is not None
        assert statuses(end) == {"slow": "completed", "after": "completed"}

    asyncio_scene(main)


def test_sync_nodes_of_ainvoke_report_through_the_loop() -> None:
    """A sync node and its tool run in the loop's executor thread: their facts reach the
    asyncio host's tracker on the loop's thread, in order, and are live inside the tool."""

    async def main(scene: AsyncioScene) -> None:
        @tool
        def probe(text: str) -> str:
            """Look at the hub from inside a tool."""
            scene.look("inside the tool")
            return text

        def uses_tool(state: State) -> dict[str, list[str]]:
            return {"log": [probe.invoke({"text": "x"})]}

        watched = scene.watch(chain(("uses_tool", uses_tool)))
        await watched.ainvoke({"log": []}, config())
        during = scene.seen("inside the tool")
        assert summary(during) == ("working", "executing", 2, 0, False)
        assert statuses(scene.look("end") or during) == {
            "uses_tool": "completed",
            "probe": "completed",
        }

    asyncio_scene(main)


def test_cancelling_ainvoke_is_a_kill_request() -> None:
    """D1 and the control-event rule: the asyncio task awaiting ``ainvoke`` is cancelled while a
    node runs: a kill request, the run killed, the abandoned stage no longer executing."""

    async def main(scene: AsyncioScene) -> None:
        started = asyncio.Event()

        async def forever(state: State) -> dict[str, list[str]]:
            started.set()
            await asyncio.sleep(3600)
            return {"log": []}

        watched = scene.watch(chain(("forever", forever)))
        task = asyncio.ensure_future(watched.ainvoke({"log": []}, config()))
        await started.wait()
        scene.look("while it runs")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert task.cancelled()
        await scene.settle()
        assert summary(scene.seen("while it runs")) == ("working", "executing", 1, 0, False)
        end = scene.look("end")
        assert summary(end) == ("idle", "quiescent", 0, 0, False)
        assert end is not None
        assert str(by_name(end)["forever"].status) == "skipped"
        runs = [e.target for e in scene.lifecycle("t") if isinstance(e.target, RunTarget)]
        assert [(str(t.status), str(t.action) if t.action else None) for t in runs][-2:] == [
            ("running", "kill"),
            ("killed", None),
        ]

    asyncio_scene(main)


def test_an_async_invocation_of_a_known_thread_is_one_batch(monkeypatch: Any) -> None:
    """Issue 38, H1: on the asyncio host, a thread reported before starts through its gate,
    with its steps: an invocation shorter than the gate's linger is applied in one tracker
    batch at its end, one published change for its root, its start included. A root taken
    away behind the integration's back is found missing there and the thread starts over:
    the next invocation is reported whole, with no failure."""
    monkeypatch.setattr(_gates, "LINGER", 60.0)  # nothing drains before the invocation ends

    async def step(state: State) -> dict[str, list[str]]:
        await asyncio.sleep(0)
        return {"log": ["step"]}

    async def main(scene: AsyncioScene) -> None:
        watched = scene.watch(chain(("a", step), ("b", step)))

        async def changes_of_one_invocation() -> list[Any]:
            await scene.settle()
            before = len(scene.changes)
            await watched.ainvoke({"log": []}, config())
            await scene.settle()
            return [root for root in scene.changes[before:] if root.root_run_id == "t"]

        first = await changes_of_one_invocation()  # a new thread: its start is checked at once
        assert len(first) == 2
        second = await changes_of_one_invocation()
        assert len(second) == 1
        assert summary(second[0]) == ("idle", "quiescent", 0, 0, False)
        assert {n: s for n, s in statuses(second[0]).items() if n in ("a", "b")} == {
            "a": "completed",
            "b": "completed",
        }
        scene.tracker.remove_run("t")
        third = await changes_of_one_invocation()
        assert len(third) == 1
        assert statuses(third[0])["b"] == "completed"
        assert scene.tracker.run_status("t") == "completed"
        assert watched.statistics().failures == 0

    asyncio_scene(main)
