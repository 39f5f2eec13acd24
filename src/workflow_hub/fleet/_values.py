"""What every fleet engine reports, whatever it stores frames in: liveness and hook events."""

from __future__ import annotations

from typing import Literal, TypeAlias, final

import attrs

from .._contract import WorkflowEvent

__all__ = ["ContinuityLost", "EventItem", "GapReason", "SourceEvent", "SourceLiveness"]


@final
@attrs.frozen(kw_only=True)
class SourceLiveness:
    """What the fleet's engine says about one source: is its mirror alive, did it say goodbye.

    Two facts, and the one verdict a reader shows (SPEC N5: a crashed source and one that
    declared itself unavailable are told apart, whatever happens later):

    =========  ============  ===============================================================
    ``stale``  ``declared``  the source
    =========  ============  ===============================================================
    false      false         is live (its own frames say how it is doing)
    false      true          declared itself unavailable; its mirror still refreshes
    true       true          declared itself unavailable, then stopped (a clean shutdown):
                             ``last_seen`` is when it stopped
    true       false         stopped without a word: :attr:`crashed` (or partitioned away)
    =========  ============  ===============================================================
    """

    source: str
    last_seen: float | None
    """When its mirror last refreshed it: the store's clock, seconds since the epoch
    (``None`` when the registry lost it, e.g. after a Redis restart)."""
    stale: bool
    """True when its mirror stopped refreshing for ``stale_after``: it crashed, was partitioned
    away, or shut down (see :attr:`declared`)."""
    declared: bool = False
    """True when the source's own last frame says it is unavailable: its scheduler declared it
    (it shut down cleanly, as ``serve --redis`` does on Ctrl-C, SIGTERM or at the end of its
    ``--duration``, or its publisher was disposed)."""

    @property
    def crashed(self) -> bool:
        """Stopped refreshing without having declared itself unavailable: crashed, killed or
        partitioned away (never said of a source that shut down cleanly)."""
        return self.stale and not self.declared


GapReason: TypeAlias = Literal[
    "trimmed", "dropped", "new_instance", "unreachable", "unreadable", "retired"
]
"""Why continuity was lost; see :class:`ContinuityLost`."""


@final
@attrs.frozen(kw_only=True)
class SourceEvent:
    """One hook event of one source, as its mirror appended it."""

    source: str
    """The source (scheduler) whose hub dispatched the event."""
    id: str
    """The event's position in its source's log: the position to resume after (``since``)."""
    epoch: str
    """The fencing token of the mirror that appended it (a new one per instance)."""
    seq: int
    """Its number among that mirror's events, from 1."""
    event: WorkflowEvent
    """The hook event itself."""


@final
@attrs.frozen(kw_only=True)
class ContinuityLost:
    """Continuity of a source's events could not be guaranteed here: events may be missing.

    ``reason`` says why:

    - ``"trimmed"``: entries were gone before this follower read them (the stream's ``MAXLEN``
      trimmed them, the key was deleted or lost in a Redis restart, or the position resumed
      from is no longer in the stream);
    - ``"dropped"``: the mirror dropped events before they reached the store (its buffer was
      full: the store was slower than the scheduler, or unreachable);
    - ``"new_instance"``: the next event comes from another instance of the source (a restart
      or a failover); what the previous one had not appended yet is lost;
    - ``"unreachable"``: no read from the store completed within ``read_timeout``; when reading
      works again the follower goes on from where it was (and if entries were lost meanwhile,
      that is one more item);
    - ``"unreadable"``: the source's data cannot be read (a key of another type, an entry whose
      event does not decode);
    - ``"retired"``: the source stopped refreshing for the retirement time; nothing more comes.
    """

    source: str
    reason: GapReason
    after: str | None
    """The id of the last event of this source delivered before the gap (``None``: none)."""
    missed: int | None
    """How many events are missing, when the sequence numbers tell (``None``: unknown)."""
    detail: str
    """A sentence for a log line or a page."""


EventItem: TypeAlias = SourceEvent | ContinuityLost
"""What a fleet's event follower yields."""
