"""The fleet page's hook feed in a real browser (Debian's headless Chromium), issue 25.

Two schedulers whose mirrors copy their hook events into a real redis-server, served by
``serve_fleet``. Opening the page's "Hook events" section opens one more stream (``/v1/events``)
and shows every source's events, newest first, each labelled with its source; a new instance
of a source is a ``dropped`` line naming it (SPEC N6: a loss of continuity made visible).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

import coredis
import trio

from tests.support.browser import BROWSER_TIMEOUT_MS, Browser
from tests.support.fleet_events import hooked
from tests.support.redis_server import RedisServer
from workflow_hub.server import serve_fleet

FEED = """() => [...document.querySelectorAll('[data-testid="fleet-feed"] li')].map(
  (item) => [item.dataset.source, item.dataset.type, item.textContent])"""

COUNT_EVENT_SOURCES = """(() => {
  const Original = window.EventSource;
  window.__eventSources = 0;
  window.EventSource = function (...args) { window.__eventSources += 1; return new Original(...args); };
  window.EventSource.prototype = Original.prototype;
  window.EventSource.CLOSED = Original.CLOSED;
})()"""


async def test_the_fleet_page_shows_the_hook_events_of_every_source(
    browser: Browser, redis_server: RedisServer
) -> None:
    prefix = f"fleet-feed-{uuid.uuid4().hex[:8]}"
    with trio.fail_after(60):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            url: str = await nursery.start(
                functools.partial(serve_fleet, redis, prefix=prefix, port=0)
            )
            a = await hooked(nursery, redis, prefix, "sched-a")
            b = await hooked(nursery, redis, prefix, "sched-b")
            page, errors, _ = await browser.new_page(viewport={"width": 375, "height": 740})

            async def feed_until(condition: str) -> list[list[str]]:
                expression = f"() => ({condition})(({FEED})())"
                await browser.run(
                    functools.partial(
                        page.wait_for_function, expression, timeout=BROWSER_TIMEOUT_MS
                    )
                )
                shown: list[list[str]] = await browser.run(page.evaluate, FEED)
                return shown

            try:
                await browser.run(page.add_init_script, COUNT_EVENT_SOURCES)
                await browser.run(page.goto, url)
                await browser.run(
                    functools.partial(
                        page.wait_for_function,
                        "() => document.querySelectorAll('tr[data-source]').length === 2",
                        timeout=BROWSER_TIMEOUT_MS,
                    )
                )
                # Left closed, the feed holds no stream (the page's own, /v1/fleet, is one).
                before = await browser.run(page.evaluate, "() => window.__eventSources")
                assert before <= 1
                await trio.sleep(0.5)
                assert await browser.run(page.evaluate, "() => window.__eventSources") == before
                await browser.run(page.click, '[data-testid="fleet-feed-section"] summary')
                await browser.run(
                    functools.partial(
                        page.wait_for_function,
                        "() => document.querySelector('[data-testid=\"fleet-feed-status\"]')"
                        ".textContent === 'No hook events yet.'",
                        timeout=BROWSER_TIMEOUT_MS,
                    )
                )
                a.change("build")
                b.change("nightly")
                shown = await feed_until("(f) => f.length === 2")
                assert sorted((source, kind) for source, kind, _ in shown) == [
                    ("sched-a", "workflow_activity_changed"),
                    ("sched-b", "workflow_activity_changed"),
                ]
                texts = {source: text for source, _, text in shown}
                assert "build" in texts["sched-a"]
                assert "nightly" in texts["sched-b"]
                # A new instance of sched-a: a line says events may be missing, naming it.
                a.kill()
                a = await hooked(nursery, redis, prefix, "sched-a")
                a.change("deploy")
                shown = await feed_until("(f) => f.some((e) => e[2].includes('deploy'))")
                newest: list[Any] = shown[0]
                assert newest[0] == "sched-a"
                assert "deploy" in newest[2]
                dropped = [entry for entry in shown if entry[1] == "dropped"]
                assert len(dropped) == 1
                assert dropped[0][0] == "sched-a"
                assert "new_instance" in dropped[0][2]
                # One stream for the feed, whatever the number of sources.
                assert await browser.run(page.evaluate, "() => window.__eventSources") == before + 1
                width = await browser.run(
                    page.evaluate, "() => document.documentElement.scrollWidth"
                )
                assert width <= 375
            finally:
                await browser.run(page.context.close)
                nursery.cancel_scope.cancel()
    assert errors == [], "the page raised"
