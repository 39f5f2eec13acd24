"""The scene of a LangGraph test: a real host, its tracker, and ways to look at what it publishes.

``scene`` is a ``workflow_hub.sync`` host (trio in a background thread, a thread-safe
tracker) for ``invoke``/``stream``; ``asyncio_scene(main)`` runs ``main(scene)`` in a
``workflow_hub.asyncio`` host (trio as a guest on the loop) for ``ainvoke``/``astream``.

``scene.look(label)`` may be called from anywhere (the test, a node in LangGraph's worker thread,
an async node on the loop, a sync node in the loop's executor): it records the root the hub
publishes at that moment and checks that it equals ``derive_root`` of the tracker's facts (SPEC
§5 applied to exactly what LangGraph reported). ``scene.hooks`` records every hook event and
``scene.changes`` every changed root, in order.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

import workflow_hub.asyncio
import workflow_hub.sync
from tests.support.consumers import RecordingDispatcher
from workflow_hub import Frame, LifecycleEvent, RootActivity, RunTracker, WorkflowActivityHub
from workflow_hub.langgraph import WatchedGraph, watch
from workflow_hub.tracker._derive import derive_root

TIMEOUT = 30.0


def oracle(tracker: RunTracker, root_run_id: str) -> RootActivity:
    """SPEC §5's readable definition applied to the tracker's facts (internal, as in
    tests/tracker/test_tracker_oracle.py)."""
    runs = tracker._ledger.subtree(tracker._ledger.runs[root_run_id])
    result: RootActivity = derive_root(
        runs, owner_session_id=tracker.owner_session_id, include_graph=True
    )
    return result


class Scene:
    """What both hosts' scenes share; ``_in_hub`` runs a function where the tracker lives."""

    facts: Any
    tracker: RunTracker
    trio_hub: WorkflowActivityHub

    def __init__(self) -> None:
        self.watched: list[WatchedGraph] = []
        self.hooks = RecordingDispatcher()
        self.looks: list[tuple[str, RootActivity | None]] = []
        self.changes: list[RootActivity] = []

    def _frame(self, frame: Frame) -> None:
        if frame.kind == "changed":
            self.changes.append(frame.root)

    def _in_hub(self, function: Callable[[], Any]) -> Any:
        raise NotImplementedError

    def _published_now(self, root_run_id: str) -> RootActivity | None:
        frame = self.trio_hub.snapshot_frame()
        for root in frame.roots or ():
            if root.root_run_id == root_run_id:
                return root
        return None

    def published(self, root_run_id: str) -> RootActivity | None:
        return self._in_hub(lambda: self._published_now(root_run_id))  # type: ignore[no-any-return]

    def watch(self, graph: Any, **options: Any) -> WatchedGraph:
        """``workflow_hub.langgraph.watch(graph, scene.facts)``, flushed before every look."""
        watched = watch(graph, self.facts, **options)
        self.watched.append(watched)
        return watched

    def look(self, label: str, root_run_id: str = "t") -> RootActivity | None:
        """The published root now (from any thread), checked against the oracle; what the
        watched graphs queued before the look has reached the tracker."""
        for watched in self.watched:
            watched.flush(TIMEOUT)

        def now() -> RootActivity | None:
            root = self._published_now(root_run_id)
            if root is not None:
                assert root == oracle(self.tracker, root_run_id), label
            self.looks.append((label, root))
            return root

        return self._in_hub(now)  # type: ignore[no-any-return]

    def seen(self, label: str) -> RootActivity:
        found = [root for name, root in self.looks if name == label]
        assert found, f"nothing looked at {label!r}: {[name for name, _ in self.looks]}"
        root = found[-1]
        assert root is not None, label
        return root

    def lifecycle(self, run_id: str | None = None) -> list[LifecycleEvent]:
        events = self.hooks.lifecycle()
        return [e for e in events if run_id is None or e.run_id == run_id]

    def observe(self, callback: Callable[[Frame], None]) -> None:
        """Observe the hub in its own thread (``callback`` runs there)."""
        self._in_hub(lambda: self.trio_hub.observe(callback))

    def roots(self) -> list[str]:
        frame = self._in_hub(self.trio_hub.snapshot_frame)
        return [root.root_run_id for root in frame.roots or ()]


class SyncScene(Scene):
    def __init__(self, hub: workflow_hub.sync.Hub) -> None:
        super().__init__()
        self.hub = hub
        self.trio_hub = hub.trio_hub
        self.facts = hub.tracker(owner_session_id="s", include_graph=True)
        self.facts.start()
        self.tracker = self.facts._tracker  # the RunTracker itself, in the hub's thread
        hub.call(hub.trio_hub.bind_dispatcher, self.hooks)
        hub.call(hub.trio_hub.observe, self._frame)

    def _in_hub(self, function: Callable[[], Any]) -> Any:
        return self.hub.call(function)

    def settle(self) -> None:
        """Wait until every frame and hook event published so far has been delivered."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            statistics = self.hub.statistics()
            if statistics.pending_frames == 0 and statistics.hook_events_pending == 0:
                return
            assert time.monotonic() < deadline, "the hub did not settle"
            time.sleep(0.001)

    def run(self, call: Callable[..., Any], *args: Any) -> Any:
        """Run ``call`` (an ``invoke``) here, then let the hub deliver what it published."""
        try:
            return call(*args)
        finally:
            self.settle()


class AsyncioScene(Scene):
    def __init__(self, hub: workflow_hub.asyncio.Hub) -> None:
        super().__init__()
        self.hub = hub
        self.trio_hub = hub.trio_hub
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()
        self.facts = self.tracker = hub.tracker(owner_session_id="s", include_graph=True)
        self.tracker.start()
        hub.trio_hub.bind_dispatcher(self.hooks)
        hub.trio_hub.observe(self._frame)

    def _in_hub(self, function: Callable[[], Any]) -> Any:
        if threading.get_ident() == self.thread:
            return function()
        done = asyncio.run_coroutine_threadsafe(self._call(function), self.loop)
        return done.result(TIMEOUT)

    async def _call(self, function: Callable[[], Any]) -> Any:
        return function()

    async def settle(self) -> None:
        async with asyncio.timeout(TIMEOUT):
            while True:
                statistics = self.hub.statistics()
                if statistics.pending_frames == 0 and statistics.hook_events_pending == 0:
                    return
                await asyncio.sleep(0.001)


@pytest.fixture
def scene() -> Iterator[SyncScene]:
    with workflow_hub.sync.open_hub() as hub:
        yield SyncScene(hub)


def asyncio_scene(main: Callable[[AsyncioScene], Awaitable[Any]]) -> Any:
    """``main(scene)`` in a ``workflow_hub.asyncio`` host, in a fresh asyncio loop, bounded."""

    async def host() -> Any:
        async with asyncio.timeout(TIMEOUT), workflow_hub.asyncio.open_hub() as hub:
            scene = AsyncioScene(hub)
            result = await main(scene)
            await scene.settle()
            return result

    return asyncio.run(host())


@pytest.fixture
def barrier() -> Iterator[Callable[[int], threading.Barrier]]:
    made: list[threading.Barrier] = []

    def make(parties: int) -> threading.Barrier:
        made.append(threading.Barrier(parties, timeout=10))
        return made[-1]

    yield make
    for each in made:
        each.abort()
