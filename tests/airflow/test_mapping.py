"""The mapping table of docs/airflow.md, one Airflow state at a time, on a real RunTracker.

No Airflow here: the records are what ``/api/v2`` returns (only the fields the bridge reads),
so every row of the table is checked in milliseconds; tests/airflow/test_dag_runs.py checks
the same against a real Airflow.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio.testing

from tests.support.consumers import RecordingDispatcher
from workflow_hub import ContractError, RootActivity, RunTarget, StageNode, StageTarget, open_hub
from workflow_hub.airflow import AirflowBridge, DagShape
from workflow_hub.tracker import RunTracker

TASKS = [
    {"task_id": "first", "downstream_task_ids": ["second"]},
    {"task_id": "second", "downstream_task_ids": []},
]


def run(state: str) -> dict[str, Any]:
    return {"dag_id": "etl", "dag_run_id": "r1", "state": state}


def instance(task_id: str, state: str | None, **more: Any) -> dict[str, Any]:
    return {"dag_id": "etl", "dag_run_id": "r1", "task_id": task_id, "state": state, **more}


async def root_after(*steps: tuple[str, Any], paused: bool = False) -> RootActivity:
    async with open_hub() as hub:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="airflow", include_graph=True
        )
        bridge = AirflowBridge(tracker)
        bridge.dag(DagShape.from_tasks("etl", TASKS))
        bridge.paused("etl", paused)
        with tracker.hydrating():
            pass
        for kind, record in steps:
            if kind == "run":
                bridge.run(record, now=0.0)
            else:
                bridge.task_instance(record)
        (root,) = hub.snapshot_frame().roots or ()
        return root


def stage(root: RootActivity, stage_id: str) -> StageNode:
    assert root.graph is not None
    return next(n for n in root.graph.nodes if isinstance(n, StageNode) and n.node_id == stage_id)


@pytest.mark.parametrize(
    ("state", "status", "summary"),
    [
        (None, "pending", ("working", "automatic_continuation")),
        ("scheduled", "pending", ("working", "automatic_continuation")),
        ("queued", "pending", ("working", "automatic_continuation")),
        ("deferred", "pending", ("working", "automatic_continuation")),
        ("up_for_reschedule", "pending", ("working", "automatic_continuation")),
        ("running", "running", ("working", "executing")),
        ("up_for_retry", "pending", ("working", "retrying")),
        ("restarting", "pending", ("working", "retrying")),
        ("awaiting_input", "awaiting_input", ("blocked", "awaiting_input")),
    ],
)
async def test_a_task_instance_state_is_a_stage_status(
    state: str | None, status: str, summary: tuple[str, str]
) -> None:
    """Each row of docs/airflow.md's table for a running DAG run (§5 D4 to D8)."""
    root = await root_after(("run", run("running")), ("ti", instance("first", state)))
    assert stage(root, "first").status == status
    assert (root.state, root.reason) == summary


@pytest.mark.parametrize("state", ["upstream_failed", "skipped", "removed"])
async def test_tasks_that_will_not_run_are_skipped(state: str) -> None:
    root = await root_after(
        ("run", run("running")),
        ("ti", instance("first", "success")),
        ("ti", instance("second", state)),
    )
    assert stage(root, "second").status == "skipped"


async def test_a_failed_run_is_a_settled_failure_that_needs_attention() -> None:
    root = await root_after(
        ("run", run("running")),
        ("ti", instance("first", "failed", try_number=3)),
        ("ti", instance("second", "upstream_failed")),
        ("run", run("failed")),
    )
    assert (root.state, root.reason, root.needs_attention) == ("idle", "quiescent", True)
    error = stage(root, "first").error
    assert error is not None
    assert "try 3" in error.message


async def test_a_paused_dags_queued_run_is_paused() -> None:
    root = await root_after(("run", run("queued")), paused=True)
    assert (root.state, root.reason) == ("idle", "paused")


async def test_the_graph_is_the_dags() -> None:
    root = await root_after(("run", run("queued")))
    assert stage(root, "second").parent_ids == (f"{root.root_run_id}:first",)
    assert root.root_run_id == "etl/r1"


async def labels_of(record: dict[str, Any], **options: Any) -> dict[str, str]:
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="airflow")
        bridge = AirflowBridge(tracker, **options)
        bridge.dag(DagShape.from_tasks("etl", TASKS, tags=["nightly", "finance team"]))
        with tracker.hydrating():
            pass
        bridge.run(record, now=0.0)
        (root,) = hub.snapshot_frame().roots or ()
        return dict(root.labels or {})


async def test_the_dags_tags_are_one_label_and_named_conf_keys_are_labels() -> None:
    """C3: the DAG's tags (sorted, as ``tags``) and the conf keys the user names are labels;
    a conf value that is no label value (a dict) is left out, never a failed poll."""
    conf = {"team": "risk", "shards": 4, "secret": "x", "nested": {"a": 1}}
    labels = await labels_of(
        {**run("queued"), "conf": conf},
        labels={"env": "prod"},
        label_conf=["team", "shards", "nested", "absent"],
    )
    assert labels == {"env": "prod", "tags": "finance team,nightly", "team": "risk", "shards": "4"}


async def test_tag_labels_can_be_turned_off_and_a_run_without_conf_has_none() -> None:
    labels = await labels_of({**run("queued"), "conf": None}, tag_labels=False, label_conf=["x"])
    assert labels == {}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"label_conf": ["9team"]}, "9team"),
        ({"label_conf": [f"k{i}" for i in range(16)]}, "at most 16"),
    ],
)
async def test_a_bad_conf_key_is_refused_before_anything_is_read(
    options: dict[str, Any], named: str
) -> None:
    """C1: a ContractError naming the field, from the constructor."""
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="airflow")
        with pytest.raises(ContractError, match="label_conf") as raised:
            AirflowBridge(tracker, **options)
        assert named in str(raised.value)


async def test_a_mark_from_the_audit_log_says_who_marked_the_task_and_the_run_failed() -> None:
    """A task instance and a DAG run marked failed by a user (Airflow's audit log names them):
    the failure's message says so; one that failed by itself keeps "failed on try N"."""
    async with open_hub() as hub:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="airflow", include_graph=True
        )
        bridge = AirflowBridge(tracker)
        bridge.dag(DagShape.from_tasks("etl", TASKS))
        with tracker.hydrating():
            pass
        bridge.run(run("running"), now=0.0)
        bridge.marks(
            [
                {
                    "event": "patch_task_instance",
                    "dag_id": "etl",
                    "run_id": "r1",
                    "task_id": "first",
                    "owner": "alice",
                    "extra": '{"new_state": "failed", "method": "PATCH"}',
                },
                {
                    "event": "patch_dag_run",
                    "dag_id": "etl",
                    "run_id": "r1",
                    "owner": "bob",
                    "extra": '{"state": "failed", "method": "PATCH"}',
                },
            ]
        )
        bridge.task_instance(instance("first", "failed", try_number=1))
        bridge.run(run("failed"), now=1.0)
        bridge.marks([])
        bridge.task_instance(instance("second", "failed", try_number=2))
        (root,) = hub.snapshot_frame().roots or ()
    first, second = stage(root, "first").error, stage(root, "second").error
    assert first is not None
    assert first.message == "marked failed by alice"
    assert second is not None
    assert second.message == "failed on try 2"


def audit(event: str, owner: str, task_id: str | None = None, **extra: Any) -> dict[str, Any]:
    """An entry of Airflow's audit log as ``GET /api/v2/eventLogs`` lists it."""
    return {
        "event": event,
        "dag_id": "etl",
        "run_id": "r1",
        "task_id": task_id,
        "owner": owner,
        "extra": json.dumps({**extra, "method": "POST"}),
    }


async def test_a_change_a_person_made_says_so_on_its_event_and_the_schedulers_do_not() -> None:
    """Issue 42, §5: "mark success" and a clear (Airflow's audit log names the endpoints the UI
    calls, and who called them) are a person's changes: the event of the stage or run change
    that the mark explains has ``attribution: user``; the scheduler's own changes, and a change
    the mark does not explain, have none. The poller asks the audit log only in a poll where
    something ended or ran again."""
    async with open_hub() as hub:
        hooks = RecordingDispatcher()
        hub.bind_dispatcher(hooks)
        tracker = RunTracker(hub.register_publisher(), owner_session_id="airflow")
        bridge = AirflowBridge(tracker)
        bridge.dag(DagShape.from_tasks("etl", TASKS))
        with tracker.hydrating():
            pass
        bridge.run(run("running"), now=0.0)
        bridge.task_instance(instance("first", "running"))
        assert not bridge.asks_who([run("running")], [instance("first", "running")])
        assert bridge.asks_who([], [instance("first", "success")])
        # Marked success while it ran: a person's.
        bridge.marks([audit("patch_task_instance", "alice", "first", new_state="success")])
        bridge.task_instance(instance("first", "success"))
        bridge.marks([])
        bridge.task_instance(instance("second", "running"))
        bridge.task_instance(instance("second", "failed", try_number=1))  # by itself
        assert bridge.asks_who([], [instance("second", None)])  # it had ended: a clear?
        # Cleared: it runs again, by a person's hand; the downstream clear of "first" too.
        bridge.marks(
            [audit("post_clear_task_instances", "bob", task_ids=["second"], dry_run=False)]
        )
        bridge.task_instance(instance("second", None))
        bridge.task_instance(instance("first", "success"))  # unchanged: no event at all
        # A mark of another task, and a mark of the run, explain nothing of this stage.
        bridge.marks([audit("patch_task_instance", "carol", "first", new_state="success")])
        bridge.task_instance(instance("second", "running"))
        bridge.marks([audit("patch_dag_run", "dan", state="success")])
        bridge.task_instance(instance("second", "success"))  # the scheduler's, with the run
        bridge.run(run("success"), now=1.0)
        # A clear of an ended run: the run and the cleared task run again by a person's hand.
        bridge.marks(
            [audit("post_clear_task_instances", "erin", task_ids=["second"], dry_run=False)]
        )
        bridge.run(run("queued"), now=2.0)
        bridge.task_instance(instance("second", None))
        await trio.testing.wait_all_tasks_blocked()
    moved = [
        (
            event.target.stage_id if isinstance(event.target, StageTarget) else "run",
            event.target.status,
            event.attribution,
        )
        for event in hooks.lifecycle()
        if isinstance(event.target, StageTarget | RunTarget)
    ]
    assert moved == [
        ("run", "running", None),
        ("etl/r1:first", "running", None),
        ("etl/r1:first", "completed", "user"),
        ("etl/r1:second", "running", None),
        ("etl/r1:second", "failed", None),
        ("etl/r1:second", "pending", "user"),
        ("etl/r1:second", "running", None),
        ("etl/r1:second", "completed", None),
        ("run", "completed", "user"),
        ("run", "running", "user"),
        ("etl/r1:second", "pending", "user"),
    ]


async def test_a_task_the_dag_gained_joins_the_runs_that_run_it() -> None:
    """Limits of docs/airflow.md: a DAG changed while its run is on show. A task instance of a
    task the bridge does not know names the DAG to read again; once read, the new task is a
    stage of the run that has an instance of it, under its upstream stage, in the state the
    instance is in. A task the DAG still does not have is ignored."""
    async with open_hub() as hub:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="airflow", include_graph=True
        )
        bridge = AirflowBridge(tracker)
        bridge.dag(DagShape.from_tasks("etl", TASKS, ["nightly"]))
        with tracker.hydrating():
            pass
        bridge.run(run("running"), now=0.0)
        bridge.task_instance(instance("first", "success"))
        gained = [instance("third", "running")]
        assert bridge.new_tasks(gained) == {"etl"}
        assert bridge.new_tasks([instance("second", "running")]) == set()
        grown = [*TASKS[:1], {"task_id": "second", "downstream_task_ids": ["third"]}]
        bridge.dag(
            DagShape.from_tasks(
                "etl", [*grown, {"task_id": "third", "downstream_task_ids": []}], ["nightly"]
            )
        )
        assert bridge.new_tasks(gained) == set()
        bridge.task_instance(gained[0])
        bridge.task_instance(instance("fourth", "running"))  # not in the DAG read: ignored
        (root,) = hub.snapshot_frame().roots or ()
    assert root.graph is not None
    assert [n.node_id for n in root.graph.nodes] == ["first", "second", "third"]
    assert stage(root, "third").status == "running"
    assert stage(root, "third").parent_ids == ("etl/r1:second",)
    assert dict(root.labels or {}) == {"tags": "nightly"}
