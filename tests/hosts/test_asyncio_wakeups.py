"""What a tracker fact wakes in the asyncio host's guest run (H1, K1): nothing that has no work."""

from __future__ import annotations

import asyncio
from collections import Counter

import trio

from workflow_hub import LifecycleEvent
from workflow_hub import asyncio as hub_asyncio


class _Scheduled(trio.abc.Instrument):
    def __init__(self) -> None:
        self.tasks: Counter[str] = Counter()

    def task_scheduled(self, task: trio.lowlevel.Task) -> None:
        self.tasks[task.name] += 1


def test_facts_without_a_dispatcher_wake_no_trio_task() -> None:
    """K1: lifecycle events wait in the hook buffer until a dispatcher is bound, so reporting
    facts with nobody observing schedules no trio task (each wake of the guest is a trip through
    its I/O thread); binding a dispatcher then delivers the buffered events, in order."""

    async def main() -> tuple[Counter[str], list[str]]:
        async with asyncio.timeout(10), hub_asyncio.open_hub() as hub:
            tracker = hub.tracker(owner_session_id="session-1")
            tracker.start()
            tracker.add_run("run-1", status="running")
            tracker.add_stage("run-1", "work", "work")
            await asyncio.sleep(0.01)
            scheduled = _Scheduled()
            trio.lowlevel.add_instrument(scheduled)
            try:
                for i in range(20):
                    tracker.set_stage_status("run-1", "work", "running" if i % 2 else "pending")
                    await asyncio.sleep(0)
            finally:
                trio.lowlevel.remove_instrument(scheduled)
            seen: list[str] = []
            done = asyncio.Event()

            def dispatch(event: object, is_current: object) -> None:
                assert isinstance(event, LifecycleEvent)
                seen.append(event.type)
                if len(seen) == 20:
                    done.set()

            hub.bind_dispatcher(dispatch)
            await done.wait()
            return scheduled.tasks, seen

    tasks, seen = asyncio.run(main())
    assert sum(tasks.values()) == 0, tasks
    assert len(seen) == 20
