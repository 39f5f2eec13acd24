"""``watch`` leads with what needs a person (issue 39): the dashboard's words, a legend, a header
broken only between phrases, room for a question, failures with their error, roots ordered
attention first (saying how many did not fit), labels when there is room.

The view is the command's, not an API: these tests import ``workflow_hub._cli``'s internals and
draw the screen on a console of their own, as tests/cli/test_demo_view.py does; test_tmux.py
draws it in a real tmux.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import deque
from typing import Any

import attrs
import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tests.cli.test_demo_view import hook_event, output_with, render
from tests.support.builders import root_in, stage_node
from tests.support.dashboard import DASHBOARD, require_program
from workflow_hub import (
    Cursor,
    FailureDetail,
    NodePrompt,
    Reason,
    RootActivity,
    RootGraph,
    SnapshotFrame,
    StageNode,
    StageTarget,
)
from workflow_hub._cli import _words
from workflow_hub._cli._output import describe_event, root_attention
from workflow_hub._cli._rich import _PANE_MIN_LINES, RichOutput, _phrases
from workflow_hub.reporting import ActivityView
from workflow_hub.wire import to_wire


def root(
    name: str,
    state: str,
    reason: str,
    *,
    attention: bool = False,
    nodes: tuple[StageNode, ...] | None = None,
    labels: dict[str, str] | None = None,
) -> RootActivity:
    return root_in(name, state, reason, attention=attention, nodes=nodes, labels=labels, owner="s")


QUESTION = "Apply 42 schema changes to production?"
ERROR = FailureDetail(message="expected 200, got 503", type="AssertionError")


def on_call_roots() -> tuple[RootActivity, ...]:
    """Published in the worst order: the idle first, the roots that need a person last."""
    prompt = NodePrompt(id="p", kind="confirm", message=QUESTION, created_at=1)
    return (
        root("docs-site", "idle", "paused"),
        root(
            "load-test", "working", "executing", nodes=(stage_node("load-test", "ramp", "running"),)
        ),
        root(
            "nightly-build",
            "working",
            "retrying",
            nodes=(stage_node("nightly-build", "pytest", "running"),),
            labels={"team": "infra", "env": "ci"},
        ),
        root(
            "smoke-check",
            "idle",
            "quiescent",
            attention=True,
            nodes=(stage_node("smoke-check", "probe", "failed", error=ERROR),),
            labels={"team": "web"},
        ),
        root("release-train", "blocked", "manual_intervention", attention=True, nodes=()),
        root(
            "data-migration",
            "blocked",
            "awaiting_input",
            attention=True,
            nodes=(stage_node("data-migration", "apply", "awaiting_input", pending_prompt=prompt),),
        ),
    )


def flat(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def table_rows(lines: list[str]) -> list[str]:
    """The first cell (after the flag) of each row of the table: the root ids, in order."""
    names = {r.root_run_id for r in on_call_roots()}
    found = []
    for line in lines:
        for word in line.replace("│", " ").replace("┃", " ").split()[:2]:
            if word in names:
                found.append(word)
    return found


def test_reasons_read_as_the_dashboard_writes_them() -> None:
    """The terminal's words are views.js's WORDS, reason by reason (run under node)."""
    node = require_program("node", "WORKFLOW_HUB_NODE")
    script = (
        "const v = require(process.argv[1]);"
        "const reasons = JSON.parse(process.argv[2]);"
        "console.log(JSON.stringify(Object.fromEntries(reasons.map(r => [r, v.words(r)]))));"
    )
    reasons = [member.value for member in Reason]
    result = subprocess.run(
        [node, "-e", script, str(DASHBOARD / "views.js"), json.dumps(reasons)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(result.stdout) == {reason: _words.words(reason) for reason in reasons}
    assert set(_words.REASON_WORDS) == set(reasons)


def test_why_a_root_needs_a_person_is_the_dashboards_when_it_says_it() -> None:
    """views.js's attentionOf, shownState and headline (the dashboard's, issue 39) give what the
    terminal gives, root by root; skipped while the page has none of them."""
    node = require_program("node", "WORKFLOW_HUB_NODE")
    script = (
        "const v = require(process.argv[1]);"
        "if (!v.attentionOf) { console.log('null'); process.exit(0); }"
        "const roots = JSON.parse(process.argv[2]);"
        "console.log(JSON.stringify({why: roots.map(v.attentionOf),"
        " state: roots.map(v.shownState), headline: v.headline(roots).text}));"
    )
    roots = on_call_roots()
    result = subprocess.run(
        [node, "-e", script, str(DASHBOARD / "views.js"), json.dumps([to_wire(r) for r in roots])],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    page = json.loads(result.stdout)
    if page is None:
        pytest.skip("this views.js says no attentionOf (the dashboard's issue 39 work)")
    assert page["why"] == [root_attention(r) for r in roots]
    assert page["state"] == [_words.shown_state(r.state, r.needs_attention) for r in roots]
    assert page["headline"] == _words.headline(root_attention(r) for r in roots)


def test_80_by_24_shows_words_a_legend_and_no_raw_values() -> None:
    lines = render(output_with(on_call_roots(), []), 80, 24)
    assert len(lines) <= 24
    assert max(map(len, lines)) <= 80
    text = flat(lines)
    for raw in ("manual_intervention", "awaiting_input", "quiescent"):
        assert raw not in text, raw
    for words in ("needs intervention", "waiting for input", "retrying", "paused"):
        assert words in text, words
    legend = next(line for line in lines if line.startswith("! needs attention"))
    assert "act: running" in legend
    assert "blk: blocks to act on" in legend


def test_a_settled_failure_reads_failed_with_its_stage_and_error() -> None:
    for width in (80, 200):
        lines = render(output_with(on_call_roots(), []), width, 24)
        row = next(index for index, line in enumerate(lines) if "smoke-check" in line)
        assert "failed" in lines[row].replace("│", " ").split()
        assert "idle" not in lines[row]
        assert "nothing to do" not in lines[row]
        # At 80 columns the error wraps in its column; its words are all there, in order.
        shown = flat(lines[row : row + 3])
        said = "failed at probe: AssertionError: expected 200, got 503"
        if width == 200:
            assert said in shown
        else:
            assert re.search(".*".join(map(re.escape, said.split())), shown), shown


def test_roots_that_need_a_person_come_first_then_working_then_idle() -> None:
    lines = render(output_with(on_call_roots(), []), 200, 50)
    assert table_rows(lines) == [
        "smoke-check",
        "release-train",
        "data-migration",
        "load-test",
        "nightly-build",
        "docs-site",
    ]


def test_the_header_leads_with_attention_and_breaks_only_between_phrases() -> None:
    lines = render(output_with(on_call_roots(), []), 80, 24)
    header = lines[: next(i for i, line in enumerate(lines) if line.split()[:2] == ["!", "root"])]
    assert flat(header) == (
        "workflow-hub demo 3 need attention: 1 waiting for input, 1 needs intervention, "
        "1 failed at probe · 2 working"
    )
    phrases = ["3 need attention:", "1 waiting for input", "1 needs intervention"]
    phrases += ["1 failed at probe", "2 working"]
    for phrase in phrases:
        assert any(phrase in line for line in header), (phrase, header)
    for line in header:
        assert not line.rstrip().endswith(("·", " 1", " 2", " 3")), line


def test_a_phrase_that_fills_the_line_to_its_last_column_keeps_its_comma() -> None:
    """Seen at 80 columns against a live Airflow: "2 failed at fail_task" ended in column 80,
    its comma went to column 81, and the terminal moved "fail_task," to a line of its own.
    A phrase fits only with its comma; the line breaks between phrases, never inside one."""
    title = Text("workflow-hub watch  ", style="bold")
    phrases = [
        ("4 need attention:", " ", "bold red"),
        ("1 waiting for input", ", ", "bold red"),
        ("2 failed at fail_task", ", ", "bold red"),
        ("1 failed at skip_operator_1", " · ", "bold red"),
        ("2 working", " · ", ""),
    ]
    text = _phrases(title, phrases, 80)
    console = Console(width=80, record=True, force_terminal=False)
    console.print(text)
    lines = console.export_text().rstrip("\n").split("\n")
    assert lines == [
        "workflow-hub watch  4 need attention: 1 waiting for input,",
        "2 failed at fail_task, 1 failed at skip_operator_1 · 2 working",
    ]


def test_a_question_gets_room_before_the_reason_does() -> None:
    """At 80 columns the question takes at most two lines (it took four, beside a reason
    column wide enough for "manual_intervention")."""
    lines = render(output_with(on_call_roots(), []), 80, 24)
    first = next(index for index, line in enumerate(lines) if "Apply" in line)
    last = next(index for index, line in enumerate(lines) if "production?" in line)
    assert "data-migration" in lines[first]
    assert last - first <= 1, "\n".join(lines)
    assert re.search(".*".join(QUESTION.split()), flat(lines[first : last + 1]))


class _CountedTables(RichOutput):
    """The live view, counting the tables it laid out (each is a render of the whole table)."""

    tables = 0

    def _table(self, roots: Any, *, wide: bool, width: int) -> Table:
        self.tables += 1
        return super()._table(roots, wide=wide, width=width)


@pytest.mark.parametrize(("width", "height"), [(80, 24), (200, 50)])
def test_a_screen_of_roots_that_do_not_fit_is_laid_out_in_one_try(width: int, height: int) -> None:
    """Issue 38: the first guess of how many roots fit counts the footer's lines (two at 80
    columns: how many are hidden, and the legend), so a redraw renders the table once, not
    twice (a watch's redraws were most of its CPU)."""
    roots = tuple(
        root(
            f"worker-{index:03}",
            "working",
            "executing",
            nodes=(stage_node(f"worker-{index:03}", "step", "running"),),
        )
        for index in range(120)
    )
    events: deque[str] = deque(maxlen=12)
    output = _CountedTables(pane_lines=12, events=events)
    view = ActivityView()
    frame = SnapshotFrame(cursor=Cursor(epoch="e", revision=1), availability="ready", roots=roots)
    view.apply(frame)
    output.frame(frame, view)
    lines = render(output, width, height)
    assert output.tables == 1
    assert len(lines) <= height
    text = flat(lines)
    shown = sum(1 for r in roots if re.search(rf"\b{r.root_run_id}\b", text))
    assert f"{len(roots) - shown} more not shown" in text
    # As many rows as the screen holds: the hook pane below has only its least height.
    pane = len(lines) - next(i for i, line in enumerate(lines) if "hook events" in line)
    assert pane == _PANE_MIN_LINES


def test_roots_that_do_not_fit_are_counted_and_never_those_that_need_a_person() -> None:
    many = [root(f"worker-{index:02}", "working", "executing") for index in range(30)]
    many += [root(f"sleeper-{index:02}", "idle", "quiescent") for index in range(10)]
    roots = (*many, *on_call_roots())
    lines = render(output_with(roots, []), 80, 24)
    assert len(lines) <= 24
    text = flat(lines)
    for name in ("smoke-check", "release-train", "data-migration"):
        assert name in text
    shown = sum(1 for r in roots if re.search(rf"\b{r.root_run_id}\b", text))
    hidden = len(roots) - shown
    assert hidden > 0
    working = sum(1 for r in roots if r.state == "working" and r.root_run_id not in text)
    idle = hidden - working
    assert f"{hidden} more not shown ({working} working, {idle} idle)" in text
    assert any("hook events" in line for line in lines)  # the pane keeps its lines


def test_labels_are_shown_when_there_is_room() -> None:
    wide = flat(render(output_with(on_call_roots(), []), 200, 50))
    assert "team:infra env:ci" in wide
    assert "team:web" in wide
    narrow = flat(render(output_with(on_call_roots(), []), 80, 24))
    assert "team:infra" not in narrow


def test_a_hook_line_of_a_failure_says_its_error() -> None:
    target = StageTarget(
        run_id="smoke-check",
        stage_id="smoke-check:probe",
        stage_name="probe",
        status="failed",
        previous_status="running",
        error=ERROR,
    )
    event = hook_event(target, "smoke-check")
    # The dashboard's feed (fold.js's describeEvent) says the same (tests/dashboard).
    assert describe_event(event) == (
        "stage  smoke-check:probe: running → failed: AssertionError: expected 200, got 503"
    )
    output = output_with(on_call_roots(), [])
    output.hook(event)
    assert "failed: AssertionError: expected 200, got 503" in flat(render(output, 120, 30))


def test_a_failure_that_needs_a_person_before_a_retry_that_does_not() -> None:
    """A failed tool of a retrying root is no one's problem yet: its row says what runs."""
    retrying = attrs.evolve(
        on_call_roots()[2],
        graph=RootGraph(
            nodes=(
                stage_node("nightly-build", "shard-1", "failed", error=ERROR),
                stage_node("nightly-build", "pytest", "running"),
            )
        ),
    )
    assert root_attention(retrying) == ""
    text = flat(render(output_with((retrying,), []), 120, 24))
    assert "pytest" in text
    assert "AssertionError" not in text
