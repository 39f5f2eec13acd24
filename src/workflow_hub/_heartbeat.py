"""Heartbeats: a trio task that tells hooks a running top-level run reached its next boundary.

For a live, running top-level run with ``heartbeat_interval_minutes``, the boundaries are
``started_at + n * interval`` for n >= 1 (the first strictly after the start). When the task
observes that a boundary has passed, it publishes one :class:`HeartbeatEvent` whose
``scheduled_at`` is that boundary. Boundaries the task could not have seen on time are *skipped*,
never back-filled: those that passed while the run was paused, not owned or not yet tracked, while
the tracker was hydrating, before the task started, or while the trio loop was too busy to wake
up (only the latest passed boundary is emitted then). Heartbeats are observation only: they change
no tracker state and schedule no work.

Time: boundaries are epoch milliseconds on the tracker's clock; the task sleeps on trio's clock
for the difference and re-reads the tracker's clock when it wakes, so the two only need to run at
the same rate. Tests make them the same clock: ``RunTracker(..., clock=lambda: trio.current_time()
* 1000)`` under ``trio.testing.MockClock`` puts heartbeats exactly on virtual-time boundaries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from ._contract import HeartbeatEvent, Timestamp

if TYPE_CHECKING:
    from ._derive import RunRecord
    from ._tracker import RunTracker

__all__ = ["latest_boundary", "next_boundary", "run_heartbeats"]

_MINUTE_MS = 60_000
# Never sleep less than this (seconds of trio time): a deadline that float rounding puts a hair
# before the boundary must still move time forward, or the task would spin.
_MIN_SLEEP = 1e-6


def latest_boundary(start: Timestamp, interval_ms: float, now: float) -> Timestamp | None:
    """The last boundary ``start + n * interval_ms`` (n >= 1) at or before ``now``, if any."""
    if now < start + interval_ms:
        return None
    return start + int((now - start) // interval_ms) * interval_ms


def next_boundary(start: Timestamp, interval_ms: float, now: float) -> Timestamp:
    """The first boundary ``start + n * interval_ms`` (n >= 1) strictly after ``now``."""
    if now < start:
        return start + interval_ms
    return start + (int((now - start) // interval_ms) + 1) * interval_ms


def _interval_ms(run: RunRecord) -> float:
    assert run.heartbeat_interval_minutes is not None
    return run.heartbeat_interval_minutes * _MINUTE_MS


def _emit_due(tracker: RunTracker, now: float, watching_since: float) -> None:
    for run in list(tracker._heartbeat_runs()):
        assert run.started_at is not None
        assert run.beat_since is not None
        interval = run.heartbeat_interval_minutes
        assert interval is not None
        boundary = latest_boundary(run.started_at, _interval_ms(run), now)
        if boundary is None or boundary < max(run.beat_since, watching_since):
            continue
        if run.last_beat is not None and boundary <= run.last_beat:
            continue
        run.last_beat = boundary
        tracker.publisher.publish_heartbeat(
            HeartbeatEvent(
                run_id=run.run_id,
                root_run_id=run.root_run_id,
                owner_session_id=tracker.owner_session_id,
                scheduled_at=boundary,
                interval_minutes=interval,
            )
        )


def _next_due(tracker: RunTracker, now: float) -> float | None:
    due = [
        next_boundary(run.started_at, _interval_ms(run), now)
        for run in tracker._heartbeat_runs()
        if run.started_at is not None
    ]
    return min(due, default=None)


async def run_heartbeats(
    tracker: RunTracker, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Emit the tracker's heartbeats until cancelled. Start it in a nursery you own:
    ``await nursery.start(run_heartbeats, tracker)`` (or ``nursery.start(tracker.run_heartbeats)``).

    Boundaries that passed before the task started are skipped. One task per tracker: a second
    one raises :class:`RuntimeError`. The task wakes at the next boundary and whenever the
    tracker's facts change, so a run that starts, pauses or resumes is picked up at once.
    """
    if tracker._heartbeats_running:
        raise RuntimeError("this tracker's heartbeats are already running")
    tracker._heartbeats_running = True
    try:
        watching_since = tracker.now()
        task_status.started()
        while True:
            # Armed before looking, so a change made by anyone after this point wakes us.
            wakeup = trio.Event()
            tracker._heartbeat_wakeup = wakeup
            now = tracker.now()
            _emit_due(tracker, now, watching_since)
            due = _next_due(tracker, now)
            if due is None:
                await wakeup.wait()
            else:
                with trio.move_on_after(max((due - now) / 1000, _MIN_SLEEP)):
                    await wakeup.wait()
    finally:
        tracker._heartbeat_wakeup = None
        tracker._heartbeats_running = False
