"""Real Celery workers in subprocesses, and a trio hub whose tracker a bridge reports to.

:class:`CeleryWorker` runs ``celery -A tests.celery.app worker -E`` against the test's
redis-server in its own process group (so a kill takes its pool children too), logging to a file
shown when a test fails. :func:`bridged` runs a hub, a :class:`RunTracker` on it and
``watch_celery`` forwarding into the hub's trio thread; its :class:`Roots` folds every frame into
a view, checks each against SPEC §5 as it arrives, and waits (bounded) for conditions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from celery import Celery

from tests.support.consumers import RecordingDispatcher
from tests.support.processes import signal_group, stop_group
from workflow_hub import RootActivity, StageNode, WorkflowActivityHub, open_hub
from workflow_hub.celery import CeleryWatch, watch_celery
from workflow_hub.reporting import ActivityView
from workflow_hub.tracker import RunTracker

from .app import app

REPO = Path(__file__).resolve().parents[2]


class CeleryWorker:
    """One worker process (``name`` is its node name, ``w1@host`` style)."""

    def __init__(
        self,
        broker_url: str,
        name: str,
        *,
        pool: str = "prefork",
        concurrency: int = 2,
        heartbeat: int = 1,
        queues: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.queues = queues
        self.env = env or {}
        # Pings go through an app of the worker's own broker (the test app may point elsewhere).
        self._client = Celery("ping", broker=broker_url, set_as_current=False)
        self.broker_url = broker_url
        self.name = name
        self.pool = pool
        self.concurrency = concurrency
        self.heartbeat = heartbeat
        self.process: subprocess.Popen[bytes] | None = None
        self._log = Path(tempfile.mkstemp(prefix="celery-worker-", suffix=".log")[1])

    @property
    def log(self) -> str:
        return self._log.read_text(errors="replace")

    def start(self, timeout: float = 120.0) -> None:
        """Start the worker and wait until it answers a ping (``timeout`` is a safety net for a
        loaded machine, not an expected time); a worker that never answers is stopped."""
        env = dict(os.environ, WORKFLOW_HUB_TEST_BROKER=self.broker_url, **self.env)
        with self._log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "tests.celery.app",
                    "worker",
                    "-E",
                    f"--pool={self.pool}",
                    f"--concurrency={self.concurrency}",
                    "-n",
                    self.name,
                    "--without-gossip",
                    "--without-mingle",
                    f"--heartbeat-interval={self.heartbeat}",
                    "--loglevel=INFO",
                    *(["-Q", self.queues] if self.queues else []),
                ],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready(self.process, timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, process: subprocess.Popen[bytes], timeout: float) -> None:
        # A worker without remote control answers no ping: its log says when it is ready.
        pings = not self.env.get("WORKFLOW_HUB_TEST_NO_CONTROL")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the celery worker exited:\n{self.log}")
            if pings and self._client.control.ping(destination=[self.name], timeout=0.5):
                return
            if not pings:
                if f"{self.name} ready." in self.log:
                    return
                time.sleep(0.1)  # another process's log: nothing to wait on here
        raise RuntimeError(f"the celery worker did not answer a ping in {timeout} s:\n{self.log}")

    def kill(self) -> None:
        """SIGKILL to the whole process group: no worker-offline event, no goodbye."""
        process = self.process
        if process is not None:
            signal_group(process.pid, signal.SIGKILL)
            process.wait()

    def stop(self) -> None:
        """Warm shutdown (SIGTERM to the group), then SIGKILL to what is left of it: the pool's
        children too, also when the main process already ended."""
        process, self.process = self.process, None
        if process is not None:
            stop_group(process, grace=15)


def stages(root: RootActivity) -> dict[str, StageNode]:
    """The root's stages by task id (the part after ``"{root}:"``)."""
    assert root.graph is not None
    found: dict[str, StageNode] = {}
    for node in root.graph.nodes:
        assert isinstance(node, StageNode)
        found[node.node_id] = node
    return found


def check_root(root: RootActivity) -> None:
    """SPEC §5 for one published root of a bridge (one run, stages only, no prompts): D4
    executions are the running stages; D8 working while anything executes; blocks are manual
    waits (lost tasks) only, never human waits."""
    nodes = stages(root).values()
    running = sum(1 for node in nodes if node.status == "running")
    assert root.active_execution_count == running, root
    if running:
        assert root.state == "working", root
    if root.state == "blocked":
        assert root.reason == "manual_intervention", root
        assert root.actionable_block_count > 0, root
        assert root.needs_attention, root
    assert root.reason != "awaiting_input", root
    blocked = sum(1 for node in nodes if node.status == "blocked")
    assert root.actionable_block_count == blocked, root


class Roots:
    """Every frame of the hub, folded in order and checked; ``history[root_id]`` keeps each
    published version of a root."""

    def __init__(self) -> None:
        self.hooks = RecordingDispatcher()
        """Every hook event of the hub (the tracker's lifecycle events among them)."""
        self.view = ActivityView()
        self.availabilities: list[str] = []
        self.history: dict[str, list[RootActivity]] = {}
        self._changed = trio.Event()

    async def follow(self, hub: WorkflowActivityHub) -> None:
        async with hub.subscribe() as frames:
            async for frame in frames:
                change = self.view.apply(frame)
                assert change.applied, change
                if frame.kind == "snapshot":
                    self.availabilities.append(frame.availability)
                for root in self.view.roots:
                    check_root(root)
                    versions = self.history.setdefault(root.root_run_id, [])
                    if not versions or versions[-1] != root:
                        versions.append(root)
                self._changed.set()
                self._changed = trio.Event()

    def get(self, root_id: str) -> RootActivity | None:
        return self.view.get(root_id)

    async def wait_for(
        self, what: str, predicate: Callable[[], bool], within: float = 90.0
    ) -> None:
        """Wait until ``predicate()`` holds, re-checked after every frame; fail after ``within``
        seconds (a safety net for a loaded machine: the wait ends on the frame)."""
        with trio.move_on_after(within):
            while not predicate():
                await self._changed.wait()
            return
        raise AssertionError(f"not within {within} s: {what}\nroots: {self.view.roots}")

    async def wait_root(
        self,
        root_id: str,
        predicate: Callable[[RootActivity], bool],
        what: str,
        within: float = 90.0,
    ) -> RootActivity:
        def holds() -> bool:
            root = self.get(root_id)
            return root is not None and predicate(root)

        await self.wait_for(f"{root_id}: {what}", holds, within)
        root = self.get(root_id)
        assert root is not None
        return root


def ended(root: RootActivity) -> bool:
    return root.state == "idle" and all(
        node.status in ("completed", "failed", "skipped") for node in stages(root).values()
    )


@asynccontextmanager
async def bridged(
    celery_app: Any = app, **options: Any
) -> AsyncIterator[tuple[Roots, CeleryWatch, RunTracker]]:
    """A hub and tracker in this trio thread; the bridge's threads forward into it."""
    token = trio.lowlevel.current_trio_token()

    def call(function: Callable[[], None]) -> None:
        trio.from_thread.run_sync(function, trio_token=token)

    options.setdefault("settle", 0.3)
    options.setdefault("inspect_timeout", 0.5)
    async with open_hub() as hub, trio.open_nursery() as nursery:
        roots = Roots()
        hub.bind_dispatcher(roots.hooks)
        nursery.start_soon(roots.follow, hub)
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="celery", include_graph=True
        )
        manager = watch_celery(celery_app, tracker, call=call, **options)
        watch = manager.__enter__()
        try:
            with trio.fail_after(20):
                await trio.to_thread.run_sync(watch.ready.wait, 15)
            assert watch.ready.is_set(), "the bridge did not become ready"
            await roots.wait_for("a ready frame", lambda: roots.view.availability == "ready", 5)
            yield roots, watch, tracker
        finally:
            with trio.CancelScope(shield=True):  # a cancelled test still stops the bridge
                await trio.to_thread.run_sync(manager.__exit__, None, None, None)
            nursery.cancel_scope.cancel()


class SeenEvents:
    """The events Celery's own receiver got: (type, task id) pairs."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._changed = threading.Condition()
        self.consuming = threading.Event()

    def record(self, event: dict[str, Any]) -> None:
        with self._changed:
            self._seen.add((str(event.get("type")), str(event.get("uuid"))))
            self._changed.notify_all()

    def _wait(self, item: tuple[str, str], timeout: float = 60) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: item in self._seen, timeout)

    def subscribed(self, celery_app: Any) -> bool:
        """Send probe events until the receiver gets one (at most 30 s): with Redis, events are
        published to subscribers, and the receiver subscribes on its first poll, after
        ``on_consume_ready``; an event sent before that is lost to it."""
        with celery_app.connection_for_write() as connection:
            dispatcher = celery_app.events.Dispatcher(connection, enabled=True)
            for attempt in range(150):
                token = f"probe-{attempt}"
                dispatcher.send("test-probe", uuid=token)
                if self._wait(("test-probe", token), 0.2):
                    return True
        return False

    async def wait(self, kind: str, task_id: str) -> None:
        """Until the receiver got ``kind`` for ``task_id`` (at most a minute): the worker sent
        it, and every event its dispatcher sent before it (one connection, in order)."""
        got = await trio.to_thread.run_sync(self._wait, (kind, task_id))
        assert got, f"no {kind} of {task_id} in a minute"


@asynccontextmanager
async def celery_events(celery_app: Any = app) -> AsyncIterator[SeenEvents]:
    """Celery's own ``app.events.Receiver`` in a thread, consuming before this yields: what a
    test waits on when a worker's log line comes before the event (``received`` does)."""
    seen = SeenEvents()
    stop = threading.Event()
    failed: list[BaseException] = []

    def consume() -> None:
        try:
            with celery_app.connection_for_read() as connection:
                receiver = celery_app.events.Receiver(connection, handlers={"*": seen.record})

                def ready(*_: Any, **__: Any) -> None:
                    seen.consuming.set()

                receiver.on_consume_ready = ready
                receiver.on_iteration = lambda: setattr(receiver, "should_stop", stop.is_set())
                for _ in receiver.itercapture(limit=None, wakeup=False):
                    pass
        except BaseException as error:
            failed.append(error)
            seen.consuming.set()

    thread = threading.Thread(target=consume, name="test-celery-events", daemon=True)
    thread.start()
    try:
        await trio.to_thread.run_sync(seen.consuming.wait, 30)
        assert not failed, failed
        assert seen.consuming.is_set(), "the event receiver did not start"
        assert await trio.to_thread.run_sync(seen.subscribed, celery_app), "no probe event came"
        yield seen
    finally:
        stop.set()
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(thread.join, 10)


async def blocking(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A Celery client call (blocking I/O) off the trio thread the bridge forwards into."""
    return await trio.to_thread.run_sync(lambda: function(*args, **kwargs))


async def stopped(worker: CeleryWorker) -> None:
    """``worker.stop()`` off the trio thread, also in a cancelled test (a ``finally`` after a
    ``fail_after`` or Ctrl-C): shielded, so the worker is never left running."""
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(worker.stop)
