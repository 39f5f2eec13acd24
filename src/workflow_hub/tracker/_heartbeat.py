"""Heartbeats: which runs beat, when, and the trio task that publishes them.

For a live, running top-level run with ``heartbeat_interval_minutes``, the boundaries are
``started_at + n * interval`` for n >= 1 (the first strictly after the start). When the task
observes that a boundary has passed, it publishes one :class:`HeartbeatEvent` whose
``scheduled_at`` is that boundary. Boundaries the task could not have seen on time are *skipped*,
never back-filled: those that passed while the run was paused, not owned or not yet tracked, while
the tracker was hydrating, before the task started, or while the trio loop was too busy to wake
up (only the latest passed boundary is emitted then). Heartbeats are observation only: they change
no tracker state and schedule no work.

:class:`HeartbeatSchedule` owns all of it: the tracker tells it the facts of its top-level runs
(:meth:`~HeartbeatSchedule.update`), and it decides eligibility, keeps the bookkeeping and runs
the task. Nothing else reads or writes that state.

Time: boundaries are epoch milliseconds on the tracker's clock; the task sleeps on trio's clock
for the difference and re-reads the tracker's clock when it wakes, so the two only need to run at
the same rate. Tests make them the same clock: ``RunTracker(..., clock=lambda: trio.current_time()
* 1000)`` under ``trio.testing.MockClock`` puts heartbeats exactly on virtual-time boundaries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import final

import attrs
import trio

from .._contract import ContractError, HeartbeatEvent, RunStatus, Timestamp, check_positive_number

__all__ = ["HeartbeatSchedule", "check_interval", "latest_boundary", "next_boundary"]

_MINUTE_MS = 60_000
# The shortest interval a run may ask for: one millisecond, the resolution of the timestamps.
# Anything shorter cannot be scheduled (a denormal interval overflows the boundary arithmetic).
MIN_INTERVAL_MINUTES = 1 / _MINUTE_MS
# Never sleep less than this (seconds of trio time): a deadline that float rounding puts a hair
# before the boundary must still move time forward, or the task would spin.
_MIN_SLEEP = 1e-6


def check_interval(value: object, path: str) -> int | float:
    """A heartbeat interval in minutes that can be scheduled: at least one millisecond, and
    finite in milliseconds too."""
    minutes = check_positive_number(value, path)
    if minutes < MIN_INTERVAL_MINUTES:
        raise ContractError(path, f"expected at least one millisecond (1/60000), got {minutes}")
    if not math.isfinite(minutes * _MINUTE_MS):
        raise ContractError(path, f"{minutes} minutes is too long to schedule")
    return minutes


def latest_boundary(start: Timestamp, interval_ms: float, now: float) -> Timestamp | None:
    """The last boundary ``start + n * interval_ms`` (n >= 1) at or before ``now``, if any."""
    elapsed = now - start
    if not math.isfinite(elapsed) or elapsed < interval_ms:
        return None
    return start + int(elapsed // interval_ms) * interval_ms


def next_boundary(start: Timestamp, interval_ms: float, now: float) -> Timestamp | None:
    """The first boundary ``start + n * interval_ms`` (n >= 1) strictly after ``now``; None when
    floats can no longer tell it from ``now`` (so far from the start that nothing is left to
    schedule)."""
    elapsed = now - start
    if not math.isfinite(elapsed):
        return None
    if elapsed < 0:
        return start + interval_ms
    boundary = start + (int(elapsed // interval_ms) + 1) * interval_ms
    return boundary if math.isfinite(boundary) and boundary > now else None


@attrs.define(kw_only=True)
class _Beat:
    """One top-level run with an interval."""

    run_id: str
    interval_minutes: int | float
    started_at: Timestamp | None
    # Since when the run has been eligible (None: not eligible now), and the last boundary
    # emitted for it.
    since: Timestamp | None = None
    last: Timestamp | None = None

    @property
    def interval_ms(self) -> float:
        return self.interval_minutes * _MINUTE_MS


@final
class HeartbeatSchedule:
    """The one owner of a tracker's heartbeat bookkeeping, and its task.

    ``emit`` publishes a heartbeat (the tracker's current publisher); ``clock`` is the tracker's
    clock in epoch milliseconds.
    """

    __slots__ = ("_beats", "_clock", "_emit", "_owner_session_id", "_running", "_wakeup", "watched")

    def __init__(
        self,
        *,
        emit: Callable[[HeartbeatEvent], object],
        clock: Callable[[], float],
        owner_session_id: str,
    ) -> None:
        self._emit = emit
        self._clock = clock
        self._owner_session_id = owner_session_id
        self._beats: dict[str, _Beat] = {}
        # The runs with an interval, read-only: :meth:`update` does nothing for any other run,
        # so a caller on a hot path may skip the call for them.
        self.watched: Mapping[str, object] = self._beats
        self._wakeup: trio.Event | None = None
        self._running = False

    def watch(
        self, run_id: str, interval_minutes: int | float, started_at: Timestamp | None
    ) -> None:
        """A top-level run with an interval (``check_interval``) is tracked."""
        self._beats[run_id] = _Beat(
            run_id=run_id, interval_minutes=interval_minutes, started_at=started_at
        )

    def forget(self, run_id: str) -> None:
        if self._beats.pop(run_id, None) is not None:
            self._wake()

    def update(
        self, run_id: str, *, status: RunStatus, live: bool, publishing: bool, now: float
    ) -> None:
        """The run's facts (or the tracker's phase) may have changed: is it eligible now?

        Eligible: a live run in status ``running`` (so unpaused) while the tracker publishes.
        ``started_at`` defaults to the first moment the run is seen ``running``.
        """
        beat = self._beats.get(run_id)
        if beat is None:
            return
        if status is RunStatus.RUNNING and beat.started_at is None:
            beat.started_at = now
        if not (publishing and live and status is RunStatus.RUNNING):
            beat.since = None
        elif beat.since is None:
            beat.since = now
        self._wake()

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            wakeup.set()

    def _emit_due(self, now: float, watching_since: float) -> None:
        for beat in list(self._beats.values()):
            if beat.since is None or beat.started_at is None:
                continue
            boundary = latest_boundary(beat.started_at, beat.interval_ms, now)
            if boundary is None or boundary < max(beat.since, watching_since):
                continue
            if beat.last is not None and boundary <= beat.last:
                continue
            beat.last = boundary
            self._emit(
                HeartbeatEvent(
                    run_id=beat.run_id,
                    root_run_id=beat.run_id,
                    owner_session_id=self._owner_session_id,
                    scheduled_at=boundary,
                    interval_minutes=beat.interval_minutes,
                )
            )

    def _next_due(self, now: float) -> float | None:
        due = [
            next_boundary(beat.started_at, beat.interval_ms, now)
            for beat in self._beats.values()
            if beat.since is not None and beat.started_at is not None
        ]
        return min((when for when in due if when is not None), default=None)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Emit heartbeats until cancelled; one task at a time (a second raises RuntimeError)."""
        if self._running:
            raise RuntimeError("this tracker's heartbeats are already running")
        self._running = True
        try:
            watching_since = self._clock()
            task_status.started()
            while True:
                # Armed before looking, so a change made by anyone after this point wakes us.
                wakeup = trio.Event()
                self._wakeup = wakeup
                now = self._clock()
                self._emit_due(now, watching_since)
                due = self._next_due(now)
                if due is None:
                    await wakeup.wait()
                else:
                    with trio.move_on_after(max((due - now) / 1000, _MIN_SLEEP)):
                        await wakeup.wait()
        finally:
            self._wakeup = None
            self._running = False
