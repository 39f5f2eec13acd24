"""A reporter's picture of all roots, folded from the frames of one observer.

:class:`ActivityView` applies frames in delivery order and checks their continuity, so that a
reporter never shows a picture built from a stale frame or from two sources mixed together. The
rules (see ``docs/reporters.md``):

- A snapshot replaces everything: availability, cursor and the roots in their order. It is refused
  only when it is *older* than the view (same epoch, lower revision).
- A changed or removed frame must follow the view's cursor: same epoch, strictly higher revision
  (gaps are normal: lifecycle events advance the revision without a frame). Anything else, and any
  such frame before the first snapshot, is refused: the view is then *out of sync* until the next
  snapshot, and counts the refusal.
- While the source is not ready, changed and removed frames only advance the cursor: a change never
  makes an unknown source known (SPEC P4), and the next ready snapshot replaces everything anyway.
"""

from __future__ import annotations

from enum import StrEnum
from typing import final

import attrs

from .._contract import (
    Availability,
    ChangedFrame,
    ContractError,
    Cursor,
    Frame,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
)

__all__ = ["ActivityView", "ChangeKind", "Rejection", "ViewChange"]


class ChangeKind(StrEnum):
    """What applying one frame did to an :class:`ActivityView`."""

    RESET = "reset"
    """A snapshot replaced everything: redraw the whole picture."""
    ADDED = "added"
    """A new root was appended at the end."""
    REPLACED = "replaced"
    """A known root was replaced whole, keeping its position."""
    REMOVED = "removed"
    """A known root was deleted."""
    ADVANCED = "advanced"
    """The frame was in sequence but changed no root (a change or removal while the source is not
    ready, or the removal of a root the view does not hold): only the cursor moved."""
    REJECTED = "rejected"
    """The frame broke continuity and was not applied; the view is out of sync."""


class Rejection(StrEnum):
    """Why a frame was not applied."""

    NO_SNAPSHOT = "no_snapshot"
    """A changed or removed frame arrived before any snapshot."""
    FOREIGN_EPOCH = "foreign_epoch"
    """A changed or removed frame belongs to another epoch (its source's snapshot was missed)."""
    STALE_REVISION = "stale_revision"
    """The frame's revision is not newer than the view's (a duplicate or a reordered frame)."""


@final
@attrs.frozen(kw_only=True)
class ViewChange:
    """What :meth:`ActivityView.apply` did with one frame, for renderers that redraw incrementally."""

    kind: ChangeKind
    """What happened to the picture."""
    frame: Frame
    """The frame that was applied (or rejected)."""
    root_ids: tuple[str, ...] = ()
    """The roots to redraw: the one added, replaced or removed; for a reset, every root the view
    now holds, in order; empty for ``advanced`` and ``rejected``."""
    rejection: Rejection | None = None
    """Why the frame was rejected; ``None`` when it was applied."""

    @property
    def applied(self) -> bool:
        """True unless the frame was rejected."""
        return self.kind is not ChangeKind.REJECTED


@final
class ActivityView:
    """The current activity of every root, as one observer's frames tell it.

    Feed it every frame an observer receives, in delivery order::

        view = ActivityView()
        lease = hub.observe(view.apply)

    ``availability`` and ``cursor`` are ``None`` until the first snapshot. ``roots`` is a tuple in
    the source's order; it is empty whenever the source is not ready, so check :attr:`known` before
    reading an empty tuple as "nothing running". A view never raises on a bad sequence: it refuses
    the frame, counts it in :attr:`rejected` and reports :attr:`in_sync` false until a snapshot
    restores it.
    """

    __slots__ = (
        "_availability",
        "_cursor",
        "_detail",
        "_in_sync",
        "_ordered",
        "_rejected",
        "_roots",
        "_superseded",
    )

    def __init__(self) -> None:
        self._availability: Availability | None = None
        self._detail: str | None = None
        self._cursor: Cursor | None = None
        self._roots: dict[str, RootActivity] = {}
        # The roots as a tuple, built on demand and shared until the next change.
        self._ordered: tuple[RootActivity, ...] | None = ()
        self._in_sync = False
        self._rejected = 0
        # A frame of another epoch arrived without its snapshot: the source was replaced (SPEC
        # P1), so what the view holds describes a source that no longer exists.
        self._superseded = False

    # --- reading ---------------------------------------------------------------------------

    @property
    def availability(self) -> Availability | None:
        """The source's availability from the last snapshot; ``None`` before the first one."""
        return self._availability

    @property
    def cursor(self) -> Cursor | None:
        """The cursor of the last frame applied; ``None`` before the first snapshot."""
        return self._cursor

    @property
    def roots(self) -> tuple[RootActivity, ...]:
        """Every root, in the source's order (a new root goes at the end). Empty while not
        :attr:`known`.

        The tuple is a snapshot: it does not change when later frames are applied.
        """
        if self._superseded:
            return ()
        ordered = self._ordered
        if ordered is None:
            ordered = self._ordered = tuple(self._roots.values())
        return ordered

    def get(self, root_run_id: str) -> RootActivity | None:
        """The root with this id, or ``None`` (always ``None`` while superseded)."""
        return None if self._superseded else self._roots.get(root_run_id)

    @property
    def known(self) -> bool:
        """True when the view holds a ready source's roots.

        False before the first snapshot, whenever the source is recovering or unavailable, and
        while :attr:`superseded`: an empty ``roots`` then means "unknown", never "idle".
        """
        return self._availability is Availability.READY and not self._superseded

    @property
    def detail(self) -> str | None:
        """Why the source is unknown, when its last snapshot said (C3: ``"broker unreachable:
        …"``); None while it is ready, or when it did not say."""
        return self._detail

    @property
    def superseded(self) -> bool:
        """True after a frame of a new epoch arrived without its snapshot, until a snapshot.

        A new epoch means a new publisher replaced the one the view describes (SPEC P1), so the
        roots it held are no longer anyone's: the view reports nothing until it is resynced.
        """
        return self._superseded

    @property
    def in_sync(self) -> bool:
        """True once a snapshot was applied and no frame has been rejected since."""
        return self._in_sync

    @property
    def rejected(self) -> int:
        """How many frames this view has refused, in total."""
        return self._rejected

    def snapshot_frame(self) -> SnapshotFrame | None:
        """What the view holds, as one snapshot frame; ``None`` before the first snapshot.

        For a view that followed a hub's observer without a rejection, at quiescence this equals
        ``hub.snapshot_frame()``.
        """
        if self._cursor is None or self._availability is None:
            return None
        ready = self._availability is Availability.READY  # superseded: roots are () below
        return SnapshotFrame(
            cursor=self._cursor,
            availability=self._availability,
            roots=self.roots if ready else None,
            detail=self._detail,
        )

    def __repr__(self) -> str:
        if self._cursor is None:
            return "<ActivityView: no snapshot yet>"
        sync = "in sync" if self._in_sync else "out of sync"
        return (
            f"<ActivityView {self._availability} epoch={self._cursor.epoch!r} "
            f"revision={self._cursor.revision} roots={len(self._roots)} {sync}>"
        )

    # --- folding ---------------------------------------------------------------------------

    def apply(self, frame: Frame) -> ViewChange:
        """Fold one frame into the view and say what changed.

        Frames must be applied in the order one observer received them. A frame that breaks
        continuity is not applied (see the module rules); the result then has kind ``rejected``.
        """
        if isinstance(frame, SnapshotFrame):
            return self._apply_snapshot(frame)
        if isinstance(frame, ChangedFrame | RemovedFrame):
            rejection = self._check_sequence(frame.cursor)
            if rejection is not None:
                if rejection is Rejection.FOREIGN_EPOCH:
                    self._superseded = True
                return self._reject(frame, rejection)
            self._cursor = frame.cursor
            if self._availability is not Availability.READY:
                # SPEC P4: a change never makes a non-ready source ready, and the next ready
                # snapshot replaces everything, so there is nothing to keep.
                return ViewChange(kind=ChangeKind.ADVANCED, frame=frame)
            if isinstance(frame, ChangedFrame):
                return self._upsert(frame)
            return self._remove(frame)
        raise ContractError("frame", f"expected a frame, got {type(frame).__name__}")

    def _check_sequence(self, cursor: Cursor) -> Rejection | None:
        current = self._cursor
        if current is None:
            return Rejection.NO_SNAPSHOT
        if cursor.epoch != current.epoch:
            return Rejection.FOREIGN_EPOCH
        if cursor.revision <= current.revision:
            return Rejection.STALE_REVISION
        return None

    def _reject(self, frame: Frame, rejection: Rejection) -> ViewChange:
        self._rejected += 1
        self._in_sync = False
        return ViewChange(kind=ChangeKind.REJECTED, frame=frame, rejection=rejection)

    def _apply_snapshot(self, frame: SnapshotFrame) -> ViewChange:
        current = self._cursor
        cursor = frame.cursor
        # Only an older snapshot of the same epoch is refused. A snapshot at the view's own cursor
        # is the same state (or the authoritative one), so a view seeded from hub.snapshot_frame()
        # may then observe without a false alarm. Epochs never compare: a new one always wins.
        if (
            current is not None
            and cursor.epoch == current.epoch
            and cursor.revision < current.revision
        ):
            return self._reject(frame, Rejection.STALE_REVISION)
        roots = frame.roots or ()
        # Keyed like the hub (SPEC P3): a duplicate id keeps the last value at the first position.
        keyed = {root.root_run_id: root for root in roots}
        self._cursor = cursor
        self._availability = frame.availability
        self._detail = frame.detail
        self._roots = keyed
        self._ordered = roots if len(keyed) == len(roots) else None
        self._in_sync = True
        self._superseded = False
        return ViewChange(kind=ChangeKind.RESET, frame=frame, root_ids=tuple(keyed))

    def _upsert(self, frame: ChangedFrame) -> ViewChange:
        root = frame.root
        root_id = root.root_run_id
        kind = ChangeKind.REPLACED if root_id in self._roots else ChangeKind.ADDED
        self._roots[root_id] = root
        self._ordered = None
        return ViewChange(kind=kind, frame=frame, root_ids=(root_id,))

    def _remove(self, frame: RemovedFrame) -> ViewChange:
        root_id = frame.root_run_id
        if self._roots.pop(root_id, None) is None:
            return ViewChange(kind=ChangeKind.ADVANCED, frame=frame)
        self._ordered = None
        return ViewChange(kind=ChangeKind.REMOVED, frame=frame, root_ids=(root_id,))
