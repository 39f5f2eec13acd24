"""C3 from Celery: a failed task's error and a root's labels, through a real worker."""

from __future__ import annotations

import trio
import trio.testing

from workflow_hub import FailureDetail, LifecycleEvent, RunTarget, StageTarget

from .app import add, flaky, invalid
from .support import CeleryWorker, blocking, bridged, ended, stages


async def test_a_task_that_raises_shows_its_error_on_its_stage_its_run_and_their_events(
    worker: CeleryWorker,
) -> None:
    """C3: a task raising ``ValueError("not a number: 'x'")`` is a failed stage whose ``error``
    is that message and type (parsed from ``task-failed``'s ``exception``, never its
    traceback), on the graph node, on the stage's event and on the failed run's event."""
    expected = FailureDetail(message="not a number: 'x'", type="ValueError")
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(invalid.delay, "x")
        root = await roots.wait_root(result.id, ended, "the task failed")
        assert root.needs_attention
        node = stages(root)[result.id]
        assert (node.status, node.error) == ("failed", expected)
        # The events were emitted before the frame that ended the root: once the hub's tasks
        # are idle, the hook dispatcher has recorded them.
        await trio.testing.wait_all_tasks_blocked()
        mine = [e for e in roots.hooks.lifecycle() if e.root_run_id == result.id]
        failed = [e.target for e in mine if e.target.status == "failed"]
        assert [type(t) for t in failed] == [StageTarget, RunTarget]
        assert all(t.error == expected for t in failed)
        assert "Traceback" not in repr(mine)


async def test_a_retried_task_that_succeeds_carries_no_error(worker: CeleryWorker) -> None:
    """``task-retried`` is not a failure: no stage or run of a task that retried once and then
    succeeded carries an error, on the graph or on any event (C3)."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(flaky.delay, 1)
        root = await roots.wait_root(result.id, ended, "the retried task ended")
        assert stages(root)[result.id].status == "completed"
        seen = roots.history[result.id]
        assert any(v.reason == "retrying" for v in seen)
        assert all(node.error is None for v in seen for node in stages(v).values())
        await trio.testing.wait_all_tasks_blocked()
        mine = [e for e in roots.hooks.lifecycle() if e.root_run_id == result.id]
        assert mine
        assert all(
            isinstance(e, LifecycleEvent) and getattr(e.target, "error", None) is None for e in mine
        )


async def test_roots_are_labelled_with_fixed_labels_their_queue_and_worker(
    worker: CeleryWorker,
) -> None:
    """C3: ``labels`` go on every root; ``labels_from=("queue", "worker")`` adds the queue of
    the task's ``task-sent`` and the hostname of the worker that took it."""
    options = {"labels": {"env": "test"}, "labels_from": ("queue", "worker")}
    async with bridged(**options) as (roots, _watch, _tracker):
        result = await blocking(add.delay, 1, 2)
        root = await roots.wait_root(
            result.id,
            lambda r: ended(r) and "worker" in (r.labels or {}),
            "the labelled root ended",
        )
        assert dict(root.labels or {}) == {"env": "test", "queue": "celery", "worker": worker.name}
