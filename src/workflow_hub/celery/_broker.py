"""Whether the Celery bridge can read its broker, and why not: said once per outage.

The receiver thread reports each failed connection attempt (kombu retries with a growing
interval, up to 30 s between attempts) and each connection it consumes from. The first failure
of an outage, at start-up as later, is one warning on ``workflow_hub.celery`` with the reason
(``broker unreachable: …``); the rest are counted; the first success after it says the broker is
back. docs/celery.md, "Start-up and a lost broker".
"""

from __future__ import annotations

import logging
import threading
from typing import final

__all__ = ["BrokerHealth"]

logger = logging.getLogger("workflow_hub.celery")


@final
class BrokerHealth:
    """The broker connection's state as the receiver thread sees it (read from any thread)."""

    __slots__ = ("_lock", "_reason", "failures")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self.failures = 0
        """Failed connection attempts and lost connections since the bridge started."""

    @property
    def unreachable(self) -> str | None:
        """``"broker unreachable: <reason>"`` during an outage, else None."""
        reason = self._reason
        return None if reason is None else f"broker unreachable: {reason}"

    def failed(self, error: BaseException) -> bool:
        """A connection attempt failed or a connection was lost: logged if it starts an outage
        (True then)."""
        with self._lock:
            self.failures += 1
            first = self._reason is None
            self._reason = _reason(error)
        if first:
            logger.warning(
                "%s; the source is recovering (unknown) until the broker is back",
                self.unreachable,
            )
        return first

    def consuming(self) -> None:
        """A connection is consumed from: the outage (if any) is over."""
        with self._lock:
            was, self._reason = self._reason, None
        if was is not None:
            logger.info("the broker is reachable again (it was unreachable: %s)", was)


def _reason(error: BaseException) -> str:
    text = str(error).strip().rstrip(".")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
