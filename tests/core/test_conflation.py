"""Opt-in conflation (issue 29): a lagging consumer gets each root's latest frame, same state.

``hub.subscribe(conflate=True)``: ``receive_all()`` returns, of a backlog, only the latest
changed or removed frame of each root after the latest snapshot in it, and a full queue conflates
instead of overflowing while that frees half of it. The guarantees of O1-O4 and O9 are what a
conflating consumer's fold must still see: at every point it sees (after every batch), the roots
it folded are the hub's, at the same cursor as the unconflated stream's last frame.
"""

from __future__ import annotations

from typing import Literal

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.builders import fold, root
from workflow_hub import (
    ChangedFrame,
    ContractError,
    Cursor,
    DiagnosticKind,
    Frame,
    RemovedFrame,
    SnapshotFrame,
    WorkflowActivityHub,
)
from workflow_hub._core._conflate import conflate

ROOT_IDS = ("a", "b", "c", "d")
ACTIVE = st.integers(min_value=0, max_value=3)


def _frames() -> st.SearchStrategy[list[Frame]]:
    """Frames of one epoch, revisions increasing, about a few roots, snapshots among them."""

    def build(kinds: list[tuple[str, str, int]]) -> list[Frame]:
        frames: list[Frame] = []
        for revision, (kind, root_id, active) in enumerate(kinds, start=1):
            cursor = Cursor(epoch="e", revision=revision)
            if kind == "changed":
                frames.append(ChangedFrame(cursor=cursor, root=root(root_id, active=active)))
            elif kind == "removed":
                frames.append(RemovedFrame(cursor=cursor, root_run_id=root_id))
            else:
                roots = tuple(root(i, active=active) for i in ROOT_IDS[:active])
                frames.append(SnapshotFrame(cursor=cursor, availability="ready", roots=roots))
        return frames

    kind = st.sampled_from(["changed", "changed", "changed", "removed", "snapshot"])
    step = st.tuples(kind, st.sampled_from(ROOT_IDS), ACTIVE)
    return st.lists(step, min_size=1, max_size=30).map(build)


@given(held=st.dictionaries(st.sampled_from(ROOT_IDS), ACTIVE), frames=_frames())
def test_a_conflated_backlog_folds_to_the_same_roots_from_any_state(
    held: dict[str, int], frames: list[Frame]
) -> None:
    """O1/O9 under conflation: same fold from any prior state, same last frame (its cursor)."""
    start: list[Frame] = [
        SnapshotFrame(
            cursor=Cursor(epoch="e", revision=0),
            availability="ready",
            roots=tuple(root(i, active=a) for i, a in held.items()),
        )
    ]
    kept = conflate(frames)
    assert fold(start + kept) == fold(start + frames)
    assert kept[-1] is frames[-1]
    # A subsequence, in order, and never more than one frame per root after its snapshot.
    positions = [next(i for i, f in enumerate(frames) if f is k) for k in kept]
    assert positions == sorted(set(positions))
    after = [f for f in kept if not isinstance(f, SnapshotFrame)]
    ids = [f.root.root_run_id if isinstance(f, ChangedFrame) else f.root_run_id for f in after]
    assert len(ids) == len(set(ids))


Op = tuple[Literal["changed", "removed", "snapshot", "drain"], str, int]
OPS = st.lists(
    st.tuples(
        st.sampled_from(["changed", "changed", "changed", "removed", "snapshot", "drain"]),
        st.sampled_from(ROOT_IDS),
        ACTIVE,
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS, limit=st.sampled_from([2, 4, 8, 256]))
def test_a_conflating_stream_folds_to_the_hub_state_at_every_batch(
    ops: list[Op], limit: int
) -> None:
    """O1-O4, O9 with ``conflate=True``: after every ``receive_all()``, folding everything the
    stream gave equals the hub's state, and the stream's cursor is the unconflated stream's (the
    hub's last broadcast frame). Small limits make the queue conflate when full, or overflow into
    a snapshot as usual when conflating would not free half of it; the fold holds either way. An
    unconflated subscriber that never reads shares the hub, overflowing meanwhile."""

    async def main() -> None:
        async with WorkflowActivityHub(queue_limit=limit) as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            seen: list[Frame] = []
            last_broadcast: list[Cursor] = [hub.cursor]
            async with hub.subscribe(conflate=True) as stream, hub.subscribe() as plain:

                async def drain() -> None:
                    if not stream.lease.pending:
                        return  # nothing new: receive_all would wait
                    batch = await stream.receive_all()
                    seen.extend(batch)
                    snapshot = hub.snapshot_frame()
                    assert snapshot.roots is not None
                    assert fold(seen) == {r.root_run_id: r for r in snapshot.roots}
                    assert seen[-1].cursor == last_broadcast[-1]
                    revisions = [f.cursor.revision for f in batch]
                    assert revisions == sorted(set(revisions))

                for kind, root_id, active in ops:
                    if kind == "drain":
                        await drain()
                        continue
                    if kind == "changed":
                        cursor = publisher.publish_changed(root(root_id, active=active))
                    elif kind == "removed":
                        cursor = publisher.publish_removed(root_id)
                    else:
                        roots = [root(i, active=active) for i in ROOT_IDS[:active]]
                        cursor = publisher.publish_snapshot("ready", roots)
                    assert cursor is not None
                    last_broadcast.append(cursor)
                    assert stream.lease.pending <= limit
                await drain()
                assert plain.lease.pending <= limit

    trio.run(main)


async def test_a_lagging_conflating_stream_skips_intermediate_states() -> None:
    """The point of it: 100 changes of one root while the consumer lags reach it as one frame."""
    async with WorkflowActivityHub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        async with hub.subscribe(conflate=True) as stream:
            assert [f.kind for f in await stream.receive_all()] == ["snapshot"]
            for active in range(300):  # more than the queue limit (256): no overflow
                publisher.publish_changed(root("a", active=active))
            batch = await stream.receive_all()
        assert [(f.kind, f.cursor) for f in batch] == [("changed", hub.cursor)]
        assert isinstance(batch[0], ChangedFrame)
        assert batch[0].root.active_execution_count == 299
        assert not [d for d in hub.diagnostics() if d.kind is DiagnosticKind.OBSERVER_OVERFLOW]


async def test_conflate_must_be_a_bool() -> None:
    """C1: a bad argument raises ContractError naming it."""
    async with WorkflowActivityHub() as hub:
        with pytest.raises(ContractError, match="conflate"):
            async with hub.subscribe(conflate=1):  # type: ignore[arg-type]
                pass
