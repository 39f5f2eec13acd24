"""The fleet's page in a real browser (Debian's headless Chromium): one stream for the fleet.

Hubs mirrored into a real redis-server and served by ``serve_fleet``. The page at ``/`` shows a
status line for the fleet and one row per source (name order, filterable); a source's name opens
its roots in place (its single-hub page under its row, fed by the fleet page). Whatever the
number of sources and of sources opened, the page holds one EventSource for the fleet,
``/v1/fleet`` (issue 25: one stream per source made browsers stop updating past six), and, once
a source is opened, one for the hook events of every source (``/v1/events``, issue 39: an opened
source shows its hook events). When the server goes
away every source shows unknown (SPEC N4), then the page says the server is gone.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import coredis
import trio
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.support.browser import BROWSER_TIMEOUT_MS, Browser
from tests.support.builders import root
from tests.support.fleet import mirrored, stopped_source
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

# Counts the EventSource connections the page and its frames open, on the top window (wrapped
# in every frame before any script of it runs): how many were made, how many are open now, and
# the most that were ever open at once.
COUNT_EVENT_SOURCES = """(() => {
  const Original = window.EventSource;
  const top = window.top;
  if (top.__eventSources === undefined) {
    top.__eventSources = 0; top.__openEventSources = 0; top.__mostEventSources = 0;
  }
  window.EventSource = function (...args) {
    const source = new Original(...args);
    top.__eventSources += 1;
    top.__openEventSources += 1;
    top.__mostEventSources = Math.max(top.__mostEventSources, top.__openEventSources);
    const close = source.close.bind(source);
    let closed = false;
    source.close = () => { if (!closed) { closed = true; top.__openEventSources -= 1; } close(); };
    return source;
  };
  window.EventSource.prototype = Original.prototype;
  window.EventSource.CLOSED = Original.CLOSED;
  window.EventSource.OPEN = Original.OPEN;
  window.EventSource.CONNECTING = Original.CONNECTING;
})()"""

# Each opened source's frame: how far its document got and what it loaded (for a failure's
# message).
FRAMES = """() => [...document.querySelectorAll("tr.details iframe")].map((frame) => {
  const page = frame.contentDocument;
  const win = frame.contentWindow;
  return {
    source: frame.dataset.source,
    url: page ? page.URL : null,
    readyState: page ? page.readyState : null,
    connection: page && page.body ? page.body.dataset.connection : null,
    loaded: win ? win.performance.getEntriesByType("resource").map((e) => e.name) : null,
  };
})"""

STREAMS = "() => [window.__openEventSources, window.__mostEventSources]"


class FleetPage:
    def __init__(self, browser: Browser, page: Any, errors: list[str]) -> None:
        self.browser = browser
        self.page = page
        self.errors = errors

    async def until(self, condition: str, arg: Any = None) -> list[dict[str, Any]]:
        expression = f"(arg) => ({condition})(arg, ({FLEET_STATE})())"
        try:
            await self.browser.run(
                functools.partial(
                    self.page.wait_for_function,
                    expression,
                    arg=arg,
                    timeout=3 * BROWSER_TIMEOUT_MS,
                )
            )
        except PlaywrightTimeout as error:
            # What the page showed when the wait gave up, and how many streams it had open.
            shown = await self.state()
            streams = await self.streams()
            frames = await self.browser.run(self.page.evaluate, FRAMES)
            raise AssertionError(
                f"never true: {condition}\nthe page shows {shown}\nstreams {streams}"
                f"\nframes {frames}\nerrors {self.errors}"
            ) from error
        return await self.state()

    async def state(self) -> list[dict[str, Any]]:
        state: list[dict[str, Any]] = await self.browser.run(self.page.evaluate, FLEET_STATE)
        return state

    async def streams(self) -> list[int]:
        counts: list[int] = await self.browser.run(self.page.evaluate, STREAMS)
        return counts

    async def status_is(self, text: str) -> None:
        """The status line reads ``text`` (drawn at most every 50 ms after a change)."""
        await self.browser.run(
            functools.partial(
                self.page.wait_for_function,
                "(want) => document.querySelector('[data-testid=\"fleet-status\"]')"
                ".textContent === want",
                arg=text,
                timeout=BROWSER_TIMEOUT_MS,
            )
        )

    async def status(self) -> str:
        text: str = await self.browser.run(self.page.text_content, '[data-testid="fleet-status"]')
        return text


async def test_the_fleet_page_shows_every_sources_roots_over_one_stream(
    browser: Browser, redis_server: RedisServer
) -> None:
    prefix = "fleet-page"
    with trio.fail_after(60):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            server_scope = trio.CancelScope()

            async def serve(*, task_status: trio.TaskStatus[str]) -> None:
                with server_scope:
                    await serve_fleet(redis, prefix=prefix, port=0, task_status=task_status)

            url: str = await nursery.start(serve)
            a = (await mirrored(nursery, redis, prefix, "sched-a")).register_publisher()
            b = (await mirrored(nursery, redis, prefix, "sched-b")).register_publisher()
            a.publish_snapshot(
                "ready", [root("build"), root("deploy", state="idle", reason="paused", active=0)]
            )
            b.publish_snapshot(
                "ready",
                [root("nightly", state="blocked", reason="awaiting_input", active=0, blocks=1)],
            )
            page, errors, requests = await browser.new_page(viewport={"width": 1280, "height": 900})
            fleet = FleetPage(browser, page, errors)
            try:
                await browser.run(page.add_init_script, COUNT_EVENT_SOURCES)
                await browser.run(page.goto, url + "/?gone_after=2")
                await fleet.until(
                    "(_, s) => s.length === 2 && s.every((x) => x.state !== 'unknown')"
                )
                await fleet.status_is("fleet working: 2 sources (1 working, 1 blocked)")
                # Two sources opened one right after the other (the second replaces the stream
                # the first one's opening made). The second opening is dispatched to its button:
                # a pointer aimed at it can land in the first source's frame, which grows to its
                # content under the pointer (seen under load: no second frame, the click lost).
                await browser.run(page.click, 'tr[data-source="sched-a"] button.open')
                await browser.run(
                    page.dispatch_event, 'tr[data-source="sched-b"] button.open', "click"
                )
                shown = {
                    "sched-a": [["build", "working"], ["deploy", "idle"]],
                    "sched-b": [["nightly", "blocked"]],
                }
                state = await fleet.until(
                    "(want, s) => s.length === 2 && s.every("
                    "(x) => JSON.stringify(x.roots) === JSON.stringify(want[x.source]))",
                    shown,
                )
                # (sched-b waits for input: it comes first, issue 39)
                assert sorted((s["source"], s["availability"], s["connection"]) for s in state) == [
                    ("sched-a", "ready", "live"),
                    ("sched-b", "ready", "live"),
                ]
                assert await fleet.streams() == [2, 2], (
                    "the fleet and the hooks, two sources opened"
                )
                # The filter hides the rows that do not match.
                await browser.run(page.fill, '[data-testid="filter"]', "blocked")
                visible = await browser.run(
                    page.evaluate,
                    "() => [...document.querySelectorAll('tr[data-source]')]"
                    ".filter((r) => !r.hidden).map((r) => r.dataset.source)",
                )
                assert visible == ["sched-b"]
                await browser.run(page.fill, '[data-testid="filter"]', "")
                # Live: a change of one source shows in its section only, and its status in
                # the table.
                a.publish_removed("deploy")
                b.publish_changed(root("nightly", state="idle", reason="quiescent", active=0))
                shown = {"sched-a": [["build", "working"]], "sched-b": [["nightly", "idle"]]}
                await fleet.until(
                    "(want, s) => s[1].state === 'idle' && s.every("
                    "(x) => JSON.stringify(x.roots) === JSON.stringify(want[x.source]))",
                    shown,
                )
                await fleet.status_is("fleet working: 2 sources (1 working, 1 idle)")
                # A source that appears gets a row of its own.
                c = (await mirrored(nursery, redis, prefix, "sched-c")).register_publisher()
                c.publish_snapshot("ready", [root("late")])
                await fleet.until("(_, s) => s.length === 3 && s[2].state === 'working'", None)
                await browser.run(page.click, 'tr[data-source="sched-c"] button.open')
                state = await fleet.until(
                    "(_, s) => s.length === 3 && s[2].roots.length === 1", None
                )
                assert state[2]["roots"] == [["late", "working"]]
                assert await fleet.streams() == [2, 2]
                # Closing a source's page leaves the one stream (re-selected).
                await browser.run(page.click, 'tr[data-source="sched-a"] button.open')
                c.publish_changed(root("later"))
                await fleet.until("(_, s) => s[2].roots.length === 2", None)
                assert await fleet.streams() == [2, 2]
                # The server goes away: every source unknown at once, then "gone".
                server_scope.cancel()
                await fleet.until(
                    "(_, s) => s.every((x) => x.state === 'unknown' && "
                    "(x.connection === '' || x.connection !== 'live'))",
                    None,
                )
                await browser.run(
                    functools.partial(
                        page.wait_for_function,
                        "() => document.querySelector('[data-testid=\"fleet-status\"]')"
                        ".dataset.state === 'gone'",
                        timeout=3 * BROWSER_TIMEOUT_MS,
                    )
                )
                status = await fleet.status()
                assert status.startswith("fleet unknown: 3 sources (3 unknown)"), status
                assert "the server went away" in status
            finally:
                await browser.run(page.context.close)
                nursery.cancel_scope.cancel()
    assert errors == [], "the page raised"
    outside = [link for link in requests if not link.startswith(url.rstrip("/") + "/")]
    assert outside == []


async def test_two_hundred_sources_over_one_stream_at_1280_and_375_px(
    browser: Browser, redis_server: RedisServer
) -> None:
    """200 sources: a row each (sorted), no horizontal scroll of the page at 375 px, one
    EventSource before and after a source is opened, a status change reaching the table and
    the opened source's roots shown."""
    prefix = "fleet-page-200"
    with trio.fail_after(300):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            url: str = await nursery.start(
                functools.partial(serve_fleet, redis, prefix=prefix, port=0)
            )
            names = [f"sched-{index:03d}" for index in range(200)]
            publishers = {}
            for name in reversed(names):
                hub = await mirrored(nursery, redis, prefix, name)
                publishers[name] = hub.register_publisher()
                publishers[name].publish_snapshot("ready", [root(f"{name}-run")])
            for width, opened, changed in [
                (1280, "sched-007", "sched-150"),
                (375, "sched-042", "sched-199"),
            ]:
                page, errors, _ = await browser.new_page(viewport={"width": width, "height": 740})
                fleet = FleetPage(browser, page, errors)
                try:
                    await browser.run(page.add_init_script, COUNT_EVENT_SOURCES)
                    await browser.run(page.goto, url)
                    state = await fleet.until(
                        "(_, s) => s.length === 200 && s.every((x) => x.state === 'working')"
                    )
                    assert [s["source"] for s in state] == names
                    scroll = await browser.run(
                        page.evaluate, "() => document.documentElement.scrollWidth"
                    )
                    assert scroll <= width
                    assert await fleet.streams() == [1, 1]
                    await browser.run(page.click, f'tr[data-source="{opened}"] button.open')
                    state = await fleet.until(
                        "(name, s) => s.find((x) => x.source === name).roots.length === 1",
                        opened,
                    )
                    row = next(s for s in state if s["source"] == opened)
                    assert row["roots"] == [[f"{opened}-run", "working"]]
                    # A status change of a source not opened reaches its row.
                    publishers[changed].publish_changed(
                        root(f"{changed}-run", state="blocked", reason="awaiting_input", blocks=1)
                    )
                    await fleet.until(
                        "(name, s) => s.find((x) => x.source === name).state === 'blocked'",
                        changed,
                    )
                    await fleet.status_is("fleet working: 200 sources (199 working, 1 blocked)")
                    # And of the opened one, its page.
                    publishers[opened].publish_changed(root(f"{opened}-more"))
                    await fleet.until(
                        "(name, s) => s.find((x) => x.source === name).roots.length === 2",
                        opened,
                    )
                    assert await fleet.streams() == [2, 2], "the fleet and the hooks, ever"
                    scroll = await browser.run(
                        page.evaluate, "() => document.documentElement.scrollWidth"
                    )
                    assert scroll <= width
                    # The table itself fits: no sideways scrolling to see a source's note.
                    table, frame = await browser.run(
                        page.evaluate,
                        "() => [document.querySelector('.fleet-wrap'), "
                        "document.querySelector('tr.details iframe')].map("
                        "(e) => [e.scrollWidth, e.getBoundingClientRect().right])",
                    )
                    assert table[0] <= width, table
                    assert frame[1] <= width, frame
                    publishers[changed].publish_changed(root(f"{changed}-run"))
                    publishers[opened].publish_removed(f"{opened}-more")
                finally:
                    await browser.run(page.context.close)
                assert errors == [], "the page raised"
            nursery.cancel_scope.cancel()


NOTES = """() => Object.fromEntries([...document.querySelectorAll("tr[data-source]")].map(
  (row) => [row.dataset.source, row.querySelector(".c-note").textContent]))"""


async def test_a_clean_shutdown_reads_declared_and_a_silent_stop_crashed(
    browser: Browser, redis_server: RedisServer
) -> None:
    """N5, issue 36: the page's note for a source that declared itself unavailable and stopped is
    "declared unavailable (stopped at HH:MM:SS)" (never "crashed?"); for one that stopped without
    a word, "crashed? (no refresh since HH:MM:SS)": the words of ``watch`` (fleet_liveness.js)."""
    prefix = "fleet-page-liveness"
    with trio.fail_after(60):
        async with coredis.Redis.from_url(redis_server.url) as redis:
            await stopped_source(redis, prefix, "clean", declare=True)
            await stopped_source(redis, prefix, "killed", declare=False)
            async with trio.open_nursery() as nursery:
                url: str = await nursery.start(
                    functools.partial(serve_fleet, redis, prefix=prefix, port=0, stale_after=0.5)
                )
                page, errors, _ = await browser.new_page(viewport={"width": 1280, "height": 900})
                try:
                    await browser.run(page.goto, url + "/")
                    await browser.run(
                        functools.partial(
                            page.wait_for_function,
                            f"() => {{ const n = ({NOTES})(); return n.clean && n.killed"
                            " && n.clean.includes('stopped at') && n.killed.includes('crashed'); }",
                            timeout=3 * BROWSER_TIMEOUT_MS,
                        )
                    )
                    notes = await browser.run(page.evaluate, NOTES)
                finally:
                    await browser.run(page.context.close)
                nursery.cancel_scope.cancel()
    assert re.fullmatch(r"declared unavailable \(stopped at \d\d:\d\d:\d\d\)", notes["clean"])
    assert re.fullmatch(r"crashed\? \(no refresh since \d\d:\d\d:\d\d\)", notes["killed"])
    assert errors == [], "the page raised"


async def test_an_unknown_source_says_why_in_its_row(
    browser: Browser, redis_server: RedisServer
) -> None:
    """C3 (issue 38): a source that says why it is unknown (its snapshot's ``detail``, carried
    by its mirror and the fleet's follower into the source's summary) reads so in its row's
    note: "recovering: broker unreachable: …", its state unknown, never idle or working; the
    note goes when it is ready again."""
    prefix = "fleet-page-detail"
    why = "broker unreachable: ConnectionError: [Errno 111] Connection refused"
    with trio.fail_after(60):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            hub = await mirrored(nursery, redis, prefix, "celery")
            publisher = hub.register_publisher()
            publisher.publish_snapshot("recovering", detail=why)
            url: str = await nursery.start(
                functools.partial(serve_fleet, redis, prefix=prefix, port=0)
            )
            page, errors, _ = await browser.new_page(viewport={"width": 1280, "height": 900})
            try:
                await browser.run(page.goto, url + "/")
                fleet = FleetPage(browser, page, errors)
                rows = await fleet.until(
                    "(_, rows) => rows.length === 1 && rows[0].availability === 'recovering'"
                )
                assert rows[0]["state"] == "unknown"
                notes = await browser.run(page.evaluate, NOTES)
                assert notes["celery"] == f"recovering: {why}", notes
                publisher.publish_snapshot("ready", [root("r")])
                await fleet.until("(_, rows) => rows[0].availability === 'ready'")
                notes = await browser.run(page.evaluate, NOTES)
                assert why not in notes["celery"], notes
            finally:
                await browser.run(page.context.close)
            nursery.cancel_scope.cancel()
    assert errors == [], "the page raised"
