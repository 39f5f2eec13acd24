"""The demo (issue 6): `workflow-hub demo` end to end, in JSON, plain and metrics modes.

The demo is a command, not an API: in-process runs import its internal module ``workflow_hub._cli._demo``.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import trio
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import owned_process
from workflow_hub import Frame, WorkflowEvent
from workflow_hub._cli._demo import add_arguments, play_demo
from workflow_hub._cli._output import PlainOutput
from workflow_hub.wire import loads

COMMAND = [sys.executable, "-m", "workflow_hub._cli", "demo"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def run_demo(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=timeout, env=ENV, check=False
    )


def test_json_output_is_wire_json_covering_every_frame_and_hook() -> None:
    """`--json --duration 3 --seed 1`: valid wire JSON lines, every frame kind and hook type."""
    result = run_demo("--json", "--duration", "3", "--seed", "1")
    assert result.returncode == 0, result.stderr
    kinds: set[str] = set()
    for line in result.stdout.splitlines():
        # One call decodes the mixed stream (issue 12): the discriminator says which it is.
        value = loads(Frame | WorkflowEvent, line)
        kinds.add(value.kind if "kind" in json.loads(line) else value.type)
    assert kinds == {
        "snapshot",
        "changed",
        "removed",
        "workflow_lifecycle",
        "workflow_stage_completed",
        "workflow_activity_changed",
        "workflow_heartbeat",
    }


def test_same_seed_gives_the_same_story() -> None:
    """`--seed` makes ids and epochs reproducible (timing jitter included)."""

    def story() -> list[str]:
        parser = __import__("argparse").ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args(["--duration", "1", "--seed", "7"])
        stream = io.StringIO()
        trio.run(play_demo, args, PlainOutput(stream))
        return [line for line in stream.getvalue().splitlines() if line.startswith("frame")]

    first = story()
    assert first
    assert first[0].split()[2] == story()[0].split()[2]  # the same first epoch


def test_plain_output_shows_every_state_of_the_table() -> None:
    """Without a TTY the demo prints plain lines; the script reaches every row it promises."""
    parser = __import__("argparse").ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--duration", "2", "--seed", "3"])
    stream = io.StringIO()
    trio.run(play_demo, args, PlainOutput(stream))
    text = stream.getvalue()
    for summary in (
        "working/executing",
        "working/retrying",
        "working/stopping",
        "blocked/awaiting_input",
        "blocked/manual_intervention",
        "idle/paused",
        "idle/quiescent",
        "!attention",
        "pause requested",
        "quit requested",
        "(replay)",
        "heartbeat",
    ):
        assert summary in text, summary
    # The last row of the table: a failed executor that ended needs attention, blocking nothing.
    assert "smoke-check idle/quiescent active=0 blocks=0 !attention" in text
    assert text.splitlines()[-1].startswith("frame snapshot")
    assert "unavailable" in text.splitlines()[-1]


def test_non_positive_duration_is_refused() -> None:
    result = run_demo("--duration", "0")
    assert result.returncode == 2
    assert "--duration" in result.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        sample.name + str(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_are_served_while_the_demo_runs() -> None:
    """`--metrics-port`: /metrics on loopback has live values of the demo's hub."""
    port = free_port()
    changed = "workflow_hub_frames_published_total[('kind', 'changed')]"
    with owned_process(
        [*COMMAND, "--json", "--duration", "4", "--seed", "2", "--metrics-port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    ) as process:
        assert process.stderr is not None
        assert "metrics at" in process.stderr.readline()
        samples: dict[str, float] = {}
        deadline = time.monotonic() + 10
        while samples.get(changed, 0) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            samples = scrape(port)
        assert samples[changed] > 0
        assert samples["workflow_hub_observers[]"] == 1
        assert samples["workflow_hub_availability[('state', 'ready')]"] == 1
        assert (
            samples["workflow_hub_hook_events_dispatched_total[('type', 'workflow_lifecycle')]"] > 0
        )
        assert process.wait(timeout=20) == 0


def test_ctrl_c_ends_the_demo_cleanly() -> None:
    """Ctrl-C (SIGINT) ends the demo early and cleanly, with exit code 0."""
    with owned_process(
        [*COMMAND, "--duration", "60", "--seed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    ) as process:
        assert process.stdout is not None
        process.stdout.readline()
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert time.monotonic() - started < 10
    assert "Traceback" not in err
    # It shut down like at the end of its time: the source went unavailable, and observers saw it.
    assert out.splitlines()[-1].startswith("frame snapshot")
    assert "unavailable" in out.splitlines()[-1]


def test_a_metrics_port_out_of_range_is_one_line_and_status_2() -> None:
    """Issue 12, item 6: no traceback, like the other bad arguments."""
    for port in ("70000", "-1"):
        result = run_demo("--metrics-port", port, "--duration", "1")
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [
            f"workflow-hub demo: argument --metrics-port: expected a port from 0 to 65535 "
            f"(0 picks a free one), got {port!r} (see 'workflow-hub demo --help')"
        ]


def test_a_metrics_port_in_use_is_one_line_and_status_1() -> None:
    """A port in use is a failure at run time (issue 24): status 1."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_demo("--json", "--metrics-port", str(port), "--duration", "1")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"workflow-hub demo: --metrics-port {port}: ")
    assert "in use" in lines[0]
    assert result.stdout == ""
