"""Publishers, cursors and fencing (SPEC §3: P1-P9, L3). State only: no running hub needed."""

from __future__ import annotations

import pytest
import trio.testing

from tests.support.builders import counting_epochs, heartbeat, root, run_lifecycle, stage_lifecycle
from workflow_hub import (
    Availability,
    ContractError,
    Cursor,
    DiagnosticKind,
    RootActivity,
    WorkflowActivityHub,
)


def kinds(hub: WorkflowActivityHub) -> list[str]:
    return [d.kind.value for d in hub.diagnostics()]


def test_new_hub_is_unavailable_at_revision_zero_of_a_fresh_epoch() -> None:
    """A new hub: random epoch, revision 0, unavailable, no roots."""
    a, b = WorkflowActivityHub(), WorkflowActivityHub()
    frame = a.snapshot_frame()
    assert frame.cursor.revision == 0
    assert frame.availability == "unavailable"
    assert frame.roots is None
    assert a.cursor.epoch != b.cursor.epoch


def test_register_publisher_starts_a_new_epoch_and_records_unavailable() -> None:
    """P1: new epoch, revision 0, unavailable, roots cleared, SourceUnavailable recorded."""
    hub = WorkflowActivityHub(epoch_factory=counting_epochs())
    first = hub.register_publisher()
    first.publish_snapshot("ready", [root("a")])
    hub.register_publisher()
    frame = hub.snapshot_frame()
    assert frame.cursor == Cursor(epoch="epoch-2", revision=0)
    assert frame.availability == "unavailable"
    assert frame.roots is None
    assert hub.diagnostics()[-1].kind == DiagnosticKind.SOURCE_UNAVAILABLE
    assert hub.diagnostics()[-1].cursor == Cursor(epoch="epoch-2", revision=0)


def test_epoch_factory_must_not_repeat_an_epoch() -> None:
    """P1: an epoch is never reused; a factory that repeats one is refused before any change."""
    hub = WorkflowActivityHub(epoch_factory=lambda: "same")
    before = hub.snapshot_frame()
    with pytest.raises(ContractError, match="epoch_factory"):
        hub.register_publisher()
    assert hub.snapshot_frame() == before


def test_replaced_publisher_is_fenced_and_changes_nothing() -> None:
    """P1/P2: the previous publisher is fenced; each of its calls records PublisherFenced."""
    hub = WorkflowActivityHub()
    old = hub.register_publisher()
    new = hub.register_publisher()
    new.publish_snapshot("ready", [root("a")])
    before = hub.snapshot_frame()
    assert old.publish_snapshot("ready", []) is None
    assert old.publish_changed(root("b")) is None
    assert old.publish_removed("a") is None
    assert old.publish_lifecycle(run_lifecycle()) is None
    old.publish_heartbeat(heartbeat())
    assert hub.snapshot_frame() == before
    assert kinds(hub)[-5:] == ["PublisherFenced"] * 5
    assert not old.current
    assert new.current


def test_fenced_dispose_records_once_then_is_silent() -> None:
    """P2: dispose() of a non-current publisher records PublisherFenced once, then nothing."""
    hub = WorkflowActivityHub()
    old = hub.register_publisher()
    hub.register_publisher()
    count = len(hub.diagnostics())
    old.dispose()
    old.dispose()
    assert kinds(hub)[count:] == ["PublisherFenced"]


def test_disposed_publisher_is_fenced_for_publishing() -> None:
    """P2/P8: after its own dispose a publisher is not current and every publish is fenced."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.dispose()
    assert publisher.publish_changed(root()) is None
    assert kinds(hub)[-1] == "PublisherFenced"


def test_register_on_disposed_hub_returns_an_inert_publisher() -> None:
    """P2: on a disposed hub register_publisher() returns a publisher that is never current."""
    hub = WorkflowActivityHub()
    hub.dispose()
    before = hub.snapshot_frame()
    publisher = hub.register_publisher()
    assert not publisher.current
    assert publisher.publish_snapshot("ready", []) is None
    assert hub.snapshot_frame() == before
    assert kinds(hub)[-1] == "PublisherFenced"


def test_ready_snapshot_keeps_last_value_at_first_position() -> None:
    """P3: duplicate root_run_id keeps the last value at the first insertion position."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    a1, b, a2 = root("a", active=1), root("b"), root("a", active=7)
    cursor = publisher.publish_snapshot("ready", iter([a1, b, a2]))
    frame = hub.snapshot_frame()
    assert cursor == frame.cursor
    assert frame.cursor.revision == 1
    assert frame.roots == (a2, b)


def test_ready_snapshot_with_no_roots_is_known_empty() -> None:
    """P3: ready with an empty iterable is 'known empty', distinct from unavailable."""
    hub = WorkflowActivityHub()
    hub.register_publisher().publish_snapshot(Availability.READY, [])
    assert hub.snapshot_frame().roots == ()


@pytest.mark.parametrize(
    ("availability", "diagnostic"),
    [("recovering", "SourceRecovering"), ("unavailable", "SourceUnavailable")],
)
def test_non_ready_snapshot_clears_roots_and_records_before_advancing(
    availability: str, diagnostic: str
) -> None:
    """P3: a non-ready snapshot omits roots and records its diagnostic with the prior cursor."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a")])
    prior = hub.cursor
    cursor = publisher.publish_snapshot(availability)
    assert cursor == Cursor(epoch=prior.epoch, revision=prior.revision + 1)
    assert hub.snapshot_frame().roots is None
    assert hub.diagnostics()[-1].kind == diagnostic
    assert hub.diagnostics()[-1].cursor == prior


@pytest.mark.parametrize(
    ("availability", "roots", "path"),
    [
        ("ready", None, "roots"),
        ("recovering", [], "roots"),
        ("unavailable", [], "roots"),
        ("done", None, "availability"),
        ("ready", [root(), "not a root"], "roots[1]"),
        ("ready", "abc", "roots"),
    ],
)
def test_bad_snapshot_arguments_raise_and_change_nothing(
    availability: str, roots: object, path: str
) -> None:
    """P3/C1: bad arguments raise ContractError naming the field; state and diagnostics keep."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    before, diagnostics = hub.snapshot_frame(), hub.diagnostics()
    with pytest.raises(ContractError) as caught:
        publisher.publish_snapshot(availability, roots)  # type: ignore[arg-type]
    assert caught.value.path == path
    assert hub.snapshot_frame() == before
    assert hub.diagnostics() == diagnostics


@pytest.mark.parametrize(
    ("method", "argument", "path"),
    [
        ("publish_changed", {"root_run_id": "a"}, "root"),
        ("publish_removed", 3, "root_run_id"),
        ("publish_lifecycle", root(), "event"),
        ("publish_heartbeat", run_lifecycle(), "event"),
    ],
)
def test_bad_publish_arguments_raise_even_when_fenced(
    method: str, argument: object, path: str
) -> None:
    """C1: a bad argument is raised before the fencing check, and changes nothing."""
    hub = WorkflowActivityHub()
    for publisher in (hub.register_publisher(), hub.register_publisher()):
        diagnostics = hub.diagnostics()
        with pytest.raises(ContractError) as caught:
            getattr(publisher, method)(argument)
        assert caught.value.path == path
        assert hub.diagnostics() == diagnostics


def test_changed_replaces_the_whole_root_and_advances() -> None:
    """P4: a change stores/replaces the whole root (never an increment) and advances by one."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a", active=3), root("b")])
    replacement = root("a", state="idle", reason="quiescent", active=0)
    cursor = publisher.publish_changed(replacement)
    publisher.publish_changed(root("c"))
    frame = hub.snapshot_frame()
    assert cursor is not None
    assert cursor.revision == 2
    assert frame.roots == (replacement, root("b"), root("c"))


@pytest.mark.parametrize("availability", ["recovering", "unavailable"])
def test_change_never_makes_a_non_ready_source_ready(availability: str) -> None:
    """P4: availability stays, and a non-ready snapshot still omits roots after a change."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_snapshot(availability)
    publisher.publish_changed(root("a"))
    frame = hub.snapshot_frame()
    assert frame.availability == availability
    assert frame.roots is None
    assert frame.cursor.revision == 2
    # The change was stored, but only a snapshot makes it visible.
    publisher.publish_snapshot("ready", [])
    assert hub.snapshot_frame().roots == ()


def test_removed_deletes_and_absent_ids_are_allowed() -> None:
    """P5: removal deletes; removing an unknown id still advances and is no error."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a"), root("b")])
    assert publisher.publish_removed("a") is not None
    cursor = publisher.publish_removed("never-there")
    assert cursor is not None
    assert cursor.revision == 3
    assert hub.snapshot_frame().roots == (root("b"),)


def test_lifecycle_advances_the_revision_without_changing_roots() -> None:
    """P6: the hub assigns the next cursor; roots are untouched (no frame)."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a")])
    cursor = publisher.publish_lifecycle(stage_lifecycle())
    assert cursor == hub.cursor
    assert cursor is not None
    assert cursor.revision == 2
    assert hub.snapshot_frame().roots == (root("a"),)


def test_heartbeat_does_not_advance() -> None:
    """P7: a heartbeat has no cursor and does not advance the revision."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    before = hub.cursor
    assert publisher.publish_heartbeat(heartbeat()) is None  # type: ignore[func-returns-value]
    assert hub.cursor == before


def test_dispose_makes_the_source_unavailable_after_advancing() -> None:
    """P8: unavailable, roots cleared, advance, SourceUnavailable with the cursor after it."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [root("a")])
    publisher.dispose()
    frame = hub.snapshot_frame()
    assert frame.availability == "unavailable"
    assert frame.roots is None
    assert frame.cursor.revision == 2
    assert hub.diagnostics()[-1].kind == "SourceUnavailable"
    assert hub.diagnostics()[-1].cursor == frame.cursor
    count = len(hub.diagnostics())
    publisher.dispose()
    assert len(hub.diagnostics()) == count
    assert hub.cursor == frame.cursor


def test_publish_methods_never_checkpoint() -> None:
    """P9: publishing is synchronous; it never yields to trio, even with observers attached."""

    async def main() -> None:
        async with WorkflowActivityHub() as hub:
            hub.observe(lambda frame: None)
            publisher = hub.register_publisher()
            with trio.testing.assert_no_checkpoints():
                publisher.publish_snapshot("ready", [root("a")])
                publisher.publish_changed(root("b"))
                publisher.publish_removed("a")
                publisher.publish_lifecycle(stage_lifecycle())
                publisher.publish_heartbeat(heartbeat())
                publisher.dispose()

    trio.run(main)


def test_diagnostics_carry_the_cursor_at_recording_time_and_keep_the_newest() -> None:
    """L3: each diagnostic has the hub's cursor when recorded; at most the limit, oldest dropped."""
    hub = WorkflowActivityHub(diagnostics_limit=4)
    old = hub.register_publisher()
    publisher = hub.register_publisher()
    for index in range(6):
        publisher.publish_removed(str(index))
        old.publish_removed("x")
    diagnostics = hub.diagnostics()
    assert len(diagnostics) == 4
    assert [d.kind for d in diagnostics] == ["PublisherFenced"] * 4
    assert [d.cursor.revision for d in diagnostics] == [3, 4, 5, 6]


def test_default_diagnostics_ring_holds_256() -> None:
    """L3: the default ring retains 256 diagnostics."""
    hub = WorkflowActivityHub()
    old = hub.register_publisher()
    hub.register_publisher()
    for _ in range(300):
        old.publish_removed("x")
    assert len(hub.diagnostics()) == 256


@pytest.mark.parametrize("name", ["queue_limit", "diagnostics_limit", "hook_buffer_limit"])
@pytest.mark.parametrize("value", [0, -1, True, 2.0])
def test_limits_must_be_positive_ints(name: str, value: object) -> None:
    with pytest.raises(ContractError, match=name):
        WorkflowActivityHub(**{name: value})  # type: ignore[arg-type]


def test_roots_are_preserved_raw() -> None:
    """Raw ids survive publication byte-identical."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    odd: list[RootActivity] = [root(""), root(" root "), root("根-ü")]
    publisher.publish_snapshot("ready", odd)
    roots = hub.snapshot_frame().roots
    assert roots is not None
    assert [r.root_run_id for r in roots] == ["", " root ", "根-ü"]
