"""Recording consumers shared by the tests: what a hub delivered, in the order it delivered it."""

from __future__ import annotations

from collections.abc import Callable

import trio

from workflow_hub import HeartbeatEvent, LifecycleEvent, WorkflowEvent


class RecordingDispatcher:
    """A hook dispatcher (``hub.bind_dispatcher``) that records every event and its ``is_current``.

    Set ``gate`` to a ``trio.Event`` to hold the hook queue inside the dispatcher until it is set.
    """

    def __init__(self) -> None:
        self.events: list[WorkflowEvent] = []
        self.is_current: list[Callable[[], bool]] = []
        self.gate: trio.Event | None = None

    async def __call__(self, event: WorkflowEvent, is_current: Callable[[], bool]) -> None:
        self.events.append(event)
        self.is_current.append(is_current)
        if self.gate is not None:
            await self.gate.wait()

    def lifecycle(self) -> list[LifecycleEvent]:
        return [event for event in self.events if isinstance(event, LifecycleEvent)]

    def targets(self) -> list[object]:
        return [event.target for event in self.lifecycle()]

    def heartbeats(self) -> list[HeartbeatEvent]:
        return [event for event in self.events if isinstance(event, HeartbeatEvent)]

    def heartbeat_times(self) -> list[tuple[str, float]]:
        """``(run_id, scheduled_at)`` of each heartbeat: when the beats were due, per run."""
        return [(event.run_id, event.scheduled_at) for event in self.heartbeats()]
