"""The workers the Celery bridge has heard from: alive, silent, lost, back.

:class:`Roster` keeps one record per worker hostname from its events (and from the workers'
inspection replies) and applies Celery's own liveness rule; the bridge decides what becomes of
the tasks of a worker that went away (docs/celery.md, "Workers").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, final

import attrs

from ._events import check_text

__all__ = ["DEFAULT_FREQ", "HEARTBEAT_WINDOW", "Roster", "Worker", "WorkerStatus"]

# Celery's own rule (celery.events.state): a worker is offline once twice its heartbeat interval
# has passed without a heartbeat.
HEARTBEAT_WINDOW: Final = 2.0
DEFAULT_FREQ: Final = 2.0


@final
@attrs.frozen
class WorkerStatus:
    """What the bridge knows of one worker (as Flower's worker list shows it)."""

    hostname: str
    online: bool
    """Heard from within twice its heartbeat interval (and no ``worker-offline`` since)."""
    lost: bool
    """Went away with tasks in flight (they need attention) and has not come back."""
    heartbeat_interval: float
    """Seconds between its heartbeats: the smallest ``freq`` it announced since it came online
    (a heartbeat answering a wake-up call says 5), Celery's default 2 until it announced one."""
    last_seen: float
    """When its last event was applied (the bridge's clock)."""


@attrs.define(slots=True, eq=False)
class Worker:
    hostname: str
    last_seen: float
    freq: float | None = None  # the smallest heartbeat interval announced since it came online
    online: bool = True
    lost: bool = False  # went away with tasks in flight; resync when it returns


@final
class Roster:
    """Every worker heard from, in the order first heard."""

    __slots__ = ("_resync", "_workers")

    def __init__(self) -> None:
        self._workers: dict[str, Worker] = {}
        self._resync: list[str] = []

    def heard(self, hostname: str, now: float) -> Worker:
        """An event (or an inspection reply) from ``hostname``: it is alive. A lost worker
        that comes back is queued for a resync (:meth:`take_resync_requests`)."""
        worker = self._workers.get(hostname)
        if worker is None:
            if not hostname.isascii():
                check_text(hostname, "hostname")  # before anything changes: refused whole
            worker = self._workers[hostname] = Worker(hostname, now)
            return worker
        worker.last_seen = now
        if not worker.online:
            worker.online = True
            if worker.lost:
                worker.lost = False
                self._resync.append(hostname)
        return worker

    def event(self, kind: str, hostname: str, event: Mapping[str, Any], now: float) -> Worker:
        """A ``worker-*`` event; the worker returned is offline after ``worker-offline``."""
        if kind == "worker-online":
            known = self._workers.get(hostname)
            if known is not None:
                known.freq = None  # a new process: its interval may have changed
        worker = self.heard(hostname, now)
        freq = event.get("freq")
        if isinstance(freq, int | float) and not isinstance(freq, bool) and freq > 0:
            # The smallest: a heartbeat that answers a wake-up broadcast announces 5 s.
            worker.freq = float(freq) if worker.freq is None else min(worker.freq, float(freq))
        if kind == "worker-offline":
            worker.online = False
        return worker

    def silent(self, now: float) -> list[Worker]:
        """Workers whose heartbeat window passed since their last event: now offline."""
        gone = []
        for worker in self._workers.values():
            freq = DEFAULT_FREQ if worker.freq is None else worker.freq
            if worker.online and now > worker.last_seen + HEARTBEAT_WINDOW * freq:
                worker.online = False
                gone.append(worker)
        return gone

    def any_online(self) -> bool:
        return any(worker.online for worker in self._workers.values())

    def take_resync_requests(self) -> list[str]:
        requests, self._resync = self._resync, []
        return requests

    def statuses(self) -> tuple[WorkerStatus, ...]:
        return tuple(
            WorkerStatus(
                hostname=worker.hostname,
                online=worker.online,
                lost=worker.lost,
                heartbeat_interval=DEFAULT_FREQ if worker.freq is None else worker.freq,
                last_seen=worker.last_seen,
            )
            for worker in self._workers.values()
        )

    def counts(self) -> tuple[int, int]:
        """(online, lost) workers."""
        workers = self._workers.values()
        return sum(w.online for w in workers), sum(w.lost for w in workers)
