"""A wrapper built per request (``watch(graph, tracker).invoke(...)`` in every request handler)
reports a thread exactly as one long-lived wrapper does: wrappers over one tracker share each
thread's state, so a later wrapper resumes the interrupt an earlier one reported (D2, D8)."""

from __future__ import annotations

from typing import Any

from langgraph.types import Command, RetryPolicy, interrupt

from workflow_hub import PromptTarget, StageTarget
from workflow_hub.langgraph import watch

from .conftest import AsyncioScene, SyncScene, asyncio_scene
from .graphs import State, chain, config, log, statuses, summary


def approval(state: State) -> dict[str, list[str]]:
    return {"log": [f"answer={interrupt('Ship it?')}"]}


def requests() -> list[Any]:
    """A conversation: new input stopping at the approval, the answer, new input again."""
    return [{"log": []}, Command(resume="yes"), {"log": []}]


def history(scene: SyncScene | AsyncioScene, root: str) -> list[tuple[str, str]]:
    """(target kind, status) of every lifecycle event of one root, ids aside."""
    return [
        (type(event.target).__name__, str(event.target.status))
        for event in scene.lifecycle()
        if event.root_run_id == root
    ]


def test_a_wrapper_per_request_continues_the_thread(scene: SyncScene) -> None:
    """D2, D8: the second request's wrapper answers the prompt the first one opened; the root
    is not refused, the resume runs, and the thread ends idle."""
    graph = chain(("ask", approval), ("after", log("after")))
    first = watch(graph, scene.facts).invoke({"log": []}, config())
    assert "__interrupt__" in first
    assert summary(scene.facts.activity("t")) == ("blocked", "awaiting_input", 0, 1, True)

    result = watch(graph, scene.facts).invoke(Command(resume="yes"), config())
    assert result == {"log": ["answer=yes", "after"]}
    root = scene.facts.activity("t")
    assert summary(root) == ("idle", "quiescent", 0, 0, False)
    assert statuses(root) == {"ask": "completed", "after": "completed"}
    scene.settle()
    prompts = [e.target for e in scene.lifecycle() if isinstance(e.target, PromptTarget)]
    assert [str(p.status) for p in prompts] == ["opened", "answered"]


def test_any_number_of_wrappers_behave_as_one(scene: SyncScene) -> None:
    """P6: the same requests through one wrapper (thread "one") and through a new wrapper each
    (thread "two") tell the same lifecycle events and end in the same picture."""
    graph = chain(("ask", approval), ("after", log("after")))
    kept = watch(graph, scene.facts)
    for request in requests():
        kept.invoke(request, config("one"))
        watch(graph, scene.facts).invoke(request, config("two"))
    scene.settle()
    assert history(scene, "two") == history(scene, "one")
    assert len(history(scene, "one")) > 6
    one, two = scene.facts.activity("one"), scene.facts.activity("two")
    assert summary(two) == summary(one) == ("blocked", "awaiting_input", 0, 1, True)
    assert statuses(two) == statuses(one)


def test_a_wrapper_per_request_on_the_asyncio_host() -> None:
    """D2, D8: ``ainvoke`` through a new wrapper per request resumes the thread too."""

    async def main(scene: AsyncioScene) -> None:
        graph = chain(("ask", approval), ("after", log("after")))
        first = await watch(graph, scene.tracker).ainvoke({"log": []}, config())
        assert "__interrupt__" in first
        result = await watch(graph, scene.tracker).ainvoke(Command(resume="no"), config())
        assert result == {"log": ["answer=no", "after"]}
        root = scene.tracker.activity("t")
        assert summary(root) == ("idle", "quiescent", 0, 0, False)

    asyncio_scene(main)


def test_a_wrapper_reads_the_retry_policies_only_when_a_task_fails(scene: SyncScene) -> None:
    """Issue 38, D5: building a wrapper per request does not walk the graph for its
    subgraphs' retry policies (most of what a wrapper cost); the first failed attempt of an
    invocation does, and its retry is still recognised."""
    walks: list[bool] = []

    class Counted:
        """The compiled graph, counting the walks through its subgraphs."""

        def __init__(self, graph: Any) -> None:
            self._graph = graph

        def get_subgraphs(self, **options: Any) -> Any:
            walks.append(True)
            return self._graph.get_subgraphs(**options)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._graph, name)

    failures = [ConnectionError("try again")]

    def flaky(state: State) -> dict[str, list[str]]:
        if failures:
            raise failures.pop()
        return {"log": ["flaky"]}

    policy = RetryPolicy(initial_interval=0.001, jitter=False, retry_on=ConnectionError)
    graph = Counted(chain(("flaky", flaky), flaky={"retry_policy": policy}))
    for request in range(3):
        watch(graph, scene.facts).invoke({"log": []}, config())
        assert len(walks) == 1, request  # read at the first request's failure, not since
    retried = [
        e.target
        for e in scene.lifecycle()
        if isinstance(e.target, StageTarget) and str(e.target.status) == "pending"
    ]
    assert [t.stage_name for t in retried] == ["flaky"]
    assert summary(scene.look("end")) == ("idle", "quiescent", 0, 0, False)
