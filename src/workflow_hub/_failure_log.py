"""One traceback per kind of failure, then counts: a consumer that fails on every frame must not
flood the log (a callback failing on 2 001 frames wrote 2 210 records, each with a traceback).

A :class:`FailureLog` belongs to one consumer (an observer's callback, a sink). The first
failure of each exception type is logged with its traceback; the repeats are counted, and a
line without a traceback says how many there were at the 1st, 10th, 100th … repeat and when the
consumer ends. Records stay logarithmic in the number of failures, and nothing is lost: the
count is exact.
"""

from __future__ import annotations

import logging
from typing import final

__all__ = ["FailureLog"]


@final
class FailureLog:
    """Log the first failure of each kind with its traceback; count the rest."""

    __slots__ = ("_logger", "_next_report", "_reported", "_seen", "_suppressed", "_what")

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._logger = logger
        self._what = what
        self._seen: set[type[BaseException]] = set()
        self._suppressed = 0
        self._reported = 0
        self._next_report = 1

    @property
    def suppressed(self) -> int:
        """Failures counted without a traceback of their own."""
        return self._suppressed

    def failed(self, error: BaseException) -> None:
        """Record one failure (call it from the ``except`` block that caught ``error``)."""
        kind = type(error)
        if kind not in self._seen:
            self._seen.add(kind)
            self._logger.warning("%s failed", self._what, exc_info=error)
            return
        self._suppressed += 1
        if self._suppressed == self._next_report:
            self._next_report *= 10
            self._report("keeps failing")

    def close(self) -> None:
        """Say how many failures went without a traceback since the last count logged."""
        if self._suppressed > self._reported:
            self._report("ended")

    def _report(self, how: str) -> None:
        self._reported = self._suppressed
        self._logger.warning(
            "%s %s: %d repeated failure%s logged without a traceback (the first of each kind "
            "has one)",
            self._what,
            how,
            self._suppressed,
            "" if self._suppressed == 1 else "s",
        )
