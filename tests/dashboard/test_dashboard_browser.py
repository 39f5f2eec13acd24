"""The dashboard in a real browser (headless Chromium), against a real server and hub.

One browser for the module, a fresh page (and storage) per test, a ``fail_after`` around each
test and bounded waits in the browser. Each scenario of the dashboard issue is one test: the roots
of a live hub, a change within 1 s, a removal, the aggregate against ``aggregate()`` on a random
scenario, a stopped and restarted server, a new publisher, and a token.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from tests.support.browser import BROWSER_TIMEOUT_MS, Browser, Server
from tests.support.builders import stage_lifecycle
from workflow_hub import (
    Cursor,
    HeartbeatEvent,
    HookRunner,
    RootActivity,
    RootGraph,
    StageNode,
    ToolNode,
    WorkflowActivityHub,
    open_hub,
)
from workflow_hub.reporting import ActivityView, aggregate

# What the page shows, read from its data attributes in one call.
PAGE_STATE = """() => {
  const one = (id) => document.querySelector(`[data-testid="${id}"]`);
  return {
    connection: {...one("connection").dataset},
    aggregate: {...one("aggregate").dataset},
    message: one("aggregate-message").textContent,
    superseded: !one("superseded").hidden,
    prompt: !one("token-form").hidden,
    roots: [...document.querySelectorAll("[data-root-id]")].map((row) => ({
      id: row.getAttribute("data-root-id"),
      state: row.dataset.state,
      reason: row.dataset.reason,
      text: row.textContent,
    })),
    feed: [...document.querySelectorAll('[data-testid="feed"] li')].map((li) => li.textContent),
  };
}"""


def root(
    root_run_id: str,
    state: str = "working",
    reason: str = "executing",
    *,
    active: int = 1,
    blocks: int = 0,
    attention: bool = False,
    graph: RootGraph | None = None,
) -> RootActivity:
    return RootActivity(
        root_run_id=root_run_id,
        owner_session_id="session",
        state=state,
        reason=reason,
        active_execution_count=active,
        actionable_block_count=blocks,
        needs_attention=attention,
        graph=graph,
    )


def build_graph() -> RootGraph:
    return RootGraph(
        nodes=(
            StageNode(
                id="build:compile",
                run_id="build",
                node_id="compile",
                name="compile",
                parent_ids=(),
                depth=0,
                status="completed",
            ),
            StageNode(
                id="build:test",
                run_id="build",
                node_id="test",
                name="test",
                parent_ids=("build:compile",),
                depth=0,
                status="running",
            ),
            ToolNode(
                id="build:shard-1",
                run_id="build",
                node_id="shard-1",
                name="pytest shard 1",
                parent_ids=("build:test",),
                depth=1,
                status="failed",
                ordinal=0,
            ),
        )
    )


def text(cursor: Cursor | None) -> str:
    assert cursor is not None
    return f"{cursor.epoch}:{cursor.revision}"


class Tab:
    """A page of the dashboard, with the few waits these tests need."""

    def __init__(self, browser: Browser, page: Any) -> None:
        self.browser = browser
        self.page = page

    async def goto(self, url: str) -> None:
        await self.browser.run(self.page.goto, url)

    async def state(self) -> dict[str, Any]:
        state: dict[str, Any] = await self.browser.run(self.page.evaluate, PAGE_STATE)
        return state

    async def until(
        self, condition: str, arg: Any = None, within_ms: int = BROWSER_TIMEOUT_MS
    ) -> None:
        """Wait until the JavaScript ``condition(arg, state)`` holds; ``state`` as PAGE_STATE."""
        expression = f"(arg) => ({condition})(arg, ({PAGE_STATE})())"
        await self.browser.run(
            functools.partial(self.page.wait_for_function, expression, arg=arg, timeout=within_ms)
        )

    async def at_cursor(self, cursor: Cursor | None) -> dict[str, Any]:
        await self.until("(cursor, s) => s.connection.cursor === cursor", text(cursor))
        return await self.state()


@asynccontextmanager
async def dashboard(
    browser: Browser, hub: WorkflowActivityHub, **options: Any
) -> AsyncIterator[tuple[Tab, Server]]:
    """A server for ``hub`` and a fresh page on it (not yet loaded)."""
    async with trio.open_nursery() as nursery:
        server = Server(nursery, hub, **options)
        await server.start()
        page, errors, requests = await browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            yield Tab(browser, page), server
        finally:
            await browser.run(page.context.close)
            nursery.cancel_scope.cancel()
        assert errors == [], "the page raised"
        # Offline by construction: nothing but the hub's own server, no CDN, no fonts.
        outside = [url for url in requests if not url.startswith(server.url.rstrip("/") + "/")]
        assert outside == []


def page_rank(root: RootActivity) -> int:
    """The page's groups (docs/dashboard.md): blocked or flagged, working, idle."""
    if root.state == "blocked" or root.needs_attention:
        return 0
    return 1 if root.state == "working" else 2


def expected_aggregate(view: ActivityView) -> dict[str, str]:
    status = aggregate(view)
    return {
        "status": str(status.state),
        "reason": "" if status.reason is None else str(status.reason),
        "attention": "true" if status.attention else "false",
        "message": status.message,
    }


def shown_aggregate(state: dict[str, Any]) -> dict[str, str]:
    data = state["aggregate"]
    return {
        "status": data["status"],
        "reason": data["reason"],
        "attention": data["attention"],
        "message": state["message"],
    }


async def test_the_page_shows_a_live_hub(browser: Browser) -> None:
    """The roots of a live hub, attention first (docs/dashboard.md), a change within 1 s, a
    removal, hook events."""
    with trio.fail_after(30):
        async with open_hub() as hub:
            runner = HookRunner(hub)
            publisher = hub.register_publisher()
            publisher.publish_snapshot(
                "ready",
                roots=[
                    root("build", graph=build_graph()),
                    root("deploy", "blocked", "awaiting_input", active=0, blocks=1, attention=True),
                    root("docs", "idle", "paused", active=0),
                ],
            )
            async with dashboard(browser, hub, runner=runner) as (tab, server):
                runner.bind()
                await tab.goto(server.url)
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert [(r["id"], r["state"], r["reason"]) for r in state["roots"]] == [
                    ("deploy", "blocked", "awaiting_input"),
                    ("build", "working", "executing"),
                    ("docs", "idle", "paused"),
                ]
                assert state["connection"]["state"] == "live"
                assert state["connection"]["epoch"] == hub.snapshot_frame().cursor.epoch
                assert shown_aggregate(state) == {
                    "status": "working",
                    "reason": "executing",
                    "attention": "true",
                    "message": "1 working · 1 waiting for input",
                }
                # Every badge says its state in words, not only in colour.
                assert "working" in state["roots"][1]["text"]
                assert "needs attention" in state["roots"][0]["text"]

                # The keyboard: the first Tab reaches the skip link, which leads to the roots
                # (the first one, in the list itself).
                await browser.run(tab.page.keyboard.press, "Tab")
                await browser.run(tab.page.keyboard.press, "Enter")
                focused = await browser.run(
                    tab.page.evaluate,
                    "() => [document.activeElement.tagName,"
                    " document.activeElement.getAttribute('data-root-id')]",
                )
                assert focused == ["LI", state["roots"][0]["id"]]
                # The stages expand from the keyboard.
                summary = tab.page.locator('[data-root-id="build"] summary')
                await browser.run(summary.focus)
                await browser.run(summary.press, "Enter")
                shard = tab.page.locator('[data-node-id="build:shard-1"]')
                await browser.run(functools.partial(shard.wait_for, state="visible"))
                assert await browser.run(shard.get_attribute, "data-status") == "failed"
                assert "failed" in await browser.run(shard.inner_text)

                published_at = trio.current_time()
                publisher.publish_changed(root("deploy", "working", "retrying"))
                await tab.until(
                    "(_, s) => s.roots[1] && s.roots[1].reason === 'retrying'", within_ms=1000
                )
                assert trio.current_time() - published_at < 1.0
                publisher.publish_removed("docs")
                await tab.until("(_, s) => s.roots.length === 2", within_ms=1000)
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert [r["id"] for r in state["roots"]] == ["build", "deploy"]
                assert state["message"] == "2 working"

                publisher.publish_lifecycle(stage_lifecycle("completed", event_id="evt-9"))
                await tab.until("(_, s) => s.feed.length >= 2")
                feed = (await tab.state())["feed"]
                # Newest first: the completion hook follows the lifecycle event it came from.
                assert "stage completed run-1:plan (live)" in feed[0]
                assert "stage run-1:plan: completed" in feed[1]
                # Each hook event reads with its clock time first (issue 39).
                assert all(re.match(r"\d\d:\d\d:\d\d ", line) for line in feed[:2]), feed
                # The expanded stages stay expanded across the redraws of other roots.
                assert await browser.run(shard.is_visible)


async def test_the_aggregate_follows_aggregate_on_a_random_scenario(browser: Browser) -> None:
    """60 random frames (changes, removals, snapshots, a source that recovers): after every few,
    the page's aggregate and roots equal those of an ActivityView fed the same frames."""
    rng = random.Random(1616)
    states = [
        ("working", "executing"),
        ("working", "retrying"),
        ("working", "stopping"),
        ("working", "automatic_continuation"),
        ("blocked", "awaiting_input"),
        ("blocked", "manual_intervention"),
        ("idle", "paused"),
        ("idle", "quiescent"),
    ]
    ids = [f"root-{n}" for n in range(8)]

    def random_root() -> RootActivity:
        state, reason = rng.choice(states)
        return root(
            rng.choice(ids),
            state,
            reason,
            active=rng.randrange(3),
            blocks=rng.randrange(2),
            attention=rng.random() < 0.25,
        )

    with trio.fail_after(60):
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots=[random_root() for _ in range(3)])
            view = ActivityView()
            hub.observe(view.apply)
            async with dashboard(browser, hub) as (tab, server):
                await tab.goto(server.url)
                frames = 1
                seen_states = set()
                while frames < 60:
                    for _ in range(6):
                        dice = rng.random()
                        if dice < 0.6:
                            publisher.publish_changed(random_root())
                        elif dice < 0.85:
                            publisher.publish_removed(rng.choice(ids))
                        elif dice < 0.93:
                            publisher.publish_snapshot(
                                "ready", roots=[random_root() for _ in range(rng.randrange(4))]
                            )
                        else:
                            publisher.publish_snapshot(rng.choice(["recovering", "unavailable"]))
                        frames += 1
                    state = await tab.at_cursor(hub.snapshot_frame().cursor)
                    await trio.testing.wait_all_tasks_blocked()
                    assert view.cursor == hub.snapshot_frame().cursor
                    assert shown_aggregate(state) == expected_aggregate(view)
                    # In the page's order: attention first, then working, then idle (stable).
                    assert [(r["id"], r["state"], r["reason"]) for r in state["roots"]] == [
                        (r.root_run_id, str(r.state), str(r.reason))
                        for r in sorted(view.roots, key=page_rank)
                    ]
                    seen_states.add(state["aggregate"]["status"])
                # The scenario went through the interesting rows of the decision table.
                assert {"working", "unknown"} <= seen_states


async def test_a_stopped_server_shows_reconnecting_then_resumes(browser: Browser) -> None:
    """Stopping the server shows `reconnecting`; the same hub served again on the same port is
    resumed from the page's cursor, without a snapshot."""
    with trio.fail_after(40):
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots=[root("a"), root("b", "idle", "quiescent")])
            async with dashboard(browser, hub) as (tab, server):
                await tab.goto(server.url)
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert state["connection"]["snapshots"] == "1"

                await server.stop()
                await tab.until("(_, s) => s.connection.state === 'reconnecting'")
                stale = tab.page.locator('[data-testid="stale"]')
                assert "may have changed" in await browser.run(stale.inner_text)
                publisher.publish_changed(root("b", "working", "executing"))
                await server.start()
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert state["connection"]["state"] == "live"
                assert state["connection"]["snapshots"] == "1", "resumed without a snapshot"
                assert not await browser.run(stale.is_visible)
                assert [r["state"] for r in state["roots"]] == ["working", "working"]


async def test_a_hub_gone_for_longer_than_gone_after_says_so(browser: Browser) -> None:
    """Issue 24: a server that stays stopped is not `reconnecting` forever. After `gone_after`
    seconds (10 by default; 1 here, from the address) the page says the hub went away, keeps
    its last state, and when a hub answers again it is live again."""
    with trio.fail_after(60):
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots=[root("a"), root("b", "idle", "quiescent")])
            async with dashboard(browser, hub) as (tab, server):
                await tab.goto(server.url.rstrip("/") + "/?gone_after=1")
                cursor = hub.snapshot_frame().cursor
                await tab.at_cursor(cursor)

                await server.stop()
                await tab.until("(_, s) => s.connection.state === 'reconnecting'")
                await tab.until("(_, s) => s.connection.state === 'gone'", within_ms=10_000)
                state = await tab.state()
                assert state["connection"]["cursor"] == text(cursor), "its last state is kept"
                assert [r["id"] for r in state["roots"]] == ["a", "b"]
                stale = tab.page.locator('[data-testid="stale"]')
                said = await browser.run(stale.inner_text)
                assert said.startswith("The hub went away; this is its last state"), said
                label = tab.page.locator('[data-role="connection-label"]')
                assert "hub gone" in await browser.run(label.inner_text)

                # It keeps trying (slowly, every 10 s): a hub served again is shown live.
                publisher.publish_changed(root("b", "working", "executing"))
                await server.start()
                state_js = "(_, s) => s.connection.state === 'live'"
                await tab.until(state_js, within_ms=25_000)
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert not await browser.run(stale.is_visible)
                assert [r["state"] for r in state["roots"]] == ["working", "working"]


async def test_a_hub_whose_last_snapshot_was_unavailable_is_gone_once_its_server_is(
    browser: Browser,
) -> None:
    """Issue 24: when the last snapshot said `unavailable` (the scheduler ended) and then the
    server stops answering, the page says the hub went away at once, without waiting the 10 s of
    `gone_after` (the default here)."""
    with trio.fail_after(40):
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots=[root("a")])
            publisher.publish_snapshot("unavailable")
            async with dashboard(browser, hub) as (tab, server):
                await tab.goto(server.url)
                await tab.at_cursor(hub.snapshot_frame().cursor)
                await server.stop()
                # Well within the default 10 s: the failed probe is enough.
                await tab.until("(_, s) => s.connection.state === 'gone'", within_ms=7_000)
                stale = tab.page.locator('[data-testid="stale"]')
                said = await browser.run(stale.inner_text)
                assert said.startswith("The hub went away; this is its last state"), said


async def test_an_unknown_source_says_why_and_the_ready_one_does_not(browser: Browser) -> None:
    """C3 (issue 38): a recovering source's ``detail`` is on the page as ``aggregate()`` says
    it ("activity unknown: broker unreachable: …"), and beside the empty list of roots; the
    ready snapshot after it says nothing of it."""
    why = "broker unreachable: ConnectionError: [Errno 111] Connection refused"
    with trio.fail_after(40):
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("recovering", detail=why)
            async with dashboard(browser, hub) as (tab, server):
                await tab.goto(server.url)
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert state["aggregate"]["status"] == "unknown"
                assert state["message"] == aggregate(hub.snapshot_frame()).message
                assert state["message"] == f"activity unknown: {why}"
                empty = tab.page.locator('[data-testid="roots-empty"]')
                said = await browser.run(empty.inner_text)
                assert why in said, said
                publisher.publish_snapshot("ready", roots=[root("a")])
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert state["aggregate"]["status"] == "working"
                assert why not in state["message"]


async def test_a_server_restarted_with_another_hub_resyncs(browser: Browser) -> None:
    """A scheduler restarted in a new process: its hub cannot resume the page's cursor, so the
    page starts again from a snapshot, reads `resynced`, and shows only the new hub's roots."""
    with trio.fail_after(40):
        async with open_hub() as first, open_hub() as second:
            first.register_publisher().publish_snapshot("ready", roots=[root("before")])
            second.register_publisher().publish_snapshot("ready", roots=[root("after")])
            async with dashboard(browser, first) as (tab, server):
                await tab.goto(server.url)
                await tab.at_cursor(first.snapshot_frame().cursor)
                await server.stop()
                await tab.until("(_, s) => s.connection.state === 'reconnecting'")
                async with trio.open_nursery() as nursery:
                    again = Server(nursery, second)
                    again.port = server.port
                    await again.start()
                    state = await tab.at_cursor(second.snapshot_frame().cursor)
                    assert state["connection"]["state"] == "resynced"
                    assert state["connection"]["snapshots"] == "2"
                    assert [r["id"] for r in state["roots"]] == ["after"]
                    await again.stop()


async def test_a_new_publisher_supersedes_the_view(browser: Browser) -> None:
    """A new epoch: the page shows the old view superseded (no roots, status unknown), then the
    new publisher's state."""
    with trio.fail_after(30):
        async with open_hub() as hub:
            old = hub.register_publisher()
            old.publish_snapshot("ready", roots=[root("old-root")])
            async with dashboard(browser, hub) as (tab, server):
                await tab.goto(server.url)
                await tab.at_cursor(hub.snapshot_frame().cursor)

                new = hub.register_publisher()
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert state["superseded"]
                assert state["roots"] == []
                assert state["aggregate"]["status"] == "unknown"

                new.publish_snapshot("ready", roots=[root("new-root", "idle", "quiescent")])
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert not state["superseded"]
                assert [r["id"] for r in state["roots"]] == ["new-root"]
                assert state["aggregate"]["status"] == "idle"


async def test_a_wrong_token_shows_the_prompt_never_data(browser: Browser) -> None:
    """Without the token, or with a wrong one, the page asks for it and shows nothing of the hub;
    the right one (typed, or given once in the address) shows the hub and never stays in the
    address bar."""
    with trio.fail_after(30):
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots=[root("secret-root")])
            runner = HookRunner(hub)
            async with dashboard(browser, hub, token="s3cret", runner=runner) as (tab, server):
                runner.bind()
                for address in (server.url, server.url + "?token=wrong"):
                    await tab.goto(address)
                    await tab.until("(_, s) => s.prompt")
                    # Hook events published now reach every stream the server let in.
                    publisher.publish_heartbeat(
                        HeartbeatEvent(
                            run_id="secret-root",
                            root_run_id="secret-root",
                            owner_session_id="session",
                            scheduled_at=1_700_000_000_000,
                            interval_minutes=5,
                        )
                    )
                    publisher.publish_changed(root("secret-root", "idle", "quiescent"))
                    await trio.testing.wait_all_tasks_blocked()
                    state = await tab.state()
                    assert state["roots"] == []
                    assert state["feed"] == []
                    assert state["connection"]["cursor"] == ""
                    assert "secret-root" not in await browser.run(tab.page.content)
                    assert "token=" not in tab.page.url
                    # The connection says so in words; the raw state is its data-state.
                    assert state["connection"]["state"] == "needs-token"
                    label = tab.page.locator('[data-role="connection-label"]')
                    assert (await browser.run(label.inner_text)).endswith("needs a token")

                await browser.run(tab.page.fill, "#token-input", "s3cret")
                await browser.run(tab.page.press, "#token-input", "Enter")
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert [r["id"] for r in state["roots"]] == ["secret-root"]
                assert not state["prompt"]

                await tab.goto(server.url + "?token=s3cret")
                state = await tab.at_cursor(hub.snapshot_frame().cursor)
                assert [r["id"] for r in state["roots"]] == ["secret-root"]
                assert "token=" not in tab.page.url
                stored = await browser.run(
                    tab.page.evaluate, "() => sessionStorage.getItem('workflow-hub.token')"
                )
                assert stored == "s3cret"


async def test_the_page_fits_a_phone_and_follows_the_colour_scheme(browser: Browser) -> None:
    """At 375 px nothing scrolls sideways; a dark system preference gives a dark page."""
    with trio.fail_after(30):
        async with open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot(
                "ready",
                roots=[root("a-rather-long-root-identifier-for-a-phone", graph=build_graph())],
            )
            async with dashboard(browser, hub) as (tab, server):
                await browser.run(tab.page.set_viewport_size, {"width": 375, "height": 740})
                await tab.goto(server.url)
                await tab.at_cursor(hub.snapshot_frame().cursor)
                width = await browser.run(
                    tab.page.evaluate, "() => document.documentElement.scrollWidth"
                )
                assert width <= 375

                backgrounds = []
                for scheme in ("light", "dark"):
                    await browser.run(
                        functools.partial(tab.page.emulate_media, color_scheme=scheme)
                    )
                    backgrounds.append(
                        await browser.run(
                            tab.page.evaluate,
                            "() => getComputedStyle(document.body).backgroundColor",
                        )
                    )
                light, dark = backgrounds
                assert light != dark
                assert sum(map(int, dark[4:-1].split(","))) < sum(map(int, light[4:-1].split(",")))
