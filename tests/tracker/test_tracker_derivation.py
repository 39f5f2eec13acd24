"""The readable definition (``derive_root``) on hand-built records: rows of SPEC §5 and the graph.

The decisions issue 18 overturned are tested, through the tracker, in ``test_tracker_rules.py``.

Each test builds the records of one root (the root run first, parents before children) and asks
``derive_root`` for its summary. ``derive_root`` and its records live in the internal module
``workflow_hub.tracker._derive`` (and its records), which these tests are about, so they import it by its private name.
"""

from __future__ import annotations

from collections.abc import Iterable

from workflow_hub import NodePrompt, RootActivity, RunPrompt, StageNode, ToolNode
from workflow_hub.contract import PromptKind, RunStatus, StageStatus, ToolNodeStatus
from workflow_hub.tracker._derive import derive_root
from workflow_hub.tracker._records import (
    NodeRecord,
    PromptRecord,
    RunRecord,
    StageRecord,
    ToolRecord,
)


def stage(
    node_id: str = "plan",
    status: str = "running",
    *,
    retrying: bool = False,
    prompt: str | None = None,
    parents: Iterable[str] = (),
) -> StageRecord:
    record = StageRecord(
        node_id=node_id,
        name=node_id.title(),
        parent_ids=tuple(parents),
        status=StageStatus(status),
        retrying=retrying,
    )
    if prompt is not None:
        record.prompt = PromptRecord(
            prompt_id=prompt,
            kind=PromptKind.CONFIRM,
            message="Go on?",
            choices=None,
            created_at=5_000,
            stage_id=node_id,
        )
    return record


def tool(node_id: str = "grep", status: str = "running", *, ordinal: int = 0) -> ToolRecord:
    return ToolRecord(
        node_id=node_id,
        name=node_id,
        parent_ids=("plan",),
        status=ToolNodeStatus(status),
        ordinal=ordinal,
    )


def run(
    run_id: str = "root",
    status: str = "running",
    *nodes: NodeRecord,
    parent: str | None = None,
    live: bool = True,
    stop: bool = False,
    run_prompts: Iterable[str] = (),
    interventions: Iterable[str | None] = (),
) -> RunRecord:
    record = RunRecord(
        run_id=run_id,
        root_run_id=run_id,
        parent_run_id=parent,
        depth=0,
        live=live,
        status=RunStatus(status),
        stop_requested=stop,
        interventions=dict.fromkeys(interventions, False),
    )
    for node in nodes:
        record.nodes[node.node_id] = node
        if isinstance(node, StageRecord) and node.prompt is not None:
            record.prompts[node.prompt.prompt_id] = node.prompt
    for prompt_id in run_prompts:
        record.prompts[prompt_id] = PromptRecord(
            prompt_id=prompt_id,
            kind=PromptKind.INPUT,
            message="Which branch?",
            choices=("main", "dev"),
            created_at=7_000,
            stage_id=None,
        )
    return record


def derive(*runs: RunRecord, graph: bool = False) -> RootActivity:
    """Link the runs into one root (the first is the root) and derive its summary."""
    by_id = {r.run_id: r for r in runs}
    for r in runs:
        if r.parent_run_id is not None:
            parent = by_id[r.parent_run_id]
            parent.children.append(r.run_id)
            r.root_run_id = runs[0].run_id
            r.depth = parent.depth + 1
    return derive_root(runs, owner_session_id="session-1", include_graph=graph)


def summary(activity: RootActivity) -> tuple[str, str, int, int, bool]:
    return (
        activity.state,
        activity.reason,
        activity.active_execution_count,
        activity.actionable_block_count,
        activity.needs_attention,
    )


# --- the state table, one row per test -------------------------------------------------------


def test_row_a_running_stage_is_working_executing() -> None:
    """§5 row 1: a stage is executing -> working / executing."""
    activity = derive(run("root", "running", stage("plan", "running")))
    assert summary(activity) == ("working", "executing", 1, 0, False)


def test_row_a_running_tool_is_working_executing() -> None:
    """§5 row 1: a tool is executing -> working / executing."""
    activity = derive(run("root", "running", stage("plan", "completed"), tool("grep", "running")))
    assert summary(activity) == ("working", "executing", 1, 0, False)


def test_row_a_human_wait_beside_an_executing_branch_is_working_with_attention() -> None:
    """§5 row 2: one branch waits for a human while another executes -> working, attention."""
    activity = derive(
        run("root", "running", stage("ask", "awaiting_input", prompt="p1"), stage("build"))
    )
    assert summary(activity) == ("working", "executing", 1, 1, True)


def test_row_only_human_input_can_advance_is_blocked_awaiting_input() -> None:
    """§5 row 3: only human input can advance the workflow -> blocked / awaiting_input."""
    activity = derive(
        run(
            "root",
            "running",
            stage("plan", "completed"),
            stage("ask", "awaiting_input", prompt="p"),
        )
    )
    assert summary(activity) == ("blocked", "awaiting_input", 0, 1, True)


def test_row_an_open_run_prompt_alone_is_blocked_awaiting_input() -> None:
    """§5 row 3: a prompt on the run itself is a human wait too."""
    activity = derive(run("root", "running", stage("plan", "completed"), run_prompts=["q"]))
    assert summary(activity) == ("blocked", "awaiting_input", 0, 1, True)


def test_row_an_active_failure_needing_intervention_is_blocked_manual() -> None:
    """§5 row 4: an active failure needs intervention -> blocked / manual_intervention."""
    activity = derive(run("root", "running", stage("deploy", "failed"), interventions=["deploy"]))
    assert summary(activity) == ("blocked", "manual_intervention", 0, 1, True)


def test_row_a_budget_stop_needing_approval_is_blocked_manual() -> None:
    """§5 row 4: a budget stop waiting for approval (on the run) -> blocked / manual."""
    activity = derive(run("root", "running", stage("plan", "completed"), interventions=[None]))
    assert summary(activity) == ("blocked", "manual_intervention", 0, 1, True)


def test_row_paused_with_nothing_draining_is_idle_paused() -> None:
    """§5 row 5: paused, nothing draining -> idle / paused."""
    activity = derive(run("root", "paused", stage("plan", "completed"), stage("build", "pending")))
    assert summary(activity) == ("idle", "paused", 0, 0, False)


def test_row_quit_while_work_drains_is_working_stopping() -> None:
    """§5 row 6: quit requested while work drains -> working / stopping."""
    activity = derive(run("root", "running", stage("build", "running"), stop=True))
    assert summary(activity) == ("working", "stopping", 1, 0, False)


def test_row_stopping_independent_sibling_work_keeps_its_own_reason() -> None:
    """§5 row 6: independent sibling work keeps its own reason (executing, not stopping)."""
    activity = derive(
        run("root", "running"),
        run("a", "running", stage("build"), parent="root", stop=True),
        run("b", "running", stage("test"), parent="root"),
    )
    assert summary(activity) == ("working", "executing", 2, 0, False)


def test_row_runnable_step_with_nothing_running_is_automatic_continuation() -> None:
    """§5 row 7: a runnable step is ready but nothing runs yet -> automatic_continuation."""
    activity = derive(
        run(
            "root",
            "running",
            stage("plan", "completed"),
            stage("build", "pending", parents=["plan"]),
        )
    )
    assert summary(activity) == ("working", "automatic_continuation", 0, 0, False)


def test_row_a_step_being_retried_is_working_retrying() -> None:
    """§5 row 8: a step is being retried -> working / retrying."""
    activity = derive(run("root", "running", stage("fetch", "running", retrying=True)))
    assert summary(activity) == ("working", "retrying", 1, 0, False)


def test_row_a_retry_waiting_for_its_next_attempt_is_still_retrying() -> None:
    """§5 row 8: between attempts (pending again) the stage is still being retried."""
    activity = derive(run("root", "running", stage("fetch", "pending", retrying=True)))
    assert summary(activity) == ("working", "retrying", 0, 0, False)


def test_row_completed_is_idle_quiescent() -> None:
    """§5 row 9: completed -> idle / quiescent, no attention."""
    activity = derive(run("root", "completed", stage("plan", "completed")))
    assert summary(activity) == ("idle", "quiescent", 0, 0, False)


def test_row_intentionally_stopped_is_idle_quiescent_without_attention() -> None:
    """§5 row 9: cancelled, killed or skipped runs are intentionally stopped: quiescent."""
    for status in ("cancelled", "killed", "skipped"):
        activity = derive(run("root", status, stage("plan", "completed")))
        assert summary(activity) == ("idle", "quiescent", 0, 0, False), status


def test_stopping_wins_when_all_working_units_belong_to_stopping_runs() -> None:
    """§5 priority: stopping > retrying, when the retry belongs to the stopping run."""
    activity = derive(
        run("root", "running", stage("a", "running", retrying=True), stage("b"), stop=True)
    )
    assert (activity.state, activity.reason) == ("working", "stopping")


def test_retrying_beats_executing() -> None:
    """§5 priority: retrying > executing."""
    activity = derive(run("root", "running", stage("a", "running", retrying=True), stage("b")))
    assert (activity.reason, activity.active_execution_count) == ("retrying", 2)


def test_executing_beats_automatic_continuation() -> None:
    """§5 priority: executing > automatic_continuation."""
    activity = derive(
        run("root", "running"),
        run("a", "running", stage("build"), parent="root"),
        run("b", "pending", parent="root"),
    )
    assert activity.reason == "executing"


def test_a_paused_run_still_draining_is_working() -> None:
    """§5 row 5: paused counts as idle only when nothing drains."""
    activity = derive(run("root", "paused", stage("build", "running")))
    assert summary(activity) == ("working", "executing", 1, 0, False)


def test_stopping_ends_when_the_outcome_is_reported_and_work_drained() -> None:
    """§5 row 6 -> row 9: a killed run with nothing running is quiescent."""
    activity = derive(run("root", "killed", stage("build", "failed"), stop=True))
    assert summary(activity) == ("idle", "quiescent", 0, 0, False)


def test_a_quit_run_that_settled_paused_is_idle_paused() -> None:
    """§5: quit drains, then the run is paused (graceful suspension) -> idle / paused."""
    activity = derive(run("root", "paused", stage("build", "pending"), stop=True))
    assert (activity.state, activity.reason) == ("idle", "paused")


def test_a_stop_on_a_paused_or_ended_run_is_in_effect_while_its_work_drains() -> None:
    """§5 row 6: the outcome is reported (paused, killed) but a stage still drains -> stopping."""
    for status in ("paused", "killed"):
        activity = derive(run("root", status, stage("build", "running"), stop=True))
        assert summary(activity) == ("working", "stopping", 1, 0, False), status


def test_an_independent_retry_beside_a_stopping_run_keeps_its_reason() -> None:
    """§5 rows 6 and 8: a sibling retrying on its own keeps retrying while another run stops."""
    activity = derive(
        run("root", "running"),
        run("a", "running", stage("build"), parent="root", stop=True),
        run("b", "running", stage("fetch", "pending", retrying=True), parent="root"),
    )
    assert summary(activity) == ("working", "retrying", 1, 0, False)


# --- retries ---------------------------------------------------------------------------------


def test_a_retry_running_in_a_paused_run_still_drains() -> None:
    """§5 rows 5 and 8: an attempt that already runs is work draining, paused or not."""
    activity = derive(run("root", "paused", stage("fetch", "running", retrying=True)))
    assert summary(activity) == ("working", "retrying", 1, 0, False)


def test_a_paused_stage_of_an_unfinished_run_is_idle_paused() -> None:
    """§5 row 5: a stage paused in a running run, nothing else to do -> idle / paused."""
    activity = derive(run("root", "running", stage("plan", "completed"), stage("build", "paused")))
    assert summary(activity) == ("idle", "paused", 0, 0, False)


# --- nested runs -----------------------------------------------------------------------------


def test_nested_child_work_belongs_to_its_root() -> None:
    """§5: a nested child run's execution makes its root work."""
    activity = derive(
        run("root", "running", stage("spawn", "completed")),
        run("child", "running", stage("build"), parent="root"),
        run("grandchild", "running", tool("grep"), parent="child"),
    )
    assert summary(activity) == ("working", "executing", 2, 0, False)


def test_runs_nested_in_a_stopping_run_are_stopping() -> None:
    """§5 row 6: a quit on a run covers the work of the runs nested in it."""
    activity = derive(
        run("root", "running", stop=True),
        run("child", "running", stage("build"), parent="root"),
    )
    assert (activity.state, activity.reason) == ("working", "stopping")


def test_runs_nested_in_a_paused_run_do_not_continue_by_themselves() -> None:
    """§5 row 5: a pending child of a paused run waits for the resume."""
    activity = derive(run("root", "paused"), run("child", "pending", parent="root"))
    assert (activity.state, activity.reason) == ("idle", "paused")


def test_nested_node_ids_are_run_id_colon_node_id_with_the_runs_depth() -> None:
    """§5: nested node ids are "{run_id}:{node_id}"; depth is the run's nesting depth."""
    activity = derive(
        run("root", "running", stage("spawn", "completed")),
        run("child", "running", stage("build", parents=["lint"]), parent="root"),
        graph=True,
    )
    assert activity.graph is not None
    spawn, build = activity.graph.nodes
    assert (spawn.id, spawn.run_id, spawn.node_id, spawn.depth) == (
        "root:spawn",
        "root",
        "spawn",
        0,
    )
    assert (build.id, build.run_id, build.node_id, build.depth) == (
        "child:build",
        "child",
        "build",
        1,
    )
    assert build.parent_ids == ("child:lint",)


# --- live and historical runs ----------------------------------------------------------------


def test_restored_history_never_counts_as_working() -> None:
    """§5: only live runs count as executing; a restored running stage is not work."""
    activity = derive(run("root", "running", stage("build", "running"), live=False))
    assert summary(activity) == ("idle", "quiescent", 0, 0, False)


def test_a_restored_running_run_without_nodes_is_not_working() -> None:
    """§5: a restored run is never an automatic continuation or an execution."""
    for status in ("running", "pending"):
        activity = derive(run("root", status, live=False))
        assert (activity.state, activity.active_execution_count) == ("idle", 0), status


def test_a_restored_open_prompt_still_blocks() -> None:
    """§5: an unresolved wait is blocked whether or not an executor owns the run now."""
    activity = derive(
        run("root", "running", stage("ask", "awaiting_input", prompt="p"), live=False)
    )
    assert summary(activity) == ("blocked", "awaiting_input", 0, 1, True)


def test_a_live_child_of_a_restored_root_works() -> None:
    """§5: liveness is per run: a live nested run's work counts."""
    activity = derive(
        run("root", "running", live=False), run("child", "running", stage("b"), parent="root")
    )
    assert (activity.state, activity.active_execution_count) == ("working", 1)


# --- counts and attention --------------------------------------------------------------------


def test_active_execution_count_counts_running_stages_and_tools_of_live_runs() -> None:
    """§5: each running stage and tool of a live run is one active execution."""
    activity = derive(
        run("root", "running", stage("a"), stage("b"), tool("t1"), tool("t2", "completed")),
        run("old", "running", stage("c"), parent="root", live=False),
    )
    assert activity.active_execution_count == 3


def test_a_stage_awaiting_input_with_its_prompt_is_one_wait() -> None:
    """§5: a stage's status and its open prompt are the same human wait, counted once."""
    activity = derive(run("root", "running", stage("ask", "awaiting_input", prompt="p")))
    assert activity.actionable_block_count == 1


def test_no_wait_and_no_failure_needs_no_attention() -> None:
    """§5: needs_attention is false when there is neither a block nor an ended failure."""
    activity = derive(run("root", "running", stage("deploy", "failed"), stage("next")))
    assert activity.needs_attention is False


# --- the optional graph ----------------------------------------------------------------------


def test_graph_is_absent_unless_asked_for() -> None:
    """§2/§5: the graph is optional; without include_graph the root carries none."""
    assert derive(run("root", "running", stage("plan"))).graph is None


def test_graph_has_stage_and_tool_nodes_with_prompts() -> None:
    """§5: the graph lists stage and tool nodes, a stage's pending prompt, and run prompts."""
    plan = stage("plan", "awaiting_input", prompt="p1")
    plan.execution_order = 0
    activity = derive(
        run("root", "running", plan, tool("grep", "cached", ordinal=2), run_prompts=["q"]),
        graph=True,
    )
    assert activity.graph is not None
    assert activity.graph.nodes == (
        StageNode(
            id="root:plan",
            run_id="root",
            node_id="plan",
            name="Plan",
            parent_ids=(),
            execution_order=0,
            depth=0,
            status="awaiting_input",
            pending_prompt=NodePrompt(id="p1", kind="confirm", message="Go on?", created_at=5_000),
        ),
        ToolNode(
            id="root:grep",
            run_id="root",
            node_id="grep",
            name="grep",
            parent_ids=("root:plan",),
            depth=0,
            status="cached",
            ordinal=2,
        ),
    )
    assert activity.graph.run_prompts == (
        RunPrompt(
            id="q",
            kind="input",
            message="Which branch?",
            choices=("main", "dev"),
            created_at=7_000,
            run_id="root",
        ),
    )


def test_graph_without_run_prompts_omits_them() -> None:
    """§2: run prompts are optional in the graph: absent, not empty, when there are none."""
    activity = derive(run("root", "running", stage("plan")), graph=True)
    assert activity.graph is not None
    assert activity.graph.run_prompts is None
