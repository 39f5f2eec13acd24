"""The book alone (no tasks, time passed in): storms, restarts and ids (issue 40)."""

from __future__ import annotations

from workflow_hub import Availability, ChangedFrame, Cursor, SnapshotFrame
from workflow_hub.alerts import AlertBook, AlertName, AlertRules, NotificationKind

from .support import asking, working

RULES = AlertRules(needs_attention_for=30, stuck_after=600, unknown_after=60)


def snapshot(epoch: str, revision: int, *roots: object, ready: bool = True) -> SnapshotFrame:
    return SnapshotFrame(
        cursor=Cursor(epoch=epoch, revision=revision),
        availability=Availability.READY if ready else Availability.UNAVAILABLE,
        roots=roots if ready else None,  # type: ignore[arg-type]
    )


def test_fifty_sources_going_unknown_page_once_each_never_once_per_root() -> None:
    """Storms: 50 sources with 10 waiting roots each lose their store; 50 alerts, and the 500
    roots' alerts neither resolve nor fire again (N4: unknown is never "cleared")."""
    book = AlertBook(RULES, wall_clock=lambda: 0.0)
    sources = [f"sched-{index}" for index in range(50)]
    for source in sources:
        roots = [asking(f"{source}/r{index}") for index in range(10)]
        book.apply(source, snapshot("e1", 1, *roots), now=0)
    fired = book.evaluate(31)
    assert len(fired) == 500
    changes = []
    for source in sources:
        changes += book.apply(source, snapshot("e1", 2, ready=False), now=40)
    changes += book.evaluate(99)
    assert changes == []
    changes = book.evaluate(100)
    assert [n.alert.name for n in changes] == [AlertName.SOURCE_UNKNOWN] * 50
    assert {n.alert.source for n in changes} == set(sources)
    # Back, with the same roots (a new epoch: the schedulers restarted): only the 50 resolve.
    back = []
    for source in sources:
        roots = [asking(f"{source}/r{index}") for index in range(10)]
        back += book.apply(source, snapshot("e2", 1, *roots), now=120)
    assert [(n.kind, n.alert.name) for n in back] == [
        (NotificationKind.RESOLVED, AlertName.SOURCE_UNKNOWN)
    ] * 50
    assert len(book.firing()) == 500


def test_a_restarted_alerter_derives_the_same_ids() -> None:
    """Restarts: the same condition of the same root for the same cause has the same id, in
    another process, at another time, after another cursor: receivers deduplicate it."""
    first = AlertBook(RULES, wall_clock=lambda: 1_000.0)
    first.apply("s", snapshot("e1", 1, working("w")), now=0)
    first.apply("s", ChangedFrame(cursor=Cursor(epoch="e1", revision=5), root=asking("r")), 0)
    [before] = first.evaluate(30)
    again = AlertBook(RULES, wall_clock=lambda: 9_000.0)
    again.apply("s", snapshot("e7", 42, asking("r"), working("w")), now=500)
    [after] = again.evaluate(530)
    assert after.alert.id == before.alert.id
    assert after.alert.labels == before.alert.labels
    # Another question on the same root is another occurrence: another id.
    other = AlertBook(RULES)
    other.apply("s", snapshot("e1", 1, asking("r", "drop the table?", prompt_id="p2")), now=0)
    [third] = other.evaluate(30)
    assert third.alert.id != before.alert.id


def test_a_retired_source_resolves_everything_it_had() -> None:
    """N5: a retired source is dropped by the followers; its alerts resolve, once."""
    book = AlertBook(RULES)
    book.apply("s", snapshot("e1", 1, asking("r")), now=0)
    book.apply("s", snapshot("e1", 2, ready=False), now=1)
    assert [n.alert.name for n in book.evaluate(70)] == [AlertName.SOURCE_UNKNOWN]
    assert len(book.firing()) == 1  # the root never fired: it was pending when unknown
    resolved = book.apply("s", None, now=80)
    assert [(n.kind, n.alert.name) for n in resolved] == [
        (NotificationKind.RESOLVED, AlertName.SOURCE_UNKNOWN)
    ]
    assert book.firing() == []
    assert book.pending() == []


def test_durations_are_checked() -> None:
    import pytest

    from workflow_hub import ContractError

    with pytest.raises(ContractError, match="stuck_after"):
        AlertRules(stuck_after=-1)
    with pytest.raises(ContractError, match="needs_attention_for"):
        AlertRules(needs_attention_for=float("nan"))


def test_alertmanager_is_told_when_a_firing_alert_expires_and_when_it_resolved() -> None:
    """Prometheus' way: a firing alert's ``endsAt`` is four resend intervals ahead (an alerter
    that died lets it expire); a resolved one's is when it resolved."""
    from workflow_hub.alerts import AlertmanagerSink

    book = AlertBook(RULES, wall_clock=lambda: 1_000.0)
    book.apply("s", snapshot("e1", 1, asking("r")), now=0)
    [fired] = book.evaluate(30)
    [resolved] = book.apply("s", snapshot("e1", 2), now=40)
    sink = AlertmanagerSink("http://127.0.0.1:9093", resend_interval=60)
    firing_body, resolved_body = sink.body([fired, resolved])
    assert firing_body["startsAt"] == "1970-01-01T00:16:10.000Z"  # 1000 - 30 s
    assert firing_body["endsAt"] == "1970-01-01T00:20:40.000Z"  # 1000 + 4 x 60 s
    assert resolved_body["endsAt"] == "1970-01-01T00:16:40.000Z"
    assert firing_body["labels"]["alertname"] == "WorkflowNeedsAttention"


def test_an_unreachable_source_freezes_its_roots_and_a_due_one_fires_when_it_is_back() -> None:
    """N4: the transport says the source cannot be read (a remote hub's stream is down): its
    roots' conditions are frozen; one that fell due meanwhile fires when the source is back."""
    book = AlertBook(RULES)
    book.apply("s", snapshot("e1", 1, asking("early"), working("w")), now=0)
    assert [n.alert.root_run_id for n in book.evaluate(30)] == ["early"]
    book.apply("s", ChangedFrame(cursor=Cursor(epoch="e1", revision=2), root=asking("late")), 40)
    assert book.set_unknown("s", "unreachable", now=50) == []
    assert book.evaluate(109) == []  # "late" fell due at 70: frozen
    [lost] = book.evaluate(110)
    assert lost.alert.name is AlertName.SOURCE_UNKNOWN
    assert "unreachable" in lost.alert.summary
    back = book.set_unknown("s", None, now=120)
    assert sorted((str(n.kind), n.alert.root_run_id) for n in back) == [
        ("firing", "late"),
        ("resolved", None),
    ]
    assert sorted(a.root_run_id or "" for a in book.firing()) == ["early", "late"]
    assert book.next_deadline() == 600  # "w" is stuck at 600 s of no change
