"""The frames a hub broadcast in its current epoch, kept so an observer can resume (SPEC R1, R2).

An observer that comes back with the cursor it last saw gets the frames it missed instead of a
full snapshot, the way a Kubernetes or etcd watch resumes from a resource version. The history
holds the very frame objects the observer queues hold (references, not copies), at most ``limit``
of them, and never anything older than the latest broadcast snapshot: a snapshot replaces
everything before it, so a resume from before it starts at it. Memory is therefore
O(roots + limit), never O(limit x roots), even for a source that publishes only snapshots.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import final

from .._contract import Frame, SnapshotFrame

__all__ = ["FrameHistory"]


@final
class FrameHistory:
    """A bounded, snapshot-truncated record of one epoch's broadcast frames.

    The deque holds at most ``limit + 1`` frames and evicts the oldest by itself, so recording a
    frame is one C-level append on the publish path. The newest ``limit`` frames are the history;
    once the deque is full, its oldest frame is no longer replayed and only marks the *floor*:
    every frame broadcast after its revision is still here. Until then the floor is 0, the start
    of the epoch or the latest snapshot (a snapshot replaces everything before it, so any earlier
    revision of the epoch resumes from it).
    """

    __slots__ = ("_frames", "_limit", "record_change")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        # History off keeps nothing at all: a deque of maxlen 0 drops every append.
        self._frames: deque[Frame] = deque(maxlen=limit + 1 if limit else 0)
        # The deque is never replaced (clear() empties it), so its bound append stays valid.
        self.record_change: Callable[[Frame], None] = self._frames.append
        """Record a broadcast changed or removed frame: :meth:`append` for a frame known not to
        be a snapshot, one C call on the publish path."""

    @property
    def limit(self) -> int:
        return self._limit

    def __len__(self) -> int:
        return min(len(self._frames), self._limit)

    @property
    def floor(self) -> int | None:
        """The oldest revision a resume can start from; None when history is off."""
        if not self._limit:
            return None
        frames = self._frames
        if len(frames) <= self._limit:
            return 0
        try:
            return frames[0].cursor.revision
        except IndexError:  # statistics() read from a metrics thread while a snapshot cleared it
            return 0

    def clear(self) -> None:
        """Forget everything: a new epoch starts an empty history (R1)."""
        self._frames.clear()

    def append(self, frame: Frame) -> None:
        """Record a broadcast frame (never a per-observer overflow snapshot)."""
        if type(frame) is SnapshotFrame:
            # A snapshot replaces all prior knowledge: nothing before it is ever replayed again.
            self._frames.clear()
        self._frames.append(frame)

    def replay(self, since: int, current: int) -> list[Frame] | None:
        """The frames broadcast after revision ``since``, oldest first; None when some are gone.

        None also for history off and for a revision in the future: the caller resnapshots.
        Costs O(frames returned): the walk starts at the newest frame.
        """
        floor = self.floor
        if floor is None or since > current or since < floor:
            return None
        missed: list[Frame] = []
        # The floor frame itself (if any) has revision <= since, so the walk stops there.
        for frame in reversed(self._frames):
            if frame.cursor.revision <= since:
                break
            missed.append(frame)
        missed.reverse()
        return missed
