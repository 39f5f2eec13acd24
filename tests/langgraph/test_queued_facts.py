"""The thread host's tracker (H1, C1): a watched graph's facts are applied in the hub's thread."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
import trio

import workflow_hub.sync
from workflow_hub.langgraph import _gates, watch

from .conftest import SyncScene
from .graphs import chain, config, log, nodes, statuses


def test_a_root_the_tracker_refuses_runs_the_graph_unreported(
    scene: SyncScene, caplog: pytest.LogCaptureFixture
) -> None:
    """C1: a new thread's root starting is reported in the hub's thread while the caller waits;
    a refusal (a root already tracked) is logged and counted, and the invocation runs
    unreported: ``invoke`` returns LangGraph's result, the other root is untouched."""
    scene.facts.add_run("t", status="running")  # someone else's root, same id
    scene.facts.flush()
    watched = watch(chain(("a", log("a"))), scene.facts)
    with caplog.at_level(logging.WARNING, logger="workflow_hub"):
        assert watched.invoke({"log": []}, config("t")) == {"log": ["a"]}
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [ValueError]
    assert "already tracked" in caplog.text
    statistics = watched.statistics()
    assert (statistics.failures, statistics.unreported_invocations) == (1, 1)
    assert scene.facts.activity("t").graph is None or not statuses(scene.facts.activity("t"))
    assert scene.facts.run_status("t") == "running"


def test_a_fact_that_fails_in_the_hubs_thread_is_logged_and_the_rest_applied(
    scene: SyncScene, caplog: pytest.LogCaptureFixture
) -> None:
    """A fact that fails in the hub's thread (its root removed behind the integration's back)
    is logged and counted there, possibly after ``invoke`` returned (``flush()`` waits for
    it): the graph runs to its end and ``invoke`` returns LangGraph's result."""
    calls: list[str] = []

    def a(state: dict[str, list[str]]) -> dict[str, list[str]]:
        # The root and this stage exist now; take the root away so a's end fails.
        watched.flush()
        scene.facts.remove_run("t")
        scene.facts.flush()
        calls.append("a")
        return {"log": ["a"]}

    watched = watch(chain(("a", a), ("b", log("b"))), scene.facts)
    with caplog.at_level(logging.WARNING, logger="workflow_hub"):
        result = watched.invoke({"log": []}, config("t"))
        watched.flush()
    assert result == {"log": ["a", "b"]}
    assert calls == ["a"]
    assert any("reporting a LangGraph event" in r.message for r in caplog.records)
    assert watched.statistics().failures >= 1
    assert "t" not in scene.facts


def test_facts_are_applied_when_invoke_returns(scene: SyncScene) -> None:
    """H1: queued facts reach the tracker before anything asked of it after ``invoke`` returns
    (the gate queues its last facts in the hub's thread, in order, before it returns)."""
    watched = watch(chain(("a", log("a")), ("b", log("b"))), scene.facts)
    watched.invoke({"log": []}, config("t"))
    root = scene.facts.activity("t")
    assert statuses(root) == {"a": "completed", "b": "completed"}
    assert scene.facts.run_status("t") == "completed"


def test_invoke_does_not_wait_for_the_hubs_thread_at_its_end(
    scene: SyncScene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 38, P9: an invocation of a known thread returns while the hub's thread is busy
    elsewhere (held here by another call): its start, steps and end are queued there, in
    order; what the hub is asked next sees them applied."""
    monkeypatch.setattr(_gates, "HUB_TICK", 60.0)  # every fact waits for the end's one drain
    watched = watch(chain(("a", log("a")), ("b", log("b"))), scene.facts)
    watched.invoke({"log": []}, config("t"))  # a new thread starts checked, in this thread
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(10)

    holder = threading.Thread(target=scene.hub.call, args=(hold,))
    holder.start()
    try:
        assert held.wait(10)
        result = watched.invoke({"log": []}, config("t"))
        assert holder.is_alive()  # invoke returned while the hub's thread was held
    finally:
        release.set()
        holder.join(10)
    assert result == {"log": ["a", "b"] * 2}
    assert statuses(scene.facts.activity("t"))["b"] == "completed"
    assert scene.facts.run_status("t") == "completed"
    watched.flush()
    assert watched.statistics().failures == 0


def test_a_known_thread_starts_through_its_queue_and_a_removed_root_starts_over(
    scene: SyncScene, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 38, H1: a sync invocation of a thread reported before starts through its queue
    (the caller's thread makes no round trip to the hub's thread before the graph runs), with
    its start applied before its steps. A root taken away behind the integration's back is
    found missing there, in the hub's thread, and the thread starts over: the next invocation
    is reported whole, with no failure and still no wait."""
    waits: list[object] = []  # the caller's calls that waited for the hub's thread
    caller = threading.current_thread()

    class Counting:
        """The tracker's door to the hub's thread, counting the caller's waits there."""

        def __init__(self, portal: Any) -> None:
            self._portal = portal

        def call(self, function: Any, /, *args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is caller:
                waits.append(function)
            return self._portal.call(function, *args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._portal, name)

    scene.facts._portal = Counting(scene.facts._portal)  # type: ignore[assignment]
    seen: list[int] = []  # the caller's waits when the node ran

    def a(state: dict[str, list[str]]) -> dict[str, list[str]]:
        seen.append(len(waits))
        return {"log": ["a"]}

    graph = chain(("a", a))
    # The thread's log grows by one "a" an invocation (its checkpointer keeps the thread).
    assert watch(graph, scene.facts).invoke({"log": []}, config("t")) == {"log": ["a"]}
    assert seen[-1] >= 1  # a new thread starts checked: the start waited for the hub's thread
    before = len(waits)
    assert watch(graph, scene.facts).invoke({"log": []}, config("t")) == {"log": ["a"] * 2}
    assert seen[-1] == before, "a known thread waited for the hub's thread to start"
    assert scene.facts.run_status("t") == "completed"
    scene.facts.remove_run("t")
    scene.facts.flush()
    before = len(waits)
    with caplog.at_level(logging.WARNING, logger="workflow_hub"):
        assert watch(graph, scene.facts).invoke({"log": []}, config("t")) == {"log": ["a"] * 3}
        assert seen[-1] == before  # still no wait
        assert scene.facts.run_status("t") == "completed"  # started over
        watch(graph, scene.facts).flush()
    assert watch(graph, scene.facts).statistics().failures == 0
    assert not caplog.records
    root = scene.facts.activity("t")
    assert [node.status for node in nodes(root) if node.name == "a"] == ["completed"]  # one turn


def test_a_host_left_right_after_invoke_applies_its_last_facts() -> None:
    """A program that leaves the host as soon as ``invoke`` returns: the host applies what was
    queued for its thread as it closes, so nothing is lost or logged, and the hub's last
    published root shows the invocation's end."""
    frames: list[Any] = []
    with workflow_hub.sync.open_hub() as hub:
        facts = hub.tracker(owner_session_id="s")
        facts.start()
        hub.call(hub.trio_hub.observe, frames.append)
        watched = watch(chain(("a", log("a"))), facts)
        watched.invoke({"log": []}, config("t"))
        watched.invoke({"log": []}, config("t"))  # a known thread: nothing waited for
    last = [frame.root for frame in frames if frame.kind == "changed"][-1]
    assert last.root_run_id == "t"
    assert last.state == "idle"
    assert watched.statistics().failures == 0


def test_a_fact_the_caller_queued_before_invoke_is_applied_before_the_invocations_report(
    scene: SyncScene,
) -> None:
    """H1, issue 38 (found by a user trial): the calls one thread makes keep their order. A
    ``remove_run`` the caller queued before ``invoke`` is applied before the invocation's start,
    even when the hub's thread was busy meanwhile and the integration's drain falls due at the
    same moment as the host's own queue: the thread starts over and stays reported.

    The hub's thread is kept busy by a trio task of this test's (a blocking sleep), so both the
    host's queue and the drain are ready when it returns; trio may run either first, so the
    scene is repeated."""
    graph = chain(("a", log("a")))
    watch(graph, scene.facts).invoke({"log": []}, config("t"))
    for attempt in range(12):
        busy, done = threading.Event(), threading.Event()
        scene.hub.call(trio.lowlevel.spawn_system_task, _blocking, busy, done)
        assert busy.wait(10)
        scene.facts.remove_run("t")
        watch(graph, scene.facts).invoke({"log": []}, config("t"))
        assert done.wait(10)
        assert scene.facts.run_status("t") == "completed", f"attempt {attempt}"
    watch(graph, scene.facts).flush()
    assert watch(graph, scene.facts).statistics().failures == 0


async def _blocking(busy: threading.Event, done: threading.Event) -> None:
    """Hold the hub's thread inside a trio task: nothing else runs there meanwhile."""
    busy.set()
    time.sleep(0.05)  # noqa: ASYNC251 - blocking is the point
    done.set()
