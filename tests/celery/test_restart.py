"""A restarted bridge (issue 38): with ``--redis`` it continues from its own mirrored state.

The bridge core first (a previous instance's roots restored, then the workers' inspection), then
the command as a deploy runs it: ``workflow-hub celery --redis`` killed (``kill -9``) or stopped
(SIGTERM) while a chain runs on a real worker, and started again under the same source.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import trio.testing
from celery import chain

import redis
from tests.support.consumers import RecordingDispatcher
from tests.support.processes import owned_process, signal_group
from tests.support.redis_server import RedisServer
from workflow_hub import (
    ChangedFrame,
    Cursor,
    LifecycleEvent,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    StageTarget,
    WorkflowActivityHub,
    WorkflowEvent,
    open_hub,
)
from workflow_hub.celery import CeleryBridge, serve_celery
from workflow_hub.celery._restore import fold_newest_first
from workflow_hub.tracker import RunTracker
from workflow_hub.wire import loads

from .app import add, app, nap
from .support import (
    REPO,
    CeleryWorker,
    blocking,
    bridged,
    celery_events,
    check_root,
    stages,
    stopped,
)

Frame = SnapshotFrame | ChangedFrame | RemovedFrame


def event(kind: str, uuid: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": uuid, "hostname": "w1@h", **fields}


def statuses(root: RootActivity) -> dict[str, str]:
    return {key: node.status for key, node in stages(root).items()}


def previous_instance() -> tuple[RootActivity, ...]:
    """What a first bridge showed when it went: chain ``a`` (``a`` done, ``b`` and ``c``
    running), root ``y`` (one task running) and root ``x`` (ended)."""
    tracker = RunTracker(
        WorkflowActivityHub().register_publisher(), owner_session_id="celery", include_graph=True
    )
    bridge = CeleryBridge(tracker, settle=1.0)
    bridge.begin()
    bridge.recovered({}, 0.0)
    bridge.apply(
        [
            event("task-received", "a", name="step1", root_id="a"),
            event("task-started", "a"),
            event("task-succeeded", "a"),
            event("task-received", "b", name="step2", root_id="a", parent_id="a"),
            event("task-started", "b"),
            event("task-received", "c", name="side", root_id="a", parent_id="a"),
            event("task-started", "c"),
            event("task-received", "y", name="lone", root_id="y"),
            event("task-started", "y"),
            event("task-received", "x", name="done", root_id="x"),
            event("task-succeeded", "x"),
        ],
        0.0,
    )
    bridge.tick(5.0)
    assert tracker.run_status("x") == "completed"
    return tracker.activities()


async def test_restored_history_never_works_on_its_own_nor_makes_lifecycle_events() -> None:
    """SPEC §5 (restored history never counts as working and never synthesises lifecycle
    events), issue 38: a restarted bridge seeded with its previous roots keeps each task's
    root, name and parent and the stages that ended; a task that was in flight runs again only
    when a worker reports it (``b``), else it is unknown (blocked, needs attention: ``c``,
    ``y``) and only a final result settles it. The ended root ``x`` stays ended."""
    last = previous_instance()
    async with open_hub() as hub:
        hooks = RecordingDispatcher()
        hub.bind_dispatcher(hooks)
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="celery", include_graph=True
        )
        bridge = CeleryBridge(tracker, settle=1.0)
        bridge.begin()
        bridge.restore(last, 100.0)
        unreported = bridge.recovered({"w1@h": {"active": [{"id": "b", "name": "step2"}]}}, 100.0)
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(unreported) == ["c", "y"]
        a = tracker.activity("a")
        assert statuses(a) == {"a": "completed", "b": "running", "c": "blocked"}
        assert stages(a)["b"].parent_ids == ("a:a",)
        assert [n.name for n in stages(a).values()] == ["step1", "step2", "side"]
        assert (a.state, a.active_execution_count, a.needs_attention) == ("working", 1, True)
        y = tracker.activity("y")
        assert (y.state, y.reason, y.active_execution_count) == (
            "blocked",
            "manual_intervention",
            0,
        )
        assert tracker.run_status("x") == "completed"
        assert hooks.lifecycle() == [], "restored history made lifecycle events"
        # A result backend's word that a restored task is still in flight is no worker's:
        # it stays unknown. A final result settles it.
        bridge.settle_from_results({"y": "STARTED", "c": "SUCCESS"}, 101.0)
        assert statuses(tracker.activity("y")) == {"y": "blocked"}
        assert statuses(tracker.activity("a"))["c"] == "completed"
        bridge.apply([event("task-succeeded", "b")], 102.0)
        await trio.testing.wait_all_tasks_blocked()
        moved = [t.stage_id for t in hooks.targets() if isinstance(t, StageTarget)]
        assert sorted(moved) == ["a:b", "a:c"]  # what happened after the restart, and only that


def command(broker: RedisServer, prefix: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "workflow_hub._cli",
        "celery",
        "--app",
        "tests.celery.app:app",
        "--port",
        "0",
        "--redis",
        broker.url,
        "--prefix",
        prefix,
        "--settle",
        "0.5",
        "--inspect-timeout",
        "1",
    ]


@contextmanager
def bridge_process(broker: RedisServer, prefix: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    env = dict(os.environ, WORKFLOW_HUB_TEST_BROKER=broker.url, PYTHONUNBUFFERED="1")
    with owned_process(
        command(broker, prefix),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), process.stderr.read() if process.stderr else ""
        yield process, url


def wait_snapshot(
    url: str, predicate: Callable[[SnapshotFrame], bool], what: str, within: float = 60.0
) -> SnapshotFrame:
    """Poll the bridge's snapshot (each root checked against §5) until ``predicate`` holds."""
    deadline = time.monotonic() + within
    while True:
        frame = loads(SnapshotFrame, httpx.get(f"{url}/v1/snapshot", timeout=5).text)
        for root in frame.roots or ():
            check_root(root)
        if predicate(frame):
            return frame
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}; last {frame}")
        time.sleep(0.1)  # an HTTP poll of another process: nothing to wait on here


def wait_mirrored(
    broker: RedisServer,
    prefix: str,
    predicate: Callable[[dict[str, RootActivity | None]], bool],
    what: str,
    within: float = 60.0,
) -> None:
    """Poll the bridge's mirrored frames in Redis (its last state, read as a restart reads it)
    until ``predicate`` holds of it."""
    client = redis.Redis.from_url(broker.url)
    deadline = time.monotonic() + within
    try:
        while True:
            entries = client.xrevrange(f"{prefix}:celery:frames", count=500)
            frames = [loads(Frame, fields[b"frame"].decode()) for _id, fields in entries]
            roots: dict[str, RootActivity | None] = {}
            fold_newest_first(frames, roots)
            if predicate(roots):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {within} s: {what}; last {roots}")
            time.sleep(0.05)  # another process's writes: nothing to wait on here
    finally:
        client.close()


def root_of(frame: SnapshotFrame, root_id: str) -> RootActivity | None:
    return next((r for r in frame.roots or () if r.root_run_id == root_id), None)


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_bridge_restarted_mid_chain_continues_the_chain_as_one_root(
    broker: RedisServer, worker: CeleryWorker, stop: signal.Signals
) -> None:
    """Issue 38, SPEC §5: ``workflow-hub celery --redis`` killed (or stopped) while a chain's
    second step runs; started again under the same source, it restores the chain's root from
    its mirrored state: the first step completed (history, no lifecycle event of the new
    instance), the running step running in the same root (the worker's inspection says so,
    never the restored state), and the last step joins it under its parent. No task is a root
    of its own, and none is named ``unknown task``."""
    prefix = f"restart-{stop.name.lower()}"
    with bridge_process(broker, prefix) as (old, url):
        wait_snapshot(url, lambda f: f.availability == "ready", "the first bridge is ready")
        result = chain(add.si(1, 1), nap.si(15), add.si(2, 2)).apply_async()
        first, second, third = result.parent.parent.id, result.parent.id, result.id
        wait_snapshot(
            url,
            lambda f: (r := root_of(f, first)) is not None and statuses(r).get(second) == "running",
            "the chain's second step runs",
        )
        # A ``kill -9`` loses what the mirror had not yet written: wait until Redis holds it,
        # so that this test is about restoring the mirrored state, not about the mirror's lag.
        wait_mirrored(
            broker,
            prefix,
            lambda roots: (
                (r := roots.get(first)) is not None
                and statuses(r) == {first: "completed", second: "running"}
            ),
            "the mirror wrote the chain's second step running",
        )
        signal_group(old.pid, stop)
        old.wait(timeout=20)
    with bridge_process(broker, prefix) as (_new, url):
        ready = wait_snapshot(url, lambda f: f.availability == "ready", "the new bridge is ready")
        root = root_of(ready, first)
        assert root is not None, ready
        assert statuses(root) == {first: "completed", second: "running"}, (
            "the step must still run when the new bridge is ready: raise the nap"
        )
        assert stages(root)[second].parent_ids == (f"{first}:{first}",)
        assert (root.state, root.reason) == ("working", "executing")
        done = wait_snapshot(
            url,
            lambda f: (
                (r := root_of(f, first)) is not None
                and statuses(r).get(third) == "completed"
                and r.state == "idle"
            ),
            "the chain ended",
        )
        root = root_of(done, first)
        assert root is not None
        assert statuses(root) == {first: "completed", second: "completed", third: "completed"}
        assert stages(root)[third].parent_ids == (f"{first}:{second}",)
        ids = {r.root_run_id for r in done.roots or ()}
        assert not ids & {second, third}, ids
        assert all(n.name != "unknown task" for n in stages(root).values())
        epoch = done.cursor.epoch
    client = redis.Redis.from_url(broker.url)
    mirrored = [
        loads(WorkflowEvent, fields[b"event"].decode())
        for _id, fields in client.xrange(f"{prefix}:celery:events")
    ]
    moved = {
        event.target.stage_id
        for event in mirrored
        if isinstance(event, LifecycleEvent)
        and event.cursor.epoch == epoch
        and isinstance(event.target, StageTarget)
    }
    assert f"{first}:{first}" not in moved, "the restored first step made a lifecycle event"
    assert {f"{first}:{second}", f"{first}:{third}"} <= moved


def test_an_unnamed_task_is_looked_up_once_and_joins_its_parents_root_under_it() -> None:
    """Issue 38: a task first seen from an event without its name (its ``task-received`` was
    before the bridge listened) is ``unknown task`` until named; half a second later it is
    asked for once, and the name found (with its parent's id, from the result backend) moves
    it under its parent, in the state it reached."""
    tracker = RunTracker(
        WorkflowActivityHub().register_publisher(), owner_session_id="celery", include_graph=True
    )
    bridge = CeleryBridge(tracker, settle=1.0)
    bridge.begin()
    bridge.recovered({}, 0.0)
    bridge.apply([event("task-received", "a", name="step1", root_id="a")], 0.0)
    bridge.apply([event("task-succeeded", "a"), event("task-succeeded", "b")], 0.1)
    assert [n.name for n in stages(tracker.activity("b")).values()] == ["unknown task"]
    assert bridge.take_name_requests(0.3) == []
    assert bridge.take_name_requests(0.6) == ["b"]
    assert bridge.take_name_requests(5.0) == []  # asked once
    bridge.named({"b": {"name": "step2", "parent_id": "a"}}, 0.7)
    assert "b" not in {r.root_run_id for r in tracker.activities()}
    a = tracker.activity("a")
    assert statuses(a) == {"a": "completed", "b": "completed"}
    assert stages(a)["b"].name == "step2"
    assert stages(a)["b"].parent_ids == ("a:a",)


async def test_a_task_first_seen_at_its_end_after_a_restart_is_named(
    broker: RedisServer, worker: CeleryWorker
) -> None:
    """Issue 38, without ``--redis``: a task that a worker without remote control (it answers
    no inspection) received before the bridge started is first seen from its
    ``task-succeeded``, which carries no name. It is never named ``?``: ``unknown task``
    until the result backend (``result_extended``) gives its name, then that."""
    quiet = CeleryWorker(
        broker.url,
        "quiet@workflow-hub-tests",
        concurrency=1,
        queues="quiet",
        env={"WORKFLOW_HUB_TEST_EXTENDED": "1", "WORKFLOW_HUB_TEST_NO_CONTROL": "1"},
    )
    await blocking(quiet.start)
    try:
        async with celery_events() as seen:  # the bridge must miss its task-received
            result = await blocking(nap.apply_async, (3,), queue="quiet")
            await seen.wait("task-started", result.id)
        async with bridged() as (roots, _watch, _tracker):
            root = await roots.wait_root(
                result.id,
                lambda r: [n.name for n in stages(r).values()] == ["tests.celery.app.nap"],
                "the task named",
            )
            assert statuses(root) == {result.id: "completed"}
            names = {n.name for v in roots.history[result.id] for n in stages(v).values()}
            assert "?" not in names, names
    finally:
        await stopped(quiet)


def test_the_last_ready_state_is_each_roots_newest_frame_back_to_a_ready_snapshot() -> None:
    """How a restart reads its stream (newest first): the trailing non-ready snapshots of a
    clean stop are skipped; each root's newest changed frame wins, a removal drops it; a ready
    snapshot fills in the rest and ends the walk; a non-ready snapshot met after changes ends it
    too (nothing is published while recovering, so nothing older belongs to that state)."""

    def root(root_id: str, state: str = "idle") -> RootActivity:
        working = state == "working"
        return RootActivity(
            root_run_id=root_id,
            owner_session_id="celery",
            state=state,
            reason="executing" if working else "quiescent",
            active_execution_count=1 if working else 0,
            actionable_block_count=0,
            needs_attention=False,
        )

    at = Cursor(epoch="e", revision=1)
    ready = SnapshotFrame(cursor=at, availability="ready", roots=(root("a"), root("b"), root("c")))
    newest_first = [
        SnapshotFrame(cursor=at, availability="unavailable"),
        ChangedFrame(cursor=at, root=root("a", "working")),
        RemovedFrame(cursor=at, root_run_id="b"),
        ChangedFrame(cursor=at, root=root("a")),
        ready,
        ChangedFrame(cursor=at, root=root("z")),
    ]
    roots: dict[str, RootActivity | None] = {}
    assert fold_newest_first(newest_first, roots)
    assert roots == {"a": root("a", "working"), "b": None, "c": root("c")}
    cut: dict[str, RootActivity | None] = {}
    recovering = SnapshotFrame(cursor=at, availability="recovering")
    assert fold_newest_first([ChangedFrame(cursor=at, root=root("a")), recovering, ready], cut)
    assert cut == {"a": root("a")}
    trimmed: dict[str, RootActivity | None] = {}
    assert not fold_newest_first([ChangedFrame(cursor=at, root=root("a"))], trimmed)


async def test_without_redis_a_chain_running_across_the_start_splits_as_documented(
    worker: CeleryWorker,
) -> None:
    """docs/celery.md, "Restarts", without ``--redis``: a chain whose second step runs when the
    bridge starts is not restored. The step the inspection reports is a root of its own, with
    its name; the step sent afterwards makes the chain's root (the first step's id) alone,
    without a parent edge; the first step, which ended before, is not shown."""
    async with celery_events() as seen:
        result = await blocking(chain(add.si(1, 1), nap.si(3), add.si(2, 2)).apply_async)
        first, second, third = result.parent.parent.id, result.parent.id, result.id
        # Its task-received (which names the chain's root) is sent after the worker logs
        # "received": a bridge started on the log line got it once, on a loaded machine.
        await seen.wait("task-started", second)
    async with bridged() as (roots, _watch, _tracker):
        running = roots.get(second)
        assert running is not None, roots.view.roots
        assert [n.name for n in stages(running).values()] == ["tests.celery.app.nap"]
        chain_root = await roots.wait_root(
            first, lambda r: statuses(r).get(third) == "completed", "the last step"
        )
        assert list(stages(chain_root)) == [third]
        assert stages(chain_root)[third].parent_ids == ()
        await roots.wait_root(second, lambda r: statuses(r) == {second: "completed"}, "nap ends")


def test_a_redis_that_cannot_be_read_at_start_is_one_warning_and_no_state(
    broker: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/celery.md, "Restarts": with ``--redis`` at an address nothing answers, reading the
    last state fails at once; the bridge says so once and starts as without ``--redis``."""
    with (
        caplog.at_level(logging.WARNING, logger="workflow_hub.celery"),
        serve_celery(app, port=0, redis_url="redis://127.0.0.1:1/0", inspect_timeout=0.2) as served,
    ):
        assert served.watch.ready.wait(30), "the bridge did not become ready"
        assert served.watch.statistics().roots == 0
    said = [r.getMessage() for r in caplog.records if "last state" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith("could not read the last state of source 'celery' from Redis")
