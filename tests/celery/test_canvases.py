"""Celery canvases through a real worker and broker, as roots on a hub (SPEC §5, P3, P4)."""

from __future__ import annotations

import uuid

from celery import chain

from workflow_hub import RootActivity

from .app import add, app, boom, flaky, launch, nap
from .support import CeleryWorker, blocking, bridged, ended, stages


async def test_a_chain_is_one_root_whose_stages_follow_each_other(worker: CeleryWorker) -> None:
    """§5 D4/D8: a chain is one root (its first task's id); each task a stage whose parent is
    the task before it; working while a task runs, idle/quiescent once the last one succeeded."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(chain(add.s(1, 2), nap.si(0.3), add.s(4)).apply_async)
        root_id = result.parent.parent.id
        root = await roots.wait_root(root_id, ended, "the chain ended")
        assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", False)
        nodes = stages(root)
        first, second, third = root_id, result.parent.id, result.id
        assert set(nodes) == {first, second, third}
        assert nodes[first].parent_ids == ()
        assert nodes[second].parent_ids == (f"{root_id}:{first}",)
        assert nodes[third].parent_ids == (f"{root_id}:{second}",)
        assert all(node.status == "completed" for node in nodes.values())
        seen = roots.history[root_id]
        assert any(v.state == "working" and v.reason == "executing" for v in seen)
        # Between two steps nothing runs yet the chain goes on: never idle before its end.
        assert all(v.state == "working" for v in seen[:-1])


async def test_a_lone_task_is_a_root_of_one_stage(worker: CeleryWorker) -> None:
    """§5: a task outside any canvas is its own root with one stage."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(add.delay, 2, 3)
        root = await roots.wait_root(result.id, ended, "the task ended")
        assert list(stages(root)) == [result.id]
        assert stages(root)[result.id].name == "tests.celery.app.add"


async def test_a_group_started_by_a_task_is_one_root(worker: CeleryWorker) -> None:
    """A group sent from inside a task shares its root: every member is a stage under it."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(launch.delay, "group")
        root = await roots.wait_root(
            result.id, lambda r: ended(r) and len(stages(r)) == 4, "launcher and three members"
        )
        nodes = stages(root)
        members = [node for key, node in nodes.items() if key != result.id]
        assert all(node.parent_ids == (f"{result.id}:{result.id}",) for node in members)
        assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", False)


async def test_a_chord_runs_its_body_after_its_header_in_one_root(worker: CeleryWorker) -> None:
    """A chord: header members, then the body (sent by the last member to finish) in the same
    root; the root ends once the body has, not when the header has."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(launch.delay, "chord")
        root = await roots.wait_root(
            result.id, lambda r: ended(r) and len(stages(r)) == 5, "launcher, header and body"
        )
        names = sorted(node.name for node in stages(root).values())
        assert names.count("tests.celery.app.total") == 1
        assert all(node.status == "completed" for node in stages(root).values())
        assert (root.state, root.needs_attention) == ("idle", False)


async def test_a_failing_chord_header_fails_the_root_once_nothing_can_continue(
    worker: CeleryWorker,
) -> None:
    """D3: a failed task fails its run only when the rest has ended; the body never runs, and
    the root is a settled failure: idle/quiescent with needs_attention."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(launch.delay, "chord-failing")
        root = await roots.wait_root(
            result.id, lambda r: ended(r) and len(stages(r)) == 3, "launcher and header"
        )
        statuses = sorted(node.status for node in stages(root).values())
        assert statuses == ["completed", "completed", "failed"]
        assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", True)
        assert all(not v.needs_attention for v in roots.history[result.id][:-1])


async def test_a_failing_task_fails_its_root(worker: CeleryWorker) -> None:
    """A lone failed task: stage failed, root a settled failure."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(boom.delay, "lone")
        root = await roots.wait_root(result.id, ended, "the task failed")
        assert stages(root)[result.id].status == "failed"
        assert root.needs_attention


async def test_a_retried_task_shows_retrying_then_completes(worker: CeleryWorker) -> None:
    """D5: between a retry and its next attempt the root is working/retrying, never idle."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(flaky.delay, 1)
        await roots.wait_root(
            result.id, lambda r: r.reason == "retrying", "retrying after the first attempt"
        )
        root = await roots.wait_root(result.id, ended, "the retried task succeeded")
        assert stages(root)[result.id].status == "completed"
        assert (root.state, root.needs_attention) == ("idle", False)
        assert all(v.state == "working" for v in roots.history[result.id][:-1])


async def test_revoking_a_running_task_with_terminate_kills_its_root(worker: CeleryWorker) -> None:
    """A terminated task is a kill: the stage is skipped and the run ends killed, with no
    attention needed (an intentional stop is quiescent)."""
    async with bridged() as (roots, _watch, tracker):
        result = await blocking(nap.delay, 30)
        await roots.wait_root(result.id, lambda r: r.active_execution_count == 1, "running")
        await blocking(result.revoke, terminate=True)
        root = await roots.wait_root(result.id, ended, "the task was terminated")
        assert stages(root)[result.id].status == "skipped"
        assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", False)
        assert tracker.run_status(result.id) == "killed"


async def test_terminating_one_member_of_a_group_leaves_its_sibling_executing(
    worker: CeleryWorker,
) -> None:
    """§5 D1/D8 (issue 38): one member of a group revoked with terminate is that task's stop,
    not its root's: the sibling still running keeps the root ``working / executing`` (never
    ``stopping``); when it is terminated too, the run ends ``killed``."""
    async with bridged() as (roots, _watch, tracker):
        result = await blocking(launch.delay, "naps")

        def naps(root: RootActivity) -> list[str]:
            return [
                n.node_id
                for n in stages(root).values()
                if n.name.endswith(".nap") and n.status == "running"
            ]

        root = await roots.wait_root(result.id, lambda r: len(naps(r)) == 2, "both naps running")
        first, second = naps(root)
        await blocking(app.control.revoke, first, terminate=True)
        root = await roots.wait_root(
            result.id, lambda r: stages(r)[first].status == "skipped", "the first terminated"
        )
        assert (root.state, root.reason, root.active_execution_count) == (
            "working",
            "executing",
            1,
        )
        assert all(v.reason != "stopping" for v in roots.history[result.id])
        await blocking(app.control.revoke, second, terminate=True)
        root = await roots.wait_root(result.id, ended, "the second terminated")
        assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", False)
        assert tracker.run_status(result.id) == "killed"


async def test_revoking_a_queued_task_cancels_its_root(worker: CeleryWorker) -> None:
    """A task revoked before a worker starts it is discarded: the run ends cancelled."""
    async with bridged() as (roots, _watch, tracker):
        task_id = str(uuid.uuid4())
        await blocking(worker_revoke, task_id)
        await blocking(add.apply_async, (1, 1), task_id=task_id)
        root = await roots.wait_root(task_id, ended, "the revoked task was discarded")
        assert stages(root)[task_id].status == "skipped"
        assert not root.needs_attention
        assert tracker.run_status(task_id) == "cancelled"


def worker_revoke(task_id: str) -> None:
    from .app import app

    app.control.revoke(task_id)
