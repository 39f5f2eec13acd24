"""The demo's live view (issue 12, item 5): data is never markup, and 80x24 stays readable.

The view is the command's, not an API: these tests import the internal ``workflow_hub._cli._demo`` and
``workflow_hub._cli._rich``.
"""

from __future__ import annotations

import argparse
import io
from collections import deque
from typing import Any

import attrs
import trio
import trio.testing
from rich.console import Console

from workflow_hub import (
    Cursor,
    Frame,
    LifecycleEvent,
    NodePrompt,
    RootActivity,
    RootGraph,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageNode,
    StageTarget,
    WorkflowEvent,
)
from workflow_hub._cli._demo import add_arguments, play_demo
from workflow_hub._cli._output import describe_event, describe_running, short_ids
from workflow_hub._cli._rich import RichOutput
from workflow_hub._cli._rich import _now as now_cell
from workflow_hub.reporting import ActivityView

WIDTH, HEIGHT = 80, 24


def render(output: RichOutput, width: int = WIDTH, height: int = HEIGHT) -> list[str]:
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, color_system=None
    )
    console.print(output.renderable())
    return console.export_text().splitlines()


def hook_event(
    target: Any, run: str, kind: type[LifecycleEvent | StageCompletedEvent] = LifecycleEvent
) -> Any:
    """A live hook event of ``run`` (its own root) about ``target``."""
    return kind(
        event_id="evt-1",
        cursor=Cursor(epoch="e", revision=1),
        run_id=run,
        root_run_id=run,
        owner_session_id="demo",
        occurred_at=1,
        observed_at=1,
        delivery="live",
        target=target,
    )


def control_event(action: str, status: str) -> LifecycleEvent:
    target = RunTarget(run_id="load-test", status=status, action=action)
    event: LifecycleEvent = hook_event(target, "load-test")
    return event


def hostile_root() -> RootActivity:
    """A root whose data looks like rich markup and an emoji code."""
    prompt = NodePrompt(id="p", kind="confirm", message="[bold]ship[/bold] it?", created_at=1)
    stage = StageNode(
        id="nightly-build:package:",
        run_id="nightly-build",
        node_id="n",
        name="package",
        parent_ids=(),
        depth=0,
        status="awaiting_input",
        pending_prompt=prompt,
    )
    return RootActivity(
        root_run_id="nightly-build:package:",
        owner_session_id="demo",
        state="blocked",
        reason="awaiting_input",
        active_execution_count=0,
        actionable_block_count=1,
        needs_attention=True,
        graph=RootGraph(nodes=(stage,)),
    )


def output_with(roots: tuple[RootActivity, ...], lines: list[str]) -> RichOutput:
    events: deque[str] = deque(lines, maxlen=12)
    output = RichOutput(pane_lines=12, events=events)
    view = ActivityView()
    frame = SnapshotFrame(cursor=Cursor(epoch="e", revision=1), availability="ready", roots=roots)
    view.apply(frame)
    output.frame(frame, view)
    return output


def test_hook_text_and_root_data_are_shown_literally_never_as_markup() -> None:
    """``[quit requested]`` stays, ``nightly-build:package:`` is no emoji, ``[bold]`` is text."""
    lines = [
        describe_event(control_event(action, status))
        for action, status in (("quit", "running"), ("pause", "paused"), ("resume", "running"))
    ]
    assert all("requested]" in line for line in lines)
    shown = "\n".join(render(output_with((hostile_root(),), lines), width=120))
    for literal in ("[quit requested]", "[pause requested]", "[resume requested]"):
        assert literal in shown
    assert "nightly-build:package:" in shown
    assert "📦" not in shown
    assert "[bold]ship[/bold] it?" in shown


class _Recorder:
    """An Output that renders the live view at 80x24 after every update, as a terminal would."""

    def __init__(self) -> None:
        self.closed = trio.Event()
        self.rich = RichOutput(pane_lines=12, events=deque(maxlen=12))
        self.view: ActivityView | None = None
        self.updates = 0
        self.screens: list[tuple[list[str], tuple[RootActivity, ...]]] = []

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self._shoot()

    def frame(self, frame: Frame, view: ActivityView) -> None:
        self.view = view
        self.rich.frame(frame, view)  # not entered: it updates what the live view would draw
        self._maybe_shoot()

    def hook(self, event: WorkflowEvent) -> None:
        self.rich.hook(event)
        self._maybe_shoot()

    def _maybe_shoot(self) -> None:
        self.updates += 1
        if self.updates % 7 == 0:
            self._shoot()

    def _shoot(self) -> None:
        roots = self.view.roots if self.view is not None else ()
        self.screens.append((render(self.rich), roots))


def test_the_live_view_stays_readable_at_80_by_24() -> None:
    """A whole demo run drawn at 80x24: nothing wider or taller than the terminal, every column
    header whole, and each root's "now" text shown (wrapped, never cut to nothing)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    recorder = _Recorder()
    # On a virtual clock: the story's two seconds are the same frames however busy the machine.
    clock = trio.testing.MockClock(autojump_threshold=0)
    trio.run(
        play_demo, parser.parse_args(["--duration", "2", "--seed", "4"]), recorder, clock=clock
    )
    assert len(recorder.screens) > 10
    busiest = 0
    for lines, roots in recorder.screens:
        assert len(lines) <= HEIGHT, "\n".join(lines)
        assert max(len(line) for line in lines) <= WIDTH
        header = next(line for line in lines if line.split()[:2] == ["!", "root"])
        assert header.split() == ["!", "root", "state", "reason", "now", "act", "blk"]
        assert any("hook events" in line for line in lines)
        text = " ".join(" ".join(line.split()) for line in lines)
        for root in roots:
            assert root.root_run_id in text
            now = now_cell(root)
            # The first word of "now" is never cut (a wrapped cell keeps its words).
            if now:
                assert now.split()[0] in text, (now, "\n".join(lines))
                busiest += 1
    assert busiest > 0


# --- issue 24: the header, the pane at 200x50, the "now" column, a stale picture ---------------


def test_the_header_says_the_state_and_the_attention_once_and_no_cursor() -> None:
    working = RootActivity(
        root_run_id="build",
        owner_session_id="demo",
        state="working",
        reason="executing",
        active_execution_count=1,
        actionable_block_count=0,
        needs_attention=False,
    )
    failed = RootActivity(
        root_run_id="smoke",
        owner_session_id="demo",
        state="idle",
        reason="quiescent",
        active_execution_count=0,
        actionable_block_count=0,
        needs_attention=True,
    )
    header = render(output_with((working, failed), []))[0]
    # What needs a person leads; the settled failure reads "failed" (issue 39).
    assert header.split("  ", 1)[1].strip() == "1 needs attention: 1 failed · 1 working"
    assert header.count("working") == 1
    assert header.count("needs attention") == 1
    assert "epoch" not in header
    assert "revision" not in header


def test_the_hook_pane_takes_the_lines_a_tall_terminal_has() -> None:
    lines = [f"hook line {index}" for index in range(100)]
    output = RichOutput(pane_lines=12, events=deque(lines, maxlen=200))
    view = ActivityView()
    frame = SnapshotFrame(cursor=Cursor(epoch="e", revision=1), availability="ready", roots=())
    view.apply(frame)
    output.frame(frame, view)
    small = [line for line in render(output, 80, 24) if "hook line" in line]
    tall = [line for line in render(output, 200, 50) if "hook line" in line]
    assert len(render(output, 200, 50)) == 50
    assert len(tall) > 2 * len(small) > 0
    assert "hook line 99" in tall[-1]  # the newest at the bottom of the pane


def test_the_now_column_says_why_it_is_empty_without_a_graph() -> None:
    plain = RootActivity(
        root_run_id="build",
        owner_session_id="demo",
        state="working",
        reason="executing",
        active_execution_count=1,
        actionable_block_count=0,
        needs_attention=False,
    )
    text = " ".join(" ".join(render(output_with((plain,), []), 120, 24)).split())
    assert "include_graph=True" in text
    with_graph = " ".join(" ".join(render(output_with((hostile_root(),), []), 120, 24)).split())
    assert "include_graph=True" not in with_graph


def test_watch_marks_its_picture_stale_while_it_reconnects() -> None:
    output = output_with((hostile_root(),), [])
    output.connection = "live"
    assert "stale" not in " ".join(render(output, 120, 24))
    output.connection = "reconnecting (connection refused)"
    shown = " ".join(render(output, 120, 24))
    assert "connection: reconnecting (connection refused)" in shown
    assert "the picture below is stale" in shown


def test_the_watch_command_is_shown_whole_beside_the_dashboard_url() -> None:
    output = output_with((hostile_root(),), [])
    output.url = "http://127.0.0.1:43210"
    for width in (80, 200):
        lines = render(output, width, 24)
        assert any("dashboard at http://127.0.0.1:43210/" in line for line in lines)
        assert any("workflow-hub watch http://127.0.0.1:43210" in line for line in lines)


# --- root ids as long as Celery's (UUIDs), names that repeat, a server without hook events ---


def celery_like_roots() -> tuple[RootActivity, ...]:
    """Roots named by UUIDs, as ``workflow-hub celery`` shows them, with a long reason."""
    stages = tuple(
        StageNode(
            id=f"{index}",
            run_id="r",
            node_id=f"{index}",
            name="proj.step",
            parent_ids=(),
            depth=0,
            status="running",
        )
        for index in range(2)
    )
    return (
        RootActivity(
            root_run_id="441b5302-7d77-42bb-8afd-f57687fd4aca",
            owner_session_id="celery",
            state="working",
            reason="executing",
            active_execution_count=2,
            actionable_block_count=0,
            needs_attention=False,
            graph=RootGraph(nodes=stages),
        ),
        RootActivity(
            root_run_id="82b3aee6-27d0-497c-a4e0-69c3c285b87c",
            owner_session_id="celery",
            state="working",
            reason="automatic_continuation",
            active_execution_count=0,
            actionable_block_count=0,
            needs_attention=True,
            graph=RootGraph(nodes=()),
        ),
    )


def test_uuid_root_ids_leave_every_other_column_whole_at_80_and_200_columns() -> None:
    """Long root ids are cut, never the state, the reason, the counts or "now" (issue 24)."""
    for width, height, headers in (
        (80, 24, ["!", "root", "state", "reason", "now", "act", "blk"]),
        (200, 50, ["attention", "root", "state", "reason", "now", "active", "blocks"]),
    ):
        lines = render(output_with(celery_like_roots(), []), width, height)
        assert max(len(line) for line in lines) <= width
        header = next(line for line in lines if "root" in line.replace("┃", " ").split()[:2])
        assert header.replace("┃", " ").split() == headers, header
        text = "\n".join(lines)
        for whole in ("working", "executing", "continuing by itself", "proj.step x2"):
            assert whole in text, (whole, text)
        assert "441b5302" in text
        if width >= 200:
            assert "441b5302-7d77-42bb-8afd-f57687fd4aca" in text  # room for the whole id
        # Each root is one line: "now" fits, nothing wraps into a second line.
        rows = [line for line in lines if "441b5302" in line or "82b3aee6" in line]
        assert len(rows) == 2


def test_running_nodes_of_one_name_are_counted_once() -> None:
    assert describe_running(celery_like_roots()[0]) == "proj.step x2"


def test_a_server_without_hook_events_gets_a_line_not_an_empty_pane() -> None:
    output = output_with(celery_like_roots(), [])
    assert any("(no hook events yet)" in line for line in render(output))
    output.hooks_off("off (the server was started without a HookRunner)")
    lines = render(output)
    assert not any("(no hook events yet)" in line for line in lines)
    assert "hook events: off (the server was started without a HookRunner)" in lines[-1]
    assert len(lines) < HEIGHT  # the pane's lines are not drawn empty


def test_the_hook_pane_says_what_happened_to_a_uuid_named_task_at_80_columns() -> None:
    """A stage event of a Celery task (nested ``root:task`` ids of 73 characters) keeps its
    move on the line: the ids are cut to 8 characters each, not the end of the line."""
    root, task = "ccbd9c93-8016-47d5-a164-608e3915aca8", "d18f8889-ef01-4a79-b1e6-d79060f00000"
    target = StageTarget(
        run_id=root,
        stage_id=f"{root}:{task}",
        stage_name="proj.step",
        status="running",
        previous_status="pending",
    )
    event = hook_event(target, root)
    output = output_with(celery_like_roots(), [])
    output.hook(event)
    shown = "\n".join(render(output))
    assert "stage  proj.step ccbd9c93…:d18f8889…: pending → running" in shown
    # The line other outputs print (and the dashboard mirrors) keeps the ids whole.
    assert f"stage  proj.step {root}:{task}: pending → running" in describe_event(event)
    assert short_ids("build:compile") == "build:compile"


def test_a_hook_line_names_a_stage_with_a_generated_id_by_its_name_too() -> None:
    """The demo's stage ids are written (``nightly-build:lint``) and say what ran: the line
    shows the id alone. A Celery task's id is a UUID: its name comes first, then the id (the
    line says which task it was, not only which UUID)."""
    target = StageTarget(
        run_id="r", stage_id="nightly-build:lint", stage_name="lint", status="completed"
    )
    done = hook_event(target, "r", StageCompletedEvent)
    assert describe_event(done) == "stage completed  nightly-build:lint (live)"
    uuid = "d18f8889-ef01-4a79-b1e6-d79060f00000"
    celery = attrs.evolve(done, target=attrs.evolve(target, stage_id=uuid, stage_name="proj.step"))
    assert describe_event(celery) == f"stage completed  proj.step {uuid} (live)"
    assert describe_event(celery, short_ids) == "stage completed  proj.step d18f8889… (live)"


def test_a_count_wider_than_its_header_is_shown_whole() -> None:
    """ "act" is three columns wide; 1 000 running tasks still read 1000, never "1…"."""
    busy = attrs.evolve(celery_like_roots()[0], active_execution_count=1000)
    text = "\n".join(render(output_with((busy,), []), 80, 24))
    assert " 1000 " in text, text
