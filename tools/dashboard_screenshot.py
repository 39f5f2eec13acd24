"""Draw docs/dashboard.png: the dashboard of the demo's scheduler, five seconds in (`make screenshot`).

The demo's scenario runs in this process with a hub, a hook runner and the server, exactly as
`workflow-hub serve` does; Debian's chromium (driven by playwright) loads the page, opens the
stages of one root and takes the picture. Same seed, same picture (up to timing jitter).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import trio

from workflow_hub import HookRunner, open_hub
from workflow_hub._cli._scenario import run_scenario
from workflow_hub.server import serve_hub
from workflow_hub.tracker import RunTracker

ROOT = Path(__file__).resolve().parent.parent
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


class _Camera:
    """Chromium in one thread (playwright's sync API stays on the thread that started it)."""

    def __init__(self, chromium: str, width: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1)
        self._chromium = chromium
        self._width = width

    async def _call(self, function: Callable[..., object], *args: object) -> object:
        future = self._executor.submit(function, *args)
        return await trio.to_thread.run_sync(future.result)

    def _open(self, url: str) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=self._chromium, args=CHROMIUM_FLAGS
        )
        self._page = self._browser.new_page(viewport={"width": self._width, "height": 900})
        self._page.goto(url)
        self._page.wait_for_selector('[data-testid="connection"][data-state="live"]')

    def _shoot(self, path: Path, expand: str) -> None:
        summary = self._page.locator(f'[data-root-id="{expand}"] summary')
        if summary.count():
            summary.click()
        self._page.screenshot(path=str(path), full_page=True)

    def _close(self) -> None:
        self._browser.close()
        self._playwright.stop()

    async def open(self, url: str) -> None:
        await self._call(self._open, url)

    async def shoot(self, path: Path, expand: str) -> None:
        await self._call(self._shoot, path, expand)

    async def close(self) -> None:
        await self._call(self._close)
        self._executor.shutdown()


async def _main(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    camera = _Camera(args.chromium, args.width)
    async with open_hub(epoch_factory=lambda: f"{rng.getrandbits(48):012x}") as hub:
        runner = HookRunner(hub)
        async with trio.open_nursery() as nursery:
            url = await nursery.start(partial(serve_hub, hub, port=0, runner=runner))
            runner.bind()
            # The page is open before the scheduler starts, so it sees every hook event.
            await camera.open(url)
            try:
                wall_start = time.time() * 1000
                trio_start = trio.current_time()
                tracker = RunTracker(
                    hub.register_publisher(),
                    owner_session_id="demo-session",
                    clock=lambda: round(wall_start + (trio.current_time() - trio_start) * 1000, 1),
                    event_id_factory=lambda: f"evt-{rng.getrandbits(40):010x}",
                    include_graph=True,
                )
                await nursery.start(tracker.run_heartbeats)
                nursery.start_soon(
                    partial(run_scenario, tracker, duration=19.0, seed=rng.randrange(2**32))
                )
                await trio.sleep(args.at)
                await camera.shoot(args.output, "data-migration")
            finally:
                await camera.close()
            nursery.cancel_scope.cancel()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "dashboard.png")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--at", type=float, default=5.0, help="seconds into the demo")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    trio.run(_main, args)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
