"""Small real LangGraph graphs for the tests, and how to read what the tracker made of them."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from workflow_hub import RootActivity, StageNode, ToolNode


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def config(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def summary(root: RootActivity | None) -> tuple[str, str, int, int, bool] | None:
    """(state, reason, executions, blocks, needs_attention) of a published root."""
    if root is None:
        return None
    return (
        str(root.state),
        str(root.reason),
        root.active_execution_count,
        root.actionable_block_count,
        root.needs_attention,
    )


THREAD = "thread"


def nodes(root: RootActivity) -> list[StageNode | ToolNode]:
    """The graph's nodes of the thread's turns: the root's own ``thread`` stage (which hosts
    the turns) left out."""
    assert root.graph is not None
    return [
        node
        for node in root.graph.nodes
        if not (node.run_id == root.root_run_id and node.node_id == THREAD)
    ]


def by_name(root: RootActivity) -> dict[str, StageNode | ToolNode]:
    """The graph's nodes by name (the last one of a name wins)."""
    return {node.name: node for node in nodes(root)}


def statuses(root: RootActivity) -> dict[str, str]:
    return {name: str(node.status) for name, node in by_name(root).items()}


def parents(root: RootActivity, name: str) -> set[str]:
    """The names of a node's parents."""
    ids = {node.id: node.name for node in nodes(root)}
    return {ids[parent] for parent in by_name(root)[name].parent_ids}


def chain(*steps: tuple[str, Any], checkpointer: bool = True, **node_options: Any) -> Any:
    """A linear graph of the given (name, function) nodes."""
    builder = StateGraph(State)
    previous = START
    for name, function in steps:
        builder.add_node(name, function, **node_options.get(name, {}))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=InMemorySaver() if checkpointer else None)


def fork(first: Any, left: Any, right: Any, last: Any, **node_options: Any) -> Any:
    """first -> (left | right) -> last: two parallel branches."""
    builder = StateGraph(State)
    for name, function in (("first", first), ("left", left), ("right", right), ("last", last)):
        builder.add_node(name, function, **node_options.get(name, {}))
    builder.add_edge(START, "first")
    builder.add_edge("first", "left")
    builder.add_edge("first", "right")
    builder.add_edge(["left", "right"], "last")
    builder.add_edge("last", END)
    return builder.compile(checkpointer=InMemorySaver())


def log(name: str) -> Any:
    def node(state: State) -> dict[str, list[str]]:
        return {"log": [name]}

    node.__name__ = name
    return node
