"""A thread that lives for months stays bounded: its root shows the current turn in full, the
last ``keep_turns`` turns, and one summary stage for the turns before them (D4, P6)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Command, interrupt

from workflow_hub import StageTarget, wire
from workflow_hub.langgraph import watch

from .conftest import SyncScene
from .graphs import THREAD, State, chain, config, log, nodes, summary


def ask(state: State) -> dict[str, list[str]]:
    return {"log": [str(interrupt("Go on?"))]}


def turn_graph() -> Any:
    return chain(("plan", log("plan")), ("ask", ask), ("act", log("act")), ("reply", log("reply")))


def one_turn(watched: Any) -> None:
    watched.invoke({"log": []}, config())
    watched.invoke(Command(resume="yes"), config())


def measured(scene: SyncScene) -> tuple[int, int, int]:
    """(graph nodes, bytes of the root's snapshot on the wire, runs the tracker keeps)."""
    root = scene.facts.activity("t")
    assert root.graph is not None
    size = len(wire.dumps(root))
    runs = scene.hub.call(lambda: len(scene.tracker._ledger.runs))
    return len(root.graph.nodes), size, runs


def test_a_long_thread_keeps_its_last_turns_and_a_summary(scene: SyncScene) -> None:
    """D4: after many turns the root has the thread's stage, the kept turns' stages and one
    summary; its node count, snapshot size and the tracker's runs stop growing."""
    watched = watch(turn_graph(), scene.facts, keep_turns=2)
    sizes = []
    for _ in range(12):
        one_turn(watched)
        sizes.append(measured(scene))
    nodes_now, _, runs_now = sizes[-1]
    assert nodes_now == 1 + 2 * 4 + 1  # the thread's stage, two turns of four, the summary
    assert {n for n, _, _ in sizes[3:]} == {nodes_now}
    assert {r for _, _, r in sizes[3:]} == {runs_now}
    assert max(s for _, s, _ in sizes[3:]) <= 1.05 * min(s for _, s, _ in sizes[3:])
    root = scene.facts.activity("t")
    assert summary(root) == ("idle", "quiescent", 0, 0, False)
    folded = [node for node in nodes(root) if node.node_id == "summary"]
    assert [node.name for node in folded] == ["10 earlier turns (10 completed)"]
    assert str(folded[0].status) == "completed"
    turns = sorted({node.run_id for node in nodes(root) if node.name == "plan"})
    assert turns == ["t|turn-11", "t|turn-12"]


def test_folding_a_turn_tells_no_hook(scene: SyncScene) -> None:
    """P6: the summary is history: folding turns adds no lifecycle event of its own."""
    watched = watch(chain(("a", log("a"))), scene.facts, keep_turns=1)
    for _ in range(4):
        watched.invoke({"log": []}, config())
    scene.settle()
    stages = [e.target for e in scene.lifecycle() if isinstance(e.target, StageTarget)]
    assert {t.stage_name for t in stages} == {"a", THREAD}
    root = scene.facts.activity("t")
    # The summary, made at the first fold, stays where it was: before the turns after it.
    assert [node.name for node in nodes(root)] == ["3 earlier turns (3 completed)", "a"]


def test_the_summary_is_one_node_renamed_at_each_fold(scene: SyncScene) -> None:
    """D4: the folded turns' summary is one stage of one history run,
    ``"{root}|earlier-turns"``, added at the first fold and renamed at the next ones
    (``set_stage_name``): a view keeps the same node, and its count follows the turns."""
    watched = watch(chain(("a", log("a"))), scene.facts, keep_turns=1)
    seen = []
    for _ in range(4):
        watched.invoke({"log": []}, config())
        seen += [(node.id, node.name) for node in nodes(scene.facts.activity("t"))]
    summaries = [(node_id, name) for node_id, name in seen if "earlier" in name]
    assert summaries == [
        ("t|earlier-turns:summary", "1 earlier turn (1 completed)"),
        ("t|earlier-turns:summary", "2 earlier turns (2 completed)"),
        ("t|earlier-turns:summary", "3 earlier turns (3 completed)"),
    ]
    assert scene.facts.run_status("t|earlier-turns") == "completed"


def test_a_turn_abandoned_by_new_input_is_folded_as_cancelled(scene: SyncScene) -> None:
    """A turn whose interrupt was never answered ends ``cancelled`` when new input comes, and
    the summary counts it so."""
    watched = watch(chain(("ask", ask)), scene.facts, keep_turns=1)
    watched.invoke({"log": []}, config())  # waits for an answer
    watched.invoke({"log": []}, config())  # new input instead: the first turn is abandoned
    root = scene.facts.activity("t")
    assert summary(root) == ("blocked", "awaiting_input", 0, 1, True)
    assert [n.name for n in nodes(root) if n.node_id == "summary"] == [
        "1 earlier turn (1 cancelled)"
    ]


def test_keep_turns_none_keeps_every_turn(scene: SyncScene) -> None:
    watched = watch(chain(("a", log("a"))), scene.facts, keep_turns=None)
    for _ in range(5):
        watched.invoke({"log": []}, config())
    assert [node.name for node in nodes(scene.facts.activity("t"))] == ["a"] * 5


@pytest.mark.parametrize("keep", [0, -1, 1.5, True])
def test_keep_turns_is_a_positive_int(scene: SyncScene, keep: Any) -> None:
    with pytest.raises(ValueError, match="keep_turns"):
        watch(chain(("a", log("a"))), scene.facts, keep_turns=keep)


def test_threads_whose_roots_were_removed_are_forgotten(scene: SyncScene) -> None:
    """Issue 38 (found by a user trial): a service with a thread id per conversation removes
    each root when the conversation ends (``remove_run``); the integration forgets those
    threads as new ones come, so what it keeps stays the size of the roots tracked. A thread
    whose root is still tracked is kept and continues its root."""
    graph = chain(("a", log("a")))
    keep = scene.watch(graph)
    keep.invoke({"log": []}, config("kept"))
    for number in range(60):
        root = f"conversation-{number}"
        watch(graph, scene.facts).invoke({"log": []}, config(root))
        scene.facts.remove_run(root)
    assert keep.statistics().threads <= 4
    keep.invoke({"log": []}, config("kept"))  # the same root, its second turn
    keep.flush()
    assert scene.facts.run_status("kept|turn-1") == "completed"
    assert scene.facts.run_status("kept|turn-2") == "completed"  # continued, not started over
    assert keep.statistics().failures == 0


def test_a_forgotten_thread_invoked_again_starts_over(scene: SyncScene) -> None:
    graph = chain(("a", log("a")))
    watch(graph, scene.facts).invoke({"log": []}, config("old"))
    scene.facts.remove_run("old")
    for number in range(4):  # new threads: "old" is looked at and forgotten
        watch(graph, scene.facts).invoke({"log": []}, config(f"new-{number}"))
    watched = watch(graph, scene.facts)
    watched.invoke({"log": []}, config("old"))
    assert scene.facts.run_status("old") == "completed"
    assert watched.statistics().failures == 0
    assert watched.statistics().unreported_invocations == 0
