"""Draw docs/fleet.png: the fleet's page with six sources, one opened in place (`make screenshot`).

A redis-server of its own on a free loopback port (``--redis-server``, from PATH by default),
six hubs in this process mirrored into it — working, blocked, idle, one that declared itself
unavailable and one whose mirror stopped refreshing (crashed) — and ``serve_fleet``; Debian's
chromium (driven by playwright) loads ``/``, opens one source and takes the picture.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import coredis
import trio

from workflow_hub import RootActivity, WorkflowActivityHub, open_hub
from workflow_hub.redis import mirror_hub
from workflow_hub.server import serve_fleet

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _root(name: str, state: str = "working", reason: str = "executing", blocks: int = 0) -> Any:
    return RootActivity(
        root_run_id=name,
        owner_session_id="session-1",
        state=state,
        reason=reason,
        active_execution_count=1 if state == "working" else 0,
        actionable_block_count=blocks,
        needs_attention=blocks > 0,
    )


SOURCES: dict[str, list[Any]] = {
    "analytics": [
        _root("nightly-etl"),
        _root("backfill-2024"),
        _root("report", "idle", "quiescent"),
    ],
    "billing": [_root("invoice-run", "blocked", "awaiting_input", blocks=1), _root("reconcile")],
    "deploy": [_root("deploy-web"), _root("deploy-api", "idle", "paused")],
    "ml-train": [_root("train-ranker", "idle", "quiescent")],
    "search": [_root("reindex")],
    "staging": [_root("smoke-check")],
}
DECLARED_UNAVAILABLE = "search"
CRASHED = "staging"
OPENED = "billing"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Camera:
    """Chromium in one thread (playwright's sync API stays on the thread that started it)."""

    def __init__(self, chromium: str, width: int, height: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1)
        self._chromium = chromium
        self._width = width
        self._height = height

    async def _call(self, function: Callable[..., object], *args: object) -> object:
        future = self._executor.submit(function, *args)
        return await trio.to_thread.run_sync(future.result)

    def _shoot_sync(self, url: str, path: Path) -> None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=self._chromium, args=CHROMIUM_FLAGS
            )
            page = browser.new_page(viewport={"width": self._width, "height": self._height})
            page.goto(url)
            page.wait_for_function(
                "(count) => [...document.querySelectorAll('tr[data-source]')]"
                ".filter((r) => r.dataset.state !== 'unknown' || r.dataset.stale === 'true'"
                " || r.dataset.availability === 'unavailable').length === count",
                arg=len(SOURCES),
            )
            page.click(f'tr[data-source="{OPENED}"] button.open')
            page.wait_for_function(
                '(name) => { const f = document.querySelector(`tr[data-details="${name}"] iframe`);'
                " return f && f.contentDocument &&"
                " f.contentDocument.querySelectorAll('[data-root-id]').length > 0; }",
                arg=OPENED,
            )
            time.sleep(0.5)  # the frame's height follows its content
            page.screenshot(path=str(path), full_page=True)
            browser.close()

    async def shoot(self, url: str, path: Path) -> None:
        await self._call(self._shoot_sync, url, path)
        self._executor.shutdown()


async def _hub(*, task_status: trio.TaskStatus[WorkflowActivityHub]) -> None:
    async with open_hub() as hub:
        task_status.started(hub)
        await trio.sleep_forever()


async def _main(args: argparse.Namespace, redis_url: str) -> None:
    async with (
        coredis.Redis.from_url(redis_url, stream_timeout=5) as redis,
        trio.open_nursery() as nursery,
    ):
        url: str = await nursery.start(partial(serve_fleet, redis, port=0, stale_after=1))
        crashed = trio.CancelScope()
        for name, roots in SOURCES.items():
            hub: WorkflowActivityHub = await nursery.start(_hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots)
            mirror = partial(mirror_hub, hub, redis, source=name, refresh_interval=0.2)
            if name == CRASHED:

                async def run_crashing(
                    mirror: Any = mirror, *, task_status: trio.TaskStatus[Any]
                ) -> None:
                    with crashed:
                        await mirror(task_status=task_status)

                started = await nursery.start(run_crashing)
            else:
                started = await nursery.start(mirror)
            await started.wait_claimed()
            if name == DECLARED_UNAVAILABLE:
                publisher.dispose()
        await trio.sleep(0.5)
        crashed.cancel()  # its scheduler is gone: it stops refreshing, then shows as crashed
        await trio.sleep(1.5)
        await _Camera(args.chromium, args.width, args.height).shoot(url + "/", args.output)
        nursery.cancel_scope.cancel()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "fleet.png")
    args = parser.parse_args()
    port = _free_port()
    directory = tempfile.mkdtemp(prefix="fleet-screenshot-")
    command = [args.redis_server, "--port", str(port), "--bind", "127.0.0.1"]
    command += ["--save", "", "--appendonly", "no", "--dir", directory]
    server = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.3)
        trio.run(_main, args, f"redis://127.0.0.1:{port}/0")
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
