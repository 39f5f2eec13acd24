"""The demo's simulated scheduler: six workflows that exercise every row of the state table.

The script is written in *script seconds* for a nominal 20-second run and scaled to the demo's
``--duration``, so a 3-second run shows the same story, only faster. Every step reports facts to
a :class:`~workflow_hub.RunTracker`; the tracker derives the roots and publishes them.

What happens, in script seconds:

- ``nightly-build``: checkout, then compile and lint in parallel, then tests in two shards (tool
  nodes); one shard fails and is retried, the build completes and is removed at the end.
- ``data-migration``: a plan stage, then a confirmation prompt (a human input) while a backup
  branch keeps executing (working, needs attention); once the backup ends it is blocked on the
  prompt alone; after the answer a nested child workflow ``verify-migration`` runs.
- ``release-train``: the deploy stage fails and needs intervention (blocked), is cleared and
  re-run by an explicit continuation (``delivery: replay``).
- ``docs-site``: paused (idle) and later resumed.
- ``load-test``: a quit is requested while its work drains (stopping), then it ends cancelled.
- ``smoke-check``: its probe fails and its executor ends (idle, quiescent, needs attention: a
  settled failure); later someone acknowledges the failure.

Top-level runs beat every 5 script seconds (``heartbeat_interval_minutes`` scaled to match).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import trio

from ..tracker import RunTracker

__all__ = ["NOMINAL_SECONDS", "ROOTS", "loop_scenario", "run_scenario"]

NOMINAL_SECONDS = 20.0
"""How long the script runs at scale 1; the demo's duration sets the scale."""

_HEARTBEAT_SCRIPT_SECONDS = 5.0

ROOTS = (
    "nightly-build",
    "data-migration",
    "release-train",
    "docs-site",
    "load-test",
    "smoke-check",
)
"""The top-level runs the script adds, in the order it adds them."""

PAUSE_BETWEEN_ROUNDS = 3.0
"""Seconds the end of a round stays on screen before the next round starts."""

Step = Callable[[RunTracker], None]


def _script(rng: random.Random, beat: float) -> list[tuple[float, Step]]:
    """(script second, step) pairs. ``rng`` jitters the timing a little, reproducibly; ``beat``
    is the heartbeat interval in minutes."""
    failing_shard = rng.choice(["shard-1", "shard-2"])

    def at(second: float) -> float:
        return round(second + rng.uniform(0.0, 0.3), 3)

    steps: list[tuple[float, Step]] = []

    def step(second: float) -> Callable[[Step], Step]:
        def register(fn: Step) -> Step:
            steps.append((at(second), fn))
            return fn

        return register

    # --- nightly-build: parallel stages, tools, a retry, completion, removal ---------------------
    @step(0.2)
    def build_starts(t: RunTracker) -> None:
        with t.batch():
            t.add_run("nightly-build", status="running", heartbeat_interval_minutes=beat)
            t.add_stage("nightly-build", "checkout", "checkout")
            t.add_stage("nightly-build", "compile", "compile", parent_ids=["checkout"])
            t.add_stage("nightly-build", "lint", "lint", parent_ids=["checkout"])
            t.add_stage("nightly-build", "test", "test", parent_ids=["compile", "lint"])
            t.add_tool("nightly-build", "shard-1", "pytest shard 1", parent_ids=["test"], ordinal=0)
            t.add_tool("nightly-build", "shard-2", "pytest shard 2", parent_ids=["test"], ordinal=1)
            t.add_stage("nightly-build", "package", "package", parent_ids=["test"])
            t.set_stage_status("nightly-build", "checkout", "running")

    @step(1.5)
    def build_fans_out(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("nightly-build", "checkout", "completed")
            t.set_stage_status("nightly-build", "compile", "running")
            t.set_stage_status("nightly-build", "lint", "running")

    @step(3.5)
    def build_tests(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("nightly-build", "lint", "completed")
            t.set_stage_status("nightly-build", "compile", "completed")
            t.set_stage_status("nightly-build", "test", "running")
            t.set_tool_status("nightly-build", "shard-1", "running")
            t.set_tool_status("nightly-build", "shard-2", "running")

    @step(5.5)
    def shard_fails(t: RunTracker) -> None:
        with t.batch():
            t.set_tool_status("nightly-build", failing_shard, "failed")
            t.set_stage_status("nightly-build", "test", "pending", retrying=True)

    @step(6.5)
    def shard_retried(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("nightly-build", "test", "running", retrying=True)
            t.set_tool_status("nightly-build", failing_shard, "running")

    @step(9.0)
    def build_packages(t: RunTracker) -> None:
        with t.batch():
            t.set_tool_status("nightly-build", "shard-1", "completed")
            t.set_tool_status("nightly-build", "shard-2", "completed")
            t.set_stage_status("nightly-build", "test", "completed")
            t.set_stage_status("nightly-build", "package", "running")

    @step(11.0)
    def build_done(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("nightly-build", "package", "completed")
            t.set_run_status("nightly-build", "completed")

    @step(17.0)
    def build_removed(t: RunTracker) -> None:
        t.remove_run("nightly-build")

    # --- data-migration: a human wait beside running work, then a nested child workflow --------
    @step(0.5)
    def migration_starts(t: RunTracker) -> None:
        with t.batch():
            t.add_run("data-migration", status="running", heartbeat_interval_minutes=beat)
            t.add_stage("data-migration", "plan", "plan")
            t.add_stage("data-migration", "backup", "backup", parent_ids=["plan"])
            t.add_stage("data-migration", "approve", "approve", parent_ids=["plan"])
            t.add_stage("data-migration", "migrate", "migrate", parent_ids=["approve", "backup"])
            t.set_stage_status("data-migration", "plan", "running")

    @step(2.0)
    def migration_asks(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("data-migration", "plan", "completed")
            t.set_stage_status("data-migration", "backup", "running")
            t.set_stage_status("data-migration", "approve", "awaiting_input")
            t.open_prompt(
                "data-migration",
                "confirm-1",
                "confirm",
                "Apply 42 schema changes to production?",
                stage_id="approve",
                choices=["yes", "no"],
            )

    @step(4.5)
    def backup_done(t: RunTracker) -> None:
        t.set_stage_status("data-migration", "backup", "completed")

    @step(8.0)
    def migration_answered(t: RunTracker) -> None:
        with t.batch():
            t.answer_prompt("data-migration", "confirm-1")
            t.set_stage_status("data-migration", "approve", "completed")
            t.set_stage_status("data-migration", "migrate", "running")
            t.add_run(
                "verify-migration",
                parent_run_id="data-migration",
                host_stage_id="migrate",
                status="running",
            )
            t.add_stage("verify-migration", "row-counts", "row counts")
            t.set_stage_status("verify-migration", "row-counts", "running")

    @step(12.0)
    def migration_done(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("verify-migration", "row-counts", "completed")
            t.set_run_status("verify-migration", "completed")
            t.set_stage_status("data-migration", "migrate", "completed")
            t.set_run_status("data-migration", "completed")

    # --- release-train: a failure needing intervention, then a replayed stage ------------------
    @step(1.0)
    def release_starts(t: RunTracker) -> None:
        with t.batch():
            t.add_run("release-train", status="running", heartbeat_interval_minutes=beat)
            t.add_stage("release-train", "deploy", "deploy")
            t.set_stage_status("release-train", "deploy", "running")

    @step(4.0)
    def deploy_fails(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("release-train", "deploy", "failed")
            t.require_intervention("release-train", stage_id="deploy")

    @step(13.0)
    def deploy_replayed(t: RunTracker) -> None:
        with t.batch():
            t.clear_intervention("release-train", stage_id="deploy")
            t.set_stage_status("release-train", "deploy", "running", replay=True)

    @step(15.0)
    def release_done(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("release-train", "deploy", "completed", replay=True)
            t.set_run_status("release-train", "completed")

    # --- docs-site: pause and resume ----------------------------------------------------------
    @step(0.8)
    def docs_starts(t: RunTracker) -> None:
        with t.batch():
            t.add_run("docs-site", status="running", heartbeat_interval_minutes=beat)
            t.add_stage("docs-site", "render", "render")
            t.set_stage_status("docs-site", "render", "running")

    @step(5.0)
    def docs_paused(t: RunTracker) -> None:
        with t.batch():
            t.request_control("docs-site", "pause", attribution="user")
            t.set_stage_status("docs-site", "render", "paused")
            t.set_run_status("docs-site", "paused")

    @step(10.0)
    def docs_resumed(t: RunTracker) -> None:
        with t.batch():
            t.request_control("docs-site", "resume", attribution="user")
            t.set_run_status("docs-site", "running")
            t.set_stage_status("docs-site", "render", "running")

    @step(16.0)
    def docs_done(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("docs-site", "render", "completed")
            t.set_run_status("docs-site", "completed")

    # --- load-test: quit while work drains -----------------------------------------------------
    @step(2.5)
    def load_starts(t: RunTracker) -> None:
        with t.batch():
            t.add_run("load-test", status="running", heartbeat_interval_minutes=beat)
            t.add_stage("load-test", "ramp-up", "ramp up")
            t.set_stage_status("load-test", "ramp-up", "running")

    @step(9.5)
    def load_quit(t: RunTracker) -> None:
        t.request_control("load-test", "quit", attribution="user")

    @step(14.0)
    def load_drained(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("load-test", "ramp-up", "skipped")
            t.set_run_status("load-test", "cancelled")

    # --- smoke-check: a failure whose executor ended, acknowledged later ---------------------
    @step(3.0)
    def smoke_starts(t: RunTracker) -> None:
        with t.batch():
            t.add_run("smoke-check", status="running", heartbeat_interval_minutes=beat)
            t.add_stage("smoke-check", "probe", "probe")
            t.set_stage_status("smoke-check", "probe", "running")

    @step(6.0)
    def smoke_fails(t: RunTracker) -> None:
        with t.batch():
            t.set_stage_status("smoke-check", "probe", "failed")
            t.set_run_status("smoke-check", "failed", executor_ended=True)

    @step(15.5)
    def smoke_acknowledged(t: RunTracker) -> None:
        t.acknowledge_failure("smoke-check")

    steps.sort(key=lambda pair: pair[0])
    return steps


async def run_scenario(tracker: RunTracker, *, duration: float, seed: int | None) -> None:
    """Play the script on ``tracker``, scaled to end within ``duration`` real seconds."""
    scale = duration / NOMINAL_SECONDS
    beat_minutes = _HEARTBEAT_SCRIPT_SECONDS * scale / 60
    start = trio.current_time()
    tracker.start()
    for second, fn in _script(random.Random(seed), beat_minutes):
        await trio.sleep_until(start + second * scale)
        fn(tracker)


async def loop_scenario(tracker: RunTracker, *, seed: int | None, pace: float = 1.0) -> None:
    """Play the script again and again at ``pace`` (1 = its natural 20 seconds), until cancelled.

    Each round ends by removing what the previous one left, so the next one starts with fresh
    runs of the same names (a run id is tracked once at a time).
    """
    rng = random.Random(seed)
    while True:
        await run_scenario(tracker, duration=NOMINAL_SECONDS * pace, seed=rng.randrange(2**32))
        await trio.sleep(PAUSE_BETWEEN_ROUNDS * pace)
        with tracker.batch():
            for root in ROOTS:
                if root in tracker:
                    tracker.remove_run(root)
