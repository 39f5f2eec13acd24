"""``trace_source``: a served hub's events, followed over HTTP, as traces (what
``workflow-hub otel URL`` runs). The hub is served for real on loopback, the demo's script plays
on it (scaled to 2 seconds), and the loopback OTLP receiver gets the spans."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import trio

from tests.otel.receiver import Receiver
from tests.support.netutil import served
from workflow_hub import ContractError, HookRunner, RunTracker, open_hub
from workflow_hub._cli._demo_script import run_scenario
from workflow_hub.otel import trace_source


async def _until(condition: Any) -> None:
    # The events cross a real HTTP stream into the follower: nothing in this process to wait
    # on but the follower's own counts, so they are looked at, bounded by fail_after.
    with trio.fail_after(20):
        while not condition():  # noqa: ASYNC110
            await trio.sleep(0.02)


async def test_a_served_hubs_events_become_the_same_span_trees(otlp: Receiver) -> None:
    async with open_hub() as hub:
        runner = HookRunner(hub)
        runner.bind()
        async with served(hub, runner=runner) as url, trio.open_nursery() as nursery:
            tracing = await nursery.start(functools.partial(trace_source, url, sweep_interval=0.5))
            tracker = RunTracker(hub.register_publisher(), owner_session_id="demo")
            await trio.sleep(0.3)  # the event stream is open before the first run starts
            await run_scenario(tracker, duration=2.0, seed=7)
            # nightly-build ends, the others too; the demo leaves every run ended
            await _until(
                lambda: tracing.statistics().spans_ended >= 7 and not tracing.statistics().open_runs
            )
            nursery.cancel_scope.cancel()
    statistics = tracing.statistics()
    assert statistics.spans_started == statistics.spans_ended == len(otlp.spans)
    assert statistics.first_seen_mid_flight == 0
    roots = sorted(span.name for span in otlp.spans if span.parent_span_id == "")
    assert roots == sorted(
        f"RUN {name}"
        for name in (
            "nightly-build",
            "data-migration",
            "release-train",
            "docs-site",
            "load-test",
            "smoke-check",
        )
    )
    assert {
        span.attributes["workflow_hub.source"]
        for span in otlp.spans
        if "workflow_hub.source" in span.attributes
    } == {url}
    child = otlp.by_name("RUN verify-migration")
    assert child.parent_span_id == otlp.by_name("migrate").span_id  # inferred: no facts here
    assert otlp.by_name("probe").status_code == 2


async def test_a_hub_served_without_a_runner_is_refused_naming_the_url(otlp: Receiver) -> None:
    async with open_hub() as hub, served(hub) as url:
        with pytest.raises(ContractError, match="without a HookRunner"):
            with trio.fail_after(20):
                await trace_source(url)
