"""C3's ``detail``: why a non-ready source is unknown, from the publisher to the wire.

A non-ready ``SnapshotFrame`` may carry one short printable line saying why the source is
unknown (``broker unreachable: ConnectionError: …``). It is optional and omitted when absent
(C3), refused on a ready snapshot and when malformed, before anything changes (C1), and comes
back exactly from the wire (C2). Every publishing front takes it: the hub's publisher, the trio
thread publisher, the thread host's publisher and the tracker's ``hydrating(detail=…)``.
"""

from __future__ import annotations

import threading

import pytest
import trio
import trio.testing
from hypothesis import given

from tests.support.builders import counting_epochs, root
from workflow_hub import (
    Availability,
    ContractError,
    Cursor,
    DiagnosticKind,
    Frame,
    RunTracker,
    SnapshotFrame,
    ThreadPublisher,
    WorkflowActivityHub,
    open_hub,
)
from workflow_hub.testing import strategies as ws
from workflow_hub.wire import dumps, from_wire, loads, to_wire

REASON = "broker unreachable: ConnectionError: [Errno 111] Connection refused"
CURSOR = Cursor(epoch="e", revision=3)


# --- the value (C1, C2, C3) --------------------------------------------------------------------


@pytest.mark.parametrize("availability", ["recovering", "unavailable"])
def test_a_non_ready_snapshot_says_why_on_the_wire(availability: str) -> None:
    """C3: the detail is a wire key of its own, after the others; C2: it comes back exactly."""
    frame = SnapshotFrame(cursor=CURSOR, availability=availability, detail=REASON)
    assert to_wire(frame) == {
        "kind": "snapshot",
        "cursor": {"epoch": "e", "revision": 3},
        "availability": availability,
        "detail": REASON,
    }
    assert loads(SnapshotFrame, dumps(frame)) == frame


def test_an_absent_detail_has_no_key() -> None:
    """C3: omitted when absent, never null; a frame without one decodes to detail None."""
    frame = SnapshotFrame(cursor=CURSOR, availability="recovering")
    assert "detail" not in to_wire(frame)
    assert from_wire(SnapshotFrame, to_wire(frame)).detail is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"availability": "ready", "roots": (), "detail": "x"}, "a ready snapshot"),
        ({"availability": "recovering", "detail": ""}, "1 to 200 printable"),
        ({"availability": "recovering", "detail": "x" * 201}, "1 to 200 printable"),
        ({"availability": "recovering", "detail": "two\nlines"}, "printable"),
        ({"availability": "unavailable", "detail": "tab\there"}, "printable"),
        ({"availability": "recovering", "detail": 7}, "expected a string"),
        ({"availability": "recovering", "detail": "lone \ud800"}, "surrogate"),
    ],
)
def test_a_bad_detail_is_a_contract_error_on_detail(
    fields: dict[str, object], message: str
) -> None:
    """C1: a detail on a ready snapshot, an empty, long, multi-line or non-text one."""
    with pytest.raises(ContractError, match=message) as caught:
        SnapshotFrame(cursor=CURSOR, **fields)  # type: ignore[arg-type]
    assert caught.value.path == "detail"


def test_a_bad_detail_on_the_wire_names_its_path() -> None:
    """C1: decoding names the JSON path of the bad detail."""
    data = {"kind": "snapshot", "cursor": {"epoch": "e", "revision": 1}, "availability": "ready"}
    with pytest.raises(ContractError) as caught:
        from_wire(Frame, {**data, "roots": [], "detail": "why"})
    assert caught.value.path == "detail"
    with pytest.raises(ContractError) as caught:
        from_wire(Frame, {**data, "availability": "recovering", "detail": None})
    assert caught.value.path == "detail"


def test_the_longest_detail_is_two_hundred_characters() -> None:
    """C3's bound, at its edge: 200 characters of any printable script."""
    text = "é" * 199 + "…"
    assert SnapshotFrame(cursor=CURSOR, availability="recovering", detail=text).detail == text


@given(ws.snapshot_frames())
def test_drawn_snapshots_round_trip_with_and_without_a_detail(frame: SnapshotFrame) -> None:
    """C2 for every drawn snapshot, whose non-ready ones carry a detail or not."""
    assert from_wire(SnapshotFrame, to_wire(frame)) == frame
    assert loads(SnapshotFrame, dumps(frame)) == frame


@given(ws.unknown_details())
def test_drawn_details_are_valid(detail: str) -> None:
    """The conformance kit's strategy draws only what the contract accepts."""
    SnapshotFrame(cursor=CURSOR, availability="unavailable", detail=detail)


# --- the hub's publisher (P3 with C3) ----------------------------------------------------------


def test_the_publisher_carries_the_detail_to_the_snapshot() -> None:
    """P3, C3: ``publish_snapshot(availability, detail=…)``; the diagnostic is recorded as usual;
    the next snapshot (ready, or unknown without a reason) says nothing more."""
    hub = WorkflowActivityHub(epoch_factory=counting_epochs())
    publisher = hub.register_publisher()
    publisher.publish_snapshot("recovering", detail=REASON)
    frame = hub.snapshot_frame()
    assert (frame.availability, frame.roots, frame.detail) == ("recovering", None, REASON)
    assert hub.diagnostics()[-1].kind == DiagnosticKind.SOURCE_RECOVERING
    publisher.publish_snapshot("unavailable", None, "the store is gone")
    assert hub.snapshot_frame().detail == "the store is gone"
    publisher.publish_changed(root("a"))  # P4: still unknown, and still why
    assert hub.snapshot_frame().detail == "the store is gone"
    publisher.publish_snapshot("ready", [root("a")])
    assert hub.snapshot_frame().detail is None
    publisher.publish_snapshot("recovering")
    assert hub.snapshot_frame().detail is None


def test_a_new_publisher_and_a_disposal_forget_the_detail() -> None:
    """P1, P8: a new epoch starts unavailable without a reason; so does a disposed publisher."""
    hub = WorkflowActivityHub(epoch_factory=counting_epochs())
    first = hub.register_publisher()
    first.publish_snapshot("recovering", detail=REASON)
    second = hub.register_publisher()
    assert hub.snapshot_frame().detail is None
    second.publish_snapshot(Availability.UNAVAILABLE, detail=REASON)
    second.dispose()
    assert (hub.snapshot_frame().availability, hub.snapshot_frame().detail) == (
        "unavailable",
        None,
    )


@pytest.mark.parametrize(
    ("availability", "roots", "detail"),
    [("ready", [], "why"), ("recovering", None, ""), ("unavailable", None, "a\nb")],
)
def test_a_bad_detail_is_refused_before_anything_changes(
    availability: str, roots: list[object] | None, detail: str
) -> None:
    """C1: refused by the publisher (fenced or not) with the hub's state, cursor and
    diagnostics untouched."""
    hub = WorkflowActivityHub(epoch_factory=counting_epochs())
    publisher = hub.register_publisher()
    publisher.publish_snapshot("recovering", detail=REASON)
    before, diagnostics = hub.snapshot_frame(), hub.diagnostics()
    with pytest.raises(ContractError) as caught:
        publisher.publish_snapshot(availability, roots, detail)  # type: ignore[arg-type]
    assert caught.value.path == "detail"
    assert hub.snapshot_frame() is before
    assert hub.diagnostics() == diagnostics


async def test_observers_attaching_and_resuming_see_the_detail() -> None:
    """O3, R2: an observer attaching to an unknown source gets the snapshot with its reason; one
    resuming gets the broadcast frame, the same one."""
    async with open_hub(epoch_factory=counting_epochs()) as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        mark = hub.cursor
        publisher.publish_snapshot("recovering", detail=REASON)
        fresh: list[Frame] = []
        resumed: list[Frame] = []
        hub.observe(fresh.append)
        lease = hub.observe(resumed.append, since=mark)
        await trio.testing.wait_all_tasks_blocked()
        assert lease.resumed
        for frames in (fresh, resumed):
            (frame,) = frames
            assert isinstance(frame, SnapshotFrame)
            assert frame.detail == REASON


async def test_the_thread_publisher_checks_and_carries_the_detail() -> None:
    """P3 through ``ThreadPublisher``: a bad detail raises in the calling thread, a good one
    reaches the hub."""
    async with open_hub(epoch_factory=counting_epochs()) as hub:
        publisher = ThreadPublisher(hub.register_publisher())
        errors: list[BaseException] = []

        def report() -> None:
            try:
                publisher.publish_snapshot("recovering", detail="")
            except ContractError as error:
                errors.append(error)
            publisher.publish_snapshot_blocking("recovering", detail=REASON)

        await trio.to_thread.run_sync(report)
        assert [getattr(e, "path", None) for e in errors] == ["detail"]
        assert hub.snapshot_frame().detail == REASON


# --- the tracker ---------------------------------------------------------------------------------


async def test_the_tracker_says_why_while_hydrating() -> None:
    """C3 through ``RunTracker.hydrating(detail=…)``: the recovering snapshot says why, the ready
    one after the block does not; a bad detail raises before anything is published."""
    async with open_hub(epoch_factory=counting_epochs()) as hub:
        frames: list[Frame] = []
        hub.observe(frames.append)
        tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
        with pytest.raises(ContractError) as caught:
            tracker.hydrating(detail="x" * 201)
        assert caught.value.path == "detail"
        assert not tracker.is_hydrating
        with tracker.hydrating(detail=REASON):
            assert hub.snapshot_frame().detail == REASON
            # A publisher replaced mid-hydration says it again (the tracker keeps the reason).
            tracker.replace_publisher(hub.register_publisher())
            assert (hub.snapshot_frame().availability, hub.snapshot_frame().detail) == (
                "recovering",
                REASON,
            )
            tracker.add_run("r", status="running", live=False)
        ready = hub.snapshot_frame()
        assert (ready.availability, ready.detail) == ("ready", None)
        with pytest.raises(RuntimeError), tracker.hydrating(detail=REASON):
            raise RuntimeError("restore failed")
        assert (hub.snapshot_frame().availability, hub.snapshot_frame().detail) == (
            "unavailable",
            None,
        )
        await trio.testing.wait_all_tasks_blocked()
        said = [f.detail for f in frames if isinstance(f, SnapshotFrame)]
        assert REASON in said


async def test_a_reason_learnt_while_hydrating_is_said_again() -> None:
    """C3, C1: ``recovering_because`` inside ``hydrating()`` publishes the recovering snapshot
    again with the new reason (not when it is unchanged; None takes it away); outside the block
    it is a ``RuntimeError``, a bad detail a ``ContractError`` on ``detail``, both before
    anything is published."""
    async with open_hub(epoch_factory=counting_epochs()) as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
        with pytest.raises(RuntimeError, match="outside hydrating"):
            tracker.recovering_because(REASON)
        with tracker.hydrating():
            first = hub.snapshot_frame()
            assert (first.availability, first.detail) == ("recovering", None)
            with pytest.raises(ContractError) as caught:
                tracker.recovering_because("two\nlines")
            assert caught.value.path == "detail"
            assert hub.snapshot_frame() == first
            tracker.recovering_because(REASON)
            said = hub.snapshot_frame()
            assert (said.availability, said.detail) == ("recovering", REASON)
            assert said.cursor.revision == first.cursor.revision + 1
            tracker.recovering_because(REASON)
            assert hub.snapshot_frame() == said
            tracker.recovering_because(None)
            assert hub.snapshot_frame().detail is None
        assert hub.snapshot_frame().availability == "ready"
        with pytest.raises(RuntimeError, match="outside hydrating"):
            tracker.recovering_because(REASON)
        assert hub.snapshot_frame().detail is None


def test_the_thread_hosts_tracker_says_why() -> None:
    """H1: the thread host's tracker takes ``detail`` too, checked in the calling thread."""
    from workflow_hub.sync import open_hub as open_sync_hub

    with open_sync_hub() as hub:
        tracker = hub.tracker(owner_session_id="s")
        with pytest.raises(ContractError):
            tracker.hydrating(detail="")
        with tracker.hydrating(detail=REASON):
            assert hub.snapshot_frame().detail == REASON
            assert threading.current_thread() is threading.main_thread()
            tracker.recovering_because("the broker refused the password")
            assert hub.snapshot_frame().detail == "the broker refused the password"
        assert hub.snapshot_frame().detail is None


@pytest.mark.parametrize(
    ("text", "made"),
    [
        (
            "broker unreachable: ConnectionError: refused",
            "broker unreachable: ConnectionError: refused",
        ),
        ("first line\n  second\tline ", "first line second line"),
        ("nul\x00byte and \x1b escape", "nul\ufffdbyte and \ufffd escape"),
        ("x" * 300, "x" * 199 + "…"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        (" \n\t ", None),
    ],
)
def test_any_text_is_made_a_valid_detail(text: str, made: str | None) -> None:
    """What the integrations pass on (an exception's text): one printable line of at most 200
    characters, or None when nothing is left (C3)."""
    from workflow_hub._contract import unknown_detail

    assert unknown_detail(text) == made
    if made is not None:
        SnapshotFrame(cursor=CURSOR, availability="recovering", detail=made)
