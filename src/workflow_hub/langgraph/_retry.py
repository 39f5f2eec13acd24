"""Will LangGraph retry this failed attempt? Read from the graph's own ``RetryPolicy`` objects.

A node's callback ends in an error before LangGraph decides to sleep and try again, and nothing
LangGraph streams says that it will. The decision follows public fields only: the node's
``retry_policy`` (or the graph's default), each policy's ``retry_on`` (an exception class, a
sequence of them, or a predicate) and ``max_attempts``; the first policy whose ``retry_on``
matches applies, as in LangGraph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["RetryPolicies"]

_NS_SEP = "|"
_NS_END = ":"


def _as_tuple(policy: object) -> tuple[Any, ...]:
    # LangGraph < 0.5 kept one policy per node; later versions keep a sequence.
    if policy is None:
        return ()
    if isinstance(policy, tuple) and hasattr(policy, "max_attempts"):
        return (policy,)  # a RetryPolicy is a NamedTuple: one policy, not a sequence
    if isinstance(policy, Sequence):
        return tuple(policy)
    return (policy,)


def _matches(policy: Any, exc: BaseException) -> bool:
    retry_on = getattr(policy, "retry_on", None)
    if isinstance(retry_on, type):
        return isinstance(exc, retry_on)
    if isinstance(retry_on, Sequence) and not isinstance(retry_on, str):
        return isinstance(exc, tuple(retry_on))
    if callable(retry_on):
        try:
            return bool(retry_on(exc))
        except Exception:
            return False
    return False


def _graph_policies(graph: Any) -> dict[str, tuple[Any, ...]]:
    default = _as_tuple(getattr(graph, "retry_policy", None))
    nodes: Mapping[str, Any] = getattr(graph, "nodes", None) or {}
    table: dict[str, tuple[Any, ...]] = {}
    for name, node in nodes.items():
        table[name] = _as_tuple(getattr(node, "retry_policy", None)) or default
    if default:
        table[""] = default  # nodes not known at compile time (Send targets resolve by name)
    return table


class RetryPolicies:
    """The retry policies of a compiled graph and its subgraphs, by namespace path.

    Read from the graph when a task first fails, not when the graph is wrapped: finding the
    subgraphs is most of what building a wrapper would cost, and a wrapper is built per request
    (issue 38). A graph's nodes and subgraphs do not change once it is compiled.
    """

    __slots__ = ("_by_path", "_graph")

    def __init__(self, graph: Any) -> None:
        self._graph = graph
        self._by_path: dict[str, dict[str, tuple[Any, ...]]] | None = None

    def _tables(self) -> dict[str, dict[str, tuple[Any, ...]]]:
        by_path = self._by_path
        if by_path is None:
            by_path = self._by_path = _collect(self._graph)
        return by_path

    def will_retry(self, task_ns: str, node: str, exc: BaseException, failed_attempts: int) -> bool:
        """Whether LangGraph retries after ``failed_attempts`` failures ending with ``exc``.

        ``task_ns`` is the task's checkpoint namespace (``parent:<id>|node:<id>``): the graph a
        task belongs to is named by the node names before its own segment.
        """
        if not isinstance(exc, Exception):
            return False
        segments = task_ns.split(_NS_SEP)[:-1]
        path = _NS_SEP.join(segment.partition(_NS_END)[0] for segment in segments)
        table = self._tables().get(path)
        if table is None:
            return False
        policies = table.get(node) or table.get("", ())
        for policy in policies:
            if _matches(policy, exc):
                return failed_attempts < int(getattr(policy, "max_attempts", 1))
        return False


def _collect(graph: Any) -> dict[str, dict[str, tuple[Any, ...]]]:
    """The policies of ``graph`` and of every subgraph LangGraph can find in it."""
    by_path = {"": _graph_policies(graph)}
    subgraphs: Callable[..., Iterable[tuple[str, Any]]] | None = getattr(
        graph, "get_subgraphs", None
    )
    if subgraphs is not None:
        try:
            for path, subgraph in subgraphs(recurse=True):
                by_path[path] = _graph_policies(subgraph)
        except Exception:  # a remote or exotic subgraph: its nodes simply never retry here
            pass
    return by_path
