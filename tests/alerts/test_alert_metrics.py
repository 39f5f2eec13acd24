"""The alerts' metrics on a served hub's own ``/metrics`` (issue 40): an alerter in the
scheduler's process registers ``AlertMetrics`` on the registry its ``HubMetrics`` serves."""

from __future__ import annotations

import functools

import httpx
import trio
from prometheus_client import CollectorRegistry

from tests.support.netutil import served
from workflow_hub import Availability, open_hub
from workflow_hub.alerts import Alerter, AlertMetrics, AlertRules, CallbackSink, run_alerts
from workflow_hub.metrics import HubMetrics

from .support import Recorder, asking

BOUND = 10


async def test_the_served_metrics_say_how_many_alerts_fire_and_what_each_sink_sent() -> None:
    metrics = HubMetrics(CollectorRegistry())
    recorder = Recorder()
    async with (
        open_hub(metrics=metrics) as hub,
        served(hub, metrics=metrics) as url,
        trio.open_nursery() as nursery,
    ):
        alerter: Alerter = await nursery.start(
            functools.partial(
                run_alerts,
                hub,
                [CallbackSink(recorder.record, name="pager")],
                rules=AlertRules(needs_attention_for=0),
            )
        )
        AlertMetrics(alerter, metrics.registry)
        hub.register_publisher().publish_snapshot(
            Availability.READY, [asking("r1"), asking("r2", prompt_id="p2")]
        )
        with trio.fail_after(BOUND):
            while len(recorder.firing) < 2:  # noqa: ASYNC110 - the sink's own task delivers
                await trio.sleep(0.01)
        async with httpx.AsyncClient() as client:
            text = (await client.get(f"{url}/metrics")).text
        nursery.cancel_scope.cancel()
    assert 'workflow_hub_alerts_firing{alertname="WorkflowNeedsAttention"} 2.0' in text
    assert 'workflow_hub_alerts_firing{alertname="WorkflowStuck"} 0.0' in text
    assert 'workflow_hub_alert_notifications_sent_total{sink="pager"} 2.0' in text
    assert 'workflow_hub_alert_notifications_dropped_total{sink="pager"} 0.0' in text
    assert 'workflow_hub_alert_sink_latency_seconds_count{sink="pager"} 2.0' in text
    assert "workflow_hub_frames_published_total" in text  # the hub's own, beside them
