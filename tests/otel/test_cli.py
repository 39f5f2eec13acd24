"""``workflow-hub otel URL`` as users run it: a real ``workflow-hub serve`` on loopback, the
command configured by the standard ``OTEL_*`` variables, the loopback OTLP receiver."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.otel.receiver import running_receiver
from tests.support.processes import owned_process

CLI = [sys.executable, "-m", "workflow_hub._cli"]


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
        env = _env(receiver.endpoint)
        with owned_process(
            [*CLI, "serve", "--port", "0", "--seed", "3"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        ) as server:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            result = subprocess.run(
                [*CLI, "otel", url, "--duration", "4", "--source", "staging"],
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
                check=False,
            )
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("otel: "), result.stdout
        assert " 0 failed, 0 dropped" in result.stdout
        spans = list(receiver.spans)
    assert spans
    assert {span.resource["service.name"] for span in spans} == {"served-demo"}
    runs = [span for span in spans if span.attributes["workflow_hub.span.kind"] == "run"]
    assert runs
    assert {span.attributes["workflow_hub.source"] for span in runs} == {"staging"}


def test_a_fleet_url_is_refused_in_one_line() -> None:
    result = subprocess.run(
        [*CLI, "otel", "redis://127.0.0.1:6379/0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "http://" in result.stderr
