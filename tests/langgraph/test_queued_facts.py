"""The thread host's tracker queues facts (H1, C1): what that means for a watched graph."""

from __future__ import annotations

import logging

import pytest

from workflow_hub.langgraph import watch

from .conftest import SyncScene
from .graphs import chain, config, log, statuses


def test_a_root_the_tracker_refuses_runs_the_graph_unreported(
    scene: SyncScene, caplog: pytest.LogCaptureFixture
) -> None:
    """C1: the root starting is reported in the caller's thread, inside a batch whose end waits
    for the hub's thread; a refusal (a root already tracked) is logged and counted, and the
    invocation runs unreported: ``invoke`` returns LangGraph's result, the other root is
    untouched."""
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


def test_a_failed_fact_in_the_reporter_is_logged_and_the_rest_applied(
    scene: SyncScene, caplog: pytest.LogCaptureFixture
) -> None:
    """A fact that fails in the hub's thread (its root removed behind the integration's back)
    is raised at the end of the reporter's batch and logged there: the graph runs to its end
    and ``invoke`` returns LangGraph's result."""
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
    assert result == {"log": ["a", "b"]}
    assert calls == ["a"]
    assert any("reporting a LangGraph event" in r.message for r in caplog.records)
    assert watched.statistics().failures >= 1
    assert "t" not in scene.facts


def test_facts_are_applied_when_invoke_returns(scene: SyncScene) -> None:
    """H1: queued facts reach the tracker before ``invoke`` returns (the gate flushes, the
    batch's end waits for the hub's thread)."""
    watched = watch(chain(("a", log("a")), ("b", log("b"))), scene.facts)
    watched.invoke({"log": []}, config("t"))
    root = scene.facts.activity("t")
    assert statuses(root) == {"a": "completed", "b": "completed"}
    assert scene.facts.run_status("t") == "completed"
