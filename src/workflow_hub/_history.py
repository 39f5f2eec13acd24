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
from typing import final

from ._contract import Frame, SnapshotFrame

__all__ = ["FrameHistory"]


@final
class FrameHistory:
    """A bounded, snapshot-truncated record of one epoch's broadcast frames.

    ``floor`` is the oldest revision a resume can start from: every frame broadcast after it is
    still here. While the oldest frame held is a snapshot, any revision of the epoch can resume
    (the replay starts at that snapshot), so the floor is 0.
    """

    __slots__ = ("_floor", "_frames", "_limit")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._frames: deque[Frame] = deque()
        self._floor = 0

    @property
    def limit(self) -> int:
        return self._limit

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def floor(self) -> int | None:
        """The oldest revision a resume can start from; None when history is off."""
        return self._floor if self._limit else None

    def clear(self) -> None:
        """Forget everything: a new epoch starts an empty history (R1)."""
        self._frames.clear()
        self._floor = 0

    def append(self, frame: Frame) -> None:
        """Record a broadcast frame (never a per-observer overflow snapshot)."""
        if not self._limit:
            return
        frames = self._frames
        if type(frame) is SnapshotFrame:
            # A snapshot replaces all prior knowledge: nothing before it is ever replayed again.
            frames.clear()
            self._floor = 0
        elif len(frames) >= self._limit:
            self._floor = frames.popleft().cursor.revision
        frames.append(frame)

    def replay(self, since: int, current: int) -> list[Frame] | None:
        """The frames broadcast after revision ``since``, oldest first; None when some are gone.

        None also for history off and for a revision in the future: the caller resnapshots.
        Costs O(frames returned): the walk starts at the newest frame.
        """
        if not self._limit or since > current or since < self._floor:
            return None
        missed: list[Frame] = []
        for frame in reversed(self._frames):
            if frame.cursor.revision <= since:
                break
            missed.append(frame)
        missed.reverse()
        return missed
