"""The integration never raises into the user's graph (C1): a tracker that refuses, a hub that
is gone, a bug of the integration's own are logged (one traceback per kind, then counts) and
counted in ``statistics()``; LangGraph's result and exceptions reach the caller unchanged."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import threading
import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import workflow_hub.sync
from workflow_hub.langgraph import watch
from workflow_hub.langgraph._handler import WatchHandler
from workflow_hub.langgraph._mapping import ThreadMapper
from workflow_hub.langgraph._retry import RetryPolicies
from workflow_hub.tracker import SchedulerFacts

from .conftest import AsyncioScene, SyncScene, asyncio_scene
from .graphs import State, chain, config, log, statuses, summary
from .test_properties import Nodes, build, graphs


class RefusedValue(ValueError):
    pass


class RefusedRuntime(RuntimeError):
    pass


class RefusedKey(KeyError):
    pass


REFUSALS = (RefusedValue, RefusedRuntime, RefusedKey)
FACTS = frozenset(
    name for name in dir(SchedulerFacts) if not name.startswith("_") and name != "hydrating"
)


class Refusing:
    """The thread host's tracker, refusing calls at random (a seeded draw per call)."""

    def __init__(self, inner: Any, seed: int, rate: float) -> None:
        self._inner = inner
        self._random = random.Random(seed)
        self._rate = rate
        self._lock = threading.Lock()
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in FACTS:
            return attr

        def refusing(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                refuse = self._random.random() < self._rate
                kind = self._random.choice(REFUSALS)
                self.refused += refuse
            if refuse:
                raise kind(f"refused {name}")
            return attr(*args, **kwargs)

        return refusing


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def recording() -> Iterator[Records]:
    records = Records()
    logger = logging.getLogger("workflow_hub")
    logger.addHandler(records)
    try:
        yield records
    finally:
        logger.removeHandler(records)


def outcome(call: Any) -> tuple[str, Any]:
    """What an invocation gave its caller: a result (interrupt values in order) or an error."""
    try:
        result = call()
    except Exception as error:
        return ("raised", (type(error), re.sub(r"n\d+", "n?", str(error))))
    if isinstance(result, dict) and "__interrupt__" in result:
        result = {**result, "__interrupt__": sorted(str(i.value) for i in result["__interrupt__"])}
    return ("returned", result)


def conversation(watched: Any, use_async: list[bool]) -> list[tuple[str, Any]]:
    """New input, then "yes" to every interrupt until none waits or an invocation raises."""
    seen: list[tuple[str, Any]] = []
    pending: Any = {"log": []}
    for step in range(6):
        asynchronous = use_async[step % len(use_async)] if use_async else False
        if asynchronous:
            call = partial(asyncio.run, watched.ainvoke(pending, config()))
        else:
            call = partial(watched.invoke, pending, config())
        seen.append(outcome(call))
        kind, value = seen[-1]
        if kind == "raised" or "__interrupt__" not in value:
            break
        pending = Command(resume="yes")
    return seen


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    graph=graphs(),
    seed=st.integers(0, 2**32 - 1),
    rate=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
    use_async=st.lists(st.booleans(), max_size=3),
)
def test_a_tracker_that_refuses_at_random_never_reaches_the_graph(
    graph: tuple[list[str], list[tuple[int, int]]], seed: int, rate: float, use_async: list[bool]
) -> None:
    """C1: random graphs (failures, retries, tools, interrupts, resumes) give their caller what
    the same graph unwatched gives, whatever the tracker refuses; every refusal is counted, and
    each kind of failure is logged with a traceback once."""
    behaviours, edges = graph
    expected = conversation(build(Nodes(behaviours), edges), use_async)
    with workflow_hub.sync.open_hub() as hub:
        tracker = Refusing(hub.tracker(owner_session_id="s"), seed, rate)
        tracker.start()
        watched = watch(build(Nodes(behaviours), edges), tracker)
        logs = recording()
        records = next(logs)
        try:
            got = conversation(watched, use_async)
        finally:
            next(logs, None)
        statistics = watched.statistics()
    assert got == expected
    assert statistics.failures >= tracker.refused
    if tracker.refused == 0:
        assert statistics.failures == 0
    kinds = [record.exc_info[0] for record in records.records if record.exc_info]
    assert len(kinds) == len(set(kinds)), kinds


def test_a_hub_that_is_gone_leaves_the_graph_alone(caplog: pytest.LogCaptureFixture) -> None:
    """C1: a tracker whose hub has closed refuses everything; the graph runs, its result is
    returned, once a traceback is logged and each invocation is counted unreported."""
    with workflow_hub.sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="s")
        tracker.start()
    watched = watch(chain(("a", log("a")), ("b", log("b"))), tracker)
    with caplog.at_level(logging.WARNING, logger="workflow_hub"):
        for thread in ("one", "two", "three"):
            assert watched.invoke({"log": []}, config(thread)) == {"log": ["a", "b"]}
    assert watched.statistics().unreported_invocations == 3
    assert len([r for r in caplog.records if r.exc_info]) == 1


def test_the_graphs_own_error_reaches_the_caller_unchanged(scene: SyncScene) -> None:
    """C1: the very exception a node raised is what ``invoke`` raises, reported or not."""
    raised: list[Exception] = []

    def boom(state: State) -> dict[str, list[str]]:
        raised.append(LookupError("boom"))
        raise raised[-1]

    watched = watch(chain(("boom", boom)), scene.facts)
    with pytest.raises(LookupError) as caught:
        watched.invoke({"log": []}, config())
    assert caught.value is raised[-1]
    assert summary(scene.facts.activity("t"))[0] == "idle"  # type: ignore[index]


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_failure_inside_a_callback_is_contained(
    scene: SyncScene, caplog: pytest.LogCaptureFixture
) -> None:
    """C1: an interrupt value the integration cannot show (its ``repr`` raises inside the
    callback) is logged and counted; the caller still gets LangGraph's interrupt, and the
    resume still runs."""
    value = Unprintable()

    def ask(state: State) -> dict[str, list[str]]:
        return {"log": [str(interrupt(value))]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("after", log("after"))
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "after")
    builder.add_edge("after", END)
    # Pickled by the checkpointer; the integration only tries to show it.
    saver = InMemorySaver(serde=JsonPlusSerializer(pickle_fallback=True))
    watched = watch(builder.compile(checkpointer=saver), scene.facts)
    with caplog.at_level(logging.WARNING, logger="workflow_hub"):
        result = watched.invoke({"log": []}, config())
    assert result["__interrupt__"][0].value is value
    assert watched.statistics().failures == 1
    assert "no repr" in caplog.text
    assert watched.invoke(Command(resume="ok"), config()) == {"log": ["ok", "after"]}
    assert statuses(scene.facts.activity("t"))["after"] == "completed"


class _BrokenGate:
    """A gate that refuses every call: what a callback queues fails there."""

    def submit(self, call: Any) -> None:
        raise RuntimeError("gate broke")

    def flush(self, timeout: float | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def test_no_callback_raises_into_langchain() -> None:
    """C1 (issue 38): every callback, the two written out for speed among them, contains what
    goes wrong inside it (a run id that is no UUID, a gate that fails): each failure goes to
    the handler's ``failed`` once, and nothing reaches LangChain."""
    failures: list[BaseException] = []
    mapper = ThreadMapper(None, "t", heartbeat_interval_minutes=None)  # type: ignore[arg-type]
    policies = RetryPolicies(chain(("a", log("a"))))
    handler = WatchHandler(mapper, _BrokenGate(), policies, failures.append)
    task = {"langgraph_checkpoint_ns": "a:1", "langgraph_node": "a", "langgraph_step": 1}
    tool = {"langgraph_checkpoint_ns": "a:1"}
    run, other = uuid.uuid4(), uuid.uuid4()
    handler.on_chain_start(None, {}, run_id="no uuid", metadata=task)  # type: ignore[arg-type]
    handler.on_chain_end({}, run_id="no uuid")  # type: ignore[arg-type]
    handler.on_chain_error(ValueError("x"), run_id="no uuid")  # type: ignore[arg-type]
    handler.on_chain_start(None, {}, run_id=run, metadata=task)  # the gate fails
    handler.on_chain_end({}, run_id=run)
    handler.on_chain_start(None, {}, run_id=other, metadata=task)
    handler.on_chain_error(ValueError("x"), run_id=other)
    handler.on_tool_start({"name": "grep"}, "", run_id=run, metadata=tool)
    handler.on_tool_end("", run_id=run)
    handler.on_tool_error(ValueError("x"), run_id=run)
    assert [type(failure).__name__ for failure in failures] == [
        *["AttributeError"] * 3,
        *["RuntimeError"] * 7,
    ]


def _reuse_the_root(tracker: Any) -> None:
    """Someone else's run takes the id of a thread's removed root."""
    tracker.remove_run("t")
    tracker.add_run("t", status="running")
    tracker.add_stage("t", "theirs", "their stage", status="running")


def _untouched(watched: Any, tracker: Any, records: list[logging.LogRecord]) -> None:
    """The refused invocation was counted unreported, nothing looped, their root is as they
    left it: their stage alone, still running."""
    assert watched.statistics().unreported_invocations == 1
    assert not any(r.exc_info and r.exc_info[0] is RecursionError for r in records)
    assert statuses(tracker.activity("t")) == {"their stage": "running"}
    assert tracker.run_status("t") == "running"


def test_a_refused_queued_start_leaves_the_invocation_unreported(
    scene: SyncScene, caplog: pytest.LogCaptureFixture
) -> None:
    """C1: a thread reported before starts through its queue; if the tracker refuses that
    start (its root removed, and the id taken by someone else's run), the invocation runs
    unreported and is counted, as a refused first start is: none of its facts reaches their
    root, and nothing loops (a task's fact once recursed without end looking for a turn that
    was never started). Once their run is gone, the thread starts over."""
    watched = watch(chain(("a", log("a")), ("b", log("b"))), scene.facts)
    results = [watched.invoke({"log": []}, config())]
    scene.hub.call(_reuse_the_root, scene.tracker)
    with caplog.at_level(logging.WARNING, logger="workflow_hub"):
        results.append(watched.invoke({"log": []}, config()))
        watched.flush()
    _untouched(watched, scene.facts, caplog.records)
    scene.hub.call(scene.tracker.remove_run, "t")
    results.append(watched.invoke({"log": []}, config()))
    assert results == [{"log": ["a", "b"] * n} for n in (1, 2, 3)]
    assert statuses(scene.facts.activity("t"))["b"] == "completed"
    assert scene.facts.run_status("t") == "completed"


def test_a_refused_queued_start_on_the_asyncio_host(caplog: pytest.LogCaptureFixture) -> None:
    """C1: the same on the asyncio host, where a known thread's start is queued on the loop."""

    async def main(scene: AsyncioScene) -> None:
        watched = scene.watch(chain(("a", log("a")), ("b", log("b"))))
        results = [await watched.ainvoke({"log": []}, config())]
        _reuse_the_root(scene.tracker)
        with caplog.at_level(logging.WARNING, logger="workflow_hub"):
            results.append(await watched.ainvoke({"log": []}, config()))
        _untouched(watched, scene.tracker, caplog.records)
        scene.tracker.remove_run("t")
        results.append(await watched.ainvoke({"log": []}, config()))
        assert results == [{"log": ["a", "b"] * n} for n in (1, 2, 3)]
        assert statuses(scene.tracker.activity("t"))["b"] == "completed"
        assert scene.tracker.run_status("t") == "completed"

    asyncio_scene(main)
