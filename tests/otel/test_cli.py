"""``workflow-hub otel URL`` as users run it: a real ``workflow-hub serve`` on loopback, the
command configured by the standard ``OTEL_*`` variables, the loopback OTLP receiver."""

from __future__ import annotations

import os
import subprocess
import uuid

from tests.otel.commands import CLI, otel_against_served_demo
from tests.otel.receiver import running_receiver
from tests.support.processes import owned_process
from tests.support.redis_server import RedisServer, free_port


def _env(endpoint: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "served-demo",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }


def test_otel_sends_a_served_hubs_runs_to_the_backend() -> None:
    with running_receiver() as receiver:
        result = otel_against_served_demo(_env(receiver.endpoint), "--source", "staging")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("otel: "), result.stdout
        assert " 0 failed, 0 dropped" in result.stdout
        spans = list(receiver.spans)
    assert spans
    assert {span.resource["service.name"] for span in spans} == {"served-demo"}
    runs = [span for span in spans if span.attributes["workflow_hub.span.kind"] == "run"]
    assert runs
    assert {span.attributes["workflow_hub.source"] for span in runs} == {"staging"}


def test_otel_sends_every_source_of_a_fleet_to_the_backend(redis_server: RedisServer) -> None:
    """A fleet as SOURCE: two ``serve --redis`` schedulers mirrored into a real redis-server,
    each run's span carrying its source's name."""
    prefix = f"otel-cli-{uuid.uuid4().hex[:8]}"
    with running_receiver() as receiver:
        env = _env(receiver.endpoint)
        with owned_process(
            [*CLI, "otel", redis_server.url, "--prefix", prefix, "--duration", "8"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        ) as tracer:
            schedulers = [
                [
                    *(*CLI, "serve", "--redis", redis_server.url, "--prefix", prefix),
                    *("--source", name, "--no-http", "--duration", "5", "--seed", "3"),
                ]
                for name in ("sched-1", "sched-2")
            ]
            with owned_process(schedulers[0], env=env), owned_process(schedulers[1], env=env):
                stdout, stderr = tracer.communicate(timeout=60)
        assert tracer.returncode == 0, stderr
        assert stdout.startswith("otel: "), stdout
        assert " 0 failed, 0 dropped" in stdout
        spans = list(receiver.spans)
    runs = [span for span in spans if span.attributes["workflow_hub.span.kind"] == "run"]
    assert {span.attributes["workflow_hub.source"] for span in runs} == {"sched-1", "sched-2"}


def test_a_fleet_url_with_http_options_is_refused_in_one_line() -> None:
    result = subprocess.run(
        [*CLI, "otel", "redis://127.0.0.1:6379/0", "--token", "t"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "--token" in result.stderr


def test_a_backend_that_is_down_is_said_once_and_the_lost_spans_end_in_failure() -> None:
    """Every span is accounted for in the summary (those still queued when the command stopped
    are "not sent"); the SDK's line per retry is shown once per kind; exit 1 (a user trial
    found a summary that did not add up, a terminal full of retries, and exit 0)."""
    result = otel_against_served_demo(_env(f"http://127.0.0.1:{free_port()}/v1/traces"))
    assert result.returncode == 1, result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    counts = dict(
        (part.split()[1], int(part.split()[0]))
        for part in summary.removeprefix("otel: ").split(", ")
    )
    assert counts["spans"] > 0
    assert counts["exported"] == 0
    assert counts["failed"] + counts["dropped"] + counts.get("not", 0) == counts["spans"]
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 5, result.stderr
    assert "did not reach" in lines[-1]


def test_a_hub_not_up_yet_is_waited_for_and_one_never_reached_fails() -> None:
    result = subprocess.run(
        [*CLI, "otel", f"http://127.0.0.1:{free_port()}", "--duration", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(f"http://127.0.0.1:{free_port()}/v1/traces"),
        check=False,
    )
    assert result.returncode == 1
    first, last = result.stderr.strip().splitlines()
    assert "connection refused" in first
    assert "following it once it answers" in first
    assert "never reached" in last


def test_an_unknown_host_ends_the_command_at_once() -> None:
    result = subprocess.run(
        [*CLI, "otel", "not a url", "--duration", "30"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "workflow-hub otel: cannot connect to not a url: unknown host 'not a url'"
    ]
