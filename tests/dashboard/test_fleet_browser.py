"""The fleet's page in a real browser (Debian's headless Chromium): every source's roots.

Two hubs mirrored into a real redis-server and served by ``serve_fleet``; the page at ``/``
shows one section per source with that source's roots, follows a change live, and gains a
section when a third source appears. One bounded test.
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

# Each source's section, and the roots its frame (the single hub's page) shows.
FLEET_STATE = """() => [...document.querySelectorAll("section[data-source]")].map((section) => {
  const page = section.querySelector("iframe").contentDocument;
  const connection = page && page.querySelector('[data-testid="connection"]');
  return {
    source: section.dataset.source,
    availability: section.dataset.availability,
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
                state = await until("(_, s) => s.length === 3 && s[2].roots.length === 1", None)
                assert state[2]["source"] == "sched-c"
                assert state[2]["roots"] == [["late", "working"]]
            finally:
                await browser.run(page.context.close)
                nursery.cancel_scope.cancel()
    assert errors == [], "the page raised"
    outside = [link for link in requests if not link.startswith(url.rstrip("/") + "/")]
    assert outside == []
