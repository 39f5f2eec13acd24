"""Profiles: an implementation declares which parts of the contract it implements, and the kit
checks exactly those, says so, and lets nobody off by silence (issue 22).

The source profile is P1-P9, O1-O8, L1-L3 and K1-K2; resume is R1-R4; stream is O9; threads is
H1 (checked when the adapter offers a thread entry point; a JSON-lines adapter never does, so
there it is declared but never counted as checked).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from tests.support.conformance import FORGETS_FENCED
from workflow_hub import Cursor
from workflow_hub.testing.conformance import (
    PROFILES,
    AdapterConfig,
    ConformanceFailure,
    HubAdapter,
    JsonLinesError,
    JsonLinesProcess,
    Observe,
    Scenario,
    check_conformance,
    conformance_plan,
)
from workflow_hub.testing.strategies import scenarios

PYTHON = shlex.quote(sys.executable)


class IgnoresSince:
    """A hub without resuming: it starts every observer with a snapshot (no R2)."""

    def __init__(self, config: AdapterConfig) -> None:
        self.inner = HubAdapter(config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def observe(self, style: Any, failing: bool, since: Cursor | None) -> bool:
        return await self.inner.observe(style, failing, None)


class SourceOnly(IgnoresSince):
    """The same hub, honest about it: it declares the source profile only."""

    profiles = ("source",)


def test_a_silent_adapter_is_checked_for_every_profile() -> None:
    """An adapter that declares nothing is checked for everything the kit can check."""
    plan = conformance_plan(HubAdapter)
    assert plan.declared == PROFILES
    assert plan.profiles == PROFILES
    assert plan.styles == ("callback", "stream")
    assert 0 in plan.history_limits
    assert any(plan.history_limits)
    report = check_conformance(HubAdapter, max_examples=5, seed=1)
    assert report.profiles == PROFILES
    assert (report.examples, report.thread_examples) == (5, 5)


def test_an_adapter_without_resume_fails_while_it_declares_nothing() -> None:
    """R2: silence means every profile, so a hub without resuming is caught."""
    with pytest.raises(ConformanceFailure) as info:
        check_conformance(IgnoresSince, max_examples=200, seed=3)
    assert "since=" in str(info.value)
    assert info.value.profiles == ("source", "resume", "stream")


def test_an_adapter_that_declares_the_source_profile_passes_without_resume_or_streams() -> None:
    """The same hub declaring ``source`` is checked for P, O1-O8, L, K only, and passes."""
    plan = conformance_plan(SourceOnly)
    assert plan.profiles == ("source",)
    assert plan.styles == ("callback",)
    assert plan.history_limits == (0,)
    report = check_conformance(SourceOnly, max_examples=100, seed=3)
    assert report.profiles == ("source",)
    assert report.examples == 100


@settings(max_examples=50, deadline=None)
@given(scenario=scenarios(resume=False, styles=("callback",)))
def test_without_resume_no_observer_is_attached_since_a_cursor(scenario: Scenario) -> None:
    """R2 unchecked: the scenarios never pass ``since``."""
    for operation in scenario.operations:
        if isinstance(operation, Observe):
            assert operation.since is None
            assert operation.style == "callback"


def test_profiles_narrow_to_what_the_adapter_declares() -> None:
    """Asking for a subset is fine; asking for an undeclared profile is refused."""
    assert conformance_plan(HubAdapter, profiles=["stream", "source"]).profiles == (
        "source",
        "stream",
    )
    with pytest.raises(ValueError, match="does not declare resume"):
        conformance_plan(SourceOnly, profiles=["source", "resume"])
    with pytest.raises(ValueError, match="unknown profile 'replay'"):
        conformance_plan(HubAdapter, profiles=["source", "replay"])
    with pytest.raises(ValueError, match="'source' is required"):
        conformance_plan(HubAdapter, profiles=["resume"])


def test_history_limits_and_styles_still_narrow_from_python() -> None:
    """The Python options remain, and the plan says what they leave unchecked."""
    plan = conformance_plan(HubAdapter, history_limits=(0,), styles=("callback",))
    assert plan.profiles == ("source", "threads")
    report = check_conformance(HubAdapter, max_examples=3, seed=1, styles=("stream",))
    assert report.profiles == ("source", "resume", "stream", "threads")


def test_threads_is_checked_only_where_the_adapter_offers_threads() -> None:
    """H1: an adapter without a thread entry point (here: one whose methods are reached only
    through ``__getattr__``, as a JSON-lines process's are) declares threads, and the kit says
    it could not check it instead of counting it."""
    assert "[x] threads" in conformance_plan(HubAdapter).describe()
    plan = conformance_plan(IgnoresSince)
    assert "threads" in plan.declared
    assert "threads" not in plan.profiles
    assert "[?] threads" in plan.describe()
    assert "not checked: the adapter has no thread entry point" in plan.describe()


def test_a_failure_says_which_profiles_it_checked() -> None:
    """The report of a disagreement ends with the profiles checked."""
    with pytest.raises(ConformanceFailure) as info:
        check_conformance(IgnoresSince, max_examples=200, seed=3)
    message = str(info.value)
    assert "Profiles checked:" in message
    assert "[x] resume: R1-R4" in message


# --- the JSON-lines hello ---------------------------------------------------------------------

SERVE_SOURCE_ONLY = """
from workflow_hub.testing.conformance import HubAdapter, serve

serve(HubAdapter, profiles=("source",))
"""

RAW_HELLO = """
import json, sys

for line in sys.stdin:
    request = json.loads(line)
    answer = {ANSWER}
    answer["id"] = request["id"]
    print(json.dumps(answer), flush=True)
"""


def child(tmp_path: Path, name: str, text: str) -> str:
    script = tmp_path / name
    script.write_text(text)
    return f"{PYTHON} {shlex.quote(str(script))}"


def test_hello_carries_the_declaration(tmp_path: Path) -> None:
    """Protocol 3: ``hello`` answers the profiles ``serve`` was given; none means all."""
    with JsonLinesProcess(child(tmp_path, "source.py", SERVE_SOURCE_ONLY)) as process:
        assert process.profiles == ("source",)
    with JsonLinesProcess(f"{PYTHON} -m workflow_hub.testing.jsonl_adapter") as process:
        assert process.profiles == PROFILES


def test_an_adapter_that_refuses_hello_is_checked_for_everything(tmp_path: Path) -> None:
    """A protocol-2 adapter answers ``hello`` with an error: it declared nothing."""
    refuses = RAW_HELLO.replace("{ANSWER}", '{"ok": False, "error": "unknown op hello"}')
    with JsonLinesProcess(child(tmp_path, "old.py", refuses)) as process:
        assert process.profiles == PROFILES


def test_a_bad_declaration_is_a_protocol_error(tmp_path: Path) -> None:
    """A declaration without ``source``, or not a list, is refused."""
    for answer in ('{"ok": True, "profiles": ["resume"]}', '{"ok": True, "profiles": "source"}'):
        command = child(tmp_path, "bad.py", RAW_HELLO.replace("{ANSWER}", answer))
        with JsonLinesProcess(command) as process, pytest.raises(JsonLinesError):
            _ = process.profiles


# --- the command ------------------------------------------------------------------------------


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workflow_hub._cli", "conformance", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def reproduce_line(output: str) -> list[str]:
    """The printed reproduce command, as arguments of ``workflow_hub._cli``."""
    lines = [line for line in output.splitlines() if line.startswith("Reproduce with: ")]
    assert len(lines) == 1, output
    words = shlex.split(lines[0].removeprefix("Reproduce with: "))
    # The command as a shell finds it: by its name, or its path in the virtualenv (issue 36).
    assert Path(words[0]).name == "workflow-hub"
    assert words[1] == "conformance"
    return words[2:]


def failure_report(output: str) -> str:
    """The report of a failure, less the table of the implementation's epoch strings."""
    return "\n".join(line for line in output.splitlines() if not line.startswith("Epochs"))


def test_the_command_checks_what_it_is_told_and_says_so() -> None:
    """``--without`` leaves profiles out; the output lists them and the line to run again."""
    adapter = f"{PYTHON} -m workflow_hub.testing.jsonl_adapter"
    result = conformance(
        "--adapter", adapter, "--examples", "5", "--seed", "1", "--without", "resume"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[x] source:" in result.stdout
    assert "[ ] resume:" in result.stdout
    assert "[x] stream:" in result.stdout
    assert "for the profiles source, stream." in result.stdout
    assert "--profile source,stream,threads" in result.stdout


def test_the_command_refuses_a_profile_the_adapter_does_not_declare(tmp_path: Path) -> None:
    """Asking for resume of a source-only adapter is a usage error (exit 2), not a pass."""
    adapter = child(tmp_path, "source.py", SERVE_SOURCE_ONLY)
    result = conformance("--adapter", adapter, "--profile", "source,resume", "--examples", "2")
    assert result.returncode == 2
    assert "does not declare resume" in result.stderr
    unknown = conformance("--adapter", adapter, "--profile", "everything")
    assert unknown.returncode == 2
    assert "expected a comma-separated list of profiles" in unknown.stderr


def test_the_reproduce_line_carries_every_option_and_reproduces(tmp_path: Path) -> None:
    """The printed line keeps --max-steps, --timeout, --styles and the profiles, and running it
    reports the same failure (the same shrunk scenario, the same mismatch)."""
    adapter = child(tmp_path, "broken.py", FORGETS_FENCED)
    options = ["--examples", "60", "--seed", "5", "--max-steps", "12", "--timeout", "7"]
    first = conformance("--adapter", adapter, *options, "--styles", "callback")
    assert first.returncode == 1, first.stdout + first.stderr
    again = reproduce_line(first.stdout)
    for option in ("--max-steps 12", "--timeout 7", "--styles callback", "--seed 5"):
        assert option in shlex.join(again), again
    assert "--profile source,resume,stream,threads" in shlex.join(again)
    second = conformance(*again)
    assert second.returncode == 1, second.stdout + second.stderr
    assert "mismatch in the diagnostics (L3)" in second.stdout
    assert failure_report(second.stdout) == failure_report(first.stdout)


PLUGIN_USER_TESTS = """
import pytest

from workflow_hub.testing.conformance import HubAdapter


class SourceOnly(HubAdapter):
    profiles = ("source",)


@pytest.fixture
def workflow_hub_adapter(request):
    return SourceOnly if "source" in request.node.name else HubAdapter


def test_source_hub_conforms(workflow_hub_conformance):
    assert workflow_hub_conformance.report.profiles == ("source",)


@pytest.mark.workflow_hub_conformance(profiles=("source", "stream"))
def test_full_hub_conforms_without_resume(workflow_hub_conformance):
    assert workflow_hub_conformance.report.profiles == ("source", "stream")


def test_full_hub_conforms(workflow_hub_conformance):
    assert "threads" in workflow_hub_conformance.report.profiles
"""


def test_the_pytest_plugin_checks_the_declared_profiles_and_says_so(tmp_path: Path) -> None:
    """The fixture checks what the adapter declares (or the marker's subset) and the session
    summary lists the profiles each test checked."""
    (tmp_path / "test_user_hub.py").write_text(PLUGIN_USER_TESTS)
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "WORKFLOW_HUB_CONFORMANCE_EXAMPLES": "5",
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
    assert result.returncode == 0, output
    assert "workflow-hub conformance profiles" in output
    assert "test_user_hub.py::test_source_hub_conforms: checked source" in output
    assert "test_full_hub_conforms_without_resume: checked source, stream" in output
    assert "test_full_hub_conforms: checked source, resume, stream, threads" in output
