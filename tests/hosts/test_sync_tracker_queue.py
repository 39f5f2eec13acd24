"""The thread host's tracker queues its facts (H1, C1): when a fact's error is raised, in which
thread, what the facts around it do, and that each thread's facts keep their order."""

from __future__ import annotations

import threading

import pytest

from workflow_hub import ChangedFrame, SnapshotFrame
from workflow_hub.sync import HostClosedError, open_hub

TIMEOUT = 5.0


def test_a_failed_fact_changes_nothing_and_later_facts_still_apply() -> None:
    """C1: the bad fact changes nothing, the facts after it are applied, and the first error
    is raised by flush() with a note counting the later failures; then there is nothing left."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        tracker.add_run("run-1")
        tracker.add_run("run-1")  # already tracked: fails in the hub's thread
        tracker.set_run_status("ghost", "running")  # unknown: fails too
        tracker.set_run_status("run-1", "running")  # applied
        with pytest.raises(ValueError, match="already tracked") as failure:
            tracker.flush()
        assert failure.value.__notes__ == ["1 later queued fact(s) of this thread failed too"]
        tracker.flush()  # told once
        assert tracker.run_status("run-1") == "running"
        assert tracker.activities()[0].root_run_id == "run-1"


def test_a_reading_raises_the_pending_error_first() -> None:
    """A reading waits for the hub's thread, so it raises an earlier fact's error."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.add_run("run-1")  # before start(): fails (not started)
        with pytest.raises(RuntimeError, match="first snapshot"):
            tracker.activities()
        assert "run-1" not in tracker


def test_the_end_of_a_batch_raises_after_publishing_the_rest() -> None:
    """§5 batch: the good facts of the block are published once, together; the bad one's error
    is raised at the end of the block."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=TIMEOUT), SnapshotFrame)

            def block() -> None:
                with tracker.batch():
                    tracker.add_run("run-1", status="running")
                    tracker.add_stage("run-1", "plan", "plan")
                    tracker.set_stage_status("run-1", "nope", "running")
                    tracker.set_stage_status("run-1", "plan", "running")

            with pytest.raises(KeyError):
                block()
            changed = frames.receive(timeout=TIMEOUT)
            assert isinstance(changed, ChangedFrame)
            assert (changed.root.root_run_id, changed.root.active_execution_count) == ("run-1", 1)
            with pytest.raises(TimeoutError):
                frames.receive(timeout=0.05)


def test_errors_are_raised_in_the_thread_that_reported_the_fact() -> None:
    """A fact's error belongs to its thread: another thread's flush() does not see it."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        reported = threading.Event()
        seen: list[BaseException] = []

        def bad_reporter() -> None:
            tracker.set_run_status("ghost", "running")
            reported.set()
            try:
                tracker.flush()
            except KeyError as error:
                seen.append(error)

        tracker.flush()
        thread = threading.Thread(target=bad_reporter)
        thread.start()
        assert reported.wait(TIMEOUT)
        tracker.flush()  # this thread's facts are fine
        thread.join(TIMEOUT)
        assert len(seen) == 1


def test_each_threads_facts_keep_their_order() -> None:
    """H1: facts of one thread apply in the order it reported them, whatever other threads do:
    every thread's run ends in the status it reported last, and no fact failed."""
    threads, facts = 4, 300
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        failures: list[BaseException] = []

        def report(n: int) -> None:
            try:
                run_id = f"run-{n}"
                tracker.add_run(run_id, status="running")
                tracker.add_stage(run_id, "work", "work")
                for i in range(facts):
                    tracker.set_stage_status(run_id, "work", "running" if i % 2 else "pending")
                tracker.set_run_status(run_id, "completed")
                tracker.flush()
            except BaseException as error:
                failures.append(error)

        workers = [threading.Thread(target=report, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(TIMEOUT * 4)
        assert failures == []
        assert [tracker.run_status(f"run-{n}") for n in range(threads)] == ["completed"] * threads


def test_a_fact_after_the_host_closed_raises() -> None:
    """H1: once the host has closed, a fact raises HostClosedError at once."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
    with pytest.raises(HostClosedError):
        tracker.add_run("run-1")


def test_a_batch_that_does_not_wait_queues_its_end_and_tells_its_error_later() -> None:
    """H1, C1: ``batch(wait=False)`` returns while the hub's thread is busy elsewhere (here: held
    by another call); its facts are published once, together, before anything asked of the
    hub's thread afterwards, and a bad fact's error is raised by the thread's next waiting call."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=TIMEOUT), SnapshotFrame)
            held, release = threading.Event(), threading.Event()

            def hold() -> None:
                held.set()
                release.wait(TIMEOUT)

            holder = threading.Thread(target=hub.call, args=(hold,))
            holder.start()
            try:
                assert held.wait(TIMEOUT)
                with tracker.batch(wait=False):
                    tracker.add_run("run-1", status="running")
                    tracker.add_stage("run-1", "plan", "plan")
                    tracker.set_stage_status("run-1", "nope", "running")  # fails, later
                    tracker.set_stage_status("run-1", "plan", "running")
                assert holder.is_alive()  # the block ended while the hub's thread was held
            finally:
                release.set()
                holder.join(TIMEOUT)
            with pytest.raises(KeyError, match="nope"):
                tracker.flush()
            changed = frames.receive(timeout=TIMEOUT)
            assert isinstance(changed, ChangedFrame)
            assert (changed.root.root_run_id, changed.root.active_execution_count) == ("run-1", 1)
            with pytest.raises(TimeoutError):
                frames.receive(timeout=0.05)


def test_the_hub_thread_runs_code_next_to_the_tracker_after_what_was_queued() -> None:
    """H1: ``tracker.hub_thread()`` hands code to the hub's thread: ``submit`` returns at once
    and runs after the facts this thread queued before it, against the RunTracker itself;
    ``call`` waits and returns; after the host closes, ``submit`` raises."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="session-1")
        tracker.start()
        thread = tracker.hub_thread()
        assert not thread.is_current()
        seen: list[object] = []
        tracker.add_run("run-1")  # queued
        thread.submit(
            lambda: seen.append((thread.is_current(), thread.tracker.run_status("run-1")))
        )
        thread.submit(lambda: thread.tracker.set_run_status("run-1", "running"))
        assert thread.call(lambda: seen) == [(True, "pending")]
        assert tracker.run_status("run-1") == "running"
        with pytest.raises(ValueError, match="boom"):
            thread.call(_raise, ValueError("boom"))
    with pytest.raises(HostClosedError):
        thread.submit(lambda: None)


def _raise(error: Exception) -> None:
    raise error
