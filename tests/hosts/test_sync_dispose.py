"""``workflow_hub.sync.Publisher.dispose_blocking()``: dispose (P8, P2), and wait until applied.

Real threads and a real host: a worker thread publishes without waiting, then disposes with
``dispose_blocking()``; when that returns, the hub has applied everything the thread queued and
the dispose itself. A stalled hub thread shows that it does wait.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.support.builders import counting_epochs, root
from workflow_hub import ChangedFrame, DiagnosticKind, Frame, SnapshotFrame, WorkflowHubError
from workflow_hub.sync import HostClosedError, Hub, Publisher, open_hub

TIMEOUT = 30.0
CHANGES = 1_000


class Worker(threading.Thread):
    """A thread running ``work``; :meth:`finish` joins it and re-raises what it raised."""

    def __init__(self, work: Callable[[], object]) -> None:
        super().__init__()
        self._work = work
        self.failure: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self._work()
        except BaseException as error:  # handed to the test's thread
            self.failure = error

    def finish(self) -> None:
        self.join(TIMEOUT)
        assert not self.is_alive(), "a worker thread hung"
        if self.failure is not None:
            raise self.failure


def _kinds(hub: Hub) -> list[DiagnosticKind]:
    return [diagnostic.kind for diagnostic in hub.diagnostics()]


def test_when_it_returns_the_source_is_unavailable_after_everything_the_thread_queued() -> None:
    """P8, P9, H1: the worker's non-blocking changes, then the dispose, all applied by the time
    ``dispose_blocking()`` returns; observers get the changes in order, the unavailable snapshot
    last; the dispose advanced the cursor once and recorded SourceUnavailable with it."""
    with open_hub(queue_limit=CHANGES + 10) as hub:
        publisher = hub.register_publisher()
        ready = publisher.publish_snapshot_blocking("ready", [])
        assert ready is not None
        seen: dict[str, object] = {}
        with hub.subscribe() as frames:

            def work() -> None:
                for index in range(CHANGES):
                    publisher.publish_changed(root("a", active=index))
                seen["returned"] = publisher.dispose_blocking()  # type: ignore[func-returns-value]
                seen["current"] = publisher.current
                seen["snapshot"] = hub.snapshot_frame()

            Worker(work).finish()
            received: list[Frame] = []
            while not received or not isinstance(received[-1], SnapshotFrame) or len(received) < 2:
                received.extend(frames.receive_all(timeout=TIMEOUT))
        assert seen["returned"] is None
        assert seen["current"] is False
        snapshot = seen["snapshot"]
        assert isinstance(snapshot, SnapshotFrame)
        assert snapshot.availability == "unavailable"
        assert snapshot.roots is None
        assert snapshot.cursor.epoch == ready.epoch
        assert snapshot.cursor.revision == ready.revision + CHANGES + 1
        first, *changes, last = received
        assert isinstance(first, SnapshotFrame)
        assert all(isinstance(frame, ChangedFrame) for frame in changes)
        counts = [f.root.active_execution_count for f in changes if isinstance(f, ChangedFrame)]
        assert counts == list(range(CHANGES))
        assert last == snapshot
        unavailable = [d for d in hub.diagnostics() if d.kind is DiagnosticKind.SOURCE_UNAVAILABLE]
        assert unavailable[-1].cursor == snapshot.cursor


def test_it_waits_while_the_hub_thread_is_busy() -> None:
    """The difference from ``dispose()``: it returns only once the hub's thread has run it."""
    with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot_blocking("ready", [root("a")])
        busy, release = threading.Event(), threading.Event()

        def stall() -> None:  # runs in the hub's thread: nothing queued after it runs meanwhile
            busy.set()
            assert release.wait(TIMEOUT)

        staller = Worker(lambda: hub.call(stall))
        assert busy.wait(TIMEOUT)
        disposer = Worker(publisher.dispose_blocking)
        disposer.join(0.2)
        waited = disposer.is_alive()  # a bounded look: returning now would be the bug
        release.set()
        staller.finish()
        disposer.finish()
        assert waited
        assert hub.snapshot_frame().availability == "unavailable"


def test_again_it_does_nothing() -> None:
    """P8: disposing a disposed publisher changes nothing and records nothing."""
    with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot_blocking("ready", [root("a")])
        publisher.dispose_blocking()
        before = (hub.snapshot_frame(), hub.diagnostics())
        Worker(publisher.dispose_blocking).finish()
        assert (hub.snapshot_frame(), hub.diagnostics()) == before


def test_a_fenced_publisher_records_publisher_fenced_once_and_changes_nothing() -> None:
    """P1, P2: after a new publisher took over, the old one's dispose leaves the new source as
    it is and says so once; a second dispose is silent."""
    with open_hub(epoch_factory=counting_epochs()) as hub:
        old = hub.register_publisher()
        new = hub.register_publisher()
        new.publish_snapshot_blocking("ready", [root("b")])
        before = hub.snapshot_frame()
        Worker(old.dispose_blocking).finish()
        assert hub.snapshot_frame() == before
        assert new.current
        assert _kinds(hub).count(DiagnosticKind.PUBLISHER_FENCED) == 1
        Worker(old.dispose_blocking).finish()
        assert _kinds(hub).count(DiagnosticKind.PUBLISHER_FENCED) == 1
        assert hub.snapshot_frame() == before


def test_from_the_hub_s_own_thread_it_refuses_instead_of_waiting_forever() -> None:
    """A blocking call from the trio thread would deadlock: a RuntimeError (a misuse), and the
    publisher stays current."""
    with open_hub() as hub:
        publisher = hub.register_publisher()
        with pytest.raises(RuntimeError, match="would wait forever"):
            hub.call(publisher.dispose_blocking)
        assert publisher.current


def test_after_the_host_closed_it_raises_host_closed_error() -> None:
    """H1: the host disposed its publishers as it closed; a later call is refused with
    HostClosedError, which is a WorkflowHubError and still a RuntimeError."""
    with open_hub() as hub:
        publisher: Publisher = hub.register_publisher()
    with pytest.raises(HostClosedError) as caught:
        publisher.dispose_blocking()
    assert isinstance(caught.value, WorkflowHubError)
    assert isinstance(caught.value, RuntimeError)
