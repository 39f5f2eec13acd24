"""The scene of a LangGraph test: a running hub, a real RunTracker, and ways to look at them.

``scene.look(label)`` may be called from anywhere (a node in LangGraph's worker thread, an asyncio
loop in a thread, the test itself): it records the root the hub publishes at that moment and
checks that it equals ``derive_root`` of the tracker's facts (SPEC §5 applied to exactly what
LangGraph reported). ``scene.hooks`` records every hook event.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from workflow_hub import LifecycleEvent, RootActivity, RunTracker, WorkflowActivityHub
from workflow_hub._derive import derive_root

from ..consumers import RecordingDispatcher
from .standin import ThreadSafeTracker


def oracle(tracker: RunTracker, root_run_id: str) -> RootActivity:
    """SPEC §5's readable definition applied to the tracker's facts (internal, as in
    tests/test_tracker_oracle.py)."""
    runs = tracker._subtree(tracker._runs[root_run_id])
    result: RootActivity = derive_root(
        runs, owner_session_id=tracker.owner_session_id, include_graph=True
    )
    return result


class Scene:
    def __init__(self, hub: WorkflowActivityHub) -> None:
        self.hub = hub
        self.token = trio.lowlevel.current_trio_token()
        self.tracker = RunTracker(
            hub.register_publisher(), owner_session_id="s", include_graph=True
        )
        self.tracker.start()
        self.facts = ThreadSafeTracker(self.tracker, self.token)
        self.hooks = RecordingDispatcher()
        hub.bind_dispatcher(self.hooks)
        self.looks: list[tuple[str, RootActivity | None]] = []
        self.changes: list[RootActivity] = []
        hub.observe(self._frame)

    def _frame(self, frame: Any) -> None:
        if frame.kind == "changed":
            self.changes.append(frame.root)

    # --- looking ---------------------------------------------------------------------------

    def published(self, root_run_id: str) -> RootActivity | None:
        frame = self.hub.snapshot_frame()
        assert frame.roots is not None
        for root in frame.roots:
            if root.root_run_id == root_run_id:
                return root
        return None

    def _look_now(self, label: str, root_run_id: str) -> RootActivity | None:
        root = self.published(root_run_id)
        if root is not None:
            assert root == oracle(self.tracker, root_run_id), label
        self.looks.append((label, root))
        return root

    def look(self, label: str, root_run_id: str = "t") -> RootActivity | None:
        """The published root now (from any thread), checked against the oracle."""
        call = partial(self._look_now, label, root_run_id)
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            return trio.from_thread.run_sync(call, trio_token=self.token)
        return call()

    def seen(self, label: str) -> RootActivity:
        found = [root for name, root in self.looks if name == label]
        assert found, f"nothing looked at {label!r}: {[name for name, _ in self.looks]}"
        root = found[-1]
        assert root is not None, label
        return root

    # --- running ---------------------------------------------------------------------------

    async def run(self, call: Callable[..., Any], *args: Any) -> Any:
        """Run sync code (an ``invoke``) in a worker thread; settle the hub afterwards."""
        with trio.fail_after(30):
            result = await trio.to_thread.run_sync(partial(call, *args))
        await trio.testing.wait_all_tasks_blocked()
        return result

    async def run_asyncio(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Run a coroutine (an ``ainvoke``) on an asyncio loop in a worker thread."""

        def main() -> Any:
            return asyncio.run(make())  # type: ignore[arg-type]

        return await self.run(main)

    def lifecycle(self, run_id: str | None = None) -> list[LifecycleEvent]:
        events = self.hooks.lifecycle()
        return [e for e in events if run_id is None or e.run_id == run_id]


@pytest.fixture
async def scene(hub: WorkflowActivityHub) -> AsyncIterator[Scene]:
    return Scene(hub)


@pytest.fixture
def barrier() -> Iterator[Callable[[int], threading.Barrier]]:
    made: list[threading.Barrier] = []

    def make(parties: int) -> threading.Barrier:
        made.append(threading.Barrier(parties, timeout=10))
        return made[-1]

    yield make
    for each in made:
        each.abort()
