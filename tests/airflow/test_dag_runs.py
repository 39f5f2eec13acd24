"""Real DAG runs of a real Airflow 3, as roots (docs/airflow.md, "Mapping"; SPEC §5).

All the runs are triggered at once by the session fixture; each test waits for what its own
run must show: a state it passed through (recorded as it happened) and the state it ends in.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import trio

from tests.support.processes import lines_until, owned_process
from workflow_hub import LifecycleEvent, RootActivity, RunTarget, StageNode, StageTarget
from workflow_hub.airflow import serve_airflow

from .conftest import Session
from .support import PASSWORD, USER


def stages(root: RootActivity) -> dict[str, StageNode]:
    assert root.graph is not None
    return {node.node_id: node for node in root.graph.nodes if isinstance(node, StageNode)}


def parents(node: StageNode) -> set[str]:
    """A stage's parents by their stage ids (the graph names them ``"{run_id}:{stage_id}"``)."""
    return {parent.removeprefix(f"{node.run_id}:") for parent in node.parent_ids}


def ever(session: Session, dag_id: str, seen: Callable[[RootActivity], bool]) -> RootActivity:
    """The first root of ``dag_id``'s run for which ``seen(root)`` holds (waiting for it)."""
    root_id = session.roots[dag_id]

    def found() -> RootActivity | None:
        return next((r for r in session.recorder.history.get(root_id, ()) if seen(r)), None)

    result: RootActivity = session.recorder.wait(found)
    return result


def settled(root: RootActivity) -> bool:
    """Ended: idle / quiescent with every task instance ended."""
    ended = {"completed", "failed", "skipped"}
    return (
        root.state == "idle"
        and root.reason == "quiescent"
        and all(node.status in ended for node in stages(root).values())
    )


def release_parallel(session: Session) -> None:
    """Let the parallel DAG's three branches end (they hold until this file exists)."""
    (session.airflow.home / "release-parallel").touch()


def stage_of(event: LifecycleEvent) -> str | None:
    """The nested id of the stage an event is about (None: not a stage's)."""
    return event.target.stage_id if isinstance(event.target, StageTarget) else None


def test_source_is_ready_with_a_scheduler_alive(airflow_session: Session) -> None:
    """N4: the source is ready (known) once the API was read and a scheduler is alive."""
    airflow_session.recorder.wait(lambda: airflow_session.recorder.availability == "ready")


def test_a_deferred_sensor_is_a_wait_that_continues_by_itself(airflow_session: Session) -> None:
    """A deferrable sensor (the triggerer holds it, no worker runs it) is pending with its
    upstream done: working / automatic_continuation with no execution (§5 D6), never idle; the
    trigger fires and the scheduler resumes it by itself, to the end of the run."""
    run_id = airflow_session.run_ids["deferred"]
    recorder = airflow_session.recorder
    root_id = airflow_session.roots["deferred"]
    path = f"/api/v2/dags/deferred/dagRuns/{run_id}/taskInstances/wait"
    with airflow_session.airflow.client() as client:
        deadline = time.monotonic() + 180
        while (state := client.get(path).json().get("state")) != "deferred":
            # Second in the file, so that it looks while the sensor waits (15 s from its start).
            assert state not in ("success", "failed"), f"the wait ended unseen: {state}"
            assert time.monotonic() < deadline, "the sensor never deferred"
            time.sleep(0.3)

    def waiting() -> RootActivity | None:
        root = recorder.current.get(root_id)
        if root is None or stages(root)["wait"].status != "pending":
            return None
        return root if root.active_execution_count == 0 else None

    root: RootActivity = recorder.wait(waiting)
    assert (root.state, root.reason) == ("working", "automatic_continuation")
    assert not root.needs_attention
    end = ever(airflow_session, "deferred", settled)
    assert stages(end)["wait"].status == "completed"
    assert stages(end)["done"].status == "completed"
    assert not end.needs_attention


def test_parallel_tasks_run_side_by_side_then_join(airflow_session: Session) -> None:
    """§5 D4: each running task instance is an execution; the graph is the DAG's."""
    busiest = ever(airflow_session, "parallel", lambda r: r.active_execution_count == 3)
    assert (busiest.state, busiest.reason) == ("working", "executing")
    release_parallel(airflow_session)
    end = ever(airflow_session, "parallel", settled)
    nodes = stages(end)
    assert parents(nodes["join"]) == {"left", "middle", "right"}
    assert {n.status for n in nodes.values()} == {"completed"}
    assert not end.needs_attention


def test_a_task_retried_twice_makes_its_root_retrying_then_succeeds(
    airflow_session: Session,
) -> None:
    """up_for_retry is retrying (§5 D5), and the third try's success completes the run."""
    retrying = ever(airflow_session, "retries", lambda r: r.reason == "retrying")
    assert retrying.state == "working"
    end = ever(airflow_session, "retries", settled)
    assert stages(end)["flaky"].status == "completed"
    assert stages(end)["after"].status == "completed"
    assert not end.needs_attention


def test_a_failed_task_fails_its_run_which_needs_attention(airflow_session: Session) -> None:
    """A failed DAG run is a settled failure (§5 D3); upstream_failed is skipped."""
    end = ever(airflow_session, "failing", lambda r: settled(r) and r.needs_attention)
    nodes = stages(end)
    assert nodes["broken"].status == "failed"
    assert nodes["broken"].error is not None
    assert nodes["never"].status == "skipped"


def test_mapped_instances_are_stages_of_their_own(airflow_session: Session) -> None:
    """A mapped task hosts a nested run whose stages are its instances; the task after it
    waits for all of them."""
    end = ever(airflow_session, "mapped", settled)
    nodes = stages(end)
    assert {"double[0]", "double[1]", "double[2]"} <= set(nodes)
    assert all(nodes[f"double[{i}]"].status == "completed" for i in range(3))
    assert parents(nodes["total"]) == {"double"}
    assert nodes["double"].status == "completed"
    assert not end.needs_attention


def test_a_queued_run_is_an_automatic_continuation(airflow_session: Session) -> None:
    """A queued DAG run with a scheduler alive will start by itself: working /
    automatic_continuation (§5 D6), never idle."""
    root = ever(airflow_session, "parallel", lambda r: r.active_execution_count == 0)
    assert (root.state, root.reason) == ("working", "automatic_continuation")


def test_a_paused_dags_run_is_paused(airflow_session: Session) -> None:
    """A paused DAG's queued run: idle / paused (§5 D7), not working and not quiescent."""
    root = ever(airflow_session, "paused", lambda r: r.reason == "paused")
    assert root.state == "idle"
    assert root.active_execution_count == 0


def test_an_approval_is_an_open_prompt_until_answered_through_the_api(
    airflow_session: Session,
) -> None:
    """awaiting_input is a human wait (§5 D2): blocked / awaiting_input with the question and
    its options; the answer, given through Airflow's API, closes it and the run goes on."""
    waiting = ever(
        airflow_session,
        "approval",
        lambda r: r.reason == "awaiting_input" and stages(r)["approve"].pending_prompt is not None,
    )
    assert waiting.state == "blocked"
    assert waiting.needs_attention
    prompt = stages(waiting)["approve"].pending_prompt
    assert prompt is not None
    assert prompt.message.startswith("Ship it?")
    assert prompt.choices == ("Approve", "Reject")
    run_id = airflow_session.run_ids["approval"]
    with airflow_session.airflow.client() as client:
        client.patch(
            f"/api/v2/dags/approval/dagRuns/{run_id}/taskInstances/approve/-1/hitlDetails",
            json={"chosen_options": ["Approve"]},
        ).raise_for_status()
    end = ever(airflow_session, "approval", settled)
    assert stages(end)["approve"].pending_prompt is None
    assert stages(end)["ship"].status == "completed"
    assert not end.needs_attention


def test_a_cleared_task_makes_its_run_live_again_until_it_ends_again(
    airflow_session: Session,
) -> None:
    """A clear (from the UI or, here, the API) runs the task again: the settled failure is
    working again, then settles as Airflow ends the run again (it fails again here)."""
    root_id = airflow_session.roots["failing"]
    history = airflow_session.recorder.history
    ever(airflow_session, "failing", lambda r: settled(r) and r.needs_attention)
    before = len(history[root_id])
    events = len(airflow_session.recorder.events)
    run_id = airflow_session.run_ids["failing"]
    with airflow_session.airflow.client() as client:
        client.post(
            "/api/v2/dags/failing/clearTaskInstances",
            json={
                "dry_run": False,
                "dag_run_id": run_id,
                "task_ids": ["broken"],
                "include_downstream": True,
                "reset_dag_runs": True,
            },
        ).raise_for_status()

    def after(seen: Callable[[RootActivity], bool]) -> int | None:
        return next((i for i, r in enumerate(history[root_id]) if i >= before and seen(r)), None)

    live = airflow_session.recorder.wait(lambda: after(lambda r: r.state == "working"))
    airflow_session.recorder.wait(
        lambda: (
            (end := after(lambda r: settled(r) and r.needs_attention)) is not None and end > live
        )
    )

    # The clear was a person's (issue 42): the stage's first event after it says so, from
    # the audit log; the scheduler's later moves of it do not.
    def again_events() -> list[LifecycleEvent]:
        return [
            e
            for e in airflow_session.recorder.events[events:]
            if stage_of(e) == f"{root_id}:broken"
        ]

    airflow_session.recorder.wait(lambda: any(e.target.status == "failed" for e in again_events()))
    again = again_events()
    assert again[0].attribution == "user", again
    assert all(e.attribution is None for e in again[1:]), again

    # The run it put back to running (reset_dag_runs) too; its failure after that is Airflow's.
    # (Hooks run after the frames: wait for the events too.)
    def run_events() -> list[tuple[str, object]]:
        return [
            (str(e.target.status), e.attribution)
            for e in airflow_session.recorder.events[events:]
            if isinstance(e.target, RunTarget) and e.run_id == root_id
        ]

    airflow_session.recorder.wait(lambda: len(run_events()) >= 2)
    assert run_events() == [("running", "user"), ("failed", None)]


def test_dag_tags_and_named_conf_keys_are_the_roots_labels(airflow_session: Session) -> None:
    """C3: the DAG's tags as ``tags``, the run's ``conf["team"]`` as ``team`` (the recorder
    names it); ``rows``, not named, is not a label."""
    root = ever(airflow_session, "parallel", lambda r: r.labels is not None)
    assert dict(root.labels or {}) == {"tags": "hub-tests", "team": "data"}
    plain = ever(airflow_session, "deferred", lambda r: r.labels is not None)
    assert dict(plain.labels or {}) == {"tags": "hub-tests,sensors"}


def test_a_task_marked_failed_by_a_user_says_who(airflow_session: Session) -> None:
    """ "Mark failed" (the UI's, here through the API it calls): the stage fails with who marked
    it (Airflow's audit log), and the run settles failed, needing attention (§5 D3)."""
    run_id = airflow_session.run_ids["marked"]
    path = f"/api/v2/dags/marked/dagRuns/{run_id}/taskInstances/wait"
    with airflow_session.airflow.client() as client:
        deadline = time.monotonic() + 180
        while client.get(path).json().get("state") not in ("deferred", "running"):
            assert time.monotonic() < deadline, "the sensor never started"
            time.sleep(0.3)
        client.patch(path, json={"new_state": "failed"}).raise_for_status()
    end = ever(airflow_session, "marked", lambda r: settled(r) and r.needs_attention)
    error = stages(end)["wait"].error
    assert error is not None
    assert error.message == f"marked failed by {USER}"
    assert stages(end)["after"].status == "skipped"
    # A person's change (issue 42): its event says so; the skip that follows is Airflow's.
    root = end.root_run_id

    def by() -> dict[tuple[str | None, str], object]:
        return {
            (stage_of(e), str(e.target.status)): e.attribution
            for e in airflow_session.recorder.events
            if stage_of(e) in (f"{root}:wait", f"{root}:after")
        }

    # Hooks run after the frames: wait for both events.
    airflow_session.recorder.wait(lambda: len(by()) >= 2 and (f"{root}:after", "skipped") in by())
    assert by()[(f"{root}:wait", "failed")] == "user", by()
    assert by()[(f"{root}:after", "skipped")] is None, by()


def test_the_command_serves_the_dag_runs_as_a_process(
    airflow_session: Session, tmp_path: Path
) -> None:
    """``workflow-hub airflow`` as a real process: it prints its URL, serves the DAG runs with
    their labels (ready), and exits 0 on SIGTERM."""
    password = tmp_path / "password"
    password.write_text(PASSWORD)
    command = [sys.executable, "-m", "workflow_hub._cli", "airflow"]
    command += ["--url", airflow_session.airflow.url, "--user", USER, "--password-file"]
    command += [str(password), "--port", "0", "--interval", "0.5", "--label", "env=test"]
    with owned_process(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as process:
        url = lines_until(process, lambda lines: bool(lines), within=60)[0].strip()
        assert url.startswith("http://127.0.0.1:")
        body = httpx.get(f"{url}/v1/snapshot", timeout=30).json()
        deadline = time.monotonic() + 60
        while body["availability"] != "ready":  # ready once the first poll succeeded
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
            body = httpx.get(f"{url}/v1/snapshot", timeout=30).json()
        roots = {root["rootRunId"]: root for root in body["roots"]}
        assert roots[airflow_session.roots["parallel"]]["labels"] == {
            "env": "test",
            "tags": "hub-tests",
        }
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0


async def test_serve_airflow_serves_the_dag_runs_over_http(airflow_session: Session) -> None:
    """The composition ``workflow-hub airflow`` runs: the hub's snapshot, served over HTTP, is
    ready and holds the DAG runs (settled ones too, within ``keep_ended``)."""
    async with trio.open_nursery() as nursery:
        served = await nursery.start(
            functools.partial(
                serve_airflow,
                airflow_session.airflow.url,
                username=USER,
                password=PASSWORD,
                interval=0.5,
                port=0,
            )
        )
        async with httpx.AsyncClient(base_url=served.url) as client:
            with trio.fail_after(60):
                body = (await client.get("/v1/snapshot")).json()
        assert body["availability"] == "ready"
        ids = {root["rootRunId"] for root in body["roots"]}
        assert airflow_session.roots["failing"] in ids
        nursery.cancel_scope.cancel()


def test_a_killed_scheduler_makes_the_source_unknown_until_it_is_back(
    airflow_session: Session,
) -> None:
    """N4: with no scheduler alive nothing Airflow says is current: the source is recovering
    (never idle), and ready again once a scheduler is back. Last in the file: it stops the
    scheduler the other tests' runs need."""
    recorder = airflow_session.recorder
    release_parallel(airflow_session)
    for dag_id in ("parallel", "retries", "failing", "mapped", "approval", "deferred", "marked"):
        ever(airflow_session, dag_id, settled)
    airflow_session.airflow.kill("scheduler")
    try:
        recorder.wait(lambda: recorder.availability == "recovering")
        # C3: every view says why (once the outage was said).
        recorder.wait(lambda: (recorder.detail or "").startswith("no Airflow scheduler is alive"))
    finally:
        airflow_session.airflow.run("scheduler")
    recorder.wait(lambda: recorder.availability == "ready")
