"""A scheduler whose hook events a real mirror copies into Redis (hub, bound runner, mirror)."""

from __future__ import annotations

import functools

import attrs
import coredis
import trio

from tests.support.builders import root
from workflow_hub import HookRunner, WorkflowActivityHub, WorkflowActivityPublisher, open_hub
from workflow_hub.redis import Mirror, mirror_hub


@attrs.define
class HookedSource:
    hub: WorkflowActivityHub
    mirror: Mirror
    publisher: WorkflowActivityPublisher
    scope: trio.CancelScope

    def change(self, name: str) -> None:
        """One hook event (``workflow_activity_changed`` for root ``name``)."""
        self.publisher.publish_changed(root(name))

    def kill(self) -> None:
        self.scope.cancel()


async def hooked(
    nursery: trio.Nursery, redis: coredis.Redis[bytes], prefix: str, source: str
) -> HookedSource:
    found: HookedSource = await nursery.start(_run, redis, prefix, source)
    return found


async def _run(
    redis: coredis.Redis[bytes],
    prefix: str,
    source: str,
    *,
    task_status: trio.TaskStatus[HookedSource],
) -> None:
    with trio.CancelScope() as scope:
        async with open_hub() as hub, trio.open_nursery() as nursery:
            runner = HookRunner(hub)
            mirror: Mirror = await nursery.start(
                functools.partial(
                    mirror_hub,
                    hub,
                    redis,
                    source=source,
                    prefix=prefix,
                    refresh_interval=0.05,
                    runner=runner,
                )
            )
            runner.bind()
            await mirror.wait_claimed()
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            task_status.started(HookedSource(hub, mirror, publisher, scope))
            await trio.sleep_forever()
