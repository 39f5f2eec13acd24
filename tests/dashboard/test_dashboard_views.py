"""The dashboard for a busy scheduler: attention first, filters, search, views in the address,
a bounded list at 20 000 roots, the keyboard and axe-core (issue 30).

The view rules (``static/views.js``) run under node against a Python statement of the documented
order (docs/dashboard.md); the page runs in Debian's chromium against a real server and hub, one
browser for the module and a fresh page per test. Timings are the benchmark's
(benchmarks/bench_dashboard.py), never asserted here.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.browser import BROWSER_TIMEOUT_MS, Browser, Server
from tests.support.builders import root_in, stage_node
from tests.support.dashboard import DASHBOARD, missing, require_program
from tests.support.processes import stop_group
from workflow_hub import (
    Cursor,
    FailureDetail,
    Labels,
    NodePrompt,
    Reason,
    RootActivity,
    RootGraph,
    RunPrompt,
    StageNode,
    State,
    WorkflowActivityHub,
    open_hub,
)
from workflow_hub.wire import to_wire

JS = Path(__file__).parents[1] / "js"
AXE = JS / "node_modules" / "axe-core" / "axe.min.js"
GROUP_RANK = {"attention": 0, "working": 1, "idle": 2}


# --- the rules, under node --------------------------------------------------------------------


class NodeViews:
    """One node process answering view requests (tests/js/views_driver.js)."""

    def __init__(self, node: str) -> None:
        self._process = subprocess.Popen(
            [node, str(JS / "views_driver.js"), str(DASHBOARD / "views.js")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            start_new_session=True,
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        assert line, "the node views driver exited"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.close()  # the driver ends at the end of its input
        try:
            self._process.wait(timeout=10)
        finally:
            stop_group(self._process)
        self._process.stdout.close()


@pytest.fixture(scope="module")
def node_views() -> Iterator[NodeViews]:
    views = NodeViews(require_program("node", "WORKFLOW_HUB_NODE"))
    yield views
    views.close()


def group_of(root: RootActivity) -> str:
    """The documented groups: blocked or flagged first, then working, then idle."""
    if root.state == "blocked" or root.needs_attention:
        return "attention"
    return "working" if root.state == "working" else "idle"


def expected_order(roots: Sequence[RootActivity], view: dict[str, Any]) -> list[str]:
    """What the page shows for a view: matching roots, groups in order, hub order within one."""
    needle = view.get("q", "").lower()

    def matches(root: RootActivity) -> bool:
        names = [root.root_run_id] + [
            node.name for node in (root.graph.nodes if root.graph else ())
        ]
        return (
            (not view.get("group") or group_of(root) == view["group"])
            and (not view.get("state") or root.state == view["state"])
            and (not view.get("reason") or root.reason == view["reason"])
            and (not view.get("attention") or group_of(root) == "attention")
            and all(
                root.labels is not None and root.labels.get(key) == value
                for key, _, value in (label.partition(":") for label in view.get("labels", []))
            )
            and (not needle or any(needle in name.lower() for name in names))
        )

    shown = [root for root in roots if matches(root)]
    return [root.root_run_id for root in sorted(shown, key=lambda r: GROUP_RANK[group_of(r)])]


# Ids and names from a small alphabet with both cases: the rules under test are the order and
# the filters, not Unicode case mapping (JavaScript's toLowerCase is the page's rule).
_names = st.text(alphabet="abcAB-é É", min_size=0, max_size=6)


def _graph(names: list[str]) -> RootGraph:
    return RootGraph(
        nodes=tuple(
            StageNode(
                id=f"run:{index}",
                run_id="run",
                node_id=str(index),
                name=name,
                parent_ids=(),
                depth=0,
                status="running",
            )
            for index, name in enumerate(names)
        )
    )


_labels = st.dictionaries(
    st.sampled_from(["team", "env"]), st.sampled_from(["infra", "data", "prod"]), max_size=2
)
_roots = st.builds(
    lambda root_id, state, reason, attention, names, labels: RootActivity(
        root_run_id=root_id,
        owner_session_id="session",
        state=state,
        reason=reason,
        active_execution_count=0,
        actionable_block_count=0,
        needs_attention=attention,
        graph=_graph(names) if names else None,
        labels=Labels(labels) if labels else None,
    ),
    _names,
    st.sampled_from(State),
    st.sampled_from(Reason),
    st.booleans(),
    st.lists(_names, max_size=2),
    _labels,
)
_views = st.fixed_dictionaries(
    {},
    optional={
        "group": st.sampled_from(["attention", "working", "idle"]),
        "state": st.sampled_from([str(s) for s in State]),
        "reason": st.sampled_from([str(r) for r in Reason]),
        "attention": st.booleans(),
        "labels": st.lists(
            st.sampled_from(["team:infra", "team:data", "env:prod", "env:a b/c:d"]),
            unique=True,
            max_size=2,
        ),
        "q": _names,
    },
)


@settings(max_examples=150, deadline=None)
@given(roots=st.lists(_roots, max_size=12, unique_by=lambda r: r.root_run_id), view=_views)
def test_views_order_attention_first_and_filter(
    node_views: NodeViews, roots: list[RootActivity], view: dict[str, Any]
) -> None:
    """Blocked or flagged roots first, then working, then idle, each group in hub order; every
    filter and the search (ids and stage names, any case) keep exactly the matching roots; the
    group counts are of all roots, whatever the view (O2: the page shows what the hub holds);
    labels filter too, all of a view's labels must be a root's (C3)."""
    full = {
        "group": "",
        "state": "",
        "reason": "",
        "attention": False,
        "labels": [],
        "q": "",
    } | view
    answer = node_views.ask({"roots": [to_wire(root) for root in roots], "view": full})
    assert answer["shown"] == expected_order(roots, view)
    groups = [group_of(root) for root in roots]
    assert answer["counts"] == {
        "all": len(roots),
        "attention": groups.count("attention"),
        "working": groups.count("working"),
        "idle": groups.count("idle"),
    }


@settings(max_examples=150, deadline=None)
@given(
    view=_views,
    q=st.text(max_size=30),
)
def test_a_view_survives_the_address(node_views: NodeViews, view: dict[str, Any], q: str) -> None:
    """Any view, with any search text (&, #, =, spaces, unicode), comes back from its fragment;
    the empty view is no fragment at all."""
    full = {"group": "", "state": "", "reason": "", "attention": False, "labels": []} | view
    full |= {"q": q}
    answer = node_views.ask({"format": full})
    assert answer["reparsed"] == full
    empty = not any(full.values())
    assert (answer["formatted"] == "") == empty


def test_a_hand_edited_fragment_shows_more_not_nothing(node_views: NodeViews) -> None:
    """Unknown keys and values naming no group, state or reason are ignored."""
    answer = node_views.ask(
        {
            "fragment": "#group=urgent&state=blocked&reason=lunch&x=1&q=db"
            "&label=team:infra&label=nocolon&label=9bad:key&label=empty:&label=team:infra"
        }
    )
    assert answer["parsed"] == {
        "group": "",
        "state": "blocked",
        "reason": "",
        "attention": False,
        "labels": ["team:infra"],
        "q": "db",
    }
    assert node_views.ask({"fragment": "#roots-heading"})["parsed"]["q"] == ""


# --- what needs a person (issue 39) --------------------------------------------------------------


def oncall_root(
    root_run_id: str,
    state: str,
    reason: str,
    *,
    attention: bool,
    nodes: Sequence[StageNode] = (),
    labels: dict[str, str] | None = None,
) -> RootActivity:
    return root_in(
        root_run_id, state, reason, attention=attention, nodes=nodes or None, labels=labels
    )


_PROMPT = NodePrompt(id="p", kind="confirm", message="Ship it?", created_at=1_700_000_000_000)
# What an on-call engineer meets at 3 a.m., in hub order: the page reads each in words.
ONCALL = [
    oncall_root("tidy", "working", "retrying", attention=False, labels={"team": "infra"}),
    oncall_root(
        "ask",
        "blocked",
        "awaiting_input",
        attention=True,
        nodes=[stage_node("ask", "approve", "awaiting_input", pending_prompt=_PROMPT)],
    ),
    oncall_root(
        "deploy",
        "blocked",
        "manual_intervention",
        attention=True,
        nodes=[
            stage_node(
                "deploy",
                "deploy",
                "failed",
                error=FailureDetail(message="health check timed out", type="TimeoutError"),
            )
        ],
        labels={"team": "platform", "env": "prod"},
    ),
    oncall_root(
        "smoke",
        "idle",
        "quiescent",
        attention=True,
        nodes=[
            stage_node("smoke", "probe", "failed", error=FailureDetail(message="503 from /healthz"))
        ],
        labels={"team": "platform", "env": "staging"},
    ),
    oncall_root("bare", "idle", "quiescent", attention=True),
    oncall_root(
        "asks-while-working",
        "working",
        "executing",
        attention=True,
        nodes=[
            stage_node("asks-while-working", "build", "running"),
            stage_node("asks-while-working", "sign", "awaiting_input", pending_prompt=_PROMPT),
        ],
    ),
]


def test_why_each_root_needs_a_person(node_views: NodeViews) -> None:
    """A question is "waiting for input" (even while other work runs), a failed stage is
    "failed at <stage>" (before "needs intervention"), a settled failure without a graph is
    "failed"; a root that needs nobody has no reason. A settled failure (idle, needs attention)
    reads "failed", never idle (C3)."""
    answer = node_views.ask({"roots": [to_wire(root) for root in ONCALL]})
    assert answer["why"] == [
        "",
        "waiting for input",
        "failed at deploy",
        "failed at probe",
        "failed",
        "waiting for input",
    ]
    assert answer["shownStates"] == ["working", "blocked", "blocked", "failed", "failed", "working"]
    assert answer["failures"][2] == [
        {
            "id": "deploy:deploy",
            "name": "deploy",
            "kind": "stage",
            "message": "health check timed out",
            "type": "TimeoutError",
        }
    ]
    assert answer["failures"][3][0]["type"] == ""


def test_the_headline_says_what_needs_a_person_first(node_views: NodeViews) -> None:
    """The headline counts the roots that need a person and groups them by why: questions,
    then interventions, then failures, at most three groups and the rest counted."""
    answer = node_views.ask({"roots": [to_wire(root) for root in ONCALL]})
    assert answer["headline"]["count"] == 5
    assert answer["headline"]["text"] == (
        "5 need attention: 2 waiting for input, 1 failed at deploy, 1 failed at probe, and 1 more"
    )
    two = node_views.ask({"roots": [to_wire(root) for root in ONCALL[:3]]})
    assert two["headline"]["text"] == "2 need attention: 1 waiting for input, 1 failed at deploy"
    none = node_views.ask({"roots": [to_wire(ONCALL[0])]})
    assert none["headline"] == {"count": 0, "parts": [], "text": ""}


# --- the page, in chromium --------------------------------------------------------------------

ROWS = """() => ({
  ids: [...document.querySelectorAll('[data-testid="roots"] > [data-root-id]')]
    .map((row) => row.getAttribute("data-root-id")),
  hash: location.hash,
  cursor: document.querySelector('[data-testid="connection"]').dataset.cursor,
  matching: Number(document.querySelector('[data-testid="roots"]').dataset.matching),
  counts: Object.fromEntries([...document.querySelectorAll('[data-testid="summary"] a')]
    .map((a) => [a.dataset.group || "all", Number(a.dataset.count)])),
  current: [...document.querySelectorAll('[data-testid="summary"] a[aria-current="true"]')]
    .map((a) => a.dataset.group),
  form: {
    q: document.querySelector('#filter-q').value,
    state: document.querySelector('#filter-state').value,
    reason: document.querySelector('#filter-reason').value,
    attention: document.querySelector('#filter-attention').checked,
  },
  announced: document.querySelector('[data-testid="announcer"]').textContent,
  focused: document.activeElement.closest("[data-root-id]")
    ? document.activeElement.closest("[data-root-id]").getAttribute("data-root-id") : null,
  focusedTag: document.activeElement.tagName,
})"""


def root(
    root_run_id: str,
    state: str = "working",
    reason: str = "executing",
    *,
    attention: bool = False,
    stages: Sequence[str] = (),
) -> RootActivity:
    return RootActivity(
        root_run_id=root_run_id,
        owner_session_id="session",
        state=state,
        reason=reason,
        active_execution_count=1 if state == "working" else 0,
        actionable_block_count=1 if state == "blocked" else 0,
        needs_attention=attention,
        graph=_graph(list(stages)) if stages else None,
    )


# A scheduler in hub order: the page must reorder it.
BUSY = [
    root("build-1", stages=["compile", "unit tests"]),
    root("docs", "idle", "paused"),
    root("deploy-eu", "blocked", "awaiting_input", stages=["approve release"]),
    root("nightly", "idle", "quiescent", attention=True),
    root("deploy-us", "working", "retrying"),
    root("lint", "idle", "quiescent"),
    root("migrate-db", "blocked", "manual_intervention", stages=["Schema Migration"]),
    root("build-2", "working", "stopping"),
]


class Tab:
    def __init__(self, browser: Browser, page: Any, url: str) -> None:
        self.browser = browser
        self.page = page
        self.url = url

    async def rows(self) -> dict[str, Any]:
        rows: dict[str, Any] = await self.browser.run(self.page.evaluate, ROWS)
        return rows

    async def until(self, condition: str, arg: Any = None) -> dict[str, Any]:
        """Wait until ``condition(arg, rows)`` holds in the page; the rows then."""
        expression = f"(arg) => ({condition})(arg, ({ROWS})())"
        await self.browser.run(
            functools.partial(
                self.page.wait_for_function, expression, arg=arg, timeout=BROWSER_TIMEOUT_MS
            )
        )
        return await self.rows()

    async def at(self, hub: WorkflowActivityHub) -> dict[str, Any]:
        cursor: Cursor | None = hub.snapshot_frame().cursor
        assert cursor is not None
        return await self.until("(c, r) => r.cursor === c", f"{cursor.epoch}:{cursor.revision}")

    async def call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.browser.run(functools.partial(function, *args, **kwargs))


@asynccontextmanager
async def page_on(
    browser: Browser, roots: Sequence[RootActivity], fragment: str = "", width: int = 1280
) -> AsyncIterator[tuple[Tab, WorkflowActivityHub, Any]]:
    """A hub holding ``roots``, its server, and a page loaded on it at ``fragment``."""
    async with open_hub() as hub, trio.open_nursery() as nursery:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots=roots)
        server = Server(nursery, hub)
        await server.start()
        page, errors, requests = await browser.new_page(viewport={"width": width, "height": 900})
        tab = Tab(browser, page, server.url)
        try:
            await browser.run(page.goto, server.url + fragment)
            await tab.at(hub)
            yield tab, hub, publisher
        finally:
            await browser.run(page.context.close)
            nursery.cancel_scope.cancel()
        assert errors == [], "the page raised"
        outside = [url for url in requests if not url.startswith(server.url)]
        assert outside == [], "the page fetched something from elsewhere"


async def test_attention_first_and_the_summary_filters_to_a_group(browser: Browser) -> None:
    """Blocked and flagged roots first, then working, then idle, each in hub order (O2); the
    summary counts every group and each count is a link to its group, marked current."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY) as (tab, hub, publisher):
            rows = await tab.rows()
            assert rows["ids"] == expected_order(BUSY, {})
            assert rows["ids"][:3] == ["deploy-eu", "nightly", "migrate-db"]
            assert rows["counts"] == {"attention": 3, "working": 3, "idle": 2, "all": 8}
            assert rows["current"] == [""]

            await tab.call(tab.page.click, '[data-testid="summary"] a[data-group="attention"]')
            rows = await tab.until("(_, r) => r.hash === '#group=attention'")
            assert rows["ids"] == ["deploy-eu", "nightly", "migrate-db"]
            assert rows["current"] == ["attention"]
            assert rows["counts"]["all"] == 8, "the counts are of all roots"

            # A root that becomes blocked joins the group, at its hub position.
            publisher.publish_changed(root("build-1", "blocked", "awaiting_input"))
            rows = await tab.at(hub)
            assert rows["ids"] == ["build-1", "deploy-eu", "nightly", "migrate-db"]
            await tab.call(tab.page.click, '[data-testid="summary"] a[data-group="idle"]')
            rows = await tab.until("(_, r) => r.hash === '#group=idle'")
            assert rows["ids"] == ["docs", "lint"]
            await tab.call(tab.page.click, '[data-testid="summary"] a[data-group="working"]')
            rows = await tab.until("(_, r) => r.hash === '#group=working'")
            assert rows["ids"] == ["deploy-us", "build-2"]


async def test_each_filter_and_the_search(browser: Browser) -> None:
    """State, reason and needs-attention each keep exactly their roots; the search matches ids
    and stage names in any case; Clear shows everything again. Each lands in the address."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY) as (tab, hub, publisher):
            await tab.call(tab.page.select_option, "#filter-state", "idle")
            rows = await tab.until("(_, r) => r.hash === '#state=idle'")
            assert rows["ids"] == expected_order(BUSY, {"state": "idle"})
            assert rows["ids"] == ["nightly", "docs", "lint"]

            await tab.call(tab.page.select_option, "#filter-state", "")
            await tab.call(tab.page.select_option, "#filter-reason", "awaiting_input")
            rows = await tab.until("(_, r) => r.hash === '#reason=awaiting_input'")
            assert rows["ids"] == ["deploy-eu"]

            await tab.call(tab.page.select_option, "#filter-reason", "")
            await tab.call(tab.page.check, "#filter-attention")
            rows = await tab.until("(_, r) => r.hash === '#attention=1'")
            assert rows["ids"] == ["deploy-eu", "nightly", "migrate-db"]

            await tab.call(tab.page.uncheck, "#filter-attention")
            await tab.call(tab.page.fill, "#filter-q", "DEPLOY")
            rows = await tab.until("(_, r) => r.hash === '#q=DEPLOY'")
            assert rows["ids"] == ["deploy-eu", "deploy-us"]
            await tab.call(tab.page.fill, "#filter-q", "schema")  # a stage's name
            rows = await tab.until("(_, r) => r.hash === '#q=schema'")
            assert rows["ids"] == ["migrate-db"]
            await tab.call(tab.page.fill, "#filter-q", "no such root")
            rows = await tab.until("(_, r) => r.ids.length === 0")
            empty = tab.page.locator('[data-testid="roots-empty"]')
            assert "No root matches" in await tab.call(empty.inner_text)

            # A live change is filtered like the rest.
            await tab.call(tab.page.fill, "#filter-q", "build")
            await tab.until("(_, r) => r.ids.length === 2")
            publisher.publish_changed(root("build-3", "idle", "quiescent"))
            rows = await tab.at(hub)
            assert rows["ids"] == ["build-1", "build-2", "build-3"]

            await tab.call(tab.page.click, '[data-testid="filters"] button[type="reset"]')
            rows = await tab.until("(_, r) => r.hash === '' && r.ids.length === 9")
            assert rows["form"] == {"q": "", "state": "", "reason": "", "attention": False}


async def test_a_link_reproduces_the_view_and_back_steps_through_views(browser: Browser) -> None:
    """A fragment opens its view (form filled in); each choice adds one history entry, typing a
    search adds one for the whole word; Back and Forward go through them."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY, "#state=blocked&q=deploy") as (tab, hub, _):
            rows = await tab.rows()
            assert rows["ids"] == ["deploy-eu"]
            assert rows["form"] == {
                "q": "deploy",
                "state": "blocked",
                "reason": "",
                "attention": False,
            }

            await tab.call(tab.page.select_option, "#filter-state", "working")
            rows = await tab.until("(_, r) => r.hash === '#state=working&q=deploy'")
            assert rows["ids"] == ["deploy-us"]
            await tab.call(tab.page.fill, "#filter-q", "")
            await tab.call(tab.page.type, "#filter-q", "build")  # five keystrokes
            rows = await tab.until("(_, r) => r.hash === '#state=working&q=build'")
            assert rows["ids"] == ["build-1", "build-2"]

            await tab.call(tab.page.go_back)
            rows = await tab.until("(_, r) => r.hash === '#state=working&q=deploy'")
            assert rows["ids"] == ["deploy-us"]
            assert rows["form"]["q"] == "deploy"
            await tab.call(tab.page.go_back)
            rows = await tab.until("(_, r) => r.hash === '#state=blocked&q=deploy'")
            assert rows["ids"] == ["deploy-eu"]
            assert rows["form"]["state"] == "blocked"
            await tab.call(tab.page.go_forward)
            rows = await tab.until("(_, r) => r.hash === '#state=working&q=deploy'")
            assert rows["ids"] == ["deploy-us"]

            # The same address in a new page shows the same view.
            again, errors, _ = await tab.browser.new_page()
            try:
                await tab.browser.run(again.goto, tab.url + "#state=working&q=deploy")
                other = Tab(tab.browser, again, tab.url)
                assert (await other.at(hub))["ids"] == ["deploy-us"]
            finally:
                await tab.browser.run(again.context.close)
            assert errors == []


async def test_the_keyboard_walks_the_roots_and_their_stages(browser: Browser) -> None:
    """Tab reaches the list once (one root in the tab order), the arrows, Home and End move
    between roots with a visible focus, Enter opens a root's stages, Escape closes them and
    returns to the root; the focus stays on its root while the list is redrawn."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY) as (tab, hub, publisher):
            keyboard = tab.page.keyboard
            tabbable = await tab.call(
                tab.page.evaluate,
                "() => [...document.querySelectorAll('[data-root-id]')]"
                ".filter((e) => e.tabIndex === 0).length",
            )
            assert tabbable == 1
            await tab.call(tab.page.focus, '[data-testid="filters"] button[type="reset"]')
            await tab.call(keyboard.press, "Tab")
            rows = await tab.rows()
            assert rows["focused"] == "deploy-eu"
            outline = await tab.call(
                tab.page.evaluate, "() => getComputedStyle(document.activeElement).outlineStyle"
            )
            assert outline not in ("none", "")

            await tab.call(keyboard.press, "ArrowDown")
            await tab.call(keyboard.press, "ArrowDown")
            assert (await tab.rows())["focused"] == "migrate-db"
            await tab.call(keyboard.press, "End")
            assert (await tab.rows())["focused"] == "lint"
            await tab.call(keyboard.press, "ArrowUp")
            assert (await tab.rows())["focused"] == "docs"
            await tab.call(keyboard.press, "Home")
            assert (await tab.rows())["focused"] == "deploy-eu"
            await tab.call(keyboard.press, "ArrowDown")
            await tab.call(keyboard.press, "ArrowDown")

            await tab.call(keyboard.press, "Enter")
            rows = await tab.rows()
            assert (rows["focused"], rows["focusedTag"]) == ("migrate-db", "SUMMARY")
            stage = tab.page.locator('[data-root-id="migrate-db"] [data-node-id="run:0"]')
            assert await tab.call(stage.is_visible)

            # Another root changes: the list is redrawn, the focus and the open stages stay.
            publisher.publish_changed(root("deploy-eu", "working", "executing"))
            rows = await tab.at(hub)
            assert (rows["focused"], rows["focusedTag"]) == ("migrate-db", "SUMMARY")
            # This root changes itself: its card is new, the focus moves to the new one.
            publisher.publish_changed(
                root("migrate-db", "blocked", "awaiting_input", stages=["Schema Migration"])
            )
            rows = await tab.at(hub)
            assert (rows["focused"], rows["focusedTag"]) == ("migrate-db", "SUMMARY")
            assert await tab.call(stage.is_visible)

            await tab.call(keyboard.press, "Escape")
            rows = await tab.rows()
            assert (rows["focused"], rows["focusedTag"]) == ("migrate-db", "LI")
            assert not await tab.call(stage.is_visible)


# Where the focus is, as a stop of the Tab key: the root card it is in (if any) and its tag.
FOCUS_STOP = """() => {
  const active = document.activeElement;
  const card = active.closest("[data-root-id]");
  return {
    tag: active.tagName,
    root: card ? card.getAttribute("data-root-id") : null,
    skip: active.classList.contains("skip"),
    label: (active.getAttribute("aria-label") || active.id || active.textContent || "")
      .trim().slice(0, 40),
  };
}"""


async def tab_stops(tab: Tab) -> list[dict[str, Any]]:
    """Every stop of the Tab key once round the page, from the skip link, with real key presses
    (until the focus is back on the skip link, leaves the page, or after 60 presses)."""
    await tab.call(tab.page.focus, ".skip")
    stops: list[dict[str, Any]] = []
    for _ in range(60):
        await tab.call(tab.page.keyboard.press, "Tab")
        stop = await tab.call(tab.page.evaluate, FOCUS_STOP)
        if stop["skip"] or stop["tag"] == "BODY":
            break
        stops.append(stop)
    return stops


async def test_the_list_of_roots_is_one_stop_of_the_tab_key(browser: Browser) -> None:
    """Tab goes through the summary's links and the filters, then stops once in the list (on
    its current root, never on the stages of any card, open or closed) and leaves it
    (docs/dashboard.md, Accessibility). Reaching a card with the mouse makes it the stop."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY) as (tab, _hub, _):
            stops = await tab_stops(tab)
            in_list = [stop for stop in stops if stop["root"] is not None]
            assert in_list == [{**in_list[0], "tag": "LI", "root": "deploy-eu"}], stops
            labels = [stop["label"] for stop in stops]
            position = stops.index(in_list[0])
            assert "filter-q" in labels[:position], "the filters come before the list"

            # Stages open on the current card and on another one: still one stop.
            await tab.call(tab.page.click, '[data-root-id="deploy-eu"] summary')
            await tab.call(tab.page.click, '[data-root-id="migrate-db"] summary')
            opened = tab.page.locator("li.root details[open]")
            assert await tab.call(opened.count) == 2
            stops = await tab_stops(tab)
            in_list = [stop for stop in stops if stop["root"] is not None]
            assert [(stop["root"], stop["tag"]) for stop in in_list] == [("migrate-db", "LI")]


async def test_the_skip_link_lands_on_the_list(browser: Browser) -> None:
    """The first Tab reaches the skip link; Enter on it puts the focus on the list's current
    root, past the summary and the filters (Shift+Tab from there is the filters' last control);
    with no root shown it lands on the sentence that says so."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY) as (tab, _hub, _):
            keyboard = tab.page.keyboard
            await tab.call(keyboard.press, "Tab")
            assert (await tab.call(tab.page.evaluate, FOCUS_STOP))["skip"]
            await tab.call(keyboard.press, "Enter")
            rows = await tab.rows()
            assert (rows["focused"], rows["focusedTag"]) == ("deploy-eu", "LI")
            assert rows["hash"] == "", "the fragment holds the view, not the skip"
            await tab.call(keyboard.press, "ArrowDown")
            await tab.call(keyboard.press, "Shift+Tab")
            stop = await tab.call(tab.page.evaluate, FOCUS_STOP)
            assert (stop["tag"], stop["label"]) == ("BUTTON", "Clear")

            await tab.call(tab.page.focus, ".skip")
            await tab.call(keyboard.press, "Enter")
            assert (await tab.rows())["focused"] == "nightly", "the root the arrows left it on"

            await tab.call(tab.page.fill, "#filter-q", "no such root")
            await tab.until("(_, r) => r.ids.length === 0")
            await tab.call(tab.page.focus, ".skip")
            await tab.call(keyboard.press, "Enter")
            focused = await tab.call(
                tab.page.evaluate, "() => document.activeElement.dataset.testid"
            )
            assert focused == "roots-empty"


def waiting_in_a_subgraph() -> RootActivity:
    """A release blocked on a question asked by a stage of its child workflow (depth 1)."""
    return RootActivity(
        root_run_id="release",
        owner_session_id="session",
        state="blocked",
        reason="awaiting_input",
        active_execution_count=0,
        actionable_block_count=1,
        needs_attention=True,
        graph=RootGraph(
            nodes=(
                StageNode(
                    id="release:deploy",
                    run_id="release",
                    node_id="deploy",
                    name="deploy",
                    parent_ids=(),
                    depth=0,
                    status="running",
                ),
                StageNode(
                    id="verify:sign-off",
                    run_id="verify",
                    node_id="sign-off",
                    name="sign-off",
                    parent_ids=("release:deploy",),
                    depth=1,
                    status="awaiting_input",
                    pending_prompt=NodePrompt(
                        id="p-1",
                        kind="confirm",
                        message="Ship 3.2 to production?",
                        created_at=1_700_000_000_000,
                    ),
                ),
            ),
            run_prompts=(
                RunPrompt(
                    id="p-2",
                    kind="input",
                    message="Which region first?",
                    created_at=1_700_000_000_000,
                    run_id="verify",
                ),
            ),
        ),
    )


async def test_a_question_asked_inside_a_subgraph_shows_on_the_collapsed_card(
    browser: Browser,
) -> None:
    """A root blocked on a prompt of a nested stage says its question on the card, its stages
    closed: the reader sees what it waits for without opening anything."""
    with trio.fail_after(40):
        async with page_on(browser, [*BUSY, waiting_in_a_subgraph()]) as (tab, _hub, _):
            card = '[data-root-id="release"]'
            question = tab.page.locator(f'{card} [data-testid="question"]')
            assert await tab.call(question.is_visible)
            text = await tab.call(question.inner_text)
            assert "Ship 3.2 to production?" in text
            assert "sign-off" in text
            assert "1 more question" in text
            details = tab.page.locator(f"{card} details")
            assert await tab.call(details.get_attribute, "open") is None
            node_prompt = tab.page.locator(f'{card} [data-node-id="verify:sign-off"] .prompt')
            assert not await tab.call(node_prompt.is_visible), "the stages are closed"
            # A root that asks nothing has no question line.
            other = tab.page.locator('[data-root-id="build-1"] [data-testid="question"]')
            assert await tab.call(other.count) == 0


# What the page says for each reason of the contract: words, the raw value in data-value.
REASON_WORDS = {
    "executing": "executing",
    "retrying": "retrying",
    "automatic_continuation": "continuing by itself",
    "stopping": "stopping",
    "awaiting_input": "waiting for input",
    "manual_intervention": "needs intervention",
    "paused": "paused",
    "quiescent": "nothing to do",
}
STATE_OF = {
    "awaiting_input": "blocked",
    "manual_intervention": "blocked",
    "paused": "idle",
    "quiescent": "idle",
}


async def test_every_reason_reads_in_words(browser: Browser) -> None:
    """Each card says its reason in words (every member of the contract's Reason), keeping the
    raw value in data-value; the filter's options and the aggregate's badge say the same words."""
    assert set(REASON_WORDS) == {str(reason) for reason in Reason}
    roots = [
        root(f"r-{reason}", STATE_OF.get(reason, "working"), reason) for reason in REASON_WORDS
    ]
    with trio.fail_after(40):
        async with page_on(browser, roots) as (tab, hub, publisher):
            shown = await tab.call(
                tab.page.evaluate,
                """() => Object.fromEntries([...document.querySelectorAll("li.root")].map(
                  (card) => [card.dataset.reason, {
                    text: card.querySelector(".reason").textContent,
                    value: card.querySelector(".reason").dataset.value,
                  }]))""",
            )
            assert shown == {
                reason: {"text": words, "value": reason} for reason, words in REASON_WORDS.items()
            }
            options = await tab.call(
                tab.page.evaluate,
                """() => Object.fromEntries([...document.querySelectorAll("#filter-reason option")]
                  .filter((o) => o.value).map((o) => [o.value, o.textContent]))""",
            )
            assert options == REASON_WORDS
            # With nothing working, the aggregate is blocked on input, in the same words; the
            # badge says it only once no other root waits for a human (issue 39): until then
            # the headline says why each waits.
            for item in roots:
                if item.state == "working":
                    publisher.publish_changed(root(item.root_run_id, "idle", "quiescent"))
            await tab.at(hub)
            badge = tab.page.locator('[data-role="aggregate-label"]')
            assert (await tab.call(badge.inner_text)).endswith("blocked")
            headline = tab.page.locator('[data-testid="attention-headline"]')
            assert (await tab.call(headline.inner_text)).endswith(
                "2 need attention: 1 waiting for input, 1 needs intervention"
            )


async def test_the_live_region_announces_the_overall_state_only(browser: Browser) -> None:
    """Many frames that keep the overall state say nothing; a change of the overall state is
    said once."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY) as (tab, hub, publisher):
            await tab.call(
                tab.page.evaluate,
                """() => {
                  window.__said = [];
                  const region = document.querySelector('[data-testid="announcer"]');
                  new MutationObserver(() => window.__said.push(region.textContent))
                    .observe(region, {childList: true, characterData: true, subtree: true});
                }""",
            )
            for number in range(40):
                publisher.publish_changed(root(f"extra-{number}", "working", "executing"))
                if number % 10 == 0:
                    await tab.at(hub)
            await tab.at(hub)
            assert await tab.call(tab.page.evaluate, "() => window.__said") == []

            for item in [*BUSY, *(root(f"extra-{n}") for n in range(40))]:
                if item.state == "working":
                    publisher.publish_changed(root(item.root_run_id, "idle", "quiescent"))
            await tab.at(hub)
            said = await tab.call(tab.page.evaluate, "() => window.__said")
            assert said == ["Status blocked, needs attention"]
            region = tab.page.locator('[data-testid="announcer"]')
            assert await tab.call(region.get_attribute, "aria-live") == "polite"


ONCALL_PAGE = """() => {
  const card = (id) => document.querySelector(`[data-root-id="${id}"]`);
  const say = (node) => (node ? node.textContent.replace(/\\s+/g, " ").trim() : null);
  const headline = document.querySelector('[data-testid="attention-headline"]');
  const badge = document.querySelector('[data-role="aggregate-label"]');
  return {
    headline: headline.hidden ? null : say(headline),
    headlineFirst: Boolean(headline.compareDocumentPosition(badge) & Node.DOCUMENT_POSITION_FOLLOWING),
    badge: say(badge),
    title: document.title,
    cards: Object.fromEntries([...document.querySelectorAll("li.root")].map((item) => [
      item.dataset.rootId, {
        state: say(item.querySelector(".root-head .badge")),
        reason: say(item.querySelector(".root-head .reason")),
        head: say(item.querySelector(".root-head")),
        failure: say(item.querySelector('[data-testid="failure"]')),
        labels: [...item.querySelectorAll(".labels a")].map((a) => a.dataset.label),
      }])),
    noGraph: !document.querySelector('[data-testid="no-graph"]').hidden,
  };
}"""


async def test_the_page_leads_with_what_needs_a_person(browser: Browser) -> None:
    """The headline says how many roots need a person and why, before the overall state; the
    badge then says no single root's reason; a settled failure reads "failed at <stage>" with
    its error on the card, never "idle · nothing to do"; labels on the cards (issue 39, C3)."""
    with trio.fail_after(40):
        async with page_on(browser, ONCALL) as (tab, _hub, _):
            page = await tab.call(tab.page.evaluate, ONCALL_PAGE)
            assert page["headline"] == (
                "⚠ 5 need attention: 2 waiting for input, 1 failed at deploy, "
                "1 failed at probe, and 1 more"
            )
            assert page["headlineFirst"]
            assert page["badge"] == "▶ working"
            assert page["title"].startswith("⚠ 5 · working")
            smoke = page["cards"]["smoke"]
            assert smoke["state"] == "✗ failed"
            assert smoke["reason"] == "at probe"
            assert smoke["failure"] == "✗ Failed at probe: 503 from /healthz"
            assert page["cards"]["deploy"]["failure"] == (
                "✗ Failed at deploy: health check timed out (TimeoutError)"
            )
            assert page["cards"]["bare"]["state"] == "✗ failed"
            for card in page["cards"].values():
                if "needs attention" in card["head"]:
                    assert "nothing to do" not in card["head"], card
                    assert "idle" not in card["head"], card
            assert page["cards"]["deploy"]["labels"] == ["team:platform", "env:prod"]
            assert page["cards"]["tidy"]["labels"] == ["team:infra"]
            assert not page["noGraph"]


async def test_a_label_filter_is_in_the_address(browser: Browser) -> None:
    """``?label=k:v`` (several: all must hold) opens the page on those roots and moves into the
    fragment, which a colleague's link reproduces; a label on a card narrows the view, the
    Labels box does too, and Clear shows all again (C3)."""
    with trio.fail_after(40):
        async with page_on(browser, ONCALL, "?label=team:platform&label=env:prod") as (tab, _, _p):
            rows = await tab.rows()
            assert rows["ids"] == ["deploy"]
            assert rows["hash"] == "#label=team:platform&label=env:prod"
            assert "?" not in tab.page.url
            value = await tab.call(tab.page.input_value, "#filter-labels")
            assert value == "team:platform, env:prod"

            await tab.call(tab.page.click, 'button[type="reset"]')
            rows = await tab.until("(_, r) => r.ids.length === 6")
            await tab.call(tab.page.click, '[data-root-id="smoke"] a[data-label="env:staging"]')
            rows = await tab.until("(_, r) => r.ids.length === 1")
            assert rows["ids"] == ["smoke"]
            assert rows["hash"] == "#label=env:staging"

            await tab.call(tab.page.fill, "#filter-labels", "team : platform")
            rows = await tab.until("(_, r) => r.ids.length === 2")
            assert rows["ids"] == ["deploy", "smoke"]
            assert rows["hash"] == "#label=team:platform"

            await tab.call(tab.page.goto, tab.url + "#label=team:infra")
            rows = await tab.until("(_, r) => r.ids.length === 1")
            assert rows["ids"] == ["tidy"]


async def test_on_a_phone_the_first_root_shows_without_scrolling(browser: Browser) -> None:
    """At 375 x 667 px the headline, the summary and the first root's card head are on the
    first screen: the filters fold into one line (issue 39)."""
    with trio.fail_after(40):
        async with page_on(browser, ONCALL, width=375) as (tab, _hub, _):
            await tab.call(tab.page.set_viewport_size, {"width": 375, "height": 667})
            await tab.call(tab.page.reload)
            await tab.until("(_, r) => r.ids.length === 6")
            box = await tab.call(
                tab.page.evaluate,
                """() => {
                  const head = document.querySelector("li.root .root-head").getBoundingClientRect();
                  return {bottom: head.bottom, height: window.innerHeight, scrolled: window.scrollY};
                }""",
            )
            assert box["scrolled"] == 0
            assert box["bottom"] <= box["height"], box
            # The filters are one click away, and say what they hold.
            await tab.call(tab.page.click, '[data-testid="filters-box"] > summary')
            await tab.call(tab.page.fill, "#filter-q", "smoke")
            rows = await tab.until("(_, r) => r.ids.length === 1")
            assert rows["ids"] == ["smoke"]


async def test_a_source_without_graphs_says_so(browser: Browser) -> None:
    """When no root carries a graph, the page says that the source publishes none (no stages,
    failures or questions to show), as ``workflow-hub watch`` does."""
    with trio.fail_after(40):
        async with page_on(browser, BUSY[:2]) as (tab, hub, publisher):
            assert not (await tab.call(tab.page.evaluate, ONCALL_PAGE))["noGraph"]
            publisher.publish_removed("build-1")
            await tab.at(hub)
            page = await tab.call(tab.page.evaluate, ONCALL_PAGE)
            assert page["noGraph"]
            text = await tab.call(tab.page.inner_text, '[data-testid="no-graph"]')
            assert "publishes no graph" in text
            assert "include_graph=True" in text


def axe_source() -> str:
    """axe-core, installed from npm into tests/js by `make browsers` (or here, when missing)."""
    if not AXE.exists():
        npm = require_program("npm", "WORKFLOW_HUB_NPM")
        try:
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=JS,
                check=True,
                timeout=300,
                capture_output=True,
            )
        except (subprocess.SubprocessError, OSError) as error:
            missing(f"axe-core could not be installed with npm ({error})")
    return AXE.read_text(encoding="utf-8")


AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                  nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" "))}));
}"""


@pytest.mark.parametrize("width", [1280, 375])
async def test_axe_finds_no_serious_violation(browser: Browser, width: int) -> None:
    """axe-core in the real page, light and dark, a filter applied and a root's stages open,
    the headline, a failed card with its error and labels, the hook feed's times: no serious or
    critical violation."""
    source = axe_source()
    with trio.fail_after(60):
        async with page_on(browser, BUSY + ONCALL, "#q=d", width=width) as (tab, _hub, _):
            await tab.call(tab.page.click, '[data-root-id="deploy-eu"] summary')
            await tab.call(tab.page.add_script_tag, content=source)
            for scheme in ("light", "dark"):
                await tab.call(tab.page.emulate_media, color_scheme=scheme)
                violations = await tab.call(tab.page.evaluate, AXE_RUN)
                assert violations == [], scheme


async def test_twenty_thousand_roots_draw_a_bounded_list(browser: Browser) -> None:
    """20 000 roots: the summary counts all of them, the list draws the first 100 in order (more
    on request), a filter finds the one blocked root at once; roots that come and go leave no
    trace in the page (the stages of a removed root are forgotten, the list stays bounded)."""
    many = [root(f"root-{n:05}") for n in range(20_000)]
    many[13_333] = root("root-13333", "blocked", "awaiting_input", stages=["approve"])
    with trio.fail_after(90):
        async with page_on(browser, many) as (tab, hub, publisher):
            rows = await tab.rows()
            assert rows["counts"] == {"attention": 1, "working": 19_999, "idle": 0, "all": 20_000}
            assert len(rows["ids"]) == 100
            assert rows["ids"][:2] == ["root-13333", "root-00000"]
            await tab.call(tab.page.click, '[data-testid="more"]')
            rows = await tab.until("(_, r) => r.ids.length === 200")
            assert rows["ids"][-1] == "root-00198"

            await tab.call(tab.page.select_option, "#filter-reason", "awaiting_input")
            rows = await tab.until("(_, r) => r.ids.length === 1")
            assert rows["ids"] == ["root-13333"]
            await tab.call(tab.page.click, '[data-root-id="root-13333"] summary')

            # Roots come and go at the top of the list while the filter is on.
            await tab.call(tab.page.select_option, "#filter-reason", "")
            for cycle in range(300):
                publisher.publish_changed(root(f"new-{cycle}", "blocked", "manual_intervention"))
                if cycle >= 5:
                    publisher.publish_removed(f"new-{cycle - 5}")
                if cycle % 50 == 0:
                    await trio.sleep(0.01)
            publisher.publish_removed("root-13333")
            rows = await tab.at(hub)
            assert rows["ids"][:5] == [f"new-{n}" for n in range(295, 300)]
            assert len(rows["ids"]) == 100
            assert rows["counts"]["all"] == 20_004
            publisher.publish_changed(root("root-13333", "blocked", "awaiting_input", stages=["a"]))
            await tab.at(hub)
            stage = tab.page.locator('[data-root-id="root-13333"] [data-node-id="run:0"]')
            assert not await tab.call(stage.is_visible), "a removed root's stages are forgotten"
            count = await tab.call(
                tab.page.evaluate, "() => document.querySelectorAll('li.root').length"
            )
            assert count == 100


def test_axe_is_pinned() -> None:
    """axe-core comes from npm at one pinned version (never a CDN, never `latest`)."""
    package = json.loads((JS / "package.json").read_text(encoding="utf-8"))
    version = package["devDependencies"]["axe-core"]
    assert version[0].isdigit(), version
    lock = json.loads((JS / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/axe-core"]["version"] == version
