"""The fleet's page as on-call reads it (issue 39): 50 sources, 3 crashed, 2 needing a person.

Fifty schedulers in this process, each a hub mirrored into a real redis-server (no process per
source), served by ``serve_fleet`` and read by Debian's chromium at 1280 and 375 px in one browser
session. Three mirrors are cancelled without a goodbye (crashed: their refresh stops), one source
said goodbye before it stopped (declared unavailable), one root failed at a stage with an error,
one waits for input. The page must lead with what needs a person
(the roots' reasons in the single hub's words, then the crashed sources by name), put those
sources first in the table with coloured states, open a source headed by its own name with its
hook events and clock times, say "crashed? (no refresh since HH:MM:SS)" on a dead source's page
(never "live"), and filter by labels across sources from a shareable link. axe-core finds no
serious violation. Every wait is on what the page shows; the one safety net is ``fail_after``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import attrs
import coredis
import trio

from tests.dashboard.test_dashboard_views import AXE_RUN, axe_source
from tests.support.browser import BROWSER_TIMEOUT_MS, Browser
from tests.support.builders import root_in, stage_node
from tests.support.fleet import stopped_source
from tests.support.redis_server import RedisServer
from workflow_hub import (
    FailureDetail,
    HookRunner,
    Labels,
    NodePrompt,
    RootActivity,
    RootGraph,
    WorkflowActivityPublisher,
    open_hub,
)
from workflow_hub.redis import mirror_hub
from workflow_hub.server import serve_fleet

NAMES = [f"sched-{index:02d}" for index in range(50)]
FAILED = "sched-17"  # a root failed at its deploy stage
ASKING = "sched-33"  # a root waits for an answer
CRASHED = ["sched-05", "sched-21", "sched-40"]  # their mirrors stop without a goodbye
DECLARED = "sched-44"  # said goodbye (declared itself unavailable), then stopped
TEAMS = ("payments", "search", "infra")
CLOCK = r"\d\d:\d\d:\d\d"


def _labels(index: int) -> Labels:
    return Labels({"team": TEAMS[index % 3], "env": "prod" if index % 2 == 0 else "staging"})


def _root(
    run: str, state: str, reason: str, index: int, *, needs_attention: bool = False, **extra: Any
) -> RootActivity:
    return attrs.evolve(
        root_in(run, state, reason, attention=needs_attention, labels=_labels(index)), **extra
    )


def roots_of(name: str) -> list[RootActivity]:
    index = NAMES.index(name)
    if name == FAILED:
        failed = stage_node(
            "release",
            "deploy",
            "failed",
            error=FailureDetail(message="health check timed out", type="TimeoutError"),
        )
        return [
            _root(
                "release",
                "idle",
                "quiescent",
                index,
                needs_attention=True,
                graph=RootGraph(nodes=(failed,)),
            )
        ]
    if name == ASKING:
        prompt = NodePrompt(
            id="p", kind="confirm", message="Ship it?", created_at=1_700_000_000_000
        )
        asking = stage_node("approve", "approve", "awaiting_input", pending_prompt=prompt)
        return [
            _root(
                "approve",
                "blocked",
                "awaiting_input",
                index,
                needs_attention=True,
                graph=RootGraph(nodes=(asking,)),
            )
        ]
    working = [_root(f"{name}-run", "working", "executing", index)]
    if index % 4 == 0:
        working.append(_root(f"{name}-report", "idle", "quiescent", index))
    return working


async def run_source(
    redis: coredis.Redis[bytes],
    prefix: str,
    name: str,
    *,
    task_status: trio.TaskStatus[tuple[WorkflowActivityPublisher, trio.CancelScope]],
) -> None:
    """One scheduler: a hub, its mirror (and a hook runner whose events the mirror copies), its
    roots published; a cancel of the returned scope stops it without a goodbye (crashed)."""
    with trio.CancelScope() as scope:
        async with open_hub() as hub, trio.open_nursery() as nursery:
            runner = HookRunner(hub)
            mirror = await nursery.start(
                functools.partial(
                    mirror_hub,
                    hub,
                    redis,
                    source=name,
                    prefix=prefix,
                    refresh_interval=0.25,
                    runner=runner,
                )
            )
            runner.bind()
            await mirror.wait_claimed()
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", roots_of(name))
            task_status.started((publisher, scope))
            await trio.sleep_forever()


# The page as a reader meets it: the headline's lines in order, and every row in order.
PAGE = """() => {
  const say = (node) => (node && !node.hidden ? node.textContent.replace(/\\s+/g, " ").trim() : null);
  const at = (id) => document.querySelector(`[data-testid="${id}"]`);
  return {
    attention: say(at("fleet-attention")),
    crashed: say(at("fleet-crashed")),
    status: say(at("fleet-status")),
    title: document.title,
    order: [...document.querySelectorAll("[data-testid='fleet-head'] p:not([hidden])")]
      .map((p) => p.dataset.testid),
    link: at("fleet-link").getAttribute("href"),
    scroll: document.documentElement.scrollWidth,
    rows: [...document.querySelectorAll("tr[data-source]")].map((row) => {
      const badge = row.querySelector(".c-state .badge");
      const box = row.getBoundingClientRect();
      return {
        source: row.dataset.source,
        hidden: row.hidden,
        rank: row.dataset.rank,
        state: row.dataset.state,
        badge: say(badge),
        badgeClass: badge ? badge.className : "",
        colour: badge ? getComputedStyle(badge).backgroundColor : "",
        note: say(row.querySelector(".c-note .why")),
        labels: [...row.querySelectorAll(".c-note .labels a")].map((a) => a.dataset.label),
        top: box.top,
        bottom: box.bottom,
      };
    }),
  };
}"""

# An opened source's page (its frame under its row).
OPENED = """(name) => {
  const frame = document.querySelector(`tr[data-details="${name}"] iframe`);
  const page = frame && frame.contentDocument;
  if (!page || !page.querySelector('[data-testid="connection"]')) return null;  // not loaded yet
  const say = (node) => (node && !node.hidden ? node.textContent.replace(/\\s+/g, " ").trim() : null);
  return {
    heading: say(page.querySelector(".top h1")),
    connection: page.querySelector('[data-testid="connection"]').dataset.state,
    label: say(page.querySelector('[data-role="connection-label"]')),
    stale: say(page.querySelector('[data-testid="stale"]')),
    failure: say(page.querySelector('[data-testid="failure"]')),
    roots: [...page.querySelectorAll("[data-root-id]")].map((r) => r.dataset.rootId),
    events: [...page.querySelectorAll('[data-testid="feed"] li')].map((li) => say(li)),
  };
}"""


class Tab:
    def __init__(self, browser: Browser, page: Any) -> None:
        self.browser = browser
        self.page = page

    async def call(self, function: Any, *args: Any, **options: Any) -> Any:
        return await self.browser.run(functools.partial(function, *args, **options))

    async def until(self, condition: str, arg: Any = None) -> dict[str, Any]:
        """Wait until ``condition(arg, page)`` holds; the page then."""
        await self.call(
            self.page.wait_for_function,
            f"(arg) => ({condition})(arg, ({PAGE})())",
            arg=arg,
            timeout=3 * BROWSER_TIMEOUT_MS,
        )
        shown: dict[str, Any] = await self.call(self.page.evaluate, PAGE)
        return shown

    async def opened(self, name: str, condition: str) -> dict[str, Any]:
        """Wait until ``condition(opened)`` holds in source ``name``'s frame; the frame then."""
        await self.call(
            self.page.wait_for_function,
            f"(name) => {{ const o = ({OPENED})(name); return o !== null && ({condition})(o); }}",
            arg=name,
            timeout=3 * BROWSER_TIMEOUT_MS,
        )
        shown: dict[str, Any] = await self.call(self.page.evaluate, OPENED, name)
        return shown

    async def axe(self, source: str) -> None:
        await self.call(self.page.add_script_tag, content=source)
        for scheme in ("light", "dark"):
            await self.call(self.page.emulate_media, color_scheme=scheme)
            violations = await self.call(self.page.evaluate, AXE_RUN)
            assert violations == [], scheme
        await self.call(self.page.emulate_media, color_scheme="light")


READY = (
    "(want, p) => p.rows.length === 50 && p.crashed !== null && p.attention !== null"
    " && p.rows.filter((r) => r.badge === '✕ crashed?').length === 3"
    " && p.rows.filter((r) => r.rank === '0').length === 2"
    " && p.rows.every((r) => (r.state === 'unknown') ==="
    " (r.badge === '✕ crashed?' || r.badge === '○ stopped'))"
    " && p.rows.some((r) => r.note && r.note.includes('stopped at'))"
)


async def test_fifty_sources_lead_with_what_needs_a_person(
    browser: Browser, redis_server: RedisServer
) -> None:
    prefix = "fleet-oncall"
    axe = axe_source()
    with trio.fail_after(150):
        async with (
            coredis.Redis.from_url(redis_server.url) as redis,
            trio.open_nursery() as nursery,
        ):
            sources: dict[str, tuple[WorkflowActivityPublisher, trio.CancelScope]] = {}
            await stopped_source(redis, prefix, DECLARED, declare=True)
            for name in NAMES:
                if name != DECLARED:
                    sources[name] = await nursery.start(run_source, redis, prefix, name)
            for name in CRASHED:
                sources[name][1].cancel()  # no goodbye: its refresh stops
            url: str = await nursery.start(
                functools.partial(serve_fleet, redis, prefix=prefix, port=0, stale_after=4)
            )
            page, errors, requests = await browser.new_page(viewport={"width": 1280, "height": 900})
            tab = Tab(browser, page)
            try:
                await tab.call(page.goto, url + "/")
                shown = await tab.until(READY)
                # What needs a person first: the roots' reasons, then the crashed sources.
                assert shown["attention"] == (
                    "⚠ 2 roots in 2 sources need attention: 1 waiting for input, 1 failed at deploy"
                )
                assert shown["crashed"] == (
                    "✕ 3 sources crashed: sched-05, sched-21, sched-40"
                    " · 1 source stopped (declared unavailable)"
                )
                assert shown["order"] == ["fleet-attention", "fleet-crashed", "fleet-status"]
                assert (
                    shown["status"]
                    == "fleet working: 50 sources (44 working, 1 blocked, 4 unknown, 1 idle)"
                )
                assert shown["title"].startswith("⚠ 5 · ")
                rows = shown["rows"]
                rest = [name for name in NAMES if name not in {FAILED, ASKING, DECLARED, *CRASHED}]
                assert [row["source"] for row in rows] == [
                    FAILED,
                    ASKING,
                    *CRASHED,
                    DECLARED,
                    *rest,
                ]
                by_name = {row["source"]: row for row in rows}
                failed, asking = by_name[FAILED], by_name[ASKING]
                assert failed["badge"] == "✗ failed"
                assert failed["note"] == ("failed at deploy: health check timed out (TimeoutError)")
                assert asking["badge"] == "■ blocked"
                assert asking["note"] == "waiting for input"
                for name in CRASHED:
                    assert re.fullmatch(
                        rf"crashed\? \(no refresh since {CLOCK}\)", by_name[name]["note"]
                    )
                assert by_name["sched-01"]["badge"] == "▶ working"
                # Whose it is: the labels of the roots that need a person. The frames of the
                # sources that need none are not followed (the table does not show their roots).
                assert failed["labels"] == ["env:staging", "team:infra"]
                assert by_name["sched-01"]["labels"] == []
                # Coloured, beside a symbol and a word: working, waiting and failing apart; a
                # crash in a failure's colours.
                colours = {row["badge"]: row["colour"] for row in rows}
                assert len({colours[b] for b in ("▶ working", "■ blocked", "✗ failed")}) == 3
                assert colours["✕ crashed?"] == colours["✗ failed"], colours
                # The first source that needs a person is on the first screen.
                assert rows[0]["bottom"] <= 900
                await tab.axe(axe)

                # The failed source opened: headed by its own name, its failure, its hook
                # events with their clock times.
                await tab.call(page.click, f'tr[data-source="{FAILED}"] button.open')
                opened = await tab.opened(FAILED, "(o) => o.roots.length === 1")
                assert opened["heading"] == FAILED
                assert opened["connection"] == "live"
                assert opened["failure"] == (
                    "✗ Failed at deploy: health check timed out (TimeoutError)"
                )
                await tab.call(
                    page.wait_for_selector, "[data-testid='fleet-feed-section'][data-stream='open']"
                )
                sources[FAILED][0].publish_changed(
                    _root("hotfix", "working", "executing", NAMES.index(FAILED))
                )
                opened = await tab.opened(FAILED, "(o) => o.events.length > 0")
                assert re.fullmatch(rf"{CLOCK} activity .*hotfix.*", opened["events"][0]), opened
                # A crashed source opened: it says since when, never "live".
                await tab.call(
                    page.dispatch_event, f'tr[data-source="{CRASHED[0]}"] button.open', "click"
                )
                dead = await tab.opened(CRASHED[0], "(o) => o.connection === 'stopped'")
                assert dead["heading"] == CRASHED[0]
                assert "live" not in dead["label"]
                assert re.fullmatch(
                    rf"Not live: crashed\? \(no refresh since {CLOCK}\)\.", dead["stale"]
                )
                # And one that said goodbye: since when it stopped.
                await tab.call(
                    page.dispatch_event, f'tr[data-source="{DECLARED}"] button.open', "click"
                )
                dead = await tab.opened(DECLARED, "(o) => o.connection === 'stopped'")
                assert dead["heading"] == DECLARED
                assert re.fullmatch(
                    rf"Not live: declared unavailable \(stopped at {CLOCK}\)\.", dead["stale"]
                )

                # Labels filter the sources; the link reproduces the view.
                await tab.call(page.fill, "#filter-labels", "team:payments, env:prod")
                payments = [name for index, name in enumerate(NAMES) if index % 6 == 0]
                shown = await tab.until(
                    "(want, p) => JSON.stringify(p.rows.filter((r) => !r.hidden)"
                    ".map((r) => r.source)) === JSON.stringify(want)",
                    payments,
                )
                assert shown["link"] == "/#label=team:payments&label=env:prod"
                assert {tuple(row["labels"]) for row in shown["rows"] if not row["hidden"]} == {
                    ("env:prod", "team:payments")
                }
            finally:
                await tab.call(page.context.close)

            # The link opened on a phone, in the same browser: the view, the headline first.
            phone, phone_errors, _ = await browser.new_page(viewport={"width": 375, "height": 740})
            tab = Tab(browser, phone)
            try:
                await tab.call(phone.goto, url + "/#attention=1")
                shown = await tab.until(
                    "(_, p) => p.rows.filter((r) => !r.hidden).length === 5"
                    " && p.rows.filter((r) => r.rank === '0').length === 2"
                )
                visible = [row for row in shown["rows"] if not row["hidden"]]
                assert [row["source"] for row in visible] == [FAILED, ASKING, *CRASHED]
                assert shown["scroll"] <= 375
                assert visible[0]["bottom"] <= 740, "the first source is on the first screen"
                assert shown["attention"] is not None
                assert shown["crashed"] is not None
                await tab.axe(axe)
            finally:
                await tab.call(phone.context.close)
            nursery.cancel_scope.cancel()
    assert errors == [], "the page raised"
    assert phone_errors == [], "the page raised on a phone"
    outside = [link for link in requests if not link.startswith(url.rstrip("/") + "/")]
    assert outside == []
