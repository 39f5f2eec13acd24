"""Alerts of a hub in this process: each condition fires after its duration and resolves once.

Every test runs under pytest-trio's ``autojump_clock`` (``MockClock(autojump_threshold=0)``): the
durations are the rules' own, passed in a blink.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from workflow_hub import Availability, WorkflowActivityHub, WorkflowActivityPublisher, open_hub
from workflow_hub.alerts import Alerter, AlertName, AlertRules, run_alerts

from .support import Recorder, asking, idle, working

RULES = AlertRules(
    needs_attention_for=30, stuck_after=600, unknown_after=60, dashboard_url="http://dash:8765"
)


@asynccontextmanager
async def alerting(
    hub: WorkflowActivityHub, rules: AlertRules = RULES
) -> AsyncIterator[tuple[Alerter, Recorder]]:
    recorder = Recorder()
    async with trio.open_nursery() as nursery:
        alerter: Alerter = await nursery.start(
            functools.partial(
                run_alerts,
                hub,
                [recorder],
                rules=rules,
                name="sched-1",
                wall_clock=trio.current_time,
            )
        )
        yield alerter, recorder
        nursery.cancel_scope.cancel()


def ready(hub: WorkflowActivityHub, *roots: object) -> WorkflowActivityPublisher:
    publisher = hub.register_publisher()
    publisher.publish_snapshot(Availability.READY, roots)  # type: ignore[arg-type]
    return publisher


async def settle() -> None:
    await trio.testing.wait_all_tasks_blocked()


async def test_a_blocked_root_fires_after_its_duration_and_resolves_when_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_hub() as hub, alerting(hub) as (alerter, recorder):
        publisher = ready(hub, working("r1"))
        await trio.sleep(1)
        publisher.publish_changed(asking("r1", team="infra"))
        await trio.sleep(29)
        assert recorder.notifications == []  # 29 s < 30 s
        await trio.sleep(1.5)
        [fired] = recorder.notifications
        assert fired.alert.name is AlertName.NEEDS_ATTENTION
        assert dict(fired.alert.labels) == {
            "alertname": "WorkflowNeedsAttention",
            "source": "sched-1",
            "root_run_id": "r1",
            "reason": "awaiting_input",
            "team": "infra",
        }
        assert "deploy to prod?" in fired.alert.summary
        assert fired.alert.annotations["dashboard"] == "http://dash:8765/#q=r1"
        assert alerter.firing_counts()[AlertName.NEEDS_ATTENTION] == 1
        publisher.publish_changed(working("r1"))
        await settle()
        assert recorder.names()[-1] == ("resolved", "WorkflowNeedsAttention", "r1")
        assert recorder.notifications[-1].alert.id == fired.alert.id
        assert recorder.firing == {}


async def test_a_root_answered_within_its_duration_pages_nobody(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_hub() as hub, alerting(hub) as (_, recorder):
        publisher = ready(hub)
        for _ in range(5):  # flapping: blocked 20 s, working 1 s
            publisher.publish_changed(asking("r1"))
            await trio.sleep(20)
            publisher.publish_changed(working("r1"))
            await trio.sleep(1)
        publisher.publish_removed("r1")
        await trio.sleep(100)
        assert recorder.notifications == []


async def test_a_working_root_with_no_change_is_stuck(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_hub() as hub, alerting(hub) as (_, recorder):
        publisher = ready(hub, working("r1"))
        await trio.sleep(599)
        assert recorder.notifications == []
        await trio.sleep(2)
        assert recorder.names() == [("firing", "WorkflowStuck", "r1")]
        # A frame that changes nothing is not progress; a change is.
        publisher.publish_changed(working("r1"))
        await settle()
        assert len(recorder.notifications) == 1
        publisher.publish_changed(idle("r1"))
        await settle()
        assert recorder.names()[-1] == ("resolved", "WorkflowStuck", "r1")


async def test_a_removed_root_resolves_its_alerts(autojump_clock: trio.testing.MockClock) -> None:
    async with open_hub() as hub, alerting(hub) as (_, recorder):
        publisher = ready(hub, asking("r1"), asking("r2"))
        await trio.sleep(31)
        assert len(recorder.firing) == 2
        publisher.publish_removed("r1")
        await settle()
        assert recorder.names()[-1] == ("resolved", "WorkflowNeedsAttention", "r1")
        assert len(recorder.firing) == 1


async def test_a_new_epoch_holds_root_alerts_and_rederives_them_from_its_snapshot(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """P1: a new publisher's epoch starts unavailable; the roots' alerts are neither resolved nor
    fired again while the source is unknown, and the new snapshot re-derives them."""
    async with open_hub() as hub, alerting(hub) as (_, recorder):
        ready(hub, asking("r1"), asking("r2"))
        await trio.sleep(31)
        before = dict(recorder.firing)
        publisher = hub.register_publisher()  # the scheduler restarted: unavailable
        await trio.sleep(59)
        assert recorder.firing == before
        await trio.sleep(2)
        assert recorder.names()[-1] == ("firing", "WorkflowSourceUnknown", None)
        publisher.publish_snapshot(Availability.READY, [asking("r1"), working("r2")])
        await settle()
        assert sorted(recorder.names()[-2:]) == [
            ("resolved", "WorkflowNeedsAttention", "r2"),
            ("resolved", "WorkflowSourceUnknown", None),
        ]
        assert set(recorder.firing) == {
            next(i for i, a in before.items() if a.labels["root_run_id"] == "r1")
        }


async def test_an_overflow_resnapshot_sends_nothing_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """O4: an observer's overflow is a fresh snapshot; the alerts it still shows stay as they are."""
    async with open_hub(queue_limit=4) as hub, alerting(hub) as (_, recorder):
        publisher = ready(hub, asking("r1"), working("r2"))
        await trio.sleep(31)
        assert recorder.names() == [("firing", "WorkflowNeedsAttention", "r1")]
        for index in range(20):  # no checkpoint: the alerter's queue overflows
            publisher.publish_changed(working(f"w{index}"))
        await settle()
        assert any(d.kind == "ObserverOverflow" for d in hub.diagnostics())
        assert recorder.names() == [("firing", "WorkflowNeedsAttention", "r1")]


async def test_a_disposed_hub_makes_its_source_unknown(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_hub() as hub, alerting(hub) as (_, recorder):
        publisher = ready(hub, asking("r1"))
        await trio.sleep(31)
        publisher.dispose()
        await trio.sleep(61)
        assert recorder.names() == [
            ("firing", "WorkflowNeedsAttention", "r1"),
            ("firing", "WorkflowSourceUnknown", None),
        ]
