"""A mirrored hub for fleet tests: a running hub whose frames a real mirror appends to Redis."""

from __future__ import annotations

import functools

import coredis
import trio

from workflow_hub import WorkflowActivityHub, open_hub
from workflow_hub.redis import mirror_hub


async def mirrored(
    nursery: trio.Nursery, redis: coredis.Redis[bytes], prefix: str, source: str
) -> WorkflowActivityHub:
    hub: WorkflowActivityHub = await nursery.start(_run_hub)
    mirror = await nursery.start(
        functools.partial(
            mirror_hub, hub, redis, source=source, prefix=prefix, refresh_interval=0.05
        )
    )
    await mirror.wait_claimed()
    return hub


async def _run_hub(*, task_status: trio.TaskStatus[WorkflowActivityHub]) -> None:
    async with open_hub() as hub:
        task_status.started(hub)
        await trio.sleep_forever()
