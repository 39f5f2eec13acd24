"""``watch redis://``'s table (issue 25, item 6): sorted, and 80 columns that keep every column.

The table is the command's, not an API: these tests import the internal ``workflow_hub._cli._watch_fleet``.
"""

from __future__ import annotations

import io

from rich.console import Console

from tests.support.builders import root
from workflow_hub import Availability, Cursor, SnapshotFrame
from workflow_hub._cli._watch_fleet import _fleet_table, _LogTail
from workflow_hub.fleet import FleetView, SourceLiveness


def render(renderable: object, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


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
    """N5: a crashed source is told apart from one that declared itself unavailable."""
    fleet = busy_fleet(["a-scheduler-with-a-long-pod-name-7f9c"])
    fleet.apply(
        "down",
        SnapshotFrame(cursor=Cursor(epoch="d", revision=1), availability=Availability.UNAVAILABLE),
    )
    liveness = {
        "a-scheduler-with-a-long-pod-name-7f9c": SourceLiveness(
            source="a-scheduler-with-a-long-pod-name-7f9c", last_seen=None, stale=True
        )
    }
    narrow = render(_fleet_table(fleet, liveness, _LogTail(3)), width=80)
    assert max(len(line) for line in narrow) <= 80
    assert "│ crashed? " in narrow[4], narrow[4]
    assert "│ declared " in narrow[5], narrow[5]
    wide = render(_fleet_table(fleet, liveness, _LogTail(3)), width=200)
    assert max(len(line) for line in wide) <= 160
    assert "a-scheduler-with-a-long-pod-name-7f9c" in wide[4]
    assert "crashed? (stopped refreshing)" in wide[4]
    assert "declared unavailable" in wide[5]
