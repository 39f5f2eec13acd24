"""FleetView: one view per source and one status for the fleet; unknown is never idle."""

from __future__ import annotations

from tests.support.builders import root
from workflow_hub import Availability, Cursor, SnapshotFrame
from workflow_hub.redis import FleetView
from workflow_hub.reporting import AggregateState


def snapshot(epoch: str, *roots: object, availability: str = "ready") -> SnapshotFrame:
    ready = availability == "ready"
    return SnapshotFrame(
        cursor=Cursor(epoch=epoch, revision=1),
        availability=availability,
        roots=tuple(roots) if ready else None,  # type: ignore[arg-type]
    )


IDLE = root("idle", state="idle", reason="quiescent", active=0)
PAUSED = root("paused", state="idle", reason="paused", active=0)
WORKING = root("working")
WAITING = root("waiting", state="blocked", reason="awaiting_input", active=0, blocks=1)


def test_a_fleet_with_no_source_is_unknown() -> None:
    assert FleetView().aggregate().state is AggregateState.UNKNOWN


def test_one_unavailable_source_makes_an_otherwise_idle_fleet_unknown() -> None:
    fleet = FleetView()
    fleet.apply("a", snapshot("a", IDLE))
    fleet.apply("b", snapshot("b", availability=Availability.UNAVAILABLE))
    status = fleet.aggregate()
    assert status.state is AggregateState.UNKNOWN
    assert "1 unknown" in status.message
    assert fleet.statuses()["a"].state is AggregateState.IDLE


def test_work_anywhere_makes_the_fleet_working_even_with_an_unknown_source() -> None:
    fleet = FleetView()
    fleet.apply("a", snapshot("a", WORKING, IDLE))
    fleet.apply("b", snapshot("b", availability=Availability.RECOVERING))
    status = fleet.aggregate()
    assert status.state is AggregateState.WORKING
    assert status.working == 1
    assert status.roots == 2


def test_blocked_wins_over_idle_and_unknown() -> None:
    fleet = FleetView()
    fleet.apply("a", snapshot("a", IDLE))
    fleet.apply("b", snapshot("b", WAITING))
    status = fleet.aggregate()
    assert status.state is AggregateState.BLOCKED
    assert status.reason == "awaiting_input"
    assert status.awaiting_input == 1
    assert status.attention


def test_a_fully_known_quiet_fleet_is_idle_and_paused_if_any_source_is() -> None:
    fleet = FleetView()
    fleet.apply("a", snapshot("a", IDLE))
    assert fleet.aggregate().state is AggregateState.IDLE
    assert fleet.aggregate().reason == "quiescent"
    fleet.apply("b", snapshot("b", PAUSED))
    assert fleet.aggregate().reason == "paused"
    assert list(fleet.views) == ["a", "b"]
