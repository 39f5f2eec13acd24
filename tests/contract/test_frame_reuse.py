"""A stream's frame decoder makes exactly what ``loads`` makes, and reuses what it can (C1, C2;
issue 38).

``FrameDecoder`` (what ``RemoteStream`` and so ``workflow-hub watch`` decode with) gives a graph
node the value it decoded before when the node's JSON object is the same. These properties hold
it to ``wire.loads`` on every frame sequence the public strategies draw, and on sequences whose
later frames change a node's JSON in the ways Python's equality hides (``1``, ``1.0``, ``true``)
or break it outright: the same value, or the same error with the same path.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from workflow_hub import (
    ChangedFrame,
    ContractError,
    Cursor,
    Frame,
    RemovedFrame,
    RootActivity,
    RootGraph,
    StageNode,
)
from workflow_hub._contract import FrameDecoder
from workflow_hub.testing import strategies as ws
from workflow_hub.wire import dumps, loads

# Roots that share ids, so that later frames replace earlier ones' roots.
_ROOTS = ws.root_activities(root_run_ids=st.sampled_from(["a", "b"]))
_FRAMES = st.one_of(
    ws.snapshot_frames(roots=_ROOTS),
    ws.changed_frames(roots=_ROOTS),
    ws.removed_frames(root_run_ids=st.sampled_from(["a", "b"])),
)
# JSON values that Python's == confuses with each other, and some that no field takes.
_LEAVES = st.one_of(
    st.sampled_from([0, 1, 0.0, 1.0, True, False]),
    st.sampled_from([None, "", "1", "completed", [], {}, [1], {"a": 1}]),
)


def outcome(decode: Any, text: str) -> object:
    """The frame decoded, or the error's path and problem."""
    try:
        return decode(text)
    except ContractError as error:
        return ("error", error.path, error.problem)


@given(frames=st.lists(_FRAMES, max_size=8))
def test_a_stream_of_drawn_frames_decodes_as_loads_decodes_it(frames: list[Frame]) -> None:
    """C2: every frame of a drawn sequence, decoded in order, is the frame encoded."""
    decoder = FrameDecoder()
    for frame in frames:
        assert decoder.loads(dumps(frame)) == frame


def _mutate(document: dict[str, Any], node: int, key: str | None, leaf: object) -> dict[str, Any]:
    """The changed frame's JSON with one node's ``key`` set to ``leaf`` (deleted for None key)."""
    copy = json.loads(json.dumps(document))
    nodes = copy["root"]["graph"]["nodes"]
    target = nodes[node % len(nodes)]
    if key is None:
        target.popitem()
    else:
        target[key] = leaf
    return copy


@given(
    root=ws.root_activities(root_run_ids=st.just("r"), graphs=ws.root_graphs(max_nodes=4)),
    changes=st.lists(
        st.tuples(
            st.integers(0, 1),
            st.sampled_from([None, "depth", "executionOrder", "status", "parentIds"]),
            _LEAVES,
        ),
        max_size=8,
    ),
)
def test_changed_nodes_decode_as_loads_decodes_them(
    root: RootActivity, changes: list[tuple[int, str | None, object]]
) -> None:
    """C1: after a root was decoded, a frame whose node's JSON differs only in a way Python's
    ``==`` does not see (``1`` for ``1.0`` or ``true``), or is wrong, is what ``loads`` makes of
    it: the value, or the error with its wire path."""
    first = ChangedFrame(cursor=Cursor(epoch="e", revision=1), root=root)
    document = json.loads(dumps(first))
    decoder = FrameDecoder()
    assert decoder.loads(dumps(first)) == first
    for node, key, leaf in changes:
        if not document["root"]["graph"]["nodes"]:
            break
        # Cumulative: a valid ``1`` may be followed by ``true`` in the same place.
        document = _mutate(document, node, key, leaf)
        text = json.dumps(document)
        assert outcome(decoder.loads, text) == outcome(lambda t: loads(Frame, t), text)
        # The same root in a snapshot (an overflow's resnapshot reuses nodes too).
        snapshot = {**document, "kind": "snapshot", "availability": "ready"}
        snapshot["roots"] = [snapshot.pop("root")]
        text = json.dumps(snapshot)
        assert outcome(decoder.loads, text) == outcome(lambda t: loads(Frame, t), text)
    # The valid original again, after whatever came before.
    assert decoder.loads(dumps(first)) == first


def _stage(index: int, status: str) -> StageNode:
    return StageNode(
        id=f"n{index}",
        run_id="r",
        node_id=f"n{index}",
        name="step",
        parent_ids=(),
        depth=0,
        status=status,
    )


def _changed(revision: int, nodes: list[StageNode]) -> ChangedFrame:
    root = RootActivity(
        root_run_id="r",
        owner_session_id="o",
        state="working",
        reason="automatic_continuation",
        active_execution_count=1,
        actionable_block_count=0,
        needs_attention=False,
        graph=RootGraph(nodes=nodes),
    )
    return ChangedFrame(cursor=Cursor(epoch="e", revision=revision), root=root)


def test_an_unchanged_node_is_the_value_decoded_before() -> None:
    """The point of it: a node whose JSON is the same is not decoded again."""
    decoder = FrameDecoder()
    before = decoder.loads(dumps(_changed(1, [_stage(0, "completed"), _stage(1, "running")])))
    changed = _changed(2, [_stage(0, "completed"), _stage(1, "completed"), _stage(2, "running")])
    after = decoder.loads(dumps(changed))
    assert after == changed
    assert before.root.graph is not None
    assert after.root.graph is not None
    assert after.root.graph.nodes[0] is before.root.graph.nodes[0]
    assert after.root.graph.nodes[1] is not before.root.graph.nodes[1]
    # A removed root is forgotten: its nodes are decoded again when it comes back.
    decoder.loads(dumps(RemovedFrame(cursor=Cursor(epoch="e", revision=3), root_run_id="r")))
    again = decoder.loads(dumps(changed))
    assert again.root.graph is not None
    assert again.root.graph.nodes[0] is not after.root.graph.nodes[0]


def test_a_node_equal_in_python_but_not_in_json_is_decoded_again() -> None:
    """C1: ``1`` then ``true`` (or ``1.0``) for a count: equal in Python, and the second is an
    error, as ``loads`` says."""
    document = json.loads(dumps(_changed(1, [_stage(0, "completed")])))
    decoder = FrameDecoder()
    for depth in (1, True, 1, 1.0):
        document["root"]["graph"]["nodes"][0]["depth"] = depth
        text = json.dumps(document)
        assert outcome(decoder.loads, text) == outcome(lambda t: loads(Frame, t), text)
