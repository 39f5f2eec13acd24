"""A restarted bridge's own last state, read back from the Redis fleet it mirrors into.

``workflow-hub celery --redis`` mirrors its hub as a fleet source (docs/fleet.md). When it starts
again under the same source, what that source last showed as ``ready`` is the canvas membership
the workers' inspection cannot give (its replies carry no ``root_id``): each task's root, name
and parent, and the stages that had ended. The redis package's followers start from the source's
checkpoint, which after a clean stop is the final ``unavailable`` snapshot, so this reads the
frames stream itself, newest first (its layout is docs/fleet.md's, for readers in any
language): every changed frame holds its whole root (P4), so the newest frame of each root back
to the last ready snapshot is the last ready state. Roots that changed only before entries the
stream trimmed (``MAXLEN``, 10 000 by default) and are in no retained ready snapshot are not
found.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from .._contract import (
    Availability,
    ChangedFrame,
    ContractError,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    loads,
)

if TYPE_CHECKING:
    import coredis

__all__ = ["RESTORE_TIMEOUT", "fold_newest_first", "read_last_state", "restore_from"]

logger = logging.getLogger("workflow_hub.celery")

RESTORE_TIMEOUT = 10.0
"""Seconds a starting bridge spends at most reading its source's last state from Redis."""
_PAGE = 500
_FRAME = SnapshotFrame | ChangedFrame | RemovedFrame


def fold_newest_first(
    frames: Iterable[SnapshotFrame | ChangedFrame | RemovedFrame],
    roots: dict[str, RootActivity | None],
) -> bool:
    """Fold frames met newest first into ``roots`` (each root id met, its newest version; None:
    removed). True when the walk is done: a ready snapshot filled in the rest, or a non-ready
    one came before changes (nothing is published while not ready: nothing older counts)."""
    for frame in frames:
        if isinstance(frame, SnapshotFrame):
            if frame.availability != Availability.READY:
                if roots:
                    return True
                continue  # the final ``unavailable`` of a clean stop, a ``recovering``
            for root in frame.roots or ():
                roots.setdefault(root.root_run_id, root)
            return True
        if isinstance(frame, ChangedFrame):
            roots.setdefault(frame.root.root_run_id, frame.root)
        else:
            roots.setdefault(frame.root_run_id, None)
    return False


async def read_last_state(
    redis: coredis.Redis[Any], *, source: str, prefix: str
) -> tuple[RootActivity, ...]:
    """The roots source ``source`` under ``prefix`` last showed as ready (oldest first), read
    from its frames stream newest first; ``()`` when it has none."""
    key = f"{prefix}:{source}:frames"
    found: dict[str, RootActivity | None] = {}
    end = "+"
    while True:
        entries = await redis.xrevrange(key, end=end, start="-", count=_PAGE)
        if not entries:
            break
        frames = (frame for entry in entries if (frame := _frame(entry.field_values)))
        if fold_newest_first(frames, found) or len(entries) < _PAGE:
            break
        end = f"({_text(entries[-1].identifier)}"  # exclusive: the page before this one
    return tuple(root for root in reversed(found.values()) if root is not None)


async def restore_from(url: str, *, source: str, prefix: str) -> tuple[RootActivity, ...]:
    """:func:`read_last_state` with a client of its own, bounded by :data:`RESTORE_TIMEOUT`:
    a Redis that cannot be read is logged once and the bridge starts without its last state."""
    import coredis

    try:
        with trio.fail_after(RESTORE_TIMEOUT):
            async with coredis.Redis.from_url(url) as redis:
                roots = await read_last_state(redis, source=source, prefix=prefix)
    except Exception as error:
        logger.warning(
            "could not read the last state of source %r from Redis (%s: %s); "
            "starting without it (docs/celery.md, 'Restarts')",
            source,
            type(error).__name__,
            error,
        )
        return ()
    if roots:
        logger.info("source %r: %d roots restored from its last mirrored state", source, len(roots))
    return roots


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _frame(fields: Mapping[Any, Any]) -> SnapshotFrame | ChangedFrame | RemovedFrame | None:
    """An entry's frame; None for an entry of another writer or one that does not decode."""
    try:
        named = {_text(name): value for name, value in fields.items()}
        frame: SnapshotFrame | ChangedFrame | RemovedFrame = loads(_FRAME, named["frame"])
    except (KeyError, UnicodeDecodeError, ValueError, ContractError):
        return None
    return frame
