"""``watch redis://``'s table (issue 25, item 6): sorted, and 80 columns that keep every column.

The table is the command's, not an API: these tests import the internal ``workflow_hub._cli._watch_fleet``.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from rich.console import Console

from tests.support.builders import root
from workflow_hub import Availability, Cursor, SnapshotFrame
from workflow_hub._cli._watch_fleet import _fleet_table, _LogTail, liveness_note
from workflow_hub.fleet import FleetView, SourceLiveness

STATIC = Path(__file__).parents[2] / "src" / "workflow_hub" / "server" / "static"


def render(renderable: object, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


def note_of(source: str, lines: list[str]) -> str:
    """The note of ``source``'s row, its wrapped lines joined."""
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if "│" in line]
    start = next(index for index, row in enumerate(cells) if row[0] == source)
    parts = [cells[start][-1]]
    for row in cells[start + 1 :]:
        if row[0]:
            break
        parts.append(row[-1])
    return " ".join(parts)


def busy_fleet(names: list[str]) -> FleetView:
    """Sources whose status sentence is far longer than the note column."""
    fleet = FleetView()
    for index, name in enumerate(names):
        roots = (
            root("r-work-1"),
            root("r-work-2"),
            root("r-wait", state="blocked", reason="awaiting_input", active=0, blocks=1),
            root("r-fix", state="blocked", reason="manual_intervention", active=0, blocks=1),
            root("r-flag", reason="retrying", attention=True),
        )
        fleet.apply(
            name,
            SnapshotFrame(
                cursor=Cursor(epoch=f"e{index}", revision=3),
                availability=Availability.READY,
                roots=roots,
            ),
        )
    return fleet


def test_a_long_note_is_cut_and_every_other_column_keeps_its_text() -> None:
    fleet = busy_fleet(["sched-2", "sched-1", "a-scheduler-with-a-long-pod-name-7f9c"])
    liveness = {
        name: SourceLiveness(source=name, last_seen=None, stale=False) for name in fleet.views
    }
    lines = render(_fleet_table(fleet, liveness, _LogTail(3)), width=80)
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if line.startswith("┃"))
    for column in ("source", "status", "roots", "work", "wait", "last seen", "note"):
        assert column in header, (column, header)
    body = [line for line in lines if line.startswith("│")]
    assert [line.split("│")[1].strip() for line in body] == [
        "a-scheduler-wit…",
        "sched-1",
        "sched-2",
    ]
    for line in body:
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        assert cells[1:6] == ["working", "5", "3", "2", "—"], line
        assert cells[6].startswith("3 working"), line
        assert cells[6].endswith("…"), line


def test_a_crashed_source_says_so_first_and_a_wider_terminal_shows_more() -> None:
    """N5: a crashed source is told apart from one that declared itself unavailable, and the
    liveness note is never cut (it wraps in 80 columns)."""
    fleet = busy_fleet(["a-scheduler-with-a-long-pod-name-7f9c"])
    fleet.apply(
        "down",
        SnapshotFrame(cursor=Cursor(epoch="d", revision=1), availability=Availability.UNAVAILABLE),
    )
    stopped_at = time.mktime((2026, 12, 2, 3, 41, 7, 0, 0, -1))
    liveness = {
        "a-scheduler-with-a-long-pod-name-7f9c": SourceLiveness(
            source="a-scheduler-with-a-long-pod-name-7f9c", last_seen=None, stale=True
        ),
        "down": SourceLiveness(source="down", last_seen=stopped_at, stale=True, declared=True),
    }
    narrow = render(_fleet_table(fleet, liveness, _LogTail(3)), width=80)
    assert max(len(line) for line in narrow) <= 80
    assert "│ crashed? " in narrow[4], narrow[4]
    assert note_of("down", narrow) == "declared unavailable (stopped at 03:41:07)", narrow
    wide = render(_fleet_table(fleet, liveness, _LogTail(3)), width=200)
    assert max(len(line) for line in wide) <= 160
    assert "a-scheduler-with-a-long-pod-name-7f9c" in wide[4]
    assert "│ crashed? " in wide[4]
    assert "declared unavailable (stopped at 03:41:07)" in wide[5]


@pytest.mark.parametrize(
    ("stale", "declared", "last_seen", "note"),
    [
        (False, False, 1.0, None),
        (False, True, 1.0, "declared unavailable"),
        (True, True, None, "declared unavailable (stopped)"),
        (True, True, "03:41:07", "declared unavailable (stopped at 03:41:07)"),
        (True, False, None, "crashed?"),
        (True, False, "03:41:07", "crashed? (no refresh since 03:41:07)"),
    ],
)
def test_the_liveness_note_is_one_wording_in_watch_and_on_the_page(
    stale: bool, declared: bool, last_seen: float | str | None, note: str | None
) -> None:
    """N5, issue 36: ``watch`` (``liveness_note``) and the fleet page (``fleet_liveness.js``,
    run here under node) say the same of every liveness; a source that declared itself
    unavailable never reads "crashed?", and says when it stopped (local time)."""
    seen = (
        time.mktime((2026, 12, 2, 3, 41, 7, 0, 0, -1)) if isinstance(last_seen, str) else last_seen
    )
    live = SourceLiveness(source="s", last_seen=seen, stale=stale, declared=declared)
    assert liveness_note(live) == note
    assert live.crashed is (stale and not declared)
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    info = {"source": "s", "stale": stale, "declared": declared, "last_seen": seen}
    script = (
        "const m = require(process.argv[1]);"
        "process.stdout.write(JSON.stringify(m.livenessNote(JSON.parse(process.argv[2]))));"
    )
    said = subprocess.run(
        [node, "-e", script, str(STATIC / "fleet_liveness.js"), json.dumps(info)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(said.stdout) == note
