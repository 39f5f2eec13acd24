"""Decoding one stream's frames, reusing the graph nodes decoded from the same JSON before.

A changed frame carries its root whole, graph included, and from one frame of a root to the next
most of its nodes are the same: decoding every node of every frame (reshape, check, construct)
was most of the CPU a ``workflow-hub watch`` spent (issue 38). A :class:`FrameDecoder` keeps, for
each root it has decoded, each node's JSON object and the value made from it; a node whose JSON
object is the same, types included, is given the value made before. Decoding is a pure function
of the JSON, so the frame is the one :func:`loads` makes, and bad input raises exactly what
:func:`loads` raises (anything unusual takes that path).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import attrs

from ._errors import ContractError
from ._values import ChangedFrame, Frame, GraphNode, RemovedFrame, RootActivity, SnapshotFrame
from ._wire import _structure, parse_json

__all__ = ["FrameDecoder"]

_V = TypeVar("_V")

# Where a JSON value holds numbers and booleans: (path, type) of each. ``1``, ``1.0`` and
# ``true`` are equal in Python but not on the wire (a count refuses ``1.0`` and ``true``), and
# only they are: a str, null, array or object is equal to nothing but its own kind.
_Numbers = tuple[tuple[tuple[str | int, ...], type], ...]
# One root's remembered nodes: node id -> (its JSON object, its numbers, the value made of it).
_Nodes = dict[str, tuple[dict[str, Any], _Numbers, GraphNode]]
_NUMBER_TYPES = (int, float, bool)


def _numbers(value: Any, path: tuple[str | int, ...] = ()) -> _Numbers:
    """Every number and boolean in a JSON value, with its path and exact type."""
    kind = type(value)
    if kind in _NUMBER_TYPES:
        return ((path, kind),)
    if kind is dict:
        items: Any = value.items()
    elif kind is list:
        items = enumerate(value)
    else:
        return ()
    return tuple(found for key, item in items for found in _numbers(item, (*path, key)))


def _same(raw: dict[str, Any], seen: dict[str, Any], numbers: _Numbers) -> bool:
    """Whether ``raw`` is the JSON value ``seen`` is, to the type of every number."""
    if raw != seen:
        return False
    for path, kind in numbers:
        value: Any = raw
        for step in path:
            value = value[step]
        if type(value) is not kind:
            return False
    return True


class FrameDecoder:
    """``loads(Frame, text)`` for the frames of one stream, in order, at a fraction of the CPU.

    It remembers the nodes of the roots of the last snapshot and of the changed frames since,
    and forgets a root when a removed frame or a snapshot without it says it is gone, so it
    holds at most one copy of each live root's nodes' JSON. Not thread-safe: one per stream.
    """

    def __init__(self) -> None:
        self._roots: dict[str, _Nodes] = {}

    def loads(self, text: str | bytes | bytearray) -> Frame:
        """The frame :func:`~workflow_hub.wire.loads` makes of ``text``, or its error."""
        data = parse_json(text)
        kind = data.get("kind") if type(data) is dict else None
        frame: Frame | None = None
        try:
            if kind == "changed":
                frame = self._changed(data)
            elif kind == "snapshot":
                frame = self._snapshot(data)
        except ContractError:  # the ordinary path raises it, with its whole path
            frame = None
        if frame is None:
            frame = _structure(data, Frame)
            self._remember(data, frame)
        return frame

    def _changed(self, data: dict[str, Any]) -> ChangedFrame | None:
        """The changed frame with its known nodes reused; None to take the ordinary path."""
        bare = self._bare(data.get("root"))
        if bare is None:
            return None
        raw_root, nodes, kept = bare
        frame: ChangedFrame = _structure({**data, "root": raw_root}, ChangedFrame)
        frame = _evolve(frame, root=_given(frame.root, nodes))
        self._roots[frame.root.root_run_id] = kept
        return frame

    def _snapshot(self, data: dict[str, Any]) -> SnapshotFrame | None:
        """The snapshot with the nodes of the roots it shares with the last frames reused."""
        raw_roots = data.get("roots")
        if type(raw_roots) is not list:
            return None
        bare_roots: list[Any] = []
        given: list[tuple[list[GraphNode], _Nodes] | None] = []
        for raw_root in raw_roots:
            bare = self._bare(raw_root)
            if bare is None and type(raw_root) is dict and raw_root.get("graph") is not None:
                return None  # a graph that is not one: the ordinary path says why
            bare_roots.append(raw_root if bare is None else bare[0])
            given.append(None if bare is None else bare[1:])
        frame: SnapshotFrame = _structure({**data, "roots": bare_roots}, SnapshotFrame)
        roots: list[RootActivity] = []
        remembered: dict[str, _Nodes] = {}
        for root, nodes in zip(frame.roots or (), given, strict=True):
            if nodes is not None:
                root = _given(root, nodes[0])
                remembered[root.root_run_id] = nodes[1]
            roots.append(root)
        frame = _evolve(frame, roots=roots)
        self._roots = remembered
        return frame

    def _bare(self, raw_root: object) -> tuple[dict[str, Any], list[GraphNode], _Nodes] | None:
        """A root's JSON with no nodes, and its nodes decoded (the known ones reused); None
        when it has no graph or anything is unusual (the ordinary path decodes it)."""
        if type(raw_root) is not dict:
            return None
        graph = raw_root.get("graph")
        if type(graph) is not dict:
            return None
        raw_nodes = graph.get("nodes")
        root_id = raw_root.get("rootRunId")
        if type(raw_nodes) is not list or type(root_id) is not str:
            return None
        known = self._roots.get(root_id, {})
        kept: _Nodes = {}
        nodes: list[GraphNode] = []
        for raw in raw_nodes:
            key = raw.get("id") if type(raw) is dict else None
            if type(key) is not str:
                return None
            seen = known.get(key)
            if seen is not None and _same(raw, seen[0], seen[1]):
                kept[key] = seen
                nodes.append(seen[2])
            else:
                node: GraphNode = _structure(raw, GraphNode)
                kept[key] = (raw, _numbers(raw), node)
                nodes.append(node)
        # The root is decoded the ordinary way around no nodes, then given them: every value is
        # made by its constructor, so a rule that joins fields still runs.
        return {**raw_root, "graph": {**graph, "nodes": []}}, nodes, kept

    def _remember(self, data: Any, frame: Frame) -> None:
        """After the ordinary path: forget what the frame says is gone, remember what it has."""
        if isinstance(frame, RemovedFrame):
            self._roots.pop(frame.root_run_id, None)
        elif isinstance(frame, SnapshotFrame):
            self._roots = {}
            for raw, root in zip(data.get("roots") or (), frame.roots or (), strict=True):
                if root.graph is not None:
                    raw_nodes = raw["graph"]["nodes"]
                    self._roots[root.root_run_id] = _remembered(raw_nodes, root.graph.nodes)
        elif frame.root.graph is None:
            self._roots.pop(frame.root.root_run_id, None)
        else:
            raw_nodes = data["root"]["graph"]["nodes"]
            self._roots[frame.root.root_run_id] = _remembered(raw_nodes, frame.root.graph.nodes)


def _evolve(value: _V, **changes: Any) -> _V:
    """``attrs.evolve``: the value made again by its constructor, with ``changes``."""
    return cast(_V, attrs.evolve(cast(Any, value), **changes))


def _given(root: RootActivity, nodes: list[GraphNode]) -> RootActivity:
    """``root`` (decoded with no nodes) with its graph's nodes."""
    assert root.graph is not None  # decoded from a root whose graph was an object
    return _evolve(root, graph=_evolve(root.graph, nodes=nodes))


def _remembered(raw_nodes: list[dict[str, Any]], nodes: tuple[GraphNode, ...]) -> _Nodes:
    return {node.id: (raw, _numbers(raw), node) for raw, node in zip(raw_nodes, nodes, strict=True)}
