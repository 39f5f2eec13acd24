"""A follower's stale spell never hides a frame from its reader (SPEC N2, N4).

While a source is stale its new frames are folded into the follower's own view but not shown
(never its last state as current). When it refreshes again the reader must get that state: the
follower's ``unavailable`` snapshot, then a fresh one. If the source came back before the
reader was told ``unavailable``, the hidden frames used to be skipped silently: the next
change carried the newest cursor over a picture that lacked them (a fleet test saw a source at
the hub's cursor with four roots missing, on a loaded machine).
"""

from __future__ import annotations

from typing import Any, cast

from tests.support.builders import root
from workflow_hub import Availability, ChangedFrame, Cursor, SnapshotFrame
from workflow_hub.redis._follow import FollowState
from workflow_hub.reporting import ActivityView


def state() -> FollowState:
    # No Redis call is made by what this test drives: delivering and the stale marks.
    return FollowState(cast(Any, None), "p", "s", block=0.05, count=10, read_timeout=1.0)


def shown_ready() -> FollowState:
    """A follower whose reader was shown a ready source with no root, at revision 1."""
    follower = state()
    follower.last_id = "1-0"
    follower.deliver(
        SnapshotFrame(
            cursor=Cursor(epoch="e", revision=1), availability=Availability.READY, roots=()
        )
    )
    return follower


def shown(follower: FollowState) -> ActivityView:
    view = ActivityView()
    for frame in follower.ready:
        view.apply(frame)
    return view


async def test_frames_hidden_while_stale_reach_the_reader_when_the_source_is_fresh_again() -> None:
    """N2: what a stale spell hid comes back as a snapshot, whatever the order of the marks."""
    follower = shown_ready()
    follower.mark_stale()
    follower.deliver(ChangedFrame(cursor=Cursor(epoch="e", revision=2), root=root("r1")))
    follower.mark_fresh()
    follower.deliver(ChangedFrame(cursor=Cursor(epoch="e", revision=3), root=root("r2")))
    view = shown(follower)
    assert view.known
    assert [activity.root_run_id for activity in view.roots] == ["r1", "r2"]
    assert view.cursor == Cursor(epoch="e", revision=3)


async def test_a_stale_source_is_said_unavailable_before_anything_is_hidden() -> None:
    """N4: the reader learns the source is unavailable no later than its first hidden frame."""
    follower = shown_ready()
    follower.mark_stale()
    follower.deliver(ChangedFrame(cursor=Cursor(epoch="e", revision=2), root=root("r1")))
    last = follower.ready[-1]
    assert isinstance(last, SnapshotFrame)
    assert last.availability is Availability.UNAVAILABLE
    assert last.detail == "the source stopped refreshing"  # why (C3)


async def test_a_source_stale_from_its_first_frame_starts_its_reader_off_when_fresh() -> None:
    """N2, N4: a source stale from its first frame is unknown to its reader, and nothing hidden
    is lost: coming back starts the reader off with the whole state."""
    follower = state()
    follower.last_id = "1-0"
    follower.mark_stale()
    follower.deliver(
        SnapshotFrame(
            cursor=Cursor(epoch="e", revision=1), availability=Availability.READY, roots=()
        )
    )
    follower.deliver(ChangedFrame(cursor=Cursor(epoch="e", revision=2), root=root("r1")))
    first = follower.ready[0]
    assert isinstance(first, SnapshotFrame)
    assert first.availability is Availability.UNAVAILABLE  # unknown from the first frame (N4)
    assert len(follower.ready) == 1
    follower.mark_fresh()
    view = shown(follower)
    assert [activity.root_run_id for activity in view.roots] == ["r1"]
