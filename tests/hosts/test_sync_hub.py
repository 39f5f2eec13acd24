"""``workflow_hub.sync``: the hub from plain threads, with the hub's guarantees (SPEC H1).

No event loop in the test: the host runs trio in its own thread, and the test's threads publish,
report facts and iterate frames through the host's thread-safe handles.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack

import pytest
import trio

from tests.support.builders import counting_epochs, root
from workflow_hub import (
    ChangedFrame,
    ContractError,
    DiagnosticKind,
    Frame,
    SnapshotFrame,
    StageStatus,
)
from workflow_hub.sync import HostClosedError, Hub, open_hub

from .remote import watching
from .support import continuous, is_unavailable, run

THREADS = 8
FACTS = 10_000
# A tracker fact costs the hub's thread about 0.1 ms of derivation on its own (a publish costs a
# few microseconds), so the tracker test reports fewer facts per thread than the publisher test.
TRACKER_FACTS = 2_000
TIMEOUT = 60.0


def in_threads(count: int, work: Callable[[int], object]) -> None:
    """Run ``work(n)`` in ``count`` threads at once; re-raise the first failure."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def target(n: int) -> None:
        try:
            barrier.wait(TIMEOUT)
            work(n)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a worker thread hung"
    if errors:
        raise errors[0]


def test_eight_threads_publish_ten_thousand_frames_each_and_nothing_is_lost() -> None:
    """H1, P9: non-blocking publishes from 8 threads; every frame arrives, each thread's in order."""
    with open_hub(queue_limit=THREADS * FACTS + 10) as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=TIMEOUT), SnapshotFrame)

            def publish(n: int) -> None:
                for i in range(FACTS):
                    publisher.publish_changed(root(f"root-{n}", active=i))

            in_threads(THREADS, publish)
            received: list[Frame] = []
            while len(received) < THREADS * FACTS:
                received.extend(frames.receive_all(timeout=TIMEOUT))
        assert continuous(received)
        by_root: dict[str, list[int]] = {}
        for frame in received:
            assert isinstance(frame, ChangedFrame)
            by_root.setdefault(frame.root.root_run_id, []).append(frame.root.active_execution_count)
        assert by_root == {f"root-{n}": list(range(FACTS)) for n in range(THREADS)}
        final = hub.snapshot_frame()
        assert final.roots is not None
        assert {r.active_execution_count for r in final.roots} == {FACTS - 1}


def test_eight_threads_report_facts_to_one_tracker_and_none_is_lost() -> None:
    """H1, §5: every fact from every thread takes effect, in each thread's order."""
    ids = itertools.count()
    with open_hub() as hub:
        tracker = hub.tracker(
            owner_session_id="session-1", event_id_factory=lambda: f"evt-{next(ids)}"
        )
        tracker.start()

        def report(n: int) -> None:
            run_id = f"run-{n}"
            tracker.add_run(run_id, status="running")  # one run event
            tracker.add_stage(run_id, "work", "work")  # no event (pending)
            for i in range(TRACKER_FACTS - 2):  # one stage event each: a real status change
                tracker.set_stage_status(run_id, "work", "running" if i % 2 == 0 else "completed")

        in_threads(THREADS, report)
        # TRACKER_FACTS - 2 is even: every run ends with its stage completed, nothing executing.
        activities = tracker.activities()
        assert sorted(a.root_run_id for a in activities) == [f"run-{n}" for n in range(THREADS)]
        assert {(a.state, a.reason, a.active_execution_count) for a in activities} == {
            ("working", "automatic_continuation", 0)
        }
        assert hub.call(lambda: next(ids)) == THREADS * (TRACKER_FACTS - 1)


def test_a_batch_from_a_thread_publishes_each_root_once() -> None:
    """H1, §5: ``with tracker.batch():`` from a thread; subscribers never see half-way states."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=TIMEOUT), SnapshotFrame)

            def work(_: int) -> None:
                with tracker.batch():
                    tracker.add_run("run-1", status="running")
                    tracker.add_stage("run-1", "plan", "plan")
                    tracker.set_stage_status("run-1", "plan", "running")

            in_threads(1, work)
            changed = frames.receive(timeout=TIMEOUT)
            assert isinstance(changed, ChangedFrame)
            assert (changed.root.state, changed.root.active_execution_count) == ("working", 1)
            with pytest.raises(TimeoutError):
                frames.receive(timeout=0.05)


def test_facts_raise_in_the_calling_thread_and_change_nothing() -> None:
    """C1: a bad argument raises in the calling thread (ContractError naming the field) and
    queues nothing; an unknown id raises (KeyError) at the thread's next wait."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        tracker.add_run("run-1")
        with pytest.raises(ContractError) as bad:
            tracker.set_run_status("run-1", "sideways")
        assert bad.value.path == "status"
        with pytest.raises(ContractError) as stage:
            tracker.set_stage_status("run-1", 7, "running")  # type: ignore[arg-type]
        assert stage.value.path == "stage_id"
        # Only the tracker knows its runs: that error waits for the thread's next wait.
        tracker.set_run_status("no-such-run", "running")
        with pytest.raises(KeyError):
            tracker.flush()
        assert tracker.run_status("run-1") == "pending"
        publisher = hub.register_publisher()
        with pytest.raises(ContractError) as roots:
            publisher.publish_snapshot("ready")
        assert roots.value.path == "roots"
        with pytest.raises(ContractError) as changed:
            publisher.publish_changed("not a root")  # type: ignore[arg-type]
        assert changed.value.path == "root"


def test_a_subscriber_that_falls_behind_gets_a_fresh_snapshot() -> None:
    """H1, O4: frames a thread has not asked for stay under the hub's bound."""
    with open_hub(queue_limit=16) as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=TIMEOUT), SnapshotFrame)
            for n in range(40):
                publisher.publish_changed(root(active=n))
            assert publisher.publish_changed_blocking(root(active=40)) is not None
            rest = frames.receive_all(timeout=TIMEOUT)
        assert isinstance(rest[0], SnapshotFrame)
        assert continuous(rest)
        assert DiagnosticKind.OBSERVER_OVERFLOW in [d.kind for d in hub.diagnostics()]


def test_a_new_publisher_fences_the_old_one() -> None:
    """H1, P1, P2: calls on a fenced publisher change nothing and say so."""
    with open_hub(epoch_factory=counting_epochs()) as hub:
        old = hub.register_publisher()
        assert old.publish_snapshot_blocking("ready", [root("a")]) is not None
        new = hub.register_publisher()
        assert old.publish_changed_blocking(root("b")) is None
        assert not old.current
        assert new.current
        assert hub.snapshot_frame().cursor.epoch == "epoch-2"
        assert DiagnosticKind.PUBLISHER_FENCED in [d.kind for d in hub.diagnostics()]


def test_iteration_resumes_from_a_cursor_and_ends_with_the_host() -> None:
    """H1, R2: ``subscribe(since=...)`` replays what was missed; leaving the host ends it."""
    seen: list[Frame] = []
    with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        cursor = publisher.publish_changed_blocking(root(active=1))
        publisher.publish_changed(root(active=2))
        ready = threading.Event()

        def consume() -> None:
            with hub.subscribe(since=cursor) as frames:
                assert frames.lease.resumed
                ready.set()
                seen.extend(frames)

        consumer = threading.Thread(target=consume)
        consumer.start()
        assert ready.wait(TIMEOUT)
    consumer.join(TIMEOUT)
    assert not consumer.is_alive()
    assert [frame.cursor.revision for frame in seen[:1]] == [3]
    assert is_unavailable(seen[-1])


def test_an_exception_in_the_block_propagates_after_a_clean_end() -> None:
    """H1: the block's exception leaves the ``with``; the host closed cleanly first."""
    hubs: list[Hub] = []

    def scheduler() -> None:
        with open_hub() as hub:
            hubs.append(hub)
            hub.register_publisher().publish_snapshot("ready", [])
            raise KeyError("the scheduler failed")

    with pytest.raises(KeyError, match="scheduler"):
        scheduler()
    with pytest.raises(HostClosedError):
        hubs[0].register_publisher()


def test_a_remote_watch_sees_the_final_unavailable_frame() -> None:
    """H1, N1: ``hub.serve()`` from a thread; ``watch`` in another process sees the clean exit."""

    async def main() -> list[str]:
        async with AsyncExitStack() as processes:
            with open_hub() as hub:
                tracker = hub.tracker(owner_session_id="session-1")
                tracker.start()
                tracker.add_run("run-1", status="running")
                url = hub.serve(port=0)
                watcher = await processes.enter_async_context(watching(url))
                await watcher.wait_for(lambda line: "ready roots=1" in line)
            await watcher.wait_for(lambda line: "unavailable" in line)
            return watcher.lines

    lines = run(main)
    assert "unavailable" in [line for line in lines if line.startswith("frame ")][-1]


def test_a_failure_in_the_hub_thread_closes_the_host_and_is_raised_at_the_exit() -> None:
    """H1: a host task that fails (a heartbeat clock) ends the thread; later calls say the host
    has closed, and leaving the block raises the failure."""

    class ClockBroke(Exception):
        pass

    broken = threading.Event()

    def clock() -> float:
        if broken.is_set() and "heartbeats" in trio.lowlevel.current_task().name:
            raise ClockBroke("the clock broke")
        return 1_000.0

    def scheduler() -> None:
        with open_hub() as hub:
            tracker = hub.tracker(owner_session_id="session-1", clock=clock)
            tracker.start()
            broken.set()
            tracker.add_run("run-1", status="running", heartbeat_interval_minutes=1)
            closed = False
            deadline = time.monotonic() + TIMEOUT
            while not closed and time.monotonic() < deadline:
                try:
                    hub.statistics()  # works until the hub's thread has ended
                except HostClosedError:
                    closed = True
                time.sleep(0.01)
            assert closed

    with pytest.raises(BaseExceptionGroup) as failure:
        scheduler()
    assert failure.group_contains(ClockBroke)


def test_hydrating_from_a_thread_publishes_recovering_then_ready() -> None:
    """H1, §5 hydration: ``with tracker.hydrating():`` from a thread; a failure makes it
    unavailable and propagates in that thread."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        with hub.subscribe() as frames:
            assert is_unavailable(frames.receive(timeout=TIMEOUT))
            with tracker.hydrating():
                tracker.add_run("run-1", status="running", live=False)
            recovering = frames.receive(timeout=TIMEOUT)
            ready = frames.receive(timeout=TIMEOUT)
            assert isinstance(recovering, SnapshotFrame)
            assert recovering.availability == "recovering"
            assert isinstance(ready, SnapshotFrame)
            assert ready.availability == "ready"
            assert ready.roots is not None
            assert [r.root_run_id for r in ready.roots] == ["run-1"]
            with pytest.raises(RuntimeError, match="storage"), tracker.hydrating():
                raise RuntimeError("the storage is gone")
            assert frames.receive(timeout=TIMEOUT).availability == "recovering"  # type: ignore[union-attr]
            assert is_unavailable(frames.receive(timeout=TIMEOUT))


def test_a_node_status_fact_refuses_what_the_tracker_would_in_the_calling_thread() -> None:
    """C1: the node facts' quick check (two ids and a known status) lets nothing through that
    the full check refuses: each refusal names its field, and nothing is queued."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1", include_graph=True)
        tracker.start()
        tracker.add_run("run-1", status="running")
        tracker.add_stage("run-1", "plan", "plan")
        tracker.add_tool("run-1", "grep", "grep")
        for call, arguments, path in (
            (tracker.set_stage_status, ("run-1", "plan", "sideways"), "status"),
            (tracker.set_stage_status, ("run-1", "plan", []), "status"),
            (tracker.set_stage_status, ("run-1", "plan", "cached"), "status"),  # a tool's
            (tracker.set_tool_status, ("run-1", "grep", "awaiting_input"), "status"),  # a stage's
            (tracker.set_stage_status, (None, "plan", "running"), "run_id"),
            (tracker.set_tool_status, ("run-1", b"grep", "running"), "tool_id"),
            (tracker.set_stage_name, ("run-1", "plan", None), "name"),
        ):
            with pytest.raises(ContractError) as refused:
                call(*arguments)  # type: ignore[operator]
            assert refused.value.path == path, arguments
        tracker.flush()  # nothing was queued: no error waits for the thread
        tracker.set_stage_status("run-1", "plan", StageStatus.RUNNING)
        tracker.set_tool_status("run-1", "grep", "cached")
        tracker.set_stage_name("run-1", "plan", "Plan the release")
        tracker.flush()
        nodes = {
            node.node_id: (node.name, node.status)
            for node in hub.snapshot_frame().roots[0].graph.nodes  # type: ignore[index,union-attr]
        }
        assert nodes == {"plan": ("Plan the release", "running"), "grep": ("grep", "cached")}


def test_errors_and_labels_are_refused_in_the_calling_thread() -> None:
    """C1, C3: ``error=`` (a FailureDetail, an exception or a message, with a failed status
    only), labels and ``attribution=`` (issue 42) are checked where the fact is reported, as
    ids and statuses are: a bad one
    raises ContractError at the call, naming its field, and nothing is queued (it used to be
    raised later, by the thread's next waiting call)."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1", include_graph=True)
        tracker.start()
        tracker.add_run("run-1", status="running")
        tracker.add_stage("run-1", "plan", "plan")
        tracker.add_tool("run-1", "grep", "grep")
        tracker.flush()
        for call, arguments, keywords, path in (
            (tracker.set_stage_status, ("run-1", "plan", "running"), {"error": "boom"}, "error"),
            (tracker.set_stage_status, ("run-1", "plan", "failed"), {"error": 42}, "error"),
            (tracker.set_tool_status, ("run-1", "grep", "completed"), {"error": "x"}, "error"),
            (tracker.set_run_status, ("run-1", "running"), {"error": ValueError()}, "error"),
            (tracker.add_stage, ("run-1", "deploy", "deploy"), {"error": "boom"}, "error"),
            (tracker.add_tool, ("run-1", "ls", "ls"), {"status": "failed", "error": 1}, "error"),
            (tracker.set_labels, ("run-1", {"team": 7}), {}, "labels"),
            (tracker.set_labels, ("run-1", "team=a"), {}, "labels"),
            (tracker.set_labels, ("run-1",), {"labels": {"": "x"}}, "labels"),
            (tracker.add_run, ("run-2",), {"labels": {"team": ""}}, "labels"),
            (
                tracker.set_stage_status,
                ("run-1", "plan", "running"),
                {"attribution": "bob"},
                "attribution",
            ),
            (tracker.set_run_status, ("run-1", "paused"), {"attribution": 1}, "attribution"),
            (tracker.request_control, ("run-1", "quit"), {"attribution": "x"}, "attribution"),
        ):
            with pytest.raises(ContractError) as refused:
                call(*arguments, **keywords)  # type: ignore[operator]
            assert refused.value.path.startswith(path), (arguments, keywords)
        tracker.flush()  # nothing was queued: no error waits for the thread
        assert "run-2" not in tracker

        labels = {"team": "a"}
        tracker.set_labels("run-1", labels)
        labels["team"] = "changed after the call"  # the queued fact holds what was given
        tracker.set_stage_status("run-1", "plan", "failed", error=ValueError("disk full"))
        tracker.flush()
        root = tracker.activity("run-1")
        assert dict(root.labels or {}) == {"team": "a"}
        (plan,) = (node for node in root.graph.nodes if node.node_id == "plan")  # type: ignore[union-attr]
        assert plan.error is not None
        assert (plan.error.message, plan.error.type) == ("disk full", "ValueError")
