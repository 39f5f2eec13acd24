"""``watch`` at production size (issue 38): many roots published oldest idle first, ids that are
Celery task UUIDs. The roots that need a person and the working ones are on screen at 80x24 and
200x50, a line counts exactly the roots that did not fit, and a root whose id is a UUID reads
with its task's name.

The screen is drawn on a console of its own, as tests/cli/test_watch_attention.py does;
test_tmux.py draws it in a real tmux.
"""

from __future__ import annotations

import io
import uuid

import attrs
import pytest

from tests.cli.test_demo_view import output_with, render
from workflow_hub import FailureDetail, RootActivity, RootGraph, SnapshotFrame, StageNode
from workflow_hub._cli._output import (
    PlainOutput,
    fit_root_name,
    root_name,
    root_name_room,
    short_ids,
)
from workflow_hub._contract import Cursor
from workflow_hub.reporting import ActivityView


def task_root(name: str, state: str, reason: str, *, failed: bool = False) -> RootActivity:
    """A Celery-shaped root: its id the first task's UUID, that task its root run's stage."""
    task_id = str(uuid.uuid4())
    status = "failed" if failed else ("running" if state == "working" else "completed")
    node = StageNode(
        id=f"{task_id}:{task_id}",
        run_id=task_id,
        node_id=task_id,
        name=name,
        parent_ids=(),
        depth=0,
        status=status,
        error=FailureDetail(message="no route to host", type="OSError") if failed else None,
    )
    return RootActivity(
        root_run_id=task_id,
        owner_session_id="celery",
        state=state,
        reason=reason,
        active_execution_count=1 if state == "working" else 0,
        actionable_block_count=0,
        needs_attention=failed,
        graph=RootGraph(nodes=(node,)),
    )


def production_roots() -> tuple[RootActivity, ...]:
    """Sixty finished roots published first (the oldest), then the one working, then the one
    that failed: the order a hub that ran all day publishes them in."""
    idle = [task_root("reports.nightly_export", "idle", "quiescent") for _ in range(60)]
    working = task_root("billing.settle_invoices", "working", "executing")
    failed = task_root("mail.send_digest", "idle", "quiescent", failed=True)
    return (*idle, working, failed)


def flat(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


@pytest.mark.parametrize(("width", "height"), [(80, 24), (200, 50)])
def test_the_failed_and_the_working_root_are_on_screen_and_the_rest_counted(
    width: int, height: int
) -> None:
    """C3: what needs a person, then what works, then the idle; a line says how many roots
    did not fit, and of which kind, exactly."""
    roots = production_roots()
    lines = render(output_with(roots, []), width, height)
    assert len(lines) <= height
    text = flat(lines)
    assert "mail.send_digest" in text
    assert "billing.settle" in text  # cut with an ellipsis at 80 columns, whole at 200
    # An idle root's name is in its root cell only ("now" is empty for it): one line each.
    idle_shown = sum(1 for line in lines if "nightly_export" in line)
    hidden = 60 - idle_shown
    assert 0 < hidden < 60
    assert f"{hidden} more not shown ({hidden} idle)" in text
    # The order: the failure, the working root, then the idle ones.
    table = next(index for index, line in enumerate(lines) if " state " in line)
    failed_row = next(i for i, line in enumerate(lines) if i > table and " failed " in line)
    working_row = next(i for i, line in enumerate(lines) if i > table and " working " in line)
    idle_rows = [index for index, line in enumerate(lines) if "nightly_export" in line]
    assert table < failed_row < working_row < idle_rows[0]


def test_a_root_whose_id_is_a_uuid_reads_with_its_tasks_name() -> None:
    """The root column says the task's name, then its UUID: whole where there is room, its
    first 8 characters where the name leaves too little for the whole."""
    working = task_root("billing.settle_invoices", "working", "executing")
    wide = flat(render(output_with((working,), []), 200, 50))
    assert f"billing.settle_invoices {working.root_run_id}" in wide
    assert root_name(working, short_ids) == (f"billing.settle_invoices {working.root_run_id[:8]}…")
    narrow = flat(render(output_with((working,), []), 80, 24))
    assert "billing.settle" in narrow.split(" now ")[1]  # in its row, not only the header


def test_a_written_root_id_reads_whole_and_alone() -> None:
    written = RootActivity(
        root_run_id="customer-onboarding-flow",
        owner_session_id="s",
        state="idle",
        reason="quiescent",
        active_execution_count=0,
        actionable_block_count=0,
        needs_attention=False,
        graph=RootGraph(nodes=()),
    )
    assert root_name(written) == "customer-onboarding-flow"


def test_a_plain_line_names_a_uuid_root_and_keeps_its_whole_id() -> None:
    """A log is searched for the whole id; the task's name says what it was."""
    failed = task_root("mail.send_digest", "idle", "quiescent", failed=True)
    stream = io.StringIO()
    view = ActivityView()
    frame = SnapshotFrame(cursor=Cursor(epoch="e", revision=1), availability="ready", roots=())
    view.apply(frame)
    from workflow_hub import ChangedFrame

    changed = ChangedFrame(cursor=Cursor(epoch="e", revision=2), root=failed)
    view.apply(changed)
    with PlainOutput(stream) as output:
        output.frame(changed, view)
    assert f"{failed.root_run_id} (mail.send_digest) idle/quiescent" in stream.getvalue()


def test_at_80_columns_a_task_name_keeps_its_tail_and_the_id_gives_way() -> None:
    """Issue 38: a Celery root (its id a UUID, its task ``proj.tasks.resize_image``) reads at
    80x24 as the task's last part and the id's first characters (``…resize_image 3f2a``), not
    ``proj.tasks.resi…``: the id is shortened first, the name keeps its tail, and two roots
    of the same task stay apart."""
    first = task_root("proj.tasks.resize_image", "working", "executing")
    second = task_root("proj.tasks.resize_image", "idle", "quiescent", failed=True)
    lines = render(output_with((first, second), []), 80, 24)
    assert len(lines) <= 24
    assert all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    assert "proj.tasks.resi…" not in text
    for root in (first, second):
        assert f"…resize_image {root.root_run_id[:4]}" in text, text
    # The whole name where there is room, with 8 characters of the id, then the whole id.
    assert fit_root_name(first, 40) == f"proj.tasks.resize_image {first.root_run_id[:8]}"
    assert fit_root_name(first, 28) == f"proj.tasks.resize_image {first.root_run_id[:4]}"
    assert fit_root_name(first, 18) == f"…resize_image {first.root_run_id[:4]}"
    assert fit_root_name(first, 12) == f"…_image {first.root_run_id[:4]}"
    assert fit_root_name(first, 80) == root_name(first)
    assert root_name_room(first) == len("…resize_image 3f2a")


def test_a_written_id_is_never_shortened_as_a_generated_one() -> None:
    """A written id keeps its own words (the column cuts it); a UUID without a name is cut to
    its first 8 characters."""
    written = RootActivity(
        root_run_id="team-a:nightly-build:deploy",
        owner_session_id="s",
        state="idle",
        reason="quiescent",
        active_execution_count=0,
        actionable_block_count=0,
        needs_attention=False,
    )
    assert fit_root_name(written, 12) == written.root_run_id
    anonymous = attrs.evolve(written, root_run_id=str(uuid.uuid4()))
    assert fit_root_name(anonymous, 12) == f"{anonymous.root_run_id[:8]}…"
    assert root_name_room(written) == root_name_room(anonymous) == 0  # the column's own rule


@pytest.mark.parametrize(("width", "height"), [(80, 24), (200, 50)])
def test_an_unknown_source_says_why_in_the_header_and_whole_under_the_table(
    width: int, height: int
) -> None:
    """C3 (issue 38): a recovering source's detail follows "activity unknown:" in the header,
    on a line of its own cut to the width when it is longer, and whole (wrapped) in the
    table's caption; never idle, never working."""
    why = (
        "broker unreachable: OperationalError: Error 111 connecting to 127.0.0.1:6390. "
        "Connection refused"
    )
    output = output_with((), [])
    view = ActivityView()
    frame = SnapshotFrame(
        cursor=Cursor(epoch="e", revision=2), availability="recovering", detail=why
    )
    view.apply(frame)
    output.frame(frame, view)
    lines = render(output, width, height)
    assert len(lines) <= height
    assert all(len(line.rstrip()) <= width for line in lines)
    header = " ".join(line.strip() for line in lines[:2])
    assert "activity unknown:" in header
    assert why in flat(lines)  # the caption says it whole
    if width == 80:
        assert any(
            line.startswith("broker unreachable: ") and line.rstrip().endswith("…")
            for line in lines
        )
    assert "idle" not in flat(lines).replace("(not idle)", "")
    assert " working" not in flat(lines)
