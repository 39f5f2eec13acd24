"""Real compiled LangGraph graphs, watched: the published root at each observable point.

Every look (``scene.look``) also checks that the published root equals ``derive_root`` of the
facts the tracker was given, so each expected summary below is SPEC §5's answer for what
LangGraph did: nodes are stages (D4), parallel branches parallel executions, a subgraph a nested
run hosted by its stage (D4), interrupts human waits (D2, D8), failures settled ones (D3),
retries retrying (D5), a cancelled caller a kill request (D1 and the control-event rule).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, RetryPolicy, interrupt

from workflow_hub import FailureDetail, PromptTarget, RunTarget, StageTarget, ToolTarget
from workflow_hub import ToolNode as HubToolNode
from workflow_hub.langgraph._handler import WatchHandler

from .conftest import SyncScene
from .graphs import State, by_name, chain, config, fork, log, nodes, parents, statuses, summary

WORKING = ("working", "executing")


def test_a_chain_of_nodes_is_a_chain_of_stages(scene: SyncScene) -> None:
    """D4, D6, D8: a running node is one execution, between nodes the run continues, and the
    finished thread is idle; each stage's parent is the stage of the super-step before it."""

    def middle(state: State) -> dict[str, list[str]]:
        scene.look("during middle")
        return {"log": ["middle"]}

    watched = scene.watch(chain(("first", log("first")), ("middle", middle), ("last", log("last"))))
    scene.look("before")
    result = scene.run(watched.invoke, {"log": []}, config())
    assert result == {"log": ["first", "middle", "last"]}
    scene.look("end")

    assert scene.seen("during middle").active_execution_count == 1
    assert summary(scene.seen("during middle")) == ("working", "executing", 1, 0, False)
    assert statuses(scene.seen("during middle")) == {"first": "completed", "middle": "running"}
    assert ("working", "automatic_continuation", 0, 0, False) in map(summary, scene.changes)
    end = scene.seen("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert statuses(end) == {"first": "completed", "middle": "completed", "last": "completed"}
    assert parents(end, "first") == set()
    assert parents(end, "middle") == {"first"}
    assert parents(end, "last") == {"middle"}
    assert [root for label, root in scene.looks if label == "before"] == [None]


def test_the_runs_lifecycle_events_tell_each_change_once(scene: SyncScene) -> None:
    """P6: a stage event per real status change, with its previous status; the run goes
    running -> completed."""
    watched = scene.watch(chain(("a", log("a")), ("b", log("b"))))
    scene.run(watched.invoke, {"log": []}, config())
    targets = [event.target for event in scene.lifecycle()]
    runs = [(t.previous_status, t.status) for t in targets if isinstance(t, RunTarget)]
    stages = [
        (t.stage_name, t.previous_status, t.status)
        for t in targets
        if isinstance(t, StageTarget) and t.run_id != "t"  # the thread's stage aside
    ]
    assert [(str(p) if p else None, str(s)) for p, s in runs] == [
        (None, "running"),  # the thread's root
        (None, "running"),  # its first turn
        ("running", "completed"),
        ("running", "completed"),
    ]
    assert [(n, str(p) if p else None, str(s)) for n, p, s in stages] == [
        ("a", None, "running"),
        ("a", "running", "completed"),
        ("b", None, "running"),
        ("b", "running", "completed"),
    ]
    completed = [e for e in scene.hooks.events if e.type == "workflow_stage_completed"]
    assert len(completed) == 3  # a, b and the thread's stage that hosted the turn


def test_parallel_branches_are_parallel_stages(scene: SyncScene, barrier: Any) -> None:
    """D4: two branches of one super-step run at once: two executions, both children of the
    stage that forked them, and the join's parents are both branches."""
    both = barrier(2)

    def branch(name: str) -> Any:
        def node(state: State) -> dict[str, list[str]]:
            both.wait()
            if name == "left":
                scene.look("both running")
            both.wait()
            return {"log": [name]}

        return node

    watched = scene.watch(fork(log("first"), branch("left"), branch("right"), log("last")))
    scene.run(watched.invoke, {"log": []}, config())
    scene.look("end")

    during = scene.seen("both running")
    assert summary(during) == ("working", "executing", 2, 0, False)
    assert statuses(during) == {"first": "completed", "left": "running", "right": "running"}
    end = scene.seen("end")
    assert parents(end, "left") == parents(end, "right") == {"first"}
    assert parents(end, "last") == {"left", "right"}
    assert summary(end) == ("idle", "quiescent", 0, 0, False)


def test_a_subgraph_is_a_nested_run_hosted_by_its_stage(scene: SyncScene) -> None:
    """D4: while a subgraph's node runs, its own stage is the execution, not the hosting stage;
    the nested run completes with its host."""

    def inner(state: State) -> dict[str, list[str]]:
        scene.look("inside the subgraph")
        return {"log": ["inner"]}

    subgraph = chain(("inner", inner), checkpointer=False)
    watched = scene.watch(chain(("before", log("before")), ("sub", subgraph)))
    scene.run(watched.invoke, {"log": []}, config())
    scene.look("end")

    during = scene.seen("inside the subgraph")
    assert summary(during) == ("working", "executing", 1, 0, False)
    nodes = by_name(during)
    assert nodes["sub"].depth == 1  # the turn is a run nested in the root
    assert str(nodes["sub"].status) == "running"
    assert nodes["inner"].depth == 2
    nested = nodes["inner"].run_id
    assert nested != "t"
    assert nested.startswith("t|sub:")
    assert statuses(scene.seen("end")) == {
        "before": "completed",
        "sub": "completed",
        "inner": "completed",
    }
    nested_events = [e.target for e in scene.lifecycle(nested) if isinstance(e.target, RunTarget)]
    assert [str(t.status) for t in nested_events] == ["running", "completed"]


def test_a_node_that_calls_a_subgraph_twice_hosts_two_nested_runs(scene: SyncScene) -> None:
    """D4: a subgraph invoked from inside a node function is a nested run of that node's stage,
    once per call (LangGraph numbers the second call's namespace)."""
    subgraph = chain(("step", log("step")), checkpointer=False)

    def twice(state: State) -> dict[str, list[str]]:
        subgraph.invoke({"log": []})
        subgraph.invoke({"log": []})
        return {"log": ["twice"]}

    watched = scene.watch(chain(("twice", twice)))
    scene.run(watched.invoke, {"log": []}, config())
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert end.graph is not None
    stages = [(node.name, node.depth, str(node.status)) for node in nodes(end)]
    assert stages == [("twice", 1, "completed"), ("step", 2, "completed"), ("step", 2, "completed")]
    nested = {node.run_id for node in nodes(end) if node.depth == 2}
    assert len(nested) == 2


def test_a_tool_call_is_a_tool_of_its_stage(scene: SyncScene) -> None:
    """D4: a tool running inside a node is an execution of its own, child of the node's stage."""

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        scene.look("inside the tool")
        return key.upper()

    def agent(state: State) -> dict[str, list[str]]:
        return {"log": [lookup.invoke({"key": "k"})]}

    watched = scene.watch(chain(("agent", agent)))
    assert scene.run(watched.invoke, {"log": []}, config()) == {"log": ["K"]}
    scene.look("end")

    during = scene.seen("inside the tool")
    assert summary(during) == ("working", "executing", 2, 0, False)
    tool_node = by_name(during)["lookup"]
    assert tool_node.kind == "tool"
    assert str(tool_node.status) == "running"
    assert parents(during, "lookup") == {"agent"}
    assert statuses(scene.seen("end")) == {"agent": "completed", "lookup": "completed"}
    tools = [e.target for e in scene.lifecycle() if isinstance(e.target, ToolTarget)]
    assert [str(t.status) for t in tools] == ["running", "completed"]


def approval(state: State) -> dict[str, list[str]]:
    answer = interrupt({"message": "Ship it?", "choices": ["yes", "no"]})
    return {"log": [f"answer={answer}"]}


def test_an_interrupt_blocks_the_root_until_it_is_answered(scene: SyncScene) -> None:
    """D2, D8: only a human can advance the thread: blocked / awaiting_input with the prompt on
    its stage; ``Command(resume=...)`` answers it, the same root goes on and ends idle."""

    def after(state: State) -> dict[str, list[str]]:
        scene.look("after the answer")
        return {"log": ["after"]}

    watched = scene.watch(chain(("ask", approval), ("after", after)))
    result = scene.run(watched.invoke, {"log": []}, config())
    assert "__interrupt__" in result
    waiting = scene.look("at the interrupt")
    assert summary(waiting) == ("blocked", "awaiting_input", 0, 1, True)
    assert waiting is not None
    ask = by_name(waiting)["ask"]
    assert str(ask.status) == "awaiting_input"
    assert ask.pending_prompt is not None
    assert ask.pending_prompt.message == "Ship it?"
    assert ask.pending_prompt.choices == ("yes", "no")
    assert str(ask.pending_prompt.kind) == "select"

    result = scene.run(watched.invoke, Command(resume="yes"), config())
    assert result == {"log": ["answer=yes", "after"]}
    scene.look("end")

    assert summary(scene.seen("after the answer")) == ("working", "executing", 1, 0, False)
    assert summary(scene.seen("end")) == ("idle", "quiescent", 0, 0, False)
    roots = scene.hub.snapshot_frame().roots
    assert roots is not None
    assert [r.root_run_id for r in roots] == ["t"]
    prompts = [e.target for e in scene.lifecycle() if isinstance(e.target, PromptTarget)]
    assert [str(p.status) for p in prompts] == ["opened", "answered"]
    assert prompts[0].prompt_id == ask.pending_prompt.id


def test_an_interrupt_while_another_branch_runs_needs_attention(
    scene: SyncScene, barrier: Any
) -> None:
    """D2, D8: one branch waits for a human while another executes: working / executing with
    needs_attention; once the other branch is done, blocked / awaiting_input."""
    asked = threading.Event()
    scene.observe(
        lambda frame: (
            asked.set() if frame.kind == "changed" and frame.root.actionable_block_count else None
        )
    )

    def busy(state: State) -> dict[str, list[str]]:
        assert asked.wait(10)
        scene.look("while the other branch asks")
        return {"log": ["busy"]}

    watched = scene.watch(fork(log("first"), approval, busy, log("last")))
    scene.run(watched.invoke, {"log": []}, config())
    scene.look("at the interrupt")

    assert summary(scene.seen("while the other branch asks")) == (
        "working",
        "executing",
        1,
        1,
        True,
    )
    assert summary(scene.seen("at the interrupt")) == ("blocked", "awaiting_input", 0, 1, True)
    scene.run(watched.invoke, Command(resume="no"), config())
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert statuses(end)["last"] == "completed"


def test_an_interrupt_in_a_subgraph_is_a_prompt_of_the_nested_run(scene: SyncScene) -> None:
    """D2: the prompt belongs to the subgraph's stage; the hosting stage waits with it; after
    the answer both finish."""
    subgraph = chain(("approve", approval), checkpointer=False)
    watched = scene.watch(chain(("prepare", log("prepare")), ("review", subgraph)))
    scene.run(watched.invoke, {"log": []}, config())
    waiting = scene.look("at the interrupt")
    assert summary(waiting) == ("blocked", "awaiting_input", 0, 1, True)
    assert waiting is not None
    nodes = by_name(waiting)
    assert nodes["approve"].depth == 2
    assert nodes["approve"].pending_prompt is not None
    assert str(nodes["review"].status) == "running"
    scene.run(watched.invoke, Command(resume="yes"), config())
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert statuses(end) == {"prepare": "completed", "review": "completed", "approve": "completed"}


def test_a_node_that_raises_fails_its_stage_and_its_run(scene: SyncScene) -> None:
    """D3: the invocation raised, the executor ended: a settled failure, idle with needs_attention;
    the exception reaches the caller unchanged."""

    def broken(state: State) -> dict[str, list[str]]:
        raise KeyError("missing")

    watched = scene.watch(chain(("ok", log("ok")), ("broken", broken)))
    with pytest.raises(KeyError, match="missing"):
        scene.run(watched.invoke, {"log": []}, config())
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, True)
    assert end is not None
    assert statuses(end) == {"ok": "completed", "broken": "failed"}
    runs = [e.target for e in scene.lifecycle("t") if isinstance(e.target, RunTarget)]
    assert str(runs[-1].status) == "failed"
    assert scene.tracker.run_status("t") == "failed"
    # C3: why, on the failed stage's node and event and on the run's event.
    why = FailureDetail(message="'missing'", type="KeyError")
    assert end.graph is not None
    assert [n.error for n in nodes(end) if n.status == "failed"] == [why]
    failed = [e.target for e in scene.lifecycle() if getattr(e.target, "status", None) == "failed"]
    assert [(type(t).__name__, t.error) for t in failed] == [  # type: ignore[union-attr]
        ("StageTarget", why),  # the node's stage
        ("RunTarget", why),  # the turn
        ("StageTarget", why),  # the thread's stage that hosted it
        ("RunTarget", why),  # the thread's root
    ]


def test_a_retried_node_is_a_retrying_stage(scene: SyncScene) -> None:
    """D5: a failed attempt leaves the stage pending and retrying (the lifecycle shows each
    attempt), the root is working / retrying during the retry; the stage ends completed."""
    attempts: list[int] = []

    def flaky(state: State) -> dict[str, list[str]]:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        scene.look("third attempt")
        return {"log": ["flaky"]}

    policy = RetryPolicy(initial_interval=0.001, jitter=False, retry_on=ConnectionError)
    watched = scene.watch(chain(("flaky", flaky), flaky={"retry_policy": policy}))
    scene.run(watched.invoke, {"log": []}, config())
    scene.look("end")

    assert summary(scene.seen("third attempt")) == ("working", "retrying", 1, 0, False)
    assert summary(scene.seen("end")) == ("idle", "quiescent", 0, 0, False)
    stage_events = [
        (str(t.previous_status) if t.previous_status else None, str(t.status))
        for e in scene.lifecycle()
        if isinstance(t := e.target, StageTarget) and t.run_id != "t"
    ]
    assert stage_events == [
        (None, "running"),
        ("running", "pending"),
        ("pending", "running"),
        ("running", "pending"),
        ("pending", "running"),
        ("running", "completed"),
    ]


def test_a_node_whose_retries_run_out_fails(scene: SyncScene) -> None:
    """D3, D5: the last attempt is no retry: the stage fails and the run is a settled failure."""

    def hopeless(state: State) -> dict[str, list[str]]:
        raise ConnectionError("down")

    policy = RetryPolicy(
        initial_interval=0.001, jitter=False, max_attempts=2, retry_on=ConnectionError
    )
    watched = scene.watch(chain(("hopeless", hopeless), hopeless={"retry_policy": policy}))
    with pytest.raises(ConnectionError):
        scene.run(watched.invoke, {"log": []}, config())
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, True)
    assert end is not None
    assert statuses(end) == {"hopeless": "failed"}
    # C3: the retried attempts carry no error (they are pending, retrying); the last one does.
    assert end.graph is not None
    assert [n.error for n in nodes(end)] == [FailureDetail(message="down", type="ConnectionError")]


def test_closing_a_stream_early_is_a_kill_request(scene: SyncScene) -> None:
    """D1 and the control-event rule: the caller stopped the invocation: a run event with
    action kill, then the run killed; nothing is left executing."""
    watched = scene.watch(chain(("a", log("a")), ("b", log("b")), ("c", log("c"))))

    def first_chunk_only() -> Any:
        chunks = watched.stream({"log": []}, config(), stream_mode="updates")
        first = next(chunks)
        chunks.close()
        return first

    assert scene.run(first_chunk_only) == {"a": {"log": ["a"]}}
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    runs = [e.target for e in scene.lifecycle("t") if isinstance(e.target, RunTarget)]
    assert [(str(t.status), str(t.action) if t.action else None) for t in runs][-2:] == [
        ("running", "kill"),
        ("killed", None),
    ]


def test_a_breakpoint_pauses_the_thread(scene: SyncScene) -> None:
    """D7, D8: a thread stopped before a node by ``interrupt_before`` is idle / paused, and
    resuming it with ``None`` finishes it."""
    graph = chain(("a", log("a")), ("b", log("b")))
    watched = scene.watch(graph)
    scene.run(partial_invoke(watched, {"log": []}, interrupt_before=["b"]))
    assert summary(scene.look("at the breakpoint")) == ("idle", "paused", 0, 0, False)
    scene.run(partial_invoke(watched, None))
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert statuses(end) == {"a": "completed", "b": "completed"}


def test_a_breakpoint_compiled_into_the_graph_pauses_the_thread(scene: SyncScene) -> None:
    """D7, D8: ``compile(interrupt_after=...)`` stops the thread as the invocation's own
    breakpoint does: idle / paused."""
    builder = StateGraph(State)
    builder.add_node("a", log("a"))
    builder.add_node("b", log("b"))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    watched = scene.watch(builder.compile(checkpointer=InMemorySaver(), interrupt_after=["a"]))
    scene.run(partial_invoke(watched, {"log": []}))
    assert summary(scene.look("at the breakpoint")) == ("idle", "paused", 0, 0, False)
    scene.run(partial_invoke(watched, None))
    assert summary(scene.look("end")) == ("idle", "quiescent", 0, 0, False)


def test_a_breakpoint_inside_a_subgraph_pauses_the_thread(scene: SyncScene) -> None:
    """D7, D8: a subgraph compiled with a breakpoint stops its parent's task there; the
    parent graph has no breakpoint of its own, and its thread is idle / paused all the same."""
    inner = StateGraph(State)
    inner.add_node("x", log("x"))
    inner.add_node("y", log("y"))
    inner.add_edge(START, "x")
    inner.add_edge("x", "y")
    inner.add_edge("y", END)
    subgraph = inner.compile(interrupt_before=["y"])
    watched = scene.watch(chain(("before", log("before")), ("sub", subgraph)))
    scene.run(partial_invoke(watched, {"log": []}))
    assert summary(scene.look("at the breakpoint")) == ("idle", "paused", 0, 0, False)
    scene.run(partial_invoke(watched, None))
    assert summary(scene.look("end")) == ("idle", "quiescent", 0, 0, False)


def partial_invoke(watched: Any, input: Any, **kwargs: Any) -> Any:
    return lambda: watched.invoke(input, config(), **kwargs)


def test_new_input_on_a_thread_continues_its_root(scene: SyncScene) -> None:
    """One root per thread: a second invocation with new input is the same root, starting a new
    run status history (completed -> running -> completed)."""
    watched = scene.watch(chain(("a", log("a"))))
    scene.run(watched.invoke, {"log": []}, config())
    scene.run(watched.invoke, {"log": []}, config())
    roots = scene.hub.snapshot_frame().roots
    assert roots is not None
    assert [r.root_run_id for r in roots] == ["t"]
    runs = [e.target for e in scene.lifecycle("t") if isinstance(e.target, RunTarget)]
    assert [str(t.status) for t in runs] == ["running", "completed", "running", "completed"]
    end = scene.look("end")
    assert end is not None
    assert [node.name for node in nodes(end)] == ["a", "a"]  # type: ignore[union-attr]
    assert parents(end, "a") == set()  # new input: not a child of the last invocation


def test_new_input_abandons_a_waiting_interrupt(scene: SyncScene) -> None:
    """A thread given new input while an interrupt waits: the prompt is cancelled, its stage
    skipped, and the root no longer blocked."""
    watched = scene.watch(chain(("ask", approval)))
    scene.run(watched.invoke, {"log": []}, config())
    assert summary(scene.look("waiting")) == ("blocked", "awaiting_input", 0, 1, True)
    scene.run(watched.invoke, {"log": []}, config())
    prompts = [e.target for e in scene.lifecycle() if isinstance(e.target, PromptTarget)]
    assert [str(p.status) for p in prompts] == ["opened", "cancelled", "opened"]
    assert summary(scene.look("waiting again")) == ("blocked", "awaiting_input", 0, 1, True)


def test_threads_are_separate_roots(scene: SyncScene) -> None:
    """Each thread id is its own root; an invocation without one is a root of its own too."""
    watched = scene.watch(chain(("a", log("a"))))
    scene.run(watched.invoke, {"log": []}, config("one"))
    scene.run(watched.invoke, {"log": []}, config("two"))
    roots = scene.hub.snapshot_frame().roots
    assert roots is not None
    assert [r.root_run_id for r in roots] == ["one", "two"]
    assert all(summary(r) == ("idle", "quiescent", 0, 0, False) for r in roots)


def test_a_graph_that_runs_out_of_steps_is_a_failed_run(scene: SyncScene) -> None:
    """A LangGraph error of the run itself (recursion limit) is a failed run, executor ended."""
    watched = scene.watch(chain(("a", log("a")), ("b", log("b"))))
    with pytest.raises(GraphRecursionError):
        scene.run(lambda: watched.invoke({"log": []}, {**config(), "recursion_limit": 1}))
    assert summary(scene.look("end")) == ("idle", "quiescent", 0, 0, True)


def test_a_run_that_raises_withdraws_the_interrupts_it_never_returned(scene: SyncScene) -> None:
    """D2, D3: one branch asks while the other raises: the caller gets the exception, never the
    interrupt, so the prompt is cancelled and the root is a settled failure, not blocked."""

    asked = threading.Event()
    scene.observe(
        lambda frame: (
            asked.set() if frame.kind == "changed" and frame.root.actionable_block_count else None
        )
    )

    def broken(state: State) -> dict[str, list[str]]:
        assert asked.wait(10)
        raise KeyError("broken")

    watched = scene.watch(fork(log("first"), approval, broken, log("last")))
    with pytest.raises(KeyError):
        scene.run(watched.invoke, {"log": []}, config())
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, True)
    assert end is not None
    assert statuses(end) == {"first": "completed", "left": "skipped", "right": "failed"}
    prompts = [e.target for e in scene.lifecycle() if isinstance(e.target, PromptTarget)]
    assert [str(p.status) for p in prompts] == ["opened", "cancelled"]


def test_a_tool_node_runs_tools_of_its_stage(scene: SyncScene) -> None:
    """D4: LangGraph's prebuilt ToolNode running two tool calls of one AI message: two tools of
    the ToolNode's stage, both completed, in the order of their ordinals."""

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @tool
    def clock(city: str) -> str:
        """The time in a city."""
        return f"noon in {city}"

    def model(state: MessagesState) -> dict[str, Any]:
        calls = [
            {"name": "weather", "args": {"city": "Oslo"}, "id": "call-1"},
            {"name": "clock", "args": {"city": "Oslo"}, "id": "call-2"},
        ]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([weather, clock]))
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    builder.add_edge("tools", END)
    watched = scene.watch(builder.compile())
    result = scene.run(watched.invoke, {"messages": []}, config())
    assert [m.content for m in result["messages"][1:]] == ["sunny in Oslo", "noon in Oslo"]
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert statuses(end) == {
        "model": "completed",
        "tools": "completed",
        "weather": "completed",
        "clock": "completed",
    }
    assert parents(end, "weather") == parents(end, "clock") == {"tools"}
    tools = sorted(n.ordinal for n in by_name(end).values() if isinstance(n, HubToolNode))
    assert tools == [0, 1]


def test_a_long_run_beats_while_it_runs(scene: SyncScene) -> None:
    """P7 and the heartbeat rule: a watched thread with an interval beats at its boundaries while
    a long node runs (the host runs the tracker's heartbeats); a beat is observation only."""
    interval = 0.02 / 60  # 20 ms, in minutes
    deadline = time.monotonic() + 10

    def long(state: State) -> dict[str, list[str]]:
        while len(scene.hooks.heartbeats()) < 3:
            assert time.monotonic() < deadline, "no heartbeats"
            time.sleep(0.005)
        return {"log": ["long"]}

    watched = scene.watch(chain(("long", long)), heartbeat_interval_minutes=interval)
    scene.run(watched.invoke, {"log": []}, config())
    beats = scene.hooks.heartbeats()
    assert {beat.run_id for beat in beats} == {"t"}
    assert all(beat.interval_minutes == interval for beat in beats)
    times = [beat.scheduled_at for beat in beats]
    steps = [round((later - earlier) / 20) for earlier, later in itertools.pairwise(times)]
    assert all(step >= 1 for step in steps)  # boundaries, later ones skipped, never back-filled
    assert summary(scene.look("end")) == ("idle", "quiescent", 0, 0, False)


def test_the_functional_api_reports_its_tasks_under_the_entrypoint(scene: SyncScene) -> None:
    """D4: an ``@entrypoint`` is a stage of the thread's run; its ``@task`` calls are stages of
    a nested run that the entrypoint's stage hosts."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import entrypoint, task

    @task
    def double(x: int) -> int:
        return 2 * x

    @entrypoint(checkpointer=InMemorySaver())
    def flow(x: int) -> int:
        return int(double(x).result() + double(x + 1).result())

    assert scene.run(scene.watch(flow).invoke, 3, config()) == 14
    end = scene.look("end")
    assert summary(end) == ("idle", "quiescent", 0, 0, False)
    assert end is not None
    assert end.graph is not None
    assert [(n.name, n.depth, str(n.status)) for n in nodes(end)] == [
        ("flow", 1, "completed"),
        ("double", 2, "completed"),
        ("double", 2, "completed"),
    ]


def test_a_model_streaming_in_a_node_costs_the_handler_no_call_per_token(
    scene: SyncScene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only chains and tools are reported, so the handler asks LangChain for nothing else: a
    chat model streaming inside a node does not call it per token (issue 38, the cost of
    watching), and the node is reported as any other."""
    tokens: list[str] = []
    monkeypatch.setattr(
        WatchHandler, "on_llm_new_token", lambda self, token, **kwargs: tokens.append(token)
    )
    streamed: list[str] = []

    def chat(state: State) -> dict[str, list[str]]:
        model = GenericFakeChatModel(messages=iter([AIMessage(content="one two three")]))
        streamed.extend(str(chunk.content) for chunk in model.stream("hi"))
        return {"log": ["chat"]}

    watched = scene.watch(chain(("chat", chat)))
    assert watched.invoke({"log": []}, config()) == {"log": ["chat"]}
    assert "".join(streamed) == "one two three"
    assert tokens == []
    assert statuses(scene.look("after")) == {"chat": "completed"}
