"""What a mirror reports about itself: read by its users, its metrics and the tests.

Its own module so that the metrics (which read it) and the mirror (which fills it) do not import
each other.
"""

from __future__ import annotations

from typing import final

import attrs

__all__ = ["MirrorStatistics"]


@final
@attrs.frozen(kw_only=True)
class MirrorStatistics:
    """What a mirror has done so far, for dashboards, metrics and tests."""

    source: str
    """The source this mirror appends to."""
    epoch: str
    """This mirror's fencing token (a fresh random id per mirror)."""
    claimed: bool
    """True while this mirror owns the source."""
    fenced: bool
    """True once a newer instance claimed the source: the mirror has stopped for good."""
    frames: int
    """Frames appended to the stream."""
    batches: int
    """Append round trips that succeeded (refreshes included)."""
    checkpoints: int
    """Checkpoints written."""
    reclaims: int
    """Times the owner key was found lost (a Redis restart) and claimed again."""
    connection_errors: int
    """Round trips that failed on the connection and were retried."""
    server_errors: int
    """Round trips Redis refused (a key of the wrong type, out of memory ...), retried later."""
    last_seq: int
    """The sequence number of the last entry appended."""
    unexpected_errors: int = 0
    """Round trips that failed otherwise (an error of the client library, e.g. a client closed
    under the mirror, or a bug): logged once with a traceback and retried with a backoff."""
    events: int = 0
    """Hook events appended to the events stream (0 without a ``runner``)."""
    events_dropped: int = 0
    """Hook events dropped, oldest first, because the mirror's buffer was full (Redis slow or
    unreachable); followers see each such hole as a ``ContinuityLost`` with reason ``dropped``."""
