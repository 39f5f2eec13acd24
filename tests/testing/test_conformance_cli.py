"""``workflow-hub conformance`` end to end, and the pytest plugin, each in a real subprocess.

The command runs the suite against ``python -m workflow_hub.testing.jsonl_adapter`` (our hub
behind the JSON-lines protocol) and against a broken adapter served the same way. Few scenarios
keep this quick; ``WORKFLOW_HUB_CONFORMANCE_EXAMPLES`` raises them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import trio

from tests.support.conformance import FORGETS_FENCED
from workflow_hub import Availability, Cursor, SnapshotFrame
from workflow_hub.testing.conformance import AdapterConfig, JsonLinesProcess

EXAMPLES = int(os.environ.get("WORKFLOW_HUB_CONFORMANCE_EXAMPLES", "40"))
PYTHON = shlex.quote(sys.executable)


PLUGIN_USER_TESTS = """
import pytest

from workflow_hub import DiagnosticKind
from workflow_hub.testing.conformance import HubAdapter


class ForgetsPublisherFenced:
    def __init__(self, config):
        self.inner = HubAdapter(config)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def diagnostics(self):
        diagnostics = await self.inner.diagnostics()
        return [d for d in diagnostics if d.kind is not DiagnosticKind.PUBLISHER_FENCED]


@pytest.fixture
def workflow_hub_adapter(request):
    return ForgetsPublisherFenced if "broken" in request.node.name else HubAdapter


@pytest.mark.workflow_hub_conformance(styles=("callback",))
def test_our_hub_conforms(workflow_hub_conformance):
    assert workflow_hub_conformance.report.examples == 7


def test_broken_hub_conforms(workflow_hub_conformance):
    pass


def test_unrelated():
    assert True
"""


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workflow_hub._cli", "conformance", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_passes_against_our_hub_over_json_lines() -> None:
    """The JSON-lines protocol round-trips every value; our hub agrees with the model (exit 0)."""
    adapter = f"{PYTHON} -m workflow_hub.testing.jsonl_adapter"
    result = conformance("--adapter", adapter, "--examples", str(EXAMPLES), "--seed", "7")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{EXAMPLES} scenarios" in result.stdout
    assert "agree with the reference model" in result.stdout
    assert "Seed 7" in result.stdout


def test_the_command_prints_the_shrunk_scenario_of_a_broken_adapter(tmp_path: Path) -> None:
    """A disagreement exits 1 with the numbered scenario and how to reproduce it."""
    script = tmp_path / "broken_adapter.py"
    script.write_text(FORGETS_FENCED)
    adapter = f"{PYTHON} {shlex.quote(str(script))}"
    result = conformance("--adapter", adapter, "--examples", "100", "--seed", "3")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "mismatch in the diagnostics (L3)" in result.stdout
    assert "expected: PublisherFenced at epoch-" in result.stdout
    assert "1. register_publisher() -> publisher#0" in result.stdout
    assert re.search(r"^Reproduce with: \S*workflow-hub conformance --adapter", result.stdout, re.M)
    assert "--seed 3" in result.stdout


def test_the_command_refuses_an_adapter_that_does_not_speak_the_protocol() -> None:
    """A command that cannot start, or answers nonsense, is a usage error (exit 2), not a run."""
    missing = conformance("--adapter", "no-such-workflow-hub-adapter --flag")
    assert missing.returncode == 2
    assert "cannot use the adapter" in missing.stderr
    echo = conformance("--adapter", f"{PYTHON} -c 'print(42)'", "--timeout", "5")
    assert echo.returncode == 2
    assert "cannot use the adapter" in echo.stderr


def test_the_pytest_plugin_runs_the_suite_as_a_test(tmp_path: Path) -> None:
    """The fixture runs the suite against the user's adapter; a disagreement fails that test."""
    (tmp_path / "test_user_hub.py").write_text(PLUGIN_USER_TESTS)
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "WORKFLOW_HUB_CONFORMANCE_EXAMPLES": "7",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "workflow_hub.testing._pytest_plugin",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            "-W",
            "error",
            "--conformance-seed",
            "3",
            "-q",
            str(tmp_path / "test_user_hub.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "1 failed, 2 passed" in output
    assert "FAILED test_user_hub.py::test_broken_hub_conforms" in output
    assert "mismatch in the diagnostics (L3)" in output
    assert "register_publisher() -> publisher#1" in output


IGNORES_SINCE = """
from workflow_hub.testing.conformance import HubAdapter, serve


class IgnoresSince:
    def __init__(self, config):
        self.inner = HubAdapter(config)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def observe(self, style, failing, since):
        return await self.inner.observe(style, failing, None)


serve(IgnoresSince)
"""


def test_the_command_holds_other_implementations_to_the_resume_rule(tmp_path: Path) -> None:
    """R2 over JSON lines: an adapter process that ignores ``since`` fails with a short script."""
    script = tmp_path / "ignores_since.py"
    script.write_text(IGNORES_SINCE)
    result = conformance(
        "--adapter", f"{PYTHON} {shlex.quote(str(script))}", "--examples", "100", "--seed", "3"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "since=" in result.stdout
    assert "lease.resumed" in result.stdout or "the frames of observer" in result.stdout


def test_since_and_resumed_travel_over_json_lines() -> None:
    """The protocol carries ``since`` to the child and ``resumed`` back (protocol 2)."""

    async def play() -> list[bool]:
        adapter = process(AdapterConfig(history_limit=2))
        await adapter.start()
        await adapter.register_publisher()
        cursor = await adapter.publish_snapshot(0, Availability.READY, ())
        assert cursor is not None
        await adapter.publish_removed(0, "a")
        resumed = [
            await adapter.observe("callback", False, cursor),
            await adapter.observe("stream", False, Cursor(epoch="elsewhere", revision=1)),
            await adapter.observe("callback", True, None),
        ]
        await adapter.settle()
        frames = await adapter.frames(0)
        assert [frame.kind for frame in frames] == ["removed"]
        await adapter.close()
        return resumed

    with JsonLinesProcess(f"{PYTHON} -m workflow_hub.testing.jsonl_adapter") as process:
        assert trio.run(play) == [True, False, False]


def test_the_json_lines_hello_says_which_adapters_take_a_detail() -> None:
    """C3 over the protocol: our adapter's ``hello`` lists the ``detail`` extension, so the kit
    sends ``publishSnapshot`` a ``detail`` and reads it back; the reference JavaScript hub
    (pre-C3) lists none and is never sent one."""
    why = "broker unreachable: ConnectionError: refused"

    async def play() -> SnapshotFrame:
        adapter = process(AdapterConfig(queue_limit=16, diagnostics_limit=16, history_limit=0))
        await adapter.start()
        await adapter.register_publisher()
        await adapter.publish_snapshot(0, Availability.RECOVERING, None, detail=why)
        now = await adapter.snapshot()
        await adapter.close()
        return now

    with JsonLinesProcess(f"{PYTHON} -m workflow_hub.testing.jsonl_adapter") as process:
        assert process.details
        assert trio.run(play).detail == why
    node = shutil.which("node")
    assert node is not None
    with JsonLinesProcess([node, str(Path(__file__).parents[1] / "js" / "source_hub.mjs")]) as js:
        assert not js.details


REENCODE = Path(__file__).parents[1] / "js" / "reencode.mjs"


def test_the_kit_passes_a_host_that_writes_numbers_the_javascript_way(tmp_path: Path) -> None:
    """Issue 12, item 11: our hub behind a real node process that re-encodes every JSON line
    with ``JSON.parse``/``JSON.stringify`` conforms. Numbers compare as IEEE doubles: JavaScript
    writes ``2.167957083685233e+16`` back as ``21679570836852330``, the same double."""
    node = shutil.which("node")
    assert node is not None, "node is needed for the cross-language test (see the Makefile)"
    changed = tmp_path / "changed.jsonl"
    inner = f"{PYTHON} -m workflow_hub.testing.jsonl_adapter"
    adapter = f"{shlex.quote(node)} {shlex.quote(str(REENCODE))} {inner}"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_hub._cli",
            "conformance",
            "--adapter",
            adapter,
            "--examples",
            "200",
            "--seed",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "REENCODE_CHANGED": str(changed)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agree with the reference model" in result.stdout
    # Not vacuous: JavaScript wrote floats beyond 2^53 as long digit strings, which Python reads
    # back as ints.
    assert re.search(r"[:\[,]-?\d{17,}[,}\]]", changed.read_text())
