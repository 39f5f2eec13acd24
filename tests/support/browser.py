"""A headless Chromium for trio tests, and a hub server that a test can stop and restart.

Playwright's sync API belongs to the thread that started it, and trio tests must not block, so
one worker thread owns Playwright and the browser, and a test awaits each browser call there
(:meth:`Browser.run`). The browser is Debian's ``chromium`` (never a downloaded one), started with
the flags this machine needs (docs: /work/.library/env/machines/python.md); Playwright gives it a
fresh profile.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import trio

from tests.support.dashboard import missing, require_program

_T = TypeVar("_T")

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
# Every browser wait in these tests is bounded well below the tests' own fail_after.
BROWSER_TIMEOUT_MS = 10_000


class Browser:
    """One Chromium, driven from one thread."""

    def __init__(self, executable: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="playwright")
        self._playwright: Any = None
        self.chromium: Any = None
        try:
            # Minutes only as a safety net: chromium starting on a loaded machine.
            self._executor.submit(self._start, executable).result(timeout=300)
        except BaseException:
            self.close()  # a browser or a driver that did start is stopped
            raise

    def _start(self, executable: str) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self.chromium = self._playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_FLAGS, timeout=240_000
        )

    async def run(self, function: Callable[..., _T], *args: Any) -> _T:
        """Call ``function(*args)`` in the browser's thread and await its result."""
        future = self._executor.submit(function, *args)
        return await trio.to_thread.run_sync(future.result, abandon_on_cancel=True)

    async def new_page(self, **options: Any) -> tuple[Any, list[str], list[str]]:
        """A page in a fresh context (its own storage), with bounded default timeouts; and two
        lists that collect the page's uncaught JavaScript errors and every URL it requests."""
        errors: list[str] = []
        requests: list[str] = []

        def open_page() -> Any:
            context = self.chromium.new_context(**options)
            context.set_default_timeout(BROWSER_TIMEOUT_MS)
            page = context.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: requests.append(request.url))
            return page

        return await self.run(open_page), errors, requests

    def close(self) -> None:
        """Chromium, then Playwright's driver (in the browser's thread, after whatever it is
        doing); both processes are gone when this returns."""

        def stop() -> None:
            try:
                if self.chromium is not None:
                    self.chromium.close()
            finally:
                if self._playwright is not None:
                    self._playwright.stop()

        try:
            self._executor.submit(stop).result(timeout=300)  # a safety net, not a guess
        finally:
            self._executor.shutdown()


def open_browser() -> Browser:
    """The browser for one test module; skipped without Chromium or playwright (never in CI)."""
    executable = require_program("chromium", "WORKFLOW_HUB_CHROMIUM")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("the playwright package is not installed (run make venv)")
    return Browser(executable)


class Server:
    """``serve_hub`` in its own cancel scope, so that a test can stop it and start it again."""

    def __init__(self, nursery: trio.Nursery, hub: Any, **options: Any) -> None:
        self._nursery = nursery
        self._hub = hub
        self._options = options
        self._scope: trio.CancelScope | None = None
        self._stopped = trio.Event()
        self.port = 0
        self.url = ""

    async def start(self) -> str:
        from workflow_hub.server import serve_hub

        scope = self._scope = trio.CancelScope()
        stopped = self._stopped = trio.Event()

        async def serve(*, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
            try:
                with scope:
                    await serve_hub(
                        self._hub,
                        host="127.0.0.1",
                        port=self.port,
                        task_status=task_status,
                        **self._options,
                    )
            finally:
                stopped.set()

        self.url = await self._nursery.start(serve)
        self.port = int(self.url.rstrip("/").rsplit(":", 1)[1])
        return self.url

    async def stop(self) -> None:
        assert self._scope is not None
        self._scope.cancel()
        await self._stopped.wait()
