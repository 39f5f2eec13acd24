"""Draw docs/fleet.png: the fleet's page with 50 sources, 3 crashed, 2 needing a person (`make screenshot`).

A redis-server of its own on a free loopback port (``--redis-server``, from PATH by default),
fifty hubs in this process mirrored into it — most working, one whose root failed at a stage
with an error, one whose root waits for an answer, one that declared itself unavailable and
three whose mirrors stopped refreshing without a word (crashed) — and ``serve_fleet``; Debian's
chromium (driven by playwright) loads ``/`` and takes the first screen: what an on-call engineer
reads first (the headline, then the sources that need a person, then the crashed ones). From
800 px wide on, a second picture (``--opened-output``, docs/fleet-opened.png) has the failed
source and a crashed one opened in place: each headed by its name, the crashed one "stopped".
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

from workflow_hub import (
    FailureDetail,
    Labels,
    NodePrompt,
    RootActivity,
    RootGraph,
    StageNode,
    WorkflowActivityHub,
    open_hub,
)
from workflow_hub.redis import mirror_hub
from workflow_hub.server import serve_fleet

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
TEAMS = ("payments", "search", "infra", "data")


def _root(
    name: str,
    state: str = "working",
    reason: str = "executing",
    *,
    labels: dict[str, str],
    attention: bool = False,
    nodes: tuple[StageNode, ...] = (),
) -> Any:
    return RootActivity(
        root_run_id=name,
        owner_session_id="session-1",
        state=state,
        reason=reason,
        active_execution_count=1 if state == "working" else 0,
        actionable_block_count=1 if state == "blocked" else 0,
        needs_attention=attention,
        graph=RootGraph(nodes=nodes) if nodes else None,
        labels=Labels(labels),
    )


def _stage(run: str, name: str, status: str, **extra: Any) -> StageNode:
    return StageNode(
        id=f"{run}:{name}", run_id=run, node_id=name, name=name, parent_ids=(), depth=0,
        status=status, **extra,
    )  # fmt: skip


KINDS = ("api", "billing", "etl", "search", "deploy")
NAMES = [f"{KINDS[index % len(KINDS)]}-{index:02d}" for index in range(50)]
FAILED = "deploy-14"
ASKING = "billing-31"
DECLARED_UNAVAILABLE = "search-08"
CRASHED = ("etl-02", "api-20", "etl-47")
OPENED = FAILED


def _roots(index: int, name: str) -> list[Any]:
    labels = {"team": TEAMS[index % len(TEAMS)], "env": "prod" if index % 3 else "staging"}
    if name == FAILED:
        error = FailureDetail(message="health check timed out after 30 s", type="TimeoutError")
        nodes = (_stage("release-4.2", "build", "completed"),
                 _stage("release-4.2", "deploy", "failed", error=error))  # fmt: skip
        return [
            _root("release-4.2", "idle", "quiescent", labels=labels, attention=True, nodes=nodes),
            _root("canary", labels=labels),
        ]
    if name == ASKING:
        prompt = NodePrompt(
            id="p", kind="confirm", message="Refund 1 240 EUR?", created_at=1_700_000_000_000
        )
        nodes = (_stage("refunds", "approve", "awaiting_input", pending_prompt=prompt),)
        return [
            _root(
                "refunds", "blocked", "awaiting_input", labels=labels, attention=True, nodes=nodes
            )
        ]
    roots = [_root(f"{name}-run", labels=labels)]
    if index % 4 == 0:
        roots.append(_root(f"{name}-report", "idle", "quiescent", labels=labels))
    return roots


SOURCES: dict[str, list[Any]] = {name: _roots(index, name) for index, name in enumerate(NAMES)}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Camera:
    """Chromium in one thread (playwright's sync API stays on the thread that started it)."""

    def __init__(self, chromium: str, width: int, height: int, opened: Path | None) -> None:
        self._opened = opened
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
                "(crashed) => [...document.querySelectorAll('tr[data-source]')]"
                ".filter((r) => r.dataset.shown === 'crashed').length === crashed"
                " && [...document.querySelectorAll('tr[data-source]')].filter("
                "(r) => r.dataset.shown !== 'crashed' && (r.dataset.state !== 'unknown'"
                " || r.dataset.availability === 'unavailable')"
                ").length === " + str(len(SOURCES) - len(CRASHED)),
                arg=len(CRASHED),
                timeout=60_000,
            )
            page.screenshot(path=str(path))
            if self._opened is not None:
                # The failed source and a crashed one opened in place, from the first one's row.
                for name in (FAILED, CRASHED[0]):
                    page.click(f'tr[data-source="{name}"] button.open')
                    page.wait_for_function(
                        "(name) => { const f = document.querySelector("
                        '`tr[data-details="${name}"] iframe`); const d = f && f.contentDocument;'
                        " const h = d && d.querySelector('.top h1'); return h && h.textContent === name; }",
                        arg=name,
                    )
                time.sleep(0.5)  # the frames' heights follow their content
                top = page.evaluate(
                    f"() => document.querySelector('tr[data-source=\"{FAILED}\"]')"
                    ".getBoundingClientRect().top + window.scrollY - 8"
                )
                clip = {"x": 0, "y": top, "width": self._width, "height": 1500}
                page.screenshot(path=str(self._opened), full_page=True, clip=clip)
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
        url: str = await nursery.start(partial(serve_fleet, redis, port=0, stale_after=2))
        crashed: list[trio.CancelScope] = []  # the crashed sources' mirrors, stopped at once
        for name, roots in SOURCES.items():
            hub: WorkflowActivityHub = await nursery.start(_hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots)
            mirror = partial(mirror_hub, hub, redis, source=name, refresh_interval=0.2)
            if name in CRASHED:

                async def run_crashing(
                    mirror: Any = mirror, *, task_status: trio.TaskStatus[Any]
                ) -> None:
                    with trio.CancelScope() as scope:
                        crashed.append(scope)
                        await mirror(task_status=task_status)

                started = await nursery.start(run_crashing)
            else:
                started = await nursery.start(mirror)
            await started.wait_claimed()
            if name == DECLARED_UNAVAILABLE:
                publisher.dispose()
        await trio.sleep(0.5)
        for scope in crashed:  # its scheduler is gone: it stops refreshing, then shows as crashed
            scope.cancel()
        await trio.sleep(2.5)
        opened = args.opened_output if args.width >= 800 else None
        camera = _Camera(args.chromium, args.width, args.height, opened)
        await camera.shoot(url + "/", args.output)
        nursery.cancel_scope.cancel()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "fleet.png")
    parser.add_argument(
        "--opened-output",
        type=Path,
        default=ROOT / "docs" / "fleet-opened.png",
        help="from 800 px wide: the failed and a crashed source opened in place",
    )
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
