"""Conflation: a backlog of frames cut down to what a lagging consumer needs to catch up.

A consumer that asked for it (``hub.subscribe(conflate=True)``, a remote client's
``?conflate=1``) and falls behind receives, for each root, only the latest pending frame that
changed or removed it, instead of every intermediate state, and instead of an overflow snapshot
while the distinct roots pending fit its queue. Folding the conflated backlog gives the same roots
as folding the whole backlog, from any state (a property test holds it to that), and its last frame
is the backlog's last frame, so the consumer's cursor (to resume from) is the same too.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._contract import ChangedFrame, Frame, RemovedFrame, SnapshotFrame

__all__ = ["conflate"]


def conflate(frames: Sequence[Frame]) -> list[Frame]:
    """The frames of ``frames`` that a fold needs, in their order.

    A snapshot replaces everything before it, so nothing before the last one is kept. After it,
    a changed or removed frame is kept only if no later frame is about the same root. The last
    frame is always kept.
    """
    start = 0
    for index in range(len(frames) - 1, -1, -1):
        if type(frames[index]) is SnapshotFrame:
            start = index
            break
    seen: set[str] = set()
    kept: list[Frame] = []
    for index in range(len(frames) - 1, start - 1, -1):
        frame = frames[index]
        if isinstance(frame, ChangedFrame):
            root_run_id = frame.root.root_run_id
        elif isinstance(frame, RemovedFrame):
            root_run_id = frame.root_run_id
        else:  # the snapshot at ``start``
            kept.append(frame)
            continue
        if root_run_id not in seen:
            seen.add(root_run_id)
            kept.append(frame)
    kept.reverse()
    return kept
