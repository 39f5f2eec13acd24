"""The demo's six workflows, traced in process and received by a loopback OTLP/HTTP receiver.

The real SDK, batch processor and OTLP exporter send protobuf over HTTP; the receiver decodes it
with ``opentelemetry-proto``. The scenario plays on trio's MockClock and the tracker reads that
clock, so every span's times are the script's (SPEC P6: the events' ``occurredAt``).
"""

from __future__ import annotations

from typing import Any, cast

import pytest
import trio
import trio.testing

from tests.otel.receiver import ReceivedSpan, Receiver
from workflow_hub import HookRunner, RunTracker, open_hub
from workflow_hub._cli._demo_script import run_scenario
from workflow_hub.otel import SCHEMA_URL, open_tracing

BASE_MS = 1_767_000_000_000.0
SCRIPT_SECONDS = 20.0


def _clock() -> float:
    return BASE_MS + trio.current_time() * 1000


async def _play(*, with_facts: bool) -> Any:
    async with open_hub() as hub:
        runner = HookRunner(hub)
        async with open_tracing(runner, source="demo", clock=_clock) as tracing:
            runner.bind()
            tracker = RunTracker(hub.register_publisher(), owner_session_id="demo", clock=_clock)
            facts = tracing.facts(tracker) if with_facts else tracker
            await run_scenario(cast(RunTracker, facts), duration=SCRIPT_SECONDS, seed=7)
            await trio.testing.wait_all_tasks_blocked()
        return tracing.statistics()


def _names(receiver: Receiver, parent: ReceivedSpan) -> set[str]:
    return {span.name for span in receiver.children(parent)}


def _within(child: ReceivedSpan, parent: ReceivedSpan) -> None:
    assert parent.start <= child.start <= child.end <= parent.end, (child.name, parent.name)


async def test_the_six_workflows_give_the_expected_span_trees(
    autojump_clock: trio.testing.MockClock, otlp: Receiver
) -> None:
    statistics = await _play(with_facts=True)
    spans = otlp.spans
    # Every span started ended once, and reached the backend (P6, issue 41).
    assert statistics.spans_started == statistics.spans_ended == len(spans)
    assert statistics.open_runs == 0
    assert statistics.export.exported == len(spans)
    assert statistics.export.dropped == statistics.export.failed == 0
    assert {span.span_id for span in spans} == {span.span_id for span in spans}
    assert len({span.span_id for span in spans}) == len(spans)
    assert set(otlp.content_types) == {"application/x-protobuf"}
    for span in spans:
        assert BASE_MS * 1e6 <= span.start <= span.end <= (BASE_MS + SCRIPT_SECONDS * 1000) * 1e6
        assert span.resource["service.name"] == "hub-under-test"
        assert span.scope == "workflow_hub.otel"
        assert span.schema_url == SCHEMA_URL

    roots = [span for span in spans if span.parent_span_id == ""]
    assert sorted(span.name for span in roots) == sorted(
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
    for root in roots:
        assert root.attributes["workflow_hub.source"] == "demo"
        assert root.attributes["cicd.pipeline.action.name"] == "RUN"
        assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
        assert len({s.trace_id for s in spans if s.trace_id == root.trace_id}) == 1

    # nightly-build: parallel stages, two tool shards, one of them failed and retried.
    build = otlp.by_name("RUN nightly-build")
    assert _names(otlp, build) == {
        "checkout",
        "compile",
        "lint",
        "test",
        "package",
        "pytest shard 1",
        "pytest shard 2",
    }
    assert build.attributes["cicd.pipeline.result"] == "success"
    for child in otlp.children(build):
        _within(child, build)
        assert child.status_code == 0
    test_stage = otlp.by_name("test")
    assert test_stage.attributes["workflow_hub.attempts"] == 2
    assert "workflow_hub.retry" in test_stage.event_names
    shards = [otlp.by_name("pytest shard 1"), otlp.by_name("pytest shard 2")]
    retried = [shard for shard in shards if shard.attributes["workflow_hub.attempts"] == 2]
    assert len(retried) == 1
    assert retried[0].event_names == ["workflow_hub.failed", "workflow_hub.retry"]
    failed_event = retried[0].events[0][2]
    assert failed_event["error.type"] == "AssertionError"
    assert retried[0].attributes["gen_ai.operation.name"] == "execute_tool"
    assert retried[0].attributes["cicd.pipeline.task.run.result"] == "success"

    # data-migration: a human wait under its stage, the child workflow under its host stage.
    migration = otlp.by_name("RUN data-migration")
    assert migration.attributes["workflow_hub.label.team"] == "data"
    assert migration.attributes["workflow_hub.label.env"] == "prod"
    approve = otlp.by_name("approve")
    (wait,) = otlp.children(approve)
    assert wait.name == "human wait"
    assert wait.attributes["workflow_hub.prompt.result"] == "answered"
    assert wait.end - wait.start >= 5_000_000_000  # asked at ~2 s, answered at ~8 s
    migrate = otlp.by_name("migrate")
    child = otlp.by_name("RUN verify-migration")
    assert child.parent_span_id == migrate.span_id
    assert child.trace_id == migration.trace_id
    assert "workflow_hub.parent_inferred" not in child.attributes
    assert _names(otlp, child) == {"row counts"}

    # release-train: deploy failed, then replayed and completed: one span, two attempts.
    deploy = otlp.by_name("deploy")
    assert deploy.attributes["workflow_hub.attempts"] == 2
    assert deploy.status_code == 0
    retry = next(event for event in deploy.events if event[0] == "workflow_hub.retry")
    assert retry[2]["workflow_hub.delivery"] == "replay"
    assert retry[2]["workflow_hub.error.message"].startswith("health check of web-3")

    # docs-site: paused and resumed by a user.
    docs = otlp.by_name("RUN docs-site")
    controls = [event[2] for event in docs.events if event[0] == "workflow_hub.control"]
    assert [(c["workflow_hub.run.action"], c["workflow_hub.attribution"]) for c in controls] == [
        ("pause", "user"),
        ("resume", "user"),
    ]

    # load-test: quit, then cancelled: ends with its action, not as an error.
    load = otlp.by_name("RUN load-test")
    assert load.attributes["cicd.pipeline.result"] == "cancellation"
    assert load.attributes["workflow_hub.run.action"] == "quit"
    assert load.status_code == 0
    assert otlp.by_name("ramp up").attributes["cicd.pipeline.task.run.result"] == "skip"

    # smoke-check: the probe and the run fail with the C3 error.
    smoke = otlp.by_name("RUN smoke-check")
    probe = otlp.by_name("probe")
    for failed in (smoke, probe):
        assert failed.status_code == 2
        assert failed.status_message.startswith("GET /healthz on staging: 503")
        assert failed.attributes["error.type"] == "ConnectionError"
    assert smoke.attributes["cicd.pipeline.result"] == "failure"
    assert smoke.attributes["workflow_hub.label.env"] == "staging"


async def test_without_the_schedulers_word_a_child_run_nests_under_the_running_stage(
    autojump_clock: trio.testing.MockClock, otlp: Receiver
) -> None:
    await _play(with_facts=False)
    child = otlp.by_name("RUN verify-migration")
    assert child.parent_span_id == otlp.by_name("migrate").span_id
    assert child.attributes["workflow_hub.parent_inferred"] is True


@pytest.mark.parametrize(
    "opt_in", ["gen_ai_latest_experimental", "http,gen_ai_latest_experimental"]
)
async def test_the_genai_opt_in_names_spans_the_genai_way(
    autojump_clock: trio.testing.MockClock,
    otlp: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    opt_in: str,
) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", opt_in)
    await _play(with_facts=True)
    names = {span.name for span in otlp.spans}
    assert "invoke_workflow nightly-build" in names
    assert {"execute_tool pytest shard 1", "execute_tool pytest shard 2"} <= names


async def test_a_persons_change_says_so_on_the_spans(
    autojump_clock: trio.testing.MockClock, otlp: Receiver
) -> None:
    """Issue 42's attribution reaches traces: a stage a person marked done ends with
    ``workflow_hub.attribution = user``; one that failed by a person's hand says so on its
    failure event and its span; one a person cleared (back to pending) says so on the status
    event, and its retry after that is the scheduler's; the run a person marked failed says so
    on its span. The scheduler's own outcomes carry no attribution."""
    async with open_hub() as hub:
        runner = HookRunner(hub)
        async with open_tracing(runner, source="airflow", clock=_clock) as tracing:
            runner.bind()
            tracker = RunTracker(hub.register_publisher(), owner_session_id="a", clock=_clock)
            tracker.start()
            tracker.add_run("dag/r1", status="running")
            for stage in ("marked", "cleared", "plain"):
                tracker.add_stage("dag/r1", stage, stage, status="running")
            await trio.sleep(1)
            tracker.set_stage_status("dag/r1", "marked", "completed", attribution="user")
            tracker.set_stage_status("dag/r1", "cleared", "failed", error="boom")
            tracker.set_stage_status("dag/r1", "cleared", "pending", attribution="user")
            tracker.set_stage_status("dag/r1", "cleared", "running")
            tracker.set_stage_status("dag/r1", "cleared", "failed", attribution="user")
            tracker.set_stage_status("dag/r1", "plain", "completed")
            await trio.sleep(1)
            tracker.set_run_status(
                "dag/r1", "failed", executor_ended=True, error="marked", attribution="user"
            )
            await trio.testing.wait_all_tasks_blocked()
            statistics = tracing.statistics()
    assert statistics.spans_started == statistics.spans_ended == 4
    spans = {span.name: span for span in otlp.spans}
    by = "workflow_hub.attribution"
    assert spans["marked"].attributes[by] == "user"
    assert by not in spans["plain"].attributes
    assert spans["RUN dag/r1"].attributes[by] == "user"
    cleared = spans["cleared"]
    assert cleared.attributes[by] == "user"
    assert [(name, attributes.get(by)) for name, _, attributes in cleared.events] == [
        ("workflow_hub.failed", None),
        ("workflow_hub.status_changed", "user"),
        ("workflow_hub.retry", None),
        ("workflow_hub.failed", "user"),
    ]
