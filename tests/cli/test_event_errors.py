"""A failed event's line says its error (C3, issue 39): what ``watch``, ``demo`` and ``serve``
print for a hook event, and the words the dashboard's feed uses (tests/dashboard/
test_dashboard_fold.py holds ``fold.js``'s ``describeEvent`` equal to these).

The error comes last, after the status (and a replay's mark): its type and message on one
line, every run of whitespace one space, at most ``EVENT_ERROR_MAX`` characters.
"""

from __future__ import annotations

import io

import attrs
import pytest

from tests.cli.test_demo_view import hook_event
from workflow_hub import (
    FailureDetail,
    LifecycleEvent,
    PromptTarget,
    RunTarget,
    StageTarget,
    ToolTarget,
)
from workflow_hub._cli._output import (
    EVENT_ERROR_MAX,
    PlainOutput,
    describe_event,
    event_error,
)

DEADLINE = FailureDetail(message="deadline passed", type="TimeoutError")


def failed_run(error: FailureDetail | None, action: str | None = None) -> LifecycleEvent:
    target = RunTarget(
        run_id="r1", previous_status="running", status="failed", error=error, action=action
    )
    event: LifecycleEvent = hook_event(target, "r1")
    return event


def test_a_failed_run_says_its_error() -> None:
    """C3: the error of a failed lifecycle target, type then message."""
    assert describe_event(failed_run(DEADLINE)) == (
        "run    r1: running → failed: TimeoutError: deadline passed"
    )


def test_a_failure_without_a_type_says_its_message_and_without_an_error_nothing() -> None:
    assert describe_event(failed_run(FailureDetail(message="disk full"))) == (
        "run    r1: running → failed: disk full"
    )
    assert describe_event(failed_run(None)) == "run    r1: running → failed"


@pytest.mark.parametrize(
    "target",
    [
        StageTarget(
            run_id="r1", stage_id="r1:deploy", stage_name="Deploy", status="failed", error=DEADLINE
        ),
        ToolTarget(
            run_id="r1", tool_node_id="fetch-1", tool_name="fetch", status="failed", error=DEADLINE
        ),
    ],
)
def test_a_failed_stage_or_tool_says_its_error(target: StageTarget | ToolTarget) -> None:
    line = describe_event(hook_event(target, "r1"))
    assert line.endswith(": failed: TimeoutError: deadline passed"), line


def test_the_error_comes_after_a_control_request_and_a_replay() -> None:
    event = failed_run(DEADLINE, action="kill")
    replayed = attrs.evolve(event, delivery="replay")
    assert describe_event(replayed) == (
        "run    r1: running → failed [kill requested] (replay): TimeoutError: deadline passed"
    )


def test_an_error_of_several_lines_reads_on_one() -> None:
    """A decoded message may hold line breaks and tabs (the contract bounds its length only):
    the line stays one line."""
    error = FailureDetail(
        message="  expected 200\n\tgot 503\r\n\x1c(retry later)  ", type="HTTP\nError"
    )
    assert event_error(error) == "HTTP Error: expected 200 got 503 (retry later)"
    assert "\n" not in describe_event(failed_run(error))


def test_a_long_error_is_cut_with_an_ellipsis() -> None:
    """Bounded: a 500-character message and a 200-character type show their first characters,
    the line ends with "…" and the error takes EVENT_ERROR_MAX characters."""
    error = FailureDetail(message="m" * 500, type="T" * 200)
    shown = event_error(error)
    assert len(shown) == EVENT_ERROR_MAX
    assert shown == "T" * (EVENT_ERROR_MAX - 1) + "…"
    line = describe_event(failed_run(FailureDetail(message="x" * 500, type="OSError")))
    assert line.endswith(": OSError: " + "x" * (EVENT_ERROR_MAX - 10) + "…")
    exact = FailureDetail(message="y" * EVENT_ERROR_MAX)
    assert event_error(exact) == "y" * EVENT_ERROR_MAX  # at the bound: nothing cut


def test_astral_characters_count_once() -> None:
    """A character beyond the BMP is one (JavaScript counts it by code point too)."""
    error = FailureDetail(message="\U0001f680" * 300)
    assert event_error(error) == "\U0001f680" * (EVENT_ERROR_MAX - 1) + "…"


def test_events_without_an_error_read_as_before() -> None:
    prompt = PromptTarget(run_id="r1", prompt_id="go", status="opened")
    assert describe_event(hook_event(prompt, "r1")) == "prompt go: opened"
    running = StageTarget(run_id="r1", stage_id="r1:a", stage_name="a", status="running")
    assert describe_event(hook_event(running, "r1")) == "stage  r1:a: running"


def test_the_plain_output_prints_the_same_line() -> None:
    """``watch``/``demo`` piped: ``hook`` then the event's line, its error included."""
    stream = io.StringIO()
    with PlainOutput(stream) as output:
        output.hook(failed_run(DEADLINE))
    assert stream.getvalue() == (
        "hook  run    r1: running → failed: TimeoutError: deadline passed\n"
    )
