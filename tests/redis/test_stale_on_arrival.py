"""A follower that starts after a source crashed never shows that source's last state as current.

SPEC N4/N5: a source whose mirror stopped refreshing is unknown to everything a follower feeds. A
follower started later reads the crashed source's checkpoint and the entries after it, which are
old: they must neither show the source idle or working for a moment nor count as signs of life
(found in a trial: ``watch redis://`` replayed a crashed source's last round as live, ``sched-2:
idle`` … ``3 working``, until the next registry poll marked it stale again). An entry appended
after the last refresh the follower knew of does count: the source is back.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import trio

from tests.support.builders import root
from tests.support.redis_server import RedisServer
from workflow_hub import Availability, Frame, SnapshotFrame, open_hub
from workflow_hub.redis import FleetView, Mirror, follow_fleet, mirror_hub

STALE_AFTER = 0.5


@asynccontextmanager
async def client(url: str) -> AsyncIterator[coredis.Redis[bytes]]:
    async with coredis.Redis.from_url(url) as redis:
        yield redis


async def run_source(
    redis: coredis.Redis[bytes],
    prefix: str,
    source: str,
    changes: int,
    *,
    task_status: trio.TaskStatus[Mirror],
) -> None:
    """A scheduler with a checkpoint and ``changes`` entries after it, mirrored until cancelled."""
    async with open_hub() as hub, trio.open_nursery() as nursery:
        publisher = hub.register_publisher()
        publisher.publish_snapshot(Availability.READY, [root("r", state="idle", active=0)])
        mirror: Mirror = await nursery.start(
            functools.partial(
                mirror_hub,
                hub,
                redis,
                source=source,
                prefix=prefix,
                refresh_interval=0.1,
                retire_after=30,
            )
        )
        await mirror.wait_claimed()
        for index in range(changes):
            publisher.publish_changed(root(f"w{index}"))
        while mirror.statistics().frames < changes + 1:  # noqa: ASYNC110
            await trio.sleep(0.01)
        task_status.started(mirror)
        await trio.sleep_forever()


def shown(frame: Frame | None) -> str:
    if isinstance(frame, SnapshotFrame) and frame.availability is not Availability.READY:
        return str(frame.availability)
    return "state"


async def test_a_crashed_source_is_unknown_from_the_first_frame_a_late_follower_gives(
    redis_server: RedisServer,
) -> None:
    prefix = f"late-{uuid.uuid4().hex[:8]}"
    seen: list[tuple[str, str]] = []
    fleet_view = FleetView()
    with trio.fail_after(20):
        async with (
            client(redis_server.url) as redis,
            client(redis_server.url) as reader,
            trio.open_nursery() as nursery,
        ):
            crashed = trio.CancelScope()

            async def crash_later(*, task_status: trio.TaskStatus[None]) -> None:
                with crashed:
                    await run_source(redis, prefix, "crashed", 5, task_status=task_status)

            await nursery.start(crash_later)
            await nursery.start(run_source, redis, prefix, "alive", 2)
            crashed.cancel()  # killed: it declares nothing, it just stops refreshing
            await trio.sleep(STALE_AFTER * 3)

            async with follow_fleet(
                reader, prefix=prefix, stale_after=STALE_AFTER, poll_interval=0.1, block=0.1
            ) as fleet:
                with trio.move_on_after(STALE_AFTER * 4):  # several polls and reads
                    async for source, frame in fleet:
                        fleet_view.apply(source, frame)
                        seen.append((source, shown(frame)))
            assert ("alive", "state") in seen  # the follower did read the fleet
            assert [what for source, what in seen if source == "crashed"] == ["unavailable"]
            assert fleet.liveness["crashed"].stale
            assert str(fleet_view.statuses()["crashed"].state) == "unknown"
            assert str(fleet_view.aggregate().state) != "idle"

            # The source comes back (a new instance): its new entries are signs of life.
            await nursery.start(run_source, redis, prefix, "crashed", 1)
            async with follow_fleet(
                reader, prefix=prefix, stale_after=STALE_AFTER, poll_interval=0.1, block=0.1
            ) as fleet:
                async for source, frame in fleet:
                    fleet_view.apply(source, frame)
                    if source == "crashed" and shown(frame) == "state":
                        break
            assert fleet_view.views["crashed"].known
            nursery.cancel_scope.cancel()
