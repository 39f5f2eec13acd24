"""The fleet's page in a real browser (Debian's headless Chromium): a table of the sources.

Hubs mirrored into a real redis-server and served by ``serve_fleet``. The page at ``/`` shows a
status line for the fleet and one row per source (name order, filterable); a source's name opens
its roots in place (its single-hub page under its row), which follows a change live; a source
that appears gets a row. With 200 sources the page opens no event stream at all until a source
is opened (issue 25 item 4: one stream per source made browsers stop updating past six).
"""

from __future__ import annotations

import functools
from typing import Any

import coredis
import trio

from tests.support.browser import BROWSER_TIMEOUT_MS, Browser
from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.redis_server import RedisServer
from workflow_hub.server import serve_fleet

# Each source's row, and the roots its frame (the single hub's page, once opened) shows.
FLEET_STATE = """() => [...document.querySelectorAll("tr[data-source]")].map((row) => {
  const frame = document.querySelector(`tr[data-details="${row.dataset.source}"] iframe`);
  const page = frame && frame.contentDocument;
  const connection = page && page.querySelector('[data-testid="connection"]');
  return {
    source: row.dataset.source,
    state: row.dataset.state,
    availability: row.dataset.availability,
    connection: connection ? connection.dataset.state : "",
    roots: page ? [...page.querySelectorAll("[data-root-id]")].map(
      (row) => [row.getAttribute("data-root-id"), row.dataset.state]) : [],
  };
})"""


async def test_the_fleet_page_shows_every_sources_roots(
    browser: Browser, redis_server: RedisServer
) -> None:
    prefix = "fleet-page"
    with trio.fail_after(40):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            url: str = await nursery.start(
                functools.partial(serve_fleet, redis, prefix=prefix, port=0)
            )
            a = (await mirrored(nursery, redis, prefix, "sched-a")).register_publisher()
            b = (await mirrored(nursery, redis, prefix, "sched-b")).register_publisher()
            a.publish_snapshot(
                "ready", [root("build"), root("deploy", state="idle", reason="paused", active=0)]
            )
            b.publish_snapshot(
                "ready",
                [root("nightly", state="blocked", reason="awaiting_input", active=0, blocks=1)],
            )
            page, errors, requests = await browser.new_page()

            async def until(condition: str, arg: Any = None) -> list[dict[str, Any]]:
                expression = f"(arg) => ({condition})(arg, ({FLEET_STATE})())"
                await browser.run(
                    functools.partial(
                        page.wait_for_function, expression, arg=arg, timeout=BROWSER_TIMEOUT_MS
                    )
                )
                state: list[dict[str, Any]] = await browser.run(page.evaluate, FLEET_STATE)
                return state

            try:
                await browser.run(page.goto, url)
                await until("(_, s) => s.length === 2 && s.every((x) => x.state !== 'unknown')")
                status = await browser.run(page.text_content, '[data-testid="fleet-status"]')
                assert status == "fleet working: 2 sources (1 working, 1 blocked)"
                for name in ("sched-a", "sched-b"):
                    await browser.run(page.click, f'tr[data-source="{name}"] button.open')
                shown = {
                    "sched-a": [["build", "working"], ["deploy", "idle"]],
                    "sched-b": [["nightly", "blocked"]],
                }
                state = await until(
                    "(want, s) => s.length === 2 && s.every("
                    "(x) => JSON.stringify(x.roots) === JSON.stringify(want[x.source]))",
                    shown,
                )
                assert [(s["source"], s["availability"], s["connection"]) for s in state] == [
                    ("sched-a", "ready", "live"),
                    ("sched-b", "ready", "live"),
                ]
                # The filter hides the rows that do not match.
                await browser.run(page.fill, '[data-testid="filter"]', "blocked")
                visible = await browser.run(
                    page.evaluate,
                    "() => [...document.querySelectorAll('tr[data-source]')]"
                    ".filter((r) => !r.hidden).map((r) => r.dataset.source)",
                )
                assert visible == ["sched-b"]
                await browser.run(page.fill, '[data-testid="filter"]', "")
                # Live: a change of one source shows in its section only.
                a.publish_removed("deploy")
                shown["sched-a"] = [["build", "working"]]
                await until(
                    "(want, s) => s.every("
                    "(x) => JSON.stringify(x.roots) === JSON.stringify(want[x.source]))",
                    shown,
                )
                # A source that appears gets a section of its own.
                c = (await mirrored(nursery, redis, prefix, "sched-c")).register_publisher()
                c.publish_snapshot("ready", [root("late")])
                await until("(_, s) => s.length === 3 && s[2].state === 'working'", None)
                await browser.run(page.click, 'tr[data-source="sched-c"] button.open')
                state = await until("(_, s) => s.length === 3 && s[2].roots.length === 1", None)
                assert state[2]["source"] == "sched-c"
                assert state[2]["roots"] == [["late", "working"]]
            finally:
                await browser.run(page.context.close)
                nursery.cancel_scope.cancel()
    assert errors == [], "the page raised"
    outside = [link for link in requests if not link.startswith(url.rstrip("/") + "/")]
    assert outside == []


# Counts the EventSource connections the page and its frames open, on the top window (wrapped
# in every frame before any script of it runs).
COUNT_EVENT_SOURCES = """(() => {
  const Original = window.EventSource;
  const top = window.top;
  top.__eventSources = top.__eventSources || 0;
  window.EventSource = function (...args) { top.__eventSources += 1; return new Original(...args); };
  window.EventSource.prototype = Original.prototype;
})()"""


async def test_two_hundred_sources_fit_a_phone_and_open_no_stream_until_one_is_opened(
    browser: Browser, redis_server: RedisServer
) -> None:
    """Item 4: 200 sources on a 375 px wide page: a row each (sorted), no horizontal scroll of
    the page, and not one event stream until a source is opened (then exactly one)."""
    prefix = "fleet-page-200"
    with trio.fail_after(60):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            url: str = await nursery.start(
                functools.partial(serve_fleet, redis, prefix=prefix, port=0)
            )
            names = [f"sched-{index:03d}" for index in range(200)]
            for name in reversed(names):
                hub = await mirrored(nursery, redis, prefix, name)
                hub.register_publisher().publish_snapshot("ready", [root(f"{name}-run")])
            page, errors, _ = await browser.new_page(viewport={"width": 375, "height": 740})
            try:
                await browser.run(page.add_init_script, COUNT_EVENT_SOURCES)
                await browser.run(page.goto, url)
                await browser.run(
                    functools.partial(
                        page.wait_for_function,
                        "() => [...document.querySelectorAll('tr[data-source]')]"
                        ".filter((r) => r.dataset.state === 'working').length === 200",
                        timeout=BROWSER_TIMEOUT_MS,
                    )
                )
                shown = await browser.run(
                    page.evaluate,
                    "() => [...document.querySelectorAll('tr[data-source]')]"
                    ".map((r) => r.dataset.source)",
                )
                assert shown == names
                width = await browser.run(
                    page.evaluate, "() => document.documentElement.scrollWidth"
                )
                assert width <= 375
                assert await browser.run(page.evaluate, "() => window.__eventSources") == 0
                await browser.run(page.click, 'tr[data-source="sched-007"] button.open')
                await browser.run(
                    functools.partial(
                        page.wait_for_function,
                        "() => window.__eventSources === 1",
                        # The frame loads the whole single-hub page first: slow on a busy machine.
                        timeout=3 * BROWSER_TIMEOUT_MS,
                    )
                )
            finally:
                await browser.run(page.context.close)
                nursery.cancel_scope.cancel()
    assert errors == [], "the page raised"
