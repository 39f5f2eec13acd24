"""The demo's simulated scheduler: six workflows that exercise every row of the state table.

The script is written in *script seconds* for a nominal 20-second run and scaled to the demo's
``--duration``, so a 3-second run shows the same story, only faster. Every step reports facts to
a :class:`~workflow_hub.RunTracker`; the tracker derives the roots and publishes them.

What happens, in script seconds:

- ``nightly-build``: checkout, then compile and lint in parallel, then tests in two shards (tool
  nodes); one shard fails (an ``AssertionError``) and is retried, the build completes and is removed at the end.
- ``data-migration``: a plan stage, then a confirmation prompt (a human input) while a backup
  branch keeps executing (working, needs attention); once the backup ends it is blocked on the
  prompt alone; after the answer a nested child workflow ``verify-migration`` runs.
- ``release-train``: the deploy stage fails (a ``TimeoutError``) and needs intervention (blocked), is cleared and
  re-run by an explicit continuation (``delivery: replay``).
- ``docs-site``: paused (idle) and later resumed.
- ``load-test``: a quit is requested while its work drains (stopping), then it ends cancelled.
- ``smoke-check``: its probe fails (a ``ConnectionError``) and its executor ends (idle, quiescent, needs attention: a
  settled failure); later someone acknowledges the failure.

Failures carry their error (C3), and the roots of production carry labels (``team``, ``env``).
Top-level runs beat every 5 script seconds (``heartbeat_interval_minutes`` scaled to match).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

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


# The labels of the roots that carry some (C3): whose they are and where they run.
_LABELS = {
    "data-migration": {"team": "data", "env": "prod"},
    "release-train": {"team": "platform", "env": "prod"},
    "smoke-check": {"team": "platform", "env": "staging"},
}


def _begin(t: RunTracker, run_id: str, beat: float, stages: dict[str, tuple[str, ...]]) -> None:
    """A top-level run starts, beating, with its stages (each: the stages it follows, all named
    by their id with ``-`` read as a space); the first one runs."""
    t.add_run(run_id, status="running", heartbeat_interval_minutes=beat, labels=_LABELS.get(run_id))
    for stage_id, parent_ids in stages.items():
        t.add_stage(run_id, stage_id, stage_id.replace("-", " "), parent_ids=parent_ids)
    t.set_stage_status(run_id, next(iter(stages)), "running")


def _move(t: RunTracker, run_id: str, statuses: dict[str, str]) -> None:
    """Set the stages of ``run_id`` to their new statuses, in the order given."""
    for stage_id, status in statuses.items():
        t.set_stage_status(run_id, stage_id, status)


def _complete(t: RunTracker, run_id: str, stage_id: str, *, replay: bool = False) -> None:
    """The last stage of ``run_id`` completes, and the run with it."""
    t.set_stage_status(run_id, stage_id, "completed", replay=replay)
    t.set_run_status(run_id, "completed")


def _script(rng: random.Random, beat: float) -> list[tuple[float, Step]]:
    """(script second, step) pairs. ``rng`` jitters the timing a little, reproducibly; ``beat``
    is the heartbeat interval in minutes. The script is told root by root; it plays in time."""
    shards = ("shard-1", "shard-2")
    failing_shard = rng.choice(shards)
    steps: list[tuple[float, Step]] = []

    def at(second: float, fn: Step) -> Step:
        steps.append((round(second + rng.uniform(0.0, 0.3), 3), fn))
        return fn

    def step(second: float) -> Callable[[Step], Step]:
        return partial(at, second)

    # --- nightly-build: parallel stages, tools, a retry, completion, removal ---------------------
    build = "nightly-build"

    @step(0.2)
    def build_starts(t: RunTracker) -> None:
        stages = {
            "checkout": (),
            "compile": ("checkout",),
            "lint": ("checkout",),
            "test": ("compile", "lint"),
            "package": ("test",),
        }
        _begin(t, build, beat, stages)
        for ordinal, shard in enumerate(shards):
            t.add_tool(
                build, shard, f"pytest shard {ordinal + 1}", parent_ids=["test"], ordinal=ordinal
            )

    @step(1.5)
    def build_fans_out(t: RunTracker) -> None:
        _move(t, build, {"checkout": "completed", "compile": "running", "lint": "running"})

    @step(3.5)
    def build_tests(t: RunTracker) -> None:
        _move(t, build, {"lint": "completed", "compile": "completed", "test": "running"})
        for shard in shards:
            t.set_tool_status(build, shard, "running")

    @step(5.5)
    def shard_fails(t: RunTracker) -> None:
        t.set_tool_status(
            build, failing_shard, "failed", error=AssertionError("test_login_redirect: 302 != 200")
        )
        t.set_stage_status(build, "test", "pending", retrying=True)

    @step(6.5)
    def shard_retried(t: RunTracker) -> None:
        t.set_stage_status(build, "test", "running", retrying=True)
        t.set_tool_status(build, failing_shard, "running")

    @step(9.0)
    def build_packages(t: RunTracker) -> None:
        for shard in shards:
            t.set_tool_status(build, shard, "completed")
        _move(t, build, {"test": "completed", "package": "running"})

    at(11.0, lambda t: _complete(t, build, "package"))
    at(17.0, lambda t: t.remove_run(build))

    # --- data-migration: a human wait beside running work, then a nested child workflow --------
    migration = "data-migration"

    @step(0.5)
    def migration_starts(t: RunTracker) -> None:
        stages = {
            "plan": (),
            "backup": ("plan",),
            "approve": ("plan",),
            "migrate": ("approve", "backup"),
        }
        _begin(t, migration, beat, stages)

    @step(2.0)
    def migration_asks(t: RunTracker) -> None:
        _move(t, migration, {"plan": "completed", "backup": "running", "approve": "awaiting_input"})
        t.open_prompt(
            migration,
            "confirm-1",
            "confirm",
            "Apply 42 schema changes to production?",
            stage_id="approve",
            choices=["yes", "no"],
        )

    at(4.5, lambda t: t.set_stage_status(migration, "backup", "completed"))

    @step(8.0)
    def migration_answered(t: RunTracker) -> None:
        t.answer_prompt(migration, "confirm-1")
        _move(t, migration, {"approve": "completed", "migrate": "running"})
        t.add_run(
            "verify-migration", parent_run_id=migration, host_stage_id="migrate", status="running"
        )
        t.add_stage("verify-migration", "row-counts", "row counts")
        t.set_stage_status("verify-migration", "row-counts", "running")

    @step(12.0)
    def migration_done(t: RunTracker) -> None:
        _complete(t, "verify-migration", "row-counts")
        _complete(t, migration, "migrate")

    # --- release-train: a failure needing intervention, then a replayed stage ------------------
    release = "release-train"
    at(1.0, lambda t: _begin(t, release, beat, {"deploy": ()}))

    @step(4.0)
    def deploy_fails(t: RunTracker) -> None:
        t.set_stage_status(
            release,
            "deploy",
            "failed",
            error=TimeoutError("health check of web-3 timed out after 30 s"),
        )
        t.require_intervention(release, stage_id="deploy")

    @step(13.0)
    def deploy_replayed(t: RunTracker) -> None:
        t.clear_intervention(release, stage_id="deploy")
        t.set_stage_status(release, "deploy", "running", replay=True)

    at(15.0, lambda t: _complete(t, release, "deploy", replay=True))

    # --- docs-site: pause and resume ----------------------------------------------------------
    docs = "docs-site"
    at(0.8, lambda t: _begin(t, docs, beat, {"render": ()}))

    @step(5.0)
    def docs_paused(t: RunTracker) -> None:
        t.request_control(docs, "pause", attribution="user")
        t.set_stage_status(docs, "render", "paused")
        t.set_run_status(docs, "paused")

    @step(10.0)
    def docs_resumed(t: RunTracker) -> None:
        t.request_control(docs, "resume", attribution="user")
        t.set_run_status(docs, "running")
        t.set_stage_status(docs, "render", "running")

    at(16.0, lambda t: _complete(t, docs, "render"))

    # --- load-test: quit while work drains -----------------------------------------------------
    load = "load-test"
    at(2.5, lambda t: _begin(t, load, beat, {"ramp-up": ()}))
    at(9.5, lambda t: t.request_control(load, "quit", attribution="user"))

    @step(14.0)
    def load_drained(t: RunTracker) -> None:
        t.set_stage_status(load, "ramp-up", "skipped")
        t.set_run_status(load, "cancelled")

    # --- smoke-check: a failure whose executor ended, acknowledged later ---------------------
    smoke = "smoke-check"
    at(3.0, lambda t: _begin(t, smoke, beat, {"probe": ()}))

    @step(6.0)
    def smoke_fails(t: RunTracker) -> None:
        refused = ConnectionError("GET /healthz on staging: 503 Service Unavailable")
        t.set_stage_status(smoke, "probe", "failed", error=refused)
        t.set_run_status(smoke, "failed", executor_ended=True, error=refused)

    at(15.5, lambda t: t.acknowledge_failure(smoke))

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
        # A moment of the story is one publish of each root it changes.
        with tracker.batch():
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
