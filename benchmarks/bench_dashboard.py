"""The dashboard page in Debian's chromium: 20 000 roots against the same page with 200 (issue 30).

For each size R the hub (this process) publishes a ready snapshot of R roots and serves it; a
headless chromium (driven by playwright in a thread) opens the page. Recorded in the page: every
time the connection's revision changes, the wall time of the next animation frame (what the
reader sees), with a MutationObserver installed before the page's scripts run.

- first render: from ``goto`` until the frame that shows the snapshot's revision.
- lag under 100 changes/s: the hub publishes 100 ``publish_changed`` per second for a few
  seconds (a random root moving between working, blocked and idle, so the page reorders); each
  change's lag is the time from its publication to the first frame showing its revision or a
  later one. Reported: the 95th percentile and the worst. Goal (issue 30): the 20 000-root page's
  p95 lag at most 2 x the 200-root page's.
- memory while roots come and go: the page's JS heap (after a forced collection, over the
  DevTools protocol) after as many root additions and removals as changes above, against the heap
  right after the first render. Goal: at most 1.5 x (nothing grows with the roots seen).
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

import trio

from _harness import BenchmarkError, Goal, HubFactory, Row, Scale, make_roots
from workflow_hub import RootActivity, WorkflowActivityHub
from workflow_hub.server import serve_hub

_T = TypeVar("_T")

# sizes (reference, measured), seconds of changes per size
_SIZES = {"full": ((200, 20_000), 6.0), "quick": ((200, 20_000), 3.0), "smoke": ((20, 200), 0.3)}
RATE = 100
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RECORDER = """
window.__frames = [];
document.addEventListener("DOMContentLoaded", () => {
  const connection = document.querySelector('[data-testid="connection"]');
  let waiting = false;
  new MutationObserver(() => {
    if (waiting) return;
    waiting = true;
    requestAnimationFrame(() => {
      waiting = false;
      const revision = Number(connection.dataset.revision || -1);
      window.__frames.push([Date.now(), revision]);
    });
  }).observe(connection, {attributes: true, attributeFilter: ["data-revision"]});
});
"""
STATES = [("working", "executing"), ("blocked", "awaiting_input"), ("idle", "quiescent")]


class _Chromium:
    """One chromium, owned by one thread (playwright's sync API stays on its thread)."""

    def __init__(self, executable: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1)
        self._executor.submit(self._start, executable).result(timeout=60)

    def _start(self, executable: str) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self.browser = self._playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_FLAGS
        )

    async def run(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        future = self._executor.submit(partial(function, *args, **kwargs))
        return await trio.to_thread.run_sync(partial(future.result, timeout=120))

    def close(self) -> None:
        def stop() -> None:
            self.browser.close()
            self._playwright.stop()

        self._executor.submit(stop).result(timeout=30)
        self._executor.shutdown()


def _root(root_id: str, state: str, reason: str) -> RootActivity:
    return RootActivity(
        root_run_id=root_id,
        owner_session_id="session-1",
        state=state,
        reason=reason,
        active_execution_count=1 if state == "working" else 0,
        actionable_block_count=1 if state == "blocked" else 0,
        needs_attention=False,
    )


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _heap(chromium: _Chromium, cdp: Any) -> float:
    await chromium.run(cdp.send, "HeapProfiler.collectGarbage")
    usage = await chromium.run(cdp.send, "Runtime.getHeapUsage")
    return float(usage["usedSize"])


async def _measure(
    chromium: _Chromium, hub_factory: HubFactory, count: int, seconds: float, seed: int
) -> dict[str, float]:
    rng = random.Random(seed)
    roots = make_roots(count)
    async with hub_factory() as hub, trio.open_nursery() as nursery:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        url = await nursery.start(partial(serve_hub, hub, host="127.0.0.1", port=0))
        context = await chromium.run(
            chromium.browser.new_context, viewport={"width": 1280, "height": 900}
        )
        try:
            page = await chromium.run(context.new_page)
            await chromium.run(page.add_init_script, RECORDER)
            cdp = await chromium.run(context.new_cdp_session, page)
            started = time.time() * 1000
            await chromium.run(page.goto, url)
            first = await _until_revision(chromium, page, hub)
            first_render = first - started
            heap_before = await _heap(chromium, cdp)

            # 100 changes per second, on schedule.
            published: list[tuple[int, float]] = []
            changes = max(2, int(seconds * RATE))
            begin = trio.current_time()
            for index in range(changes):
                await trio.sleep_until(begin + index / RATE)
                state, reason = rng.choice(STATES)
                publisher.publish_changed(_root(f"root-{rng.randrange(count)}", state, reason))
                cursor = hub.snapshot_frame().cursor
                assert cursor is not None
                published.append((cursor.revision, time.time() * 1000))
            await _until_revision(chromium, page, hub)
            frames: list[list[float]] = await chromium.run(page.evaluate, "() => window.__frames")
            lags = []
            for revision, at in published:
                shown = next((t for t, r in frames if r >= revision), None)
                if shown is None:
                    raise BenchmarkError(f"revision {revision} was never shown")
                lags.append(max(0.0, shown - at))

            # Roots come and go: as many additions and removals as changes above.
            for index in range(changes):
                publisher.publish_changed(_root(f"passing-{index}", "blocked", "awaiting_input"))
                if index >= 10:
                    publisher.publish_removed(f"passing-{index - 10}")
                if index % 20 == 0:
                    await trio.sleep(0.05)
            for index in range(max(0, changes - 10), changes):
                publisher.publish_removed(f"passing-{index}")
            await _until_revision(chromium, page, hub)
            heap_after = await _heap(chromium, cdp)
            drawn = await chromium.run(
                page.evaluate, "() => document.querySelectorAll('li.root').length"
            )
            if drawn > 100:
                raise BenchmarkError(f"the page drew {drawn} roots, more than its window of 100")
        finally:
            await chromium.run(context.close)
            nursery.cancel_scope.cancel()
    return {
        "first": first_render,
        "p95": _percentile(lags, 0.95),
        "max": max(lags),
        "heap_before": heap_before,
        "heap_after": heap_after,
    }


async def _until_revision(chromium: _Chromium, page: Any, hub: WorkflowActivityHub) -> float:
    """The wall time (ms) of the first frame that showed the hub's current revision."""
    cursor = hub.snapshot_frame().cursor
    assert cursor is not None
    await chromium.run(
        page.wait_for_function,
        "(r) => window.__frames.some(([, shown]) => shown >= r)",
        arg=cursor.revision,
        timeout=60_000,
    )
    frames: list[list[float]] = await chromium.run(page.evaluate, "() => window.__frames")
    return next(t for t, r in frames if r >= cursor.revision)


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the page is what is measured; the hub's variants change nothing here
    executable = os.environ.get("WORKFLOW_HUB_CHROMIUM") or shutil.which("chromium")
    if not executable:
        raise BenchmarkError("chromium not found (make browsers, or set WORKFLOW_HUB_CHROMIUM)")
    (small, large), seconds = _SIZES[scale.name]
    chromium = _Chromium(executable)
    try:
        results = {}
        for count in (small, large):
            best: dict[str, float] | None = None
            for attempt in range(max(1, min(scale.repeats, 2))):
                measured = trio.run(_measure, chromium, hub_factory, count, seconds, attempt)
                if best is None:
                    best = measured
                else:
                    best = {key: min(best[key], measured[key]) for key in best}
            assert best is not None
            results[count] = best
    finally:
        chromium.close()
    ref, big = results[small], results[large]
    common = {"benchmark": "dashboard", "variant": label}
    return [
        Row(
            case=f"first render, {large} roots",
            value=big["first"] * 1e6,
            unit="ns",
            reference=f"{small} roots",
            reference_value=ref["first"] * 1e6,
            **common,
        ),
        Row(
            case=f"p95 lag at {RATE} changes/s, {large} roots",
            value=big["p95"] * 1e6,
            unit="ns",
            reference=f"{small} roots",
            reference_value=ref["p95"] * 1e6,
            goal=Goal(op="<=", threshold=2.0),
            **common,
        ),
        Row(
            case=f"worst lag at {RATE} changes/s, {large} roots",
            value=big["max"] * 1e6,
            unit="ns",
            reference=f"{small} roots",
            reference_value=ref["max"] * 1e6,
            **common,
        ),
        Row(
            case=f"JS heap after roots came and went, {large} roots",
            value=big["heap_after"],
            unit="B",
            reference="after the first render",
            reference_value=big["heap_before"],
            goal=Goal(op="<=", threshold=1.5),
            **common,
        ),
    ]
