"""Draw docs/dashboard.png: the dashboard of the demo's scheduler, 7 seconds in (`make screenshot`).

The demo's scenario runs in this process with a hub, a hook runner and the server, exactly as
`workflow-hub serve` does; Debian's chromium (driven by playwright) loads the page, opens the
stages of one root and takes the picture. Same seed, same picture, byte for byte: the demo's
clock starts at a fixed instant (``--clock``, not the wall clock, so the hook feed's times do
not change from run to run) and the page runs in a fixed time zone and locale (UTC, en-US), with
animations and the caret off.

With ``--busy N`` the scheduler is a busy one instead: N roots (a seeded mix of working, blocked,
flagged and idle ones, some with stages), still changing while the page is open, and the page is
opened on ``--view`` (a fragment such as ``#group=attention``), as a shared link would open it:
`make screenshot` draws docs/dashboard-busy-1280.png and docs/dashboard-busy-375.png this way.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import trio
import trio.testing

from workflow_hub import (
    HOOK_EVENT_TYPES,
    FailureDetail,
    HookRunner,
    NodePrompt,
    RootActivity,
    RootGraph,
    StageNode,
    WorkflowActivityHub,
    open_hub,
)
from workflow_hub._cli._demo_script import run_scenario
from workflow_hub.server import serve_hub
from workflow_hub.tracker import RunTracker

ROOT = Path(__file__).resolve().parent.parent
# When the demo's scheduler starts, in epoch milliseconds: 2026-01-01 09:00:00 UTC.
CLOCK_START_MS = 1_767_258_000_000
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Repaint whole tiles: with partial raster, the edges of what the last frames redrew could
    # be antialiased differently from run to run (a few pixels, but another file).
    "--disable-partial-raster",
]


class _Camera:
    """Chromium in one thread (playwright's sync API stays on the thread that started it)."""

    def __init__(
        self, chromium: str, width: int, height: int = 900, full_page: bool = True
    ) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1)
        self._chromium = chromium
        self._width = width
        self._height = height
        self._full_page = full_page

    async def _call(self, function: Callable[..., object], *args: object) -> object:
        future = self._executor.submit(function, *args)
        return await trio.to_thread.run_sync(future.result)

    def _open(self, url: str, view: str, hooks: bool) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=self._chromium, args=CHROMIUM_FLAGS
        )
        # The time zone and locale are the page's, never the machine's: the feed's times and the
        # counts' digit grouping read the same wherever the picture is taken.
        self._page = self._browser.new_page(
            viewport={"width": self._width, "height": self._height},
            timezone_id="UTC",
            locale="en-US",
        )
        # A loaded machine (the test suite's two workers, each with a browser) can take longer
        # than Playwright's 30 s default to draw the demo's first frames.
        self._page.set_default_timeout(90_000)
        self._page.goto(url + view)
        self._page.wait_for_selector('[data-testid="connection"][data-state="live"]')
        if hooks:
            # The hook events' stream is a second connection: the server attaches it before it
            # answers, so once the page says so, no event of the story can pass it by.
            self._page.wait_for_selector('[data-testid="feed-status"]:text("No hook events yet.")')

    def _feed(self, received: int) -> None:
        status = '[data-testid="feed-status"]'
        self._page.wait_for_function(
            f"document.querySelector('{status}').textContent.includes(' of {received} (')"
        )

    def _settle(self, cursor: str) -> None:
        self._page.wait_for_selector(f'[data-testid="connection"][data-cursor="{cursor}"]')

    def _shoot(self, path: Path, expand: str) -> None:
        summary = self._page.locator(f'[data-root-id="{expand}"] summary')
        if summary.count():
            summary.click()
        self._page.screenshot(
            path=str(path), full_page=self._full_page, animations="disabled", caret="hide"
        )

    def _close(self) -> None:
        self._browser.close()
        self._playwright.stop()

    async def open(self, url: str, view: str = "", *, hooks: bool = False) -> None:
        """Open the page on ``view``; with ``hooks``, until its hook events' stream is open too."""
        await self._call(self._open, url, view, hooks)

    async def settle(self, hub: WorkflowActivityHub) -> None:
        """Wait until the page shows the hub's last revision."""
        cursor = hub.snapshot_frame().cursor
        assert cursor is not None
        await self._call(self._settle, f"{cursor.epoch}:{cursor.revision}")

    async def feed(self, received: int) -> None:
        """Wait until the page's hook feed has drawn ``received`` events."""
        await self._call(self._feed, received)

    async def shoot(self, path: Path, expand: str) -> None:
        await self._call(self._shoot, path, expand)

    async def close(self) -> None:
        await self._call(self._close)
        self._executor.shutdown()


# A busy scheduler's roots: pipelines of a data team, deployments, model training.
_KINDS = ["nightly-etl", "deploy", "train-model", "backfill", "report", "ingest", "build"]
_TEAMS = ["data", "platform", "ml"]
_STAGES = ["fetch", "validate", "transform", "load", "approve", "publish"]
_MIX = [
    ("working", "executing", False, 50),
    ("working", "retrying", False, 4),
    ("working", "automatic_continuation", False, 3),
    ("blocked", "awaiting_input", False, 1.5),
    ("blocked", "manual_intervention", False, 1),
    ("idle", "quiescent", True, 1),
    ("idle", "quiescent", False, 30),
    ("idle", "paused", False, 6),
]


def _busy_root(rng: random.Random, index: int) -> RootActivity:
    state, reason, flagged, _ = rng.choices(_MIX, weights=[m[3] for m in _MIX])[0]
    name = f"{_KINDS[index % len(_KINDS)]}-{index:04}"
    graph = None
    if state != "idle" or flagged:
        done = rng.randrange(1, len(_STAGES))
        nodes = []
        for position, stage in enumerate(_STAGES[: done + 1]):
            status = "completed" if position < done else "running" if not flagged else "failed"
            prompt = None
            if position == done and state == "blocked":
                status = "awaiting_input" if reason == "awaiting_input" else "failed"
                if reason == "awaiting_input":
                    prompt = NodePrompt(
                        id=f"{name}-prompt",
                        kind="confirm",
                        message=f"Approve {stage} of {name}?",
                        created_at=1_700_000_000_000,
                    )
            nodes.append(
                StageNode(
                    id=f"{name}:{stage}",
                    run_id=name,
                    node_id=stage,
                    name=stage,
                    parent_ids=(f"{name}:{_STAGES[position - 1]}",) if position else (),
                    depth=0,
                    status=status,
                    pending_prompt=prompt,
                    error=FailureDetail(message=f"{stage} exited with status 1", type="ExitError")
                    if status == "failed"
                    else None,
                )
            )
        graph = RootGraph(nodes=tuple(nodes))
    return RootActivity(
        root_run_id=name,
        owner_session_id="busy-scheduler",
        state=state,
        reason=reason,
        active_execution_count=rng.randrange(1, 6) if state == "working" else 0,
        actionable_block_count=1 if state == "blocked" else 0,
        needs_attention=flagged or state == "blocked",
        graph=graph,
        labels={"team": _TEAMS[index % len(_TEAMS)], "env": "prod" if index % 3 else "staging"},
    )


async def _busy(args: argparse.Namespace) -> None:
    """A scheduler of ``args.busy`` roots that keeps changing; the page opened on ``args.view``."""
    rng = random.Random(args.seed)
    # What a reader sees on opening the link: the screen, not the whole list.
    camera = _Camera(args.chromium, args.width, args.height, full_page=False)
    async with open_hub(epoch_factory=lambda: f"{rng.getrandbits(48):012x}") as hub:
        publisher = hub.register_publisher()
        roots = [_busy_root(rng, index) for index in range(args.busy)]
        publisher.publish_snapshot("ready", roots=roots)
        async with trio.open_nursery() as nursery:
            url = await nursery.start(partial(serve_hub, hub, port=0))
            await camera.open(url, args.view)
            try:
                # A second of a busy scheduler: working roots come and go, idle ones start.
                for _ in range(50):
                    index = rng.randrange(len(roots))
                    if roots[index].state != "blocked" and not roots[index].needs_attention:
                        roots[index] = _busy_root(rng, index)
                        if not roots[index].needs_attention:
                            publisher.publish_changed(roots[index])
                    await trio.sleep(0.02)
                await camera.settle(hub)
                expand = next(r.root_run_id for r in roots if r.reason == "awaiting_input")
                await camera.shoot(args.output, expand)
            finally:
                await camera.close()
            nursery.cancel_scope.cancel()


async def _main(args: argparse.Namespace) -> None:
    if args.busy:
        await _busy(args)
        return
    rng = random.Random(args.seed)
    camera = _Camera(args.chromium, args.width)
    async with open_hub(epoch_factory=lambda: f"{rng.getrandbits(48):012x}") as hub:
        runner = HookRunner(hub)
        dispatched = 0

        def count(event: object) -> None:
            nonlocal dispatched
            dispatched += 1

        hooks = runner.extension("dashboard_screenshot")
        for event_type in HOOK_EVENT_TYPES:
            hooks.on(event_type, count)
        async with trio.open_nursery() as nursery:
            url = await nursery.start(partial(serve_hub, hub, port=0, runner=runner))
            runner.bind()
            # The page is open before the scheduler starts, so it sees every hook event.
            await camera.open(url, hooks=True)
            try:
                trio_start = trio.current_time()
                tracker = RunTracker(
                    hub.register_publisher(),
                    owner_session_id="demo-session",
                    clock=lambda: round(args.clock + (trio.current_time() - trio_start) * 1000, 1),
                    event_id_factory=lambda: f"evt-{rng.getrandbits(40):010x}",
                    include_graph=True,
                )
                # The scheduler is stopped at --at (its heartbeats too) and the page catches up
                # before the picture: nothing arrives while it is taken.
                async with trio.open_nursery() as story:
                    await story.start(tracker.run_heartbeats)
                    story.start_soon(
                        partial(run_scenario, tracker, duration=19.0, seed=rng.randrange(2**32))
                    )
                    await trio.sleep_until(trio_start + args.at)
                    story.cancel_scope.cancel()
                await camera.settle(hub)
                # The hook events have no cursor: the page has them all when it has counted as
                # many as the runner dispatched (once every task, the runner's too, waits).
                await trio.testing.wait_all_tasks_blocked()
                await camera.feed(dispatched)
                await camera.shoot(args.output, "data-migration")
            finally:
                await camera.close()
            nursery.cancel_scope.cancel()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "dashboard.png")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--at", type=float, default=7.0, help="seconds into the demo")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument(
        "--clock",
        type=float,
        default=CLOCK_START_MS,
        help="the demo's start in epoch milliseconds (fixed, so that the picture is too)",
    )
    parser.add_argument("--height", type=int, default=900, help="the window's height (--busy)")
    parser.add_argument("--busy", type=int, default=0, help="a busy scheduler of this many roots")
    parser.add_argument("--view", default="", help="the page's view, e.g. '#group=attention'")
    args = parser.parse_args()
    # The demo's story runs on trio's mock clock: time jumps to the next fact once every task
    # has waited 50 ms (the page meanwhile draws what arrived), so the facts, their order and
    # their times are the seeded story's, however loaded the machine is.
    clock = None if args.busy else trio.testing.MockClock(autojump_threshold=0.05)
    trio.run(_main, args, clock=clock)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
