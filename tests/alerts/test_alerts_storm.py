"""Storms with real parts (issue 40): 50 schedulers mirrored into one real redis-server lose it.

Fifty small hubs in this process, each mirrored (``mirror_hub``) into the test's own
redis-server, each with two roots waiting for a person; one alerter follows the fleet
(``RedisFleet``) with a recording sink. Stopping the redis-server must page once per source
(``WorkflowSourceUnknown``), never once per root, and resolve none of the roots' alerts (N4:
unknown is never "cleared"); starting it again resolves the 50 and fires nothing new. The book's
own storm test (``test_alerts_book.py``) checks the same with the time passed in; this one
checks that the fleet's reader, the mirrors and the alerter's liveness watch get there too.
Durations are fractions of a second on the real clock; every wait is bounded by ``fail_after``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AsyncExitStack

import coredis
import trio
import trio.testing

from tests.support.redis_server import RedisServer, eventually
from workflow_hub import Availability, open_hub
from workflow_hub.alerts import Alerter, AlertName, AlertRules, NotificationKind, run_alerts
from workflow_hub.redis import RedisFleet, mirror_hub

from .support import Recorder, asking

SOURCES = 50
# A busy machine (the full suite on 2 cores) may stall a read or a refresh for a second: the
# fleet is unreadable only after 2 s without a read, a source unknown for 1 s pages, and a
# mirror is stale after 10 s; so only the stopped redis-server makes anything unknown.
RULES = AlertRules(needs_attention_for=0, stuck_after=600, unknown_after=1.0)
BOUND = 30  # seconds any one wait may take at most (a busy 2-core machine, 50 mirrors)


async def until(predicate: Callable[[], bool]) -> None:
    with trio.fail_after(BOUND):
        await eventually(predicate, every=0.02)


def count(recorder: Recorder, kind: NotificationKind, name: AlertName) -> int:
    return sum(1 for n in recorder.notifications if n.kind is kind and n.alert.name is name)


async def test_fifty_sources_losing_their_redis_page_once_per_source(
    own_redis_server: RedisServer,
) -> None:
    prefix = "alerts-storm"
    recorder = Recorder()
    attention, unknown = AlertName.NEEDS_ATTENTION, AlertName.SOURCE_UNKNOWN
    async with (
        coredis.Redis.from_url(own_redis_server.url) as mirrors_redis,
        coredis.Redis.from_url(own_redis_server.url) as fleet_redis,
        AsyncExitStack() as stack,
    ):
        hubs = [await stack.enter_async_context(open_hub()) for _ in range(SOURCES)]
        async with trio.open_nursery() as nursery:
            for index, hub in enumerate(hubs):
                hub.register_publisher().publish_snapshot(
                    Availability.READY,
                    [asking(f"s{index}/deploy"), asking(f"s{index}/migrate", prompt_id="p2")],
                )
                mirror = await nursery.start(
                    functools.partial(
                        mirror_hub,
                        hub,
                        mirrors_redis,
                        source=f"s{index}",
                        prefix=prefix,
                        refresh_interval=0.2,
                        round_trip_timeout=0.5,
                    )
                )
                await mirror.wait_claimed()
            # With no read for 2 s the fleet is unreadable: every source unknown ("unreachable").
            fleet = RedisFleet(
                fleet_redis, prefix=prefix, stale_after=10.0, retire_after=600, read_timeout=2.0
            )
            alerter: Alerter = await nursery.start(
                functools.partial(run_alerts, fleet, [recorder], rules=RULES)
            )
            await until(lambda: count(recorder, NotificationKind.FIRING, attention) == 2 * SOURCES)

            own_redis_server.stop()
            await until(lambda: count(recorder, NotificationKind.FIRING, unknown) == SOURCES)
            lost = [n.alert.source for n in recorder.notifications if n.alert.name is unknown]
            assert sorted(lost) == sorted(f"s{index}" for index in range(SOURCES))
            assert count(recorder, NotificationKind.RESOLVED, attention) == 0  # held, not cleared
            assert len(alerter.firing()) == 3 * SOURCES

            own_redis_server.restart()  # the mirrors claim their sources and write them again
            await until(lambda: count(recorder, NotificationKind.RESOLVED, unknown) == SOURCES)
            await trio.testing.wait_all_tasks_blocked(0.05)
            nursery.cancel_scope.cancel()
    # The whole storm: 100 roots fired once, 50 sources fired and resolved once, nothing else
    # (the recorder also checks that no alert fired twice or resolved without firing).
    assert len(recorder.notifications) == 2 * SOURCES + 2 * SOURCES
    assert len(recorder.firing) == 2 * SOURCES
