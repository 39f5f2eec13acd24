"""Workers that vanish and come back, and a bridge that starts while tasks are in flight.

A worker is lost after twice its heartbeat interval without an event (Celery's own rule); its
in-flight tasks then need attention (blocked stage, manual intervention), never run forever.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import httpx
import pytest
import trio
from celery import Celery

import redis
from tests.support.redis_server import RedisServer
from workflow_hub import Frame, SnapshotFrame, open_hub
from workflow_hub.celery import CeleryWatch, serve_celery, watch_celery
from workflow_hub.tracker import RunTracker
from workflow_hub.wire import loads

from .app import add, nap
from .support import CeleryWorker, blocking, bridged, ended, stages, stopped

HEARTBEAT = 1  # seconds: the workers here beat every second
TICK = 0.25
# docs/celery.md: lost within 2 x heartbeat interval + one tick of the last event; the margin
# is for a loaded 2-core machine.
LOST_BOUND = 2 * HEARTBEAT + TICK + 1.5


def interval_known(watch: CeleryWatch, hostname: str, within: float) -> bool:
    """Whether the bridge learnt the worker's heartbeat interval within ``within`` seconds
    (heartbeats publish no frame to wait on: this polls, in a thread)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if any(
            w.hostname == hostname and w.heartbeat_interval == HEARTBEAT for w in watch.workers()
        ):
            return True
        time.sleep(0.05)
    return False


async def test_a_killed_worker_makes_its_task_need_attention_then_resyncs(
    broker: RedisServer,
) -> None:
    """N4 for workers: a worker killed mid-task turns its task's stage ``blocked`` and the root
    blocked/manual_intervention with needs_attention within the documented bound (never running
    forever); when the worker comes back without the task, the task is failed and the root is
    a settled failure."""
    worker = CeleryWorker(broker.url, "w2@workflow-hub-tests", queues="lonely", heartbeat=HEARTBEAT)
    await blocking(worker.start)
    try:
        async with bridged(tick=TICK) as (roots, watch, tracker):
            result = await blocking(nap.apply_async, (30,), queue="lonely")
            await roots.wait_root(result.id, lambda r: r.active_execution_count == 1, "running")
            # The bound holds once the bridge knows the worker's interval (its first periodic
            # heartbeat; until then Celery's default, 2 s, applies).
            assert await blocking(interval_known, watch, worker.name, 5.0)
            killed_at = trio.current_time()
            await blocking(worker.kill)
            root = await roots.wait_root(
                result.id, lambda r: r.state == "blocked", "lost", within=LOST_BOUND
            )
            assert trio.current_time() - killed_at <= LOST_BOUND
            assert (root.reason, root.needs_attention, root.active_execution_count) == (
                "manual_intervention",
                True,
                0,
            )
            assert stages(root)[result.id].status == "blocked"
            assert watch.statistics().workers_lost == 1

            await blocking(worker.start)
            root = await roots.wait_root(result.id, ended, "resynchronised")
            assert stages(root)[result.id].status == "failed"
            assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", True)
            assert tracker.run_status(result.id) == "failed"
            assert watch.statistics().workers_lost == 0
    finally:
        await stopped(worker)


async def test_a_bridge_starts_recovering_and_is_ready_with_the_tasks_in_flight(
    worker: CeleryWorker,
) -> None:
    """P3 and §5 (hydration): a bridge started while a task runs publishes ``recovering`` first,
    then ``ready`` with that task running (from the workers' inspection), and follows it to
    its end."""
    async with bridged() as (first, _watch, _tracker):
        # Long enough to be running still when the second bridge's inspection is answered on a
        # loaded machine; the inspection may take its full second.
        result = await blocking(nap.delay, 4.0)
        await first.wait_root(result.id, lambda r: r.active_execution_count == 1, "running")
        async with bridged(inspect_timeout=1.0) as (second, _watch2, _tracker2):
            # Before the bridge: the new source's unavailable snapshot (if the subscription
            # came first); then recovering, and ready only after it.
            seen = [a for a in second.availabilities if a != "unavailable"]
            assert seen[:2] == ["recovering", "ready"], second.availabilities
            root = second.get(result.id)
            assert root is not None
            assert (root.state, root.reason, root.active_execution_count) == (
                "working",
                "executing",
                1,
            )
            root = await second.wait_root(result.id, ended, "the task ended")
            assert stages(root)[result.id].status == "completed"


async def test_a_lost_broker_makes_the_source_recovering_until_it_is_back() -> None:
    """N4: while the bridge cannot read the broker its source is ``recovering`` (never its last
    state as current); back, it inspects the workers and is ``ready`` again, and a task that was
    running meanwhile still ends completed (seen by an event, or read from the result backend)."""
    server = RedisServer()
    server.start()
    other = Celery("restarted", broker=server.url, backend=server.url)
    other.conf.broker_connection_retry_on_startup = True
    worker = CeleryWorker(server.url, "w3@workflow-hub-tests", heartbeat=HEARTBEAT)
    try:
        await blocking(worker.start)
        async with bridged(other, tick=TICK) as (roots, _watch, _tracker):
            result = await blocking(other.send_task, "tests.celery.app.nap", (3.0,))
            await roots.wait_root(result.id, lambda r: r.active_execution_count == 1, "running")
            await blocking(server.restart)
            await roots.wait_for(
                "recovering", lambda: roots.view.availability == "recovering", within=10
            )
            await roots.wait_for("ready again", lambda: roots.view.availability == "ready", 20)
            root = await roots.wait_root(result.id, ended, "the task ended", within=20)
            assert stages(root)[result.id].status == "completed"
    finally:
        await stopped(worker)
        server.close()


async def test_queued_work_with_no_live_worker_needs_attention_then_runs(
    own_redis_server: RedisServer,
) -> None:
    """§5 D3/D8 (issue 38): a task sent while no worker is alive is never shown progressing
    (it was ``working / automatic_continuation``): it is blocked and needs attention; a worker
    that starts then runs it, and the root ends completed without attention."""
    other = Celery("unserved", broker=own_redis_server.url, backend=own_redis_server.url)
    other.conf.task_send_sent_event = True  # queued work is known from task-sent only
    worker = CeleryWorker(own_redis_server.url, "w4@workflow-hub-tests", heartbeat=HEARTBEAT)
    try:
        async with bridged(other, tick=TICK) as (roots, _watch, tracker):
            result = await blocking(other.send_task, "tests.celery.app.add", (2, 3))
            root = await roots.wait_root(
                result.id, lambda r: r.state == "blocked", "blocked", within=10
            )
            assert (root.reason, root.needs_attention) == ("manual_intervention", True)
            assert stages(root)[result.id].status == "blocked"
            await blocking(worker.start)
            root = await roots.wait_root(result.id, ended, "run by the new worker")
            assert stages(root)[result.id].status == "completed"
            assert not root.needs_attention
            assert tracker.run_status(result.id) == "completed"
    finally:
        await stopped(worker)


async def test_a_broker_that_is_down_is_said_once_with_its_reason_and_the_source_is_unknown(
    own_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """N4 and consumer failures (issue 38): a bridge whose broker does not answer is
    ``recovering`` (unknown: never idle, never working), says ``broker unreachable: <reason>``
    in one warning however often kombu retries, and exposes it (``watch.broker_unreachable``);
    when the broker is up it says so, inspects the workers and is ``ready``."""
    caplog.set_level(logging.INFO, "workflow_hub.celery")
    own_redis_server.stop()
    other = Celery("down", broker=own_redis_server.url, backend=own_redis_server.url)
    other.conf.broker_connection_retry_on_startup = True
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="celery")
        token = trio.lowlevel.current_trio_token()

        def call(function: Callable[[], None]) -> None:
            trio.from_thread.run_sync(function, trio_token=token)

        with watch_celery(other, tracker, call=call, inspect_timeout=0.5, tick=TICK) as watch:
            assert await blocking(until, lambda: watch.broker_failures >= 2, 30)
            assert hub.availability == "recovering"
            assert not watch.ready.is_set()
            reason = watch.broker_unreachable
            assert reason is not None
            assert reason.startswith("broker unreachable: "), reason
            assert "Connection refused" in reason, reason
            warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
            assert [w for w in warnings if "broker unreachable" in w] == [
                f"{reason}; the source is recovering (unknown) until the broker is back"
            ], warnings
            await blocking(own_redis_server.start)
            assert await blocking(watch.ready.wait, 60)
            assert watch.broker_unreachable is None
            assert hub.availability == "ready"
            assert any("reachable again" in r.getMessage() for r in caplog.records)


def until(predicate: Callable[[], bool], within: float) -> bool:
    """Whether ``predicate()`` held within ``within`` seconds (polled in a thread: the
    receiver's retries publish no frame to wait on)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


async def test_a_killed_workers_prefetched_task_waits_for_redelivery_and_runs(
    broker: RedisServer, worker: CeleryWorker
) -> None:
    """§5 D3/D5 (issue 38): a worker killed with a task running (acknowledged when it started)
    and one prefetched (received, its message unacknowledged): the running one is lost (needs
    attention, failed when the worker is back without it); the prefetched one is never shown
    failed: it waits to be redelivered (``working / retrying``, while another worker is alive)
    and the redelivery runs it to completion."""
    killed = CeleryWorker(
        broker.url,
        "w5@workflow-hub-tests",
        queues="prefetch",
        concurrency=1,
        heartbeat=HEARTBEAT,
        env={"WORKFLOW_HUB_TEST_VISIBILITY": "1"},
    )
    await blocking(killed.start)
    try:
        async with bridged(tick=TICK) as (roots, watch, tracker):
            running = await blocking(nap.apply_async, (30,), queue="prefetch")
            await roots.wait_root(running.id, lambda r: r.active_execution_count == 1, "running")
            prefetched = await blocking(add.apply_async, (2, 2), queue="prefetch")
            # Received (prefetched) by the worker, as the bridge knows: polled, as no frame
            # need come of it (the task was pending already from task-sent).
            assert await blocking(until, lambda: worker_of(watch, prefetched.id) == killed.name, 30)
            await blocking(killed.kill)
            # How soon a silent worker is lost is the first test's; here only what follows.
            root = await roots.wait_root(running.id, lambda r: r.state == "blocked", "lost")
            root = await roots.wait_root(
                prefetched.id,
                lambda r: r.reason == "retrying",
                "waiting to be redelivered",
            )
            assert stages(root)[prefetched.id].status == "pending"
            assert (root.state, root.needs_attention) == ("working", False)
            await blocking(killed.start)
            root = await roots.wait_root(prefetched.id, ended, "redelivered and run")
            assert tracker.run_status(prefetched.id) == "completed"
            assert all(
                stages(v)[prefetched.id].status != "failed" for v in roots.history[prefetched.id]
            )
            root = await roots.wait_root(running.id, ended, "resynchronised without it")
            assert tracker.run_status(running.id) == "failed"
    finally:
        await stopped(killed)


def worker_of(watch: CeleryWatch, task_id: str) -> str | None:
    """The worker the bridge says holds ``task_id`` (its received event was applied)."""
    task = watch.bridge._tasks.get(task_id)  # the bridge's own record
    return None if task is None else task.worker


def test_a_broker_lost_while_serving_is_said_on_the_served_snapshot_and_the_fleet(
    own_redis_server: RedisServer, broker: RedisServer
) -> None:
    """C3, N4 (issue 38): a bridge serving its hub whose broker goes down publishes
    ``recovering`` with the reason as the snapshot's ``detail`` (``broker unreachable: …``): the
    served snapshot and the mirrored fleet frame say it, never idle, never working; with the
    broker back it is ``ready`` again, without a detail."""
    down = Celery("lost", broker=own_redis_server.url, backend=own_redis_server.url)
    down.conf.broker_connection_retry_on_startup = True
    fleet = redis.Redis.from_url(broker.url)
    with serve_celery(
        down, port=0, redis_url=broker.url, source="lost", prefix="detailtest", inspect_timeout=0.5
    ) as served:
        assert served.watch.ready.wait(30), "the bridge did not become ready"
        assert served_snapshot(served.url).availability == "ready"
        own_redis_server.stop()
        snapshot = poll(lambda: said(served_snapshot(served.url)), 60, "a detail")
        assert snapshot.availability == "recovering"
        assert snapshot.roots is None
        assert snapshot.detail is not None
        assert snapshot.detail.startswith("broker unreachable: "), snapshot.detail
        assert "Connection refused" in snapshot.detail or "Error" in snapshot.detail
        mirrored = poll(lambda: said(last_mirrored(fleet)), 30, "the fleet's detail")
        assert mirrored.detail == snapshot.detail
        own_redis_server.start()
        back = poll(lambda: ready(served_snapshot(served.url)), 90, "ready again")
        assert back.detail is None
        assert served.watch.broker_unreachable is None


def test_a_broker_down_from_the_start_is_said_on_the_served_snapshot(
    own_redis_server: RedisServer,
) -> None:
    """C3, N4 (issue 38): a bridge whose broker is down when it starts is ``recovering`` with
    the outage's reason as the snapshot's ``detail`` (said once the first attempt failed), not a
    bare ``recovering``; with the broker up it is ``ready`` without one."""
    own_redis_server.stop()
    down = Celery("early", broker=own_redis_server.url, backend=own_redis_server.url)
    down.conf.broker_connection_retry_on_startup = True
    with serve_celery(down, port=0, inspect_timeout=0.5) as served:
        snapshot = poll(lambda: said(served_snapshot(served.url)), 60, "a detail")
        assert snapshot.availability == "recovering"
        assert snapshot.detail is not None
        assert snapshot.detail.startswith("broker unreachable: "), snapshot.detail
        assert snapshot.detail == served.watch.broker_unreachable
        own_redis_server.start()
        back = poll(lambda: ready(served_snapshot(served.url)), 90, "ready")
        assert back.detail is None


def served_snapshot(url: str) -> SnapshotFrame:
    return loads(SnapshotFrame, httpx.get(f"{url}/v1/snapshot", timeout=5).text)


def last_mirrored(client: redis.Redis) -> SnapshotFrame | None:
    """The last frame the source's mirror appended, if it is a snapshot."""
    entries = client.xrevrange("detailtest:lost:frames", count=1)
    if not entries:
        return None
    frame = loads(Frame, entries[0][1][b"frame"].decode())
    return frame if isinstance(frame, SnapshotFrame) else None


def said(frame: SnapshotFrame | None) -> SnapshotFrame | None:
    return frame if frame is not None and frame.detail is not None else None


def ready(frame: SnapshotFrame) -> SnapshotFrame | None:
    return frame if frame.availability == "ready" else None


def poll(read: Callable[[], SnapshotFrame | None], within: float, what: str) -> SnapshotFrame:
    """``read()`` until it gives a frame (the receiver's retries and the served hub give no
    event to wait on from here: polled, bounded by ``within`` seconds)."""
    deadline = time.monotonic() + within
    while True:
        found = read()
        if found is not None:
            return found
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.1)
