"""One door for scheduler bridges: ``SchedulerFacts``, implemented by both trackers (issue 35).

A bridge types its tracker with :class:`workflow_hub.tracker.SchedulerFacts`; a
:class:`RunTracker` and the thread host's tracker (``workflow_hub.sync``) both satisfy it. The
type checker holds the signatures to it (mypy runs on a program that assigns both, and that
refuses an object missing a fact or taking another signature); ``isinstance`` holds the methods
at run time. The bridges' own names for it (``workflow_hub.celery.Facts``,
``workflow_hub.langgraph.FactSink``) are the same protocol under a name kept for code written
before it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workflow_hub import RunTracker, WorkflowActivityHub
from workflow_hub.sync import open_hub
from workflow_hub.tracker import SchedulerFacts

BOTH_TRACKERS = """
from workflow_hub import RunTracker
from workflow_hub.sync import Tracker
from workflow_hub.tracker import SchedulerFacts


def run_tracker(tracker: RunTracker) -> SchedulerFacts:
    return tracker


def sync_tracker(tracker: Tracker) -> SchedulerFacts:
    return tracker
"""

NOT_TRACKERS = """
from workflow_hub import RunTracker
from workflow_hub.tracker import SchedulerFacts


class NoAcknowledge:
    def __init__(self, tracker: RunTracker) -> None:
        self.hydrating = tracker.hydrating
        self.batch = tracker.batch


class OtherStageStatus:
    def set_stage_status(self, run_id: str, stage_id: str, status: str) -> None: ...


def missing(tracker: NoAcknowledge) -> SchedulerFacts:
    return tracker


def narrower(tracker: OtherStageStatus) -> SchedulerFacts:
    return tracker
"""


def mypy(tmp_path: Path, program: str) -> subprocess.CompletedProcess[str]:
    user = tmp_path / "user.py"
    user.write_text(textwrap.dedent(program))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "."],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )


def test_mypy_holds_both_trackers_to_the_protocol(tmp_path: Path) -> None:
    """Issue 35: ``RunTracker`` and the thread host's ``Tracker`` are ``SchedulerFacts`` to a
    type checker, with every fact's signature; objects that miss a fact or narrow one are not."""
    accepted = mypy(tmp_path, BOTH_TRACKERS)
    assert accepted.returncode == 0, accepted.stdout
    (tmp_path / "user.py").unlink()
    refused = mypy(tmp_path, NOT_TRACKERS)
    assert refused.returncode == 1, refused.stdout
    for refused_type in ("NoAcknowledge", "OtherStageStatus"):
        expected = (
            f'Incompatible return value type (got "{refused_type}", expected "SchedulerFacts")'
        )
        assert expected in refused.stdout, refused.stdout


def test_a_run_tracker_accepts_scheduler_facts() -> None:
    """Issue 35: a ``RunTracker`` is a ``SchedulerFacts`` at run time."""
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
    assert isinstance(tracker, SchedulerFacts)


def test_the_thread_host_s_tracker_accepts_scheduler_facts() -> None:
    """Issue 35: the tracker ``hub.tracker(...)`` of ``workflow_hub.sync`` is one too, and the
    facts it takes through the protocol reach the hub (§5)."""
    with open_hub() as hub:
        tracker = hub.tracker(owner_session_id="s")
        assert isinstance(tracker, SchedulerFacts)
        facts: SchedulerFacts = tracker
        tracker.start()
        with facts.batch():
            facts.add_run("root", status="running")
            facts.add_stage("root", "build", "Build", status="running")
        assert tracker.activity("root").active_execution_count == 1


def test_something_without_every_fact_is_not_scheduler_facts() -> None:
    """The run-time check looks for every method: a partial recorder is refused."""

    class Recorder:
        def add_run(self, run_id: str) -> None: ...

    assert not isinstance(Recorder(), SchedulerFacts)


def test_the_bridges_names_are_the_protocol() -> None:
    """The Celery and LangGraph bridges name ``SchedulerFacts`` under their earlier names: the
    same methods, nothing of their own."""
    pytest.importorskip("celery")
    pytest.importorskip("langgraph")
    from workflow_hub.celery import Facts
    from workflow_hub.langgraph import FactSink

    for alias in (Facts, FactSink):
        assert issubclass(alias, SchedulerFacts)
        own = {name for name in vars(alias) if not name.startswith("_")}
        assert own == set(), own
    hub = WorkflowActivityHub()
    tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
    assert isinstance(tracker, Facts)
    assert isinstance(tracker, FactSink)
