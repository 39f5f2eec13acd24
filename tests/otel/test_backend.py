"""A backend that refuses, hangs or is gone never slows the hub; what it costs is counted.

And the spans nothing ends: a root that leaves the hub while running, a run first seen after it
started, the spans still open when tracing stops (issue 41: no span left open forever).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tests.otel.conftest import point_at
from tests.otel.receiver import Receiver, running_receiver
from tests.support.builders import stage_lifecycle
from workflow_hub import HookRunner, RunTracker, open_hub
from workflow_hub.otel import open_tracing


def _runs(tracker: RunTracker, first: int, count: int) -> None:
    """``count`` runs that start and complete at once: one span each."""
    for number in range(first, first + count):
        run_id = f"run-{number}"
        tracker.add_run(run_id, status="running")
        tracker.set_run_status(run_id, "completed")
        tracker.remove_run(run_id)


async def test_a_hanging_backend_never_slows_the_hub_and_its_drops_are_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with running_receiver("hang") as receiver:
        point_at(monkeypatch, receiver)
        monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "32")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
        async with open_hub() as hub:
            runner = HookRunner(hub)
            async with open_tracing(runner) as tracing:
                runner.bind()
                tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
                tracker.start()
                _runs(tracker, 0, 32)  # a full batch: the exporter sends it, and hangs
                await trio.to_thread.run_sync(receiver.wait_for_requests, 1)
                with trio.fail_after(10):
                    _runs(tracker, 32, 2000)
                    await trio.testing.wait_all_tasks_blocked()
                assert tracing.statistics().spans_ended == 2032
    export = tracing.statistics().export
    assert export is not None
    assert export.exported == 0
    # Every span is accounted for: sent and timed out, or dropped from the full queue (the
    # exporter holds one batch of 32 at a time, for its 1 s timeout; the queue keeps 32).
    assert export.failed + export.dropped + export.queued == 2032
    assert export.queue_limit == 32
    assert export.dropped >= 2032 - 32 * 10


async def test_a_refusing_backend_counts_its_failed_spans(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_receiver("refuse") as receiver:
        point_at(monkeypatch, receiver)
        async with open_hub() as hub:
            runner = HookRunner(hub)
            async with open_tracing(runner) as tracing:
                runner.bind()
                tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
                tracker.start()
                _runs(tracker, 0, 10)
                await trio.testing.wait_all_tasks_blocked()
        export = tracing.statistics().export
        assert export is not None
        assert (export.exported, export.failed, export.dropped, export.queued) == (0, 10, 0, 0)
        assert receiver.requests >= 1


async def test_a_backend_that_is_not_there_costs_the_hub_nothing(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_receiver("ok") as receiver:
        point_at(monkeypatch, receiver)
    # The receiver is gone: its port refuses connections.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
    async with open_hub() as hub:
        runner = HookRunner(hub)
        async with open_tracing(runner) as tracing:
            runner.bind()
            tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
            tracker.start()
            _runs(tracker, 0, 5)
            await trio.testing.wait_all_tasks_blocked()
    export = tracing.statistics().export
    assert export is not None
    assert export.exported == 0
    assert export.failed + export.queued == 5


async def test_a_root_that_vanishes_while_running_ends_its_spans_marked(
    autojump_clock: trio.testing.MockClock, otlp: Receiver
) -> None:
    async with open_hub() as hub:
        runner = HookRunner(hub)
        async with open_tracing(runner, sweep_interval=1.0) as tracing:
            runner.bind()
            tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
            tracker.start()
            tracker.add_run("crashed", status="running")
            tracker.add_stage("crashed", "work", "work")
            tracker.set_stage_status("crashed", "work", "running")
            tracker.add_run("alive", status="running")
            await trio.sleep(1.5)
            tracker.remove_run("crashed")  # a scheduler that forgets it: no ending event
            await trio.sleep(2.5)  # two sweeps see it absent
            statistics = tracing.statistics()
            assert statistics.vanished == 1
            assert statistics.open_runs == 1
    crashed = otlp.by_name("RUN crashed")
    assert crashed.attributes["workflow_hub.ended_by"] == "vanished"
    assert otlp.by_name("work").attributes["workflow_hub.ended_by"] == "vanished"
    alive = otlp.by_name("RUN alive")
    assert alive.attributes["workflow_hub.ended_by"] == "exporter_closed"
    # Nothing said these were finishing: each keeps the state it was last seen in.
    assert alive.attributes["cicd.pipeline.run.state"] == "executing"
    assert crashed.attributes["cicd.pipeline.run.state"] == "executing"
    assert alive.attributes["workflow_hub.status"] == "unknown"


async def test_a_run_first_seen_mid_flight_is_marked_and_still_ends(
    autojump_clock: trio.testing.MockClock, otlp: Receiver
) -> None:
    async with open_hub() as hub:
        runner = HookRunner(hub)
        async with open_tracing(runner) as tracing:
            runner.bind()
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", ())
            publisher.publish_lifecycle(stage_lifecycle("running"))
            await trio.testing.wait_all_tasks_blocked()
            assert tracing.statistics().first_seen_mid_flight == 1
    run = otlp.by_name("RUN run-1")
    assert run.attributes["workflow_hub.first_seen_mid_flight"] is True
    assert run.start == 1_000 * 1_000_000
    assert otlp.by_name("plan").parent_span_id == run.span_id
    assert {span.attributes["workflow_hub.ended_by"] for span in otlp.spans} == {"exporter_closed"}


async def test_a_run_and_its_nodes_first_seen_by_later_events_are_marked(
    autojump_clock: trio.testing.MockClock, otlp: Receiver
) -> None:
    """Issue 41: tracing that starts after a run began may first see it by a control request,
    and its nodes by their ends: each starts at first sight, marked, and nothing that ran is
    left without a span (a stage that was running when the run was killed included)."""
    async with open_hub() as hub:
        runner = HookRunner(hub)
        runner.bind()
        tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
        tracker.start()
        tracker.add_run("load-test", status="running")
        for stage in ("warm-up", "ramp-up"):
            tracker.add_stage("load-test", stage, stage)
            tracker.set_stage_status("load-test", stage, "running")
        await trio.testing.wait_all_tasks_blocked()  # dispatched, with no tracing yet
        async with open_tracing(runner) as tracing:
            await trio.sleep(1)
            tracker.request_control("load-test", "kill")
            tracker.set_stage_status("load-test", "warm-up", "completed")
            tracker.set_stage_status("load-test", "ramp-up", "skipped")
            tracker.set_run_status("load-test", "killed")
            await trio.testing.wait_all_tasks_blocked()
            assert tracing.statistics().first_seen_mid_flight == 3
    run = otlp.by_name("RUN load-test")
    assert run.attributes["workflow_hub.first_seen_mid_flight"] is True
    for stage in ("warm-up", "ramp-up"):
        span = otlp.by_name(stage)
        assert span.parent_span_id == run.span_id
        assert span.attributes["workflow_hub.first_seen_mid_flight"] is True
    assert otlp.by_name("ramp-up").attributes["workflow_hub.status"] == "skipped"
