"""The tracker's incremental summaries equal the readable definition of D1-D8, after every fact.

``derive_root`` (``_derive.py``) applies SPEC §5's rules D1-D8 to all the facts of a root, with
nothing cached: it is the oracle. The tracker keeps the same summaries fact by fact
(``_rootstate.py``). Random fact sequences (nested runs, hosting stages, pauses, stops, retries,
prompts, failures active and ended, budget stops, acknowledgements, hydration, batches) drive a
tracker through its public API, and after every fact each root's summary, with and without the
graph, must equal the oracle's; what the hub holds must equal what the tracker derives. The oracle is
internal, so it is imported from ``workflow_hub.tracker._derive`` by its private name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from workflow_hub import ContractError, RunTracker, WorkflowActivityHub
from workflow_hub.tracker._derive import derive_root

RUN_IDS = ("r0", "r1", "r2", "r3", "r4")
NODE_IDS = ("a", "b", "c", "d", "e")
PROMPT_IDS = ("p0", "p1", "p2")
RUN_STATUSES = (
    "pending",
    "running",
    "paused",
    "completed",
    "skipped",
    "cancelled",
    "blocked",
    "failed",
    "killed",
)
STAGE_STATUSES = (
    "pending",
    "running",
    "awaiting_input",
    "paused",
    "blocked",
    "completed",
    "failed",
    "skipped",
)
TOOL_STATUSES = ("pending", "running", "completed", "failed", "cached", "cancelled")
# Statuses drawn more often: the interesting ones.
LIKELY_RUN = st.sampled_from(("running",) * 4 + RUN_STATUSES)
LIKELY_STAGE = st.sampled_from(("running", "pending", "completed") * 2 + STAGE_STATUSES)
LIKELY_TOOL = st.sampled_from(("failed",) * 4 + TOOL_STATUSES)
ERRORS = st.sampled_from([None, "boom", "timed out"])
LABELS = st.sampled_from([None, {}, {"team": "a"}, {"team": "b", "env": "prod"}])


def oracle(tracker: RunTracker, root_run_id: str, *, graph: bool) -> Any:
    runs = tracker._ledger.subtree(tracker._ledger.runs[root_run_id])
    return derive_root(runs, owner_session_id=tracker.owner_session_id, include_graph=graph)


class Driver:
    """Applies drawn facts to a tracker, tolerating the ones its checks refuse."""

    def __init__(self, data: st.DataObject, *, graph: bool) -> None:
        self.data = data
        self.graph = graph
        self.hub = WorkflowActivityHub()
        self.tracker = RunTracker(
            self.hub.register_publisher(),
            owner_session_id="s",
            clock=lambda: 1_000.0,
            include_graph=graph,
        )
        self.contexts: list[contextlib.AbstractContextManager[None]] = []
        self.facts = 0

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def run_id(self) -> str:
        """Mostly a tracked run, sometimes any id (an unknown one is refused)."""
        known = sorted(self.tracker._ledger.runs)
        if known and self.draw(st.integers(0, 9)):
            return str(self.draw(st.sampled_from(known)))
        return str(self.draw(st.sampled_from(RUN_IDS)))

    def known_nodes(self, run_id: str) -> list[str]:
        run = self.tracker._ledger.runs.get(run_id)
        return [] if run is None else sorted(run.nodes)

    def node_id(self, run_id: str) -> str:
        known = self.known_nodes(run_id)
        if known and self.draw(st.integers(0, 9)):
            return str(self.draw(st.sampled_from(known)))
        return str(self.draw(st.sampled_from(NODE_IDS)))

    def maybe_stage(self, run_id: str) -> str | None:
        if self.draw(st.booleans()):
            return None
        return self.node_id(run_id)

    def parents(self, run_id: str) -> list[str]:
        known = self.known_nodes(run_id)
        if not known:
            return []
        return list(self.draw(st.lists(st.sampled_from(known), max_size=2, unique=True)))

    def new_run(self) -> None:
        known = sorted(self.tracker._ledger.runs)
        parent = None
        host = None
        if known and self.draw(st.integers(0, 3)):
            parent = str(self.draw(st.sampled_from(known)))
            if self.draw(st.booleans()):
                host = self.node_id(parent)
        self.tracker.add_run(
            self.draw(st.sampled_from(RUN_IDS)),
            parent_run_id=parent,
            host_stage_id=host,
            live=self.draw(st.integers(0, 3)) > 0,
            status=self.draw(LIKELY_RUN),
            executor_ended=self.draw(st.booleans()),
        )

    def remove_nested_run(self) -> None:
        nested = sorted(r.run_id for r in self.tracker._ledger.runs.values() if r.parent_run_id)
        if nested:
            self.tracker.remove_run(self.draw(st.sampled_from(nested)))

    def on_run(self, act: Callable[[str], None]) -> Callable[[], None]:
        return lambda: act(self.run_id())

    def operations(self) -> list[Callable[[], None]]:
        t = self.tracker
        d = self.draw
        on = self.on_run
        return [
            self.new_run,
            self.new_run,
            on(lambda r: t.set_run_status(r, d(LIKELY_RUN), executor_ended=d(st.booleans()))),
            on(t.take_ownership),
            on(t.release_ownership),
            on(lambda r: t.request_control(r, d(st.sampled_from(("quit", "kill", "resume"))))),
            on(t.remove_run),
            self.remove_nested_run,
            on(
                lambda r: t.add_stage(
                    r,
                    d(st.sampled_from(NODE_IDS)),
                    "s",
                    parent_ids=self.parents(r),
                    status=d(LIKELY_STAGE),
                )
            ),
            on(
                lambda r: t.add_stage(
                    r, d(st.sampled_from(NODE_IDS)), "s", parent_ids=self.parents(r)
                )
            ),
            on(
                lambda r: t.add_tool(
                    r,
                    d(st.sampled_from(NODE_IDS)),
                    "t",
                    parent_ids=self.parents(r),
                    status=d(st.sampled_from(TOOL_STATUSES)),
                )
            ),
            on(
                lambda r: t.set_stage_status(
                    r, self.node_id(r), d(LIKELY_STAGE), retrying=d(st.integers(0, 3)) == 0
                )
            ),
            on(lambda r: t.set_stage_status(r, self.node_id(r), d(LIKELY_STAGE))),
            # C3: a failed stage's or tool's error (refused, changing nothing, on another status)
            on(lambda r: t.set_stage_status(r, self.node_id(r), "failed", error=d(ERRORS))),
            on(lambda r: t.set_tool_status(r, self.node_id(r), d(LIKELY_TOOL), error=d(ERRORS))),
            on(lambda r: t.set_labels(r, d(LABELS))),
            on(lambda r: t.set_tool_status(r, self.node_id(r), d(st.sampled_from(TOOL_STATUSES)))),
            on(
                lambda r: t.open_prompt(
                    r, d(st.sampled_from(PROMPT_IDS)), "confirm", "?", stage_id=self.maybe_stage(r)
                )
            ),
            on(lambda r: t.answer_prompt(r, d(st.sampled_from(PROMPT_IDS)))),
            on(lambda r: t.cancel_prompt(r, d(st.sampled_from(PROMPT_IDS)))),
            on(
                lambda r: t.require_intervention(
                    r, stage_id=self.maybe_stage(r), budget_stop=d(st.booleans())
                )
            ),
            on(lambda r: t.clear_intervention(r, stage_id=self.maybe_stage(r))),
            on(t.acknowledge_failure),
            self.enter_or_leave,
        ]

    def enter_or_leave(self) -> None:
        """Open or close a hydration or batch block (blocks nest as their rules allow)."""
        if self.contexts and self.draw(st.booleans()):
            self.contexts.pop().__exit__(None, None, None)
            return
        hydrate = self.draw(st.booleans())
        if hydrate and self.tracker.is_hydrating:
            return
        context = self.tracker.hydrating() if hydrate else self.tracker.batch()
        context.__enter__()
        self.contexts.append(context)

    def step(self) -> None:
        operations = self.operations()
        operation = operations[self.draw(st.integers(0, len(operations) - 1))]
        with contextlib.suppress(KeyError, ValueError, ContractError):
            operation()
        self.facts += 1

    def check(self) -> None:
        for root in self.tracker.activities():
            expected = oracle(self.tracker, root.root_run_id, graph=self.graph)
            assert root == expected, (root, expected)
            event(f"{root.state}/{root.reason}")
            if self.graph:
                # The graph is an immutable value equal to a full rebuild.
                assert root.graph == expected.graph
                assert isinstance(root.graph.nodes, tuple)
        if self.tracker.started and not self.contexts:
            # Published fact by fact: the hub holds exactly what the tracker derives.
            assert self.hub.snapshot_frame().roots == self.tracker.activities()

    def check_published(self) -> None:
        while self.contexts:
            self.contexts.pop().__exit__(None, None, None)
        frame = self.hub.snapshot_frame()
        assert frame.roots == self.tracker.activities()


@settings(max_examples=300, deadline=None)
@given(data=st.data(), graph=st.booleans(), steps=st.integers(1, 60))
def test_every_fact_gives_the_oracles_summary(data: st.DataObject, graph: bool, steps: int) -> None:
    """§5 D1-D8: after every fact of a random sequence, each root's incremental summary (and
    graph) equals derive_root's on the same facts; the hub ends with exactly those roots."""
    driver = Driver(data, graph=graph)
    driver.tracker.start()
    for _ in range(steps):
        driver.step()
        driver.check()
    driver.check_published()


@settings(max_examples=100, deadline=None)
@given(data=st.data(), steps=st.integers(1, 40))
def test_a_fact_that_raises_changes_no_summary(data: st.DataObject, steps: int) -> None:
    """C1: a refused fact leaves every summary as it was."""
    driver = Driver(data, graph=True)
    driver.tracker.start()
    for _ in range(steps):
        before = driver.tracker.activities()
        operations = driver.operations()
        operation = operations[driver.draw(st.integers(0, len(operations) - 2))]
        try:
            operation()
        except (KeyError, ValueError):
            assert driver.tracker.activities() == before
        driver.check()
