"""SPEC §5's rules D1-D8 through the tracker's public API: one test per row of issue 18's table
(where the tracker used to disagree with the reference) and one per "consequence" of D8.

Every summary is also checked against ``derive_root``, the readable definition (internal: imported
from ``workflow_hub.tracker._derive``).
"""

from __future__ import annotations

from workflow_hub import RunTracker, WorkflowActivityHub
from workflow_hub.tracker._derive import derive_root

Summary = tuple[str, str, int, int, bool]


def tracker() -> RunTracker:
    hub = WorkflowActivityHub()
    result = RunTracker(hub.register_publisher(), owner_session_id="s", clock=lambda: 1_000.0)
    result.start()
    return result


def summary(t: RunTracker, root: str = "root") -> Summary:
    activity = t.activity(root)
    expected = derive_root(
        t._ledger.subtree(t._ledger.runs[root]),
        owner_session_id=t.owner_session_id,
        include_graph=False,
    )
    assert activity == expected
    return (
        activity.state,
        activity.reason,
        activity.active_execution_count,
        activity.actionable_block_count,
        activity.needs_attention,
    )


def running_root(t: RunTracker) -> None:
    t.add_run("root", status="running")


# --- issue 18's table, one row (or case of a row) per test ----------------------------------


def test_row_1_a_human_wait_and_a_manual_wait_are_awaiting_input() -> None:
    """D8 (row 1): any human wait makes a blocked root awaiting_input, even beside a manual one
    (this was blocked / manual_intervention)."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "ask", "Ask", status="awaiting_input")
    t.require_intervention("root")
    assert summary(t) == ("blocked", "awaiting_input", 0, 2, True)


def test_row_2_a_prompt_on_an_ended_or_paused_run_is_no_wait() -> None:
    """D2 (row 2): a completed, killed or paused run carries no wait, whatever prompts are open."""
    for status, reason in (
        ("completed", "quiescent"),
        ("killed", "quiescent"),
        ("paused", "paused"),
    ):
        t = tracker()
        running_root(t)
        t.open_prompt("root", "p", "input", "?")
        t.set_run_status("root", status)
        assert summary(t) == ("idle", reason, 0, 0, False), status


def test_row_2_a_prompt_on_a_paused_stage_is_no_wait() -> None:
    """D2 (row 2): a paused stage's open prompt is no wait."""
    t = tracker()
    t.add_run("root", status="pending")
    t.add_stage("root", "ask", "Ask", status="paused")
    t.open_prompt("root", "p", "confirm", "?", stage_id="ask")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_row_3_a_running_stage_with_an_open_prompt_is_a_wait_not_an_execution() -> None:
    """D4 (row 3): a running stage that waits for a human is blocked / awaiting_input, 0 executions."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "plan", "Plan", status="running")
    t.open_prompt("root", "p", "confirm", "?", stage_id="plan")
    assert summary(t) == ("blocked", "awaiting_input", 0, 1, True)


def test_row_4_a_stage_hosting_a_nested_run_is_not_an_execution() -> None:
    """D4, D6 (row 4): the child's nodes are the executions, not the stage that hosts it."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "spawn", "Spawn", status="running")
    t.add_run("child", parent_run_id="root", host_stage_id="spawn", status="running")
    t.add_stage("child", "build", "Build", status="running")
    assert summary(t) == ("working", "executing", 1, 0, False)


def test_row_5_a_live_running_run_without_nodes_continues() -> None:
    """D6 (row 5): automatic_continuation with 0 executions."""
    t = tracker()
    running_root(t)
    assert summary(t) == ("working", "automatic_continuation", 0, 0, False)


def test_row_6_quit_on_a_pending_run_with_nothing_executing_is_idle() -> None:
    """D8 (row 6): idle / quiescent, not stopping."""
    t = tracker()
    t.add_run("root")
    t.request_control("root", "quit")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_row_7_quit_with_a_pending_retried_stage_is_retrying() -> None:
    """D5, D8 (row 7): a retry in a stopping run still makes the root retrying."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "build", "Build")
    t.set_stage_status("root", "build", "pending", retrying=True)
    t.request_control("root", "quit")
    assert summary(t) == ("working", "retrying", 0, 0, False)


def test_row_8_a_stopping_child_draining_beside_a_continuing_root_is_executing() -> None:
    """D8 (row 8): the root continues through its hosting stage, so the child's stopping tool is
    not all there is: executing."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "spawn", "Spawn", status="running")
    t.add_run("child", parent_run_id="root", host_stage_id="spawn", status="running")
    t.add_tool("child", "grep", "grep", status="running")
    t.request_control("child", "quit")
    assert summary(t) == ("working", "executing", 1, 0, False)


def test_row_9_a_stop_on_an_ended_root_covers_a_live_child() -> None:
    """D1 (row 9): a stop on the root covers the whole tree, even after the root ended."""
    t = tracker()
    running_root(t)
    t.add_run("child", parent_run_id="root", status="running")
    t.add_stage("child", "build", "Build")
    t.request_control("root", "quit")
    t.set_run_status("root", "cancelled")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_row_10_failed_cancelled_or_blocked_nodes_do_not_keep_a_run_working() -> None:
    """D6 (row 10): only runnable work continues."""
    for kind, status in (("stage", "failed"), ("tool", "cancelled"), ("stage", "blocked")):
        t = tracker()
        running_root(t)
        if kind == "stage":
            t.add_stage("root", "x", "X", status=status)
        else:
            t.add_tool("root", "x", "X", status=status)
        assert summary(t) == ("idle", "quiescent", 0, 0, False), status


def test_row_10_a_stage_after_a_skipped_or_failed_parent_is_not_runnable() -> None:
    """D6 (row 10): a skipped or failed parent does not let its child run."""
    for parent_status in ("skipped", "failed"):
        t = tracker()
        running_root(t)
        t.add_stage("root", "a", "A", status=parent_status)
        t.add_stage("root", "b", "B", parent_ids=["a"])
        assert summary(t) == ("idle", "quiescent", 0, 0, False), parent_status


def test_row_11_a_live_pending_run_is_idle() -> None:
    """D6 (row 11): only a running run continues."""
    t = tracker()
    t.add_run("root")
    t.add_stage("root", "plan", "Plan")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_row_12_a_run_prompt_beside_a_runnable_stage_is_working_with_a_block() -> None:
    """D6, D8 (row 12): working / automatic_continuation, 1 block, needs attention."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "plan", "Plan")
    t.open_prompt("root", "p", "input", "?")
    assert summary(t) == ("working", "automatic_continuation", 0, 1, True)


def test_row_13_restored_history_with_a_runnable_stage_is_idle() -> None:
    """Row 13: history never works."""
    t = tracker()
    t.add_run("root", status="running", live=False)
    t.add_stage("root", "plan", "Plan")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_row_14_a_paused_stage_does_not_stop_a_runnable_one() -> None:
    """D6 (row 14): automatic_continuation beside a paused stage."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "a", "A", status="paused")
    t.add_stage("root", "b", "B")
    assert summary(t) == ("working", "automatic_continuation", 0, 0, False)


def test_row_14_a_paused_stage_in_a_pending_run_is_quiescent() -> None:
    """D7 (row 14): only a running run with a paused stage is paused."""
    t = tracker()
    t.add_run("root")
    t.add_stage("root", "a", "A", status="paused")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_row_15_a_retry_flag_in_a_paused_run_or_on_a_failed_stage_is_retrying() -> None:
    """D5 (row 15): the executor says it retries, whatever the statuses."""
    t = tracker()
    t.add_run("root", status="paused")
    t.add_stage("root", "a", "A")
    t.set_stage_status("root", "a", "pending", retrying=True)
    assert summary(t) == ("working", "retrying", 0, 0, False)
    t.set_run_status("root", "running")
    t.set_stage_status("root", "a", "failed", retrying=True)
    assert summary(t) == ("working", "retrying", 0, 0, False)


def test_row_15_a_retry_flag_in_restored_history_stays_idle() -> None:
    """D5 (row 15): only live runs retry."""
    t = tracker()
    t.add_run("root", status="paused", live=False)
    t.add_stage("root", "a", "A")
    t.set_stage_status("root", "a", "pending", retrying=True)
    assert summary(t) == ("idle", "paused", 0, 0, False)


def test_row_16_an_acknowledged_failure_needs_nothing() -> None:
    """D3 (row 16): no attention and no wait once acknowledged."""
    t = tracker()
    running_root(t)
    t.set_run_status("root", "failed", executor_ended=True)
    assert summary(t) == ("idle", "quiescent", 0, 0, True)
    t.acknowledge_failure("root")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


# --- the new facts --------------------------------------------------------------------------


def test_an_active_failure_is_a_manual_wait_and_an_ended_one_is_settled() -> None:
    """D3: failed with the executor there -> blocked / manual_intervention; ended -> settled."""
    t = tracker()
    running_root(t)
    t.set_run_status("root", "failed")
    assert summary(t) == ("blocked", "manual_intervention", 0, 1, True)
    t.set_run_status("root", "failed", executor_ended=True)
    assert summary(t) == ("idle", "quiescent", 0, 0, True)


def test_a_restored_failure_that_can_still_be_resumed_stays_blocked() -> None:
    """D3: a failed or blocked run is a manual wait while its executor has not ended, live or
    not: restored from storage and resumable, it stays blocked / manual_intervention."""
    for status in ("blocked", "failed"):
        t = tracker()
        t.add_run("root", status=status, live=False)
        assert summary(t) == ("blocked", "manual_intervention", 0, 1, True)


def test_a_restored_failure_whose_executor_ended_is_settled() -> None:
    """D3: executor_ended, not liveness, decides: a restored failure that has ended is settled
    (needs attention, blocks nothing)."""
    t = tracker()
    t.add_run("root", status="blocked", live=False, executor_ended=True)
    assert summary(t) == ("idle", "quiescent", 0, 0, True)


def test_a_restored_intervention_is_a_manual_wait_until_the_executor_ends() -> None:
    """D3: an intervention required on a restored pending run blocks while its executor has not
    ended, and is settled once it has."""
    t = tracker()
    t.add_run("root", status="pending", live=False)
    t.require_intervention("root")
    assert summary(t) == ("blocked", "manual_intervention", 0, 1, True)
    t.set_run_status("root", "pending", executor_ended=True)
    assert summary(t) == ("idle", "quiescent", 0, 0, True)


def test_releasing_ownership_keeps_an_unended_failure_blocked() -> None:
    """D3: a live failure that becomes history without its executor ending stays a manual wait."""
    t = tracker()
    running_root(t)
    t.set_run_status("root", "failed")
    t.release_ownership("root")
    assert summary(t) == ("blocked", "manual_intervention", 0, 1, True)


def test_a_pending_stage_with_an_open_prompt_is_a_wait_not_runnable_work() -> None:
    """D6: in a live running run, a pending stage with an open prompt is a human wait, never
    runnable work: blocked / awaiting_input (this was working / automatic_continuation)."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "ask", "Ask")
    assert summary(t) == ("working", "automatic_continuation", 0, 0, False)
    t.open_prompt("root", "p", "confirm", "Go?", stage_id="ask")
    assert summary(t) == ("blocked", "awaiting_input", 0, 1, True)
    t.answer_prompt("root", "p")
    assert summary(t) == ("working", "automatic_continuation", 0, 0, False)


def test_a_prompted_pending_stage_leaves_other_runnable_work_runnable() -> None:
    """D6, D8: another pending stage whose parents are done still continues the run; the
    prompted one is a wait beside it (working, needs attention)."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "ask", "Ask")
    t.add_stage("root", "next", "Next")
    t.open_prompt("root", "p", "confirm", "Go?", stage_id="ask")
    assert summary(t) == ("working", "automatic_continuation", 0, 1, True)


def test_a_prompted_pending_stage_becomes_runnable_when_its_parent_completes_after() -> None:
    """D6: a pending stage that waits for its parent and has a prompt stays a wait when the
    parent completes (the incremental parent bookkeeping agrees with the definition)."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "first", "First", status="running")
    t.add_stage("root", "ask", "Ask", parent_ids=["first"])
    t.open_prompt("root", "p", "confirm", "Go?", stage_id="ask")
    t.set_stage_status("root", "first", "completed")
    assert summary(t) == ("blocked", "awaiting_input", 0, 1, True)
    t.cancel_prompt("root", "p")
    assert summary(t) == ("working", "automatic_continuation", 0, 0, False)


def test_a_budget_stop_keeps_needing_approval_after_the_run_ended() -> None:
    """D3: a budget stop stays a manual wait once the executor has ended."""
    t = tracker()
    running_root(t)
    t.require_intervention("root", budget_stop=True)
    t.set_run_status("root", "blocked", executor_ended=True)
    assert summary(t) == ("blocked", "manual_intervention", 0, 1, True)
    t.require_intervention("root", budget_stop=False)
    assert summary(t) == ("idle", "quiescent", 0, 0, True)


def test_an_acknowledgement_ends_when_the_run_starts_afresh() -> None:
    """D3: a run that fails again after a restart needs attention again."""
    t = tracker()
    running_root(t)
    t.set_run_status("root", "failed", executor_ended=True)
    t.acknowledge_failure("root")
    t.set_run_status("root", "running")
    t.set_run_status("root", "failed", executor_ended=True)
    assert summary(t) == ("idle", "quiescent", 0, 0, True)


def test_interventions_count_once_per_run() -> None:
    """D3: a run with several interventions is one manual wait."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "a", "A", status="failed")
    t.require_intervention("root", stage_id="a")
    t.require_intervention("root")
    assert summary(t) == ("blocked", "manual_intervention", 0, 1, True)


def test_continuing_only_through_a_hosting_stage_needs_no_block_and_nothing_paused() -> None:
    """D6: a run that continues only through a stage hosting a child counts only while the
    root has no actionable block and nothing paused."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "spawn", "Spawn", status="running")
    t.add_run("child", parent_run_id="root", host_stage_id="spawn", status="running")
    t.add_stage("child", "ask", "Ask", status="awaiting_input")
    assert summary(t) == ("blocked", "awaiting_input", 0, 1, True)
    t.set_stage_status("child", "ask", "paused")
    assert summary(t) == ("idle", "paused", 0, 0, False)
    t.set_stage_status("child", "ask", "completed")
    assert summary(t) == ("working", "automatic_continuation", 0, 0, False)


# --- D8's consequences ---------------------------------------------------------------------


def test_consequence_a_pending_run_is_idle() -> None:
    """D8: a pending run is idle."""
    t = tracker()
    t.add_run("root")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_consequence_a_stop_with_nothing_executing_is_idle() -> None:
    """D8: a stop with nothing executing is idle."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "a", "A")
    t.request_control("root", "kill")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_consequence_a_stop_while_work_drains_is_stopping() -> None:
    """D8: executions that all belong to stopping runs, nothing independent: stopping."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "a", "A", status="running")
    t.request_control("root", "kill")
    assert summary(t) == ("working", "stopping", 1, 0, False)


def test_consequence_a_running_run_with_no_stage_runnable_continues_with_no_execution() -> None:
    """D8: a running run whose stages are all done is automatic_continuation, 0 executions."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "a", "A", status="completed")
    assert summary(t) == ("working", "automatic_continuation", 0, 0, False)


def test_consequence_a_failed_stage_does_not_keep_its_run_working() -> None:
    """D8: a failed stage is neither an execution nor runnable work."""
    t = tracker()
    running_root(t)
    t.add_stage("root", "a", "A", status="running")
    t.set_stage_status("root", "a", "failed")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


def test_consequence_a_prompt_on_a_completed_run_blocks_nothing() -> None:
    """D8: a prompt on a completed run blocks nothing."""
    t = tracker()
    running_root(t)
    t.open_prompt("root", "p", "input", "?")
    t.set_run_status("root", "completed")
    assert summary(t) == ("idle", "quiescent", 0, 0, False)


# --- the graph: shared, immutable, equal to a full rebuild ----------------------------------


def test_successive_graphs_share_unchanged_nodes_and_never_change() -> None:
    """§2/§5: a fact rebuilds only the nodes it changed; a published graph is an immutable value
    that later facts leave as it was, and it equals a full rebuild."""
    hub = WorkflowActivityHub()
    t = RunTracker(
        hub.register_publisher(), owner_session_id="s", clock=lambda: 1.0, include_graph=True
    )
    t.start()
    t.add_run("root", status="running")
    for index in range(5):
        t.add_stage("root", f"s{index}", f"S{index}")
    before = t.activity("root")
    assert before.graph is not None
    nodes_before = before.graph.nodes
    t.set_stage_status("root", "s2", "running")
    after = t.activity("root")
    assert after.graph is not None
    assert before.graph.nodes is nodes_before
    assert [node.status for node in before.graph.nodes] == ["pending"] * 5
    shared = [a is b for a, b in zip(before.graph.nodes, after.graph.nodes, strict=True)]
    assert shared == [True, True, False, True, True]
    rebuilt = derive_root(
        t._ledger.subtree(t._ledger.runs["root"]), owner_session_id="s", include_graph=True
    )
    assert after == rebuilt


def test_a_pending_retry_in_a_paused_or_ended_run_is_retrying() -> None:
    """D5: what set_stage_status's docstring says: a retry that is not running, in a live run
    that is paused or has ended, still gives working / retrying (the executor says it retries);
    a prompt on the stage makes it a wait instead."""
    for run_status in ("paused", "completed", "failed", "cancelled"):
        t = tracker()
        running_root(t)
        t.add_stage("root", "build", "Build", status="running")
        t.set_run_status("root", run_status, executor_ended=True)
        t.set_stage_status("root", "build", "pending", retrying=True)
        assert summary(t)[:2] == ("working", "retrying"), run_status
    t.open_prompt("root", "p", "confirm", "Retry?", stage_id="build")
    assert summary(t)[:2] == ("idle", "quiescent")
