"""C1 for the tracker: a fact that raises changes nothing, whichever fact and whatever is wrong.

Random sequences call every fact method of :class:`RunTracker` with arguments drawn from pools
that mix good values with bad ones: unknown ids, a tool's id where a stage's is expected (and the
reverse), wrong types, unknown enum values, negative ordinals, and a clock or event-id factory that
sometimes returns garbage. Whenever a call raises, the tracker's whole state (every record, its
bookkeeping, what it published, its heartbeats) and the hub's (cursor, frame, diagnostics) must be
exactly what they were before the call. Whenever a call succeeds, every root's incremental summary
must still equal ``derive_root``'s. Records are internal, so they are read by their private names.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from workflow_hub import RunTracker, StageStatus, ToolNodeStatus, WorkflowActivityHub
from workflow_hub._contract import check_bool, check_number, check_str, enum_check
from workflow_hub.tracker._derive import derive_root
from workflow_hub.tracker._records import StageRecord, ToolRecord

RUN_IDS = ("r0", "r1", "r2")
NODE_IDS = ("a", "b", "c", "d")
PROMPT_IDS = ("p0", "p1")
BAD = (None, 7, 1.5, b"a", ["a"])
RUN_STATUSES = ("pending", "running", "paused", "completed", "failed", "blocked", "killed")
STAGE_STATUSES = ("pending", "running", "awaiting_input", "paused", "completed", "failed")
TOOL_STATUSES = ("pending", "running", "completed", "failed", "cached", "cancelled")

# Every method of RunTracker that reports a fact, and the ones that do not.
FACTS = (
    "add_run",
    "set_run_status",
    "set_labels",
    "take_ownership",
    "release_ownership",
    "request_control",
    "remove_run",
    "add_stage",
    "add_tool",
    "set_stage_name",
    "set_stage_status",
    "set_tool_status",
    "open_prompt",
    "answer_prompt",
    "cancel_prompt",
    "require_intervention",
    "clear_intervention",
    "acknowledge_failure",
)
NOT_FACTS = (
    "activity",
    "activities",
    "batch",
    "hydrating",
    "now",
    "recovering_because",
    "replace_publisher",
    "run_heartbeats",
    "run_status",
    "start",
)


def test_every_fact_method_is_exercised() -> None:
    """C1: the property below covers every public method that reports a fact."""
    public = {
        name
        for name, member in inspect.getmembers(RunTracker)
        if not name.startswith("_") and callable(member)
    }
    assert public == set(FACTS) | set(NOT_FACTS)


def _plain(value: object) -> object:
    """A comparable copy of a record (records compare by identity); dependents by id only."""
    if attrs.has(type(value)):
        return (
            type(value).__name__,
            {
                field.name: (
                    [node.node_id for node in getattr(value, field.name)]
                    if field.name == "dependents"
                    else _plain(getattr(value, field.name))
                )
                for field in attrs.fields(type(value))
            },
        )
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def everything(hub: WorkflowActivityHub, tracker: RunTracker) -> object:
    """The tracker's and the hub's whole observable and internal state, as plain values."""
    states = {
        root: (
            state._totals,
            state.next_order,
            state._order is None or [r.run_id for r in state._order],
        )
        for root, state in tracker._ledger.states.items()
    }
    beats = {run: _plain(beat) for run, beat in tracker._ledger.heartbeats._beats.items()}
    publication = tracker._ledger.publication
    return (
        _plain(tracker._ledger.runs),
        list(tracker._ledger.roots),
        dict(publication.published),
        list(publication.dirty),
        (publication.started, publication.hydrating, publication.batch_depth),
        states,
        beats,
        tracker.activities(),
        hub.cursor,
        hub.snapshot_frame(),
        hub.diagnostics(),
    )


class Sources:
    """A clock and an event-id factory that return garbage when told to."""

    def __init__(self) -> None:
        self.bad_clock: object = None
        self.bad_id: object = None
        self.ids = 0

    def clock(self) -> Any:
        return 1_000.0 if self.bad_clock is None else self.bad_clock

    def event_id(self) -> Any:
        self.ids += 1
        return f"e{self.ids}" if self.bad_id is None else self.bad_id


class Caller:
    """Draws a fact method and arguments that are often right and often wrong."""

    def __init__(self, data: st.DataObject, tracker: RunTracker, sources: Sources) -> None:
        self.data = data
        self.tracker = tracker
        self.sources = sources

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def pick(self, good: list[Any] | tuple[Any, ...], *, bad: tuple[Any, ...] = BAD) -> Any:
        """Mostly one of ``good``, now and then one of ``bad``."""
        if good and self.draw(st.integers(0, 11)):
            return self.draw(st.sampled_from(list(good)))
        return self.draw(st.sampled_from(bad))

    def run(self) -> Any:
        return self.pick(sorted(self.tracker._ledger.runs), bad=(*RUN_IDS, *BAD))

    def node(self, run_id: object) -> Any:
        run = self.tracker._ledger.runs.get(run_id) if isinstance(run_id, str) else None
        known = [] if run is None else sorted(run.nodes)
        return self.pick(known, bad=(*NODE_IDS, *BAD))

    def maybe_node(self, run_id: object) -> Any:
        return None if self.draw(st.booleans()) else self.node(run_id)

    def flag(self) -> Any:
        return self.pick((True, False), bad=(1, 0, "yes", None))

    def status(self, good: tuple[str, ...]) -> Any:
        return self.pick(good, bad=("exploded", "", 3, None))

    def parents(self, run_id: object) -> Any:
        if self.draw(st.integers(0, 5)) == 0:
            return self.draw(st.sampled_from(("a", 3, ["zz"], [None])))
        return [self.node(run_id) for _ in range(self.draw(st.integers(0, 2)))]

    def error(self) -> Any:
        """C3: none, or a message (refused on any status but failed), or no error at all."""
        return self.pick((None, None, "boom"), bad=(3, b"x"))

    def attribution(self) -> Any:
        """Who made a change (on its event): one of the contract's kinds, or None."""
        return self.pick((None, None, "user", "agent"), bad=("someone", 1))

    def labels(self) -> Any:
        """C3: a root's labels (refused on a nested run)."""
        return self.pick((None, {}, {"team": "a"}), bad=({"bad key": "x"}, {"k": ""}, "team"))

    def prompt(self, run_id: object) -> Any:
        run = self.tracker._ledger.runs.get(run_id) if isinstance(run_id, str) else None
        known = [] if run is None else sorted(run.prompts)
        return self.pick(known, bad=(*PROMPT_IDS, *BAD))

    def arguments(self, name: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
        draw = self.draw
        run = self.run()
        if name == "add_run":
            parent = None if draw(st.booleans()) else self.run()
            return (draw(st.sampled_from((*RUN_IDS, *BAD))),), {
                "parent_run_id": parent,
                "host_stage_id": None if draw(st.booleans()) else self.node(parent),
                "live": self.flag(),
                "status": self.status(RUN_STATUSES),
                "executor_ended": self.flag(),
                "heartbeat_interval_minutes": self.pick((None, 1, 0.5), bad=(0, -1, math.nan)),
                "started_at": self.pick((None, 5.0), bad=(math.inf, "now")),
                "labels": self.labels(),
            }
        if name == "set_run_status":
            return (run, self.status(RUN_STATUSES)), {
                "executor_ended": self.flag(),
                "error": self.error(),
                "attribution": self.attribution(),
            }
        if name == "set_labels":
            return (run, self.labels()), {}
        if name == "request_control":
            return (run, self.status(("quit", "kill", "pause", "resume"))), {
                "attribution": self.attribution()
            }
        if name in ("add_stage", "add_tool"):
            extra: dict[str, Any] = {"parent_ids": self.parents(run)}
            if name == "add_tool":
                extra["ordinal"] = self.pick((0, 1, 2), bad=(-1, 1.5, True))
                extra["status"] = self.status(TOOL_STATUSES)
            else:
                extra["status"] = self.status(STAGE_STATUSES)
            node_id = self.pick(NODE_IDS, bad=BAD)
            return (run, node_id, self.pick(("n",), bad=(None, 1))), extra
        if name == "set_stage_name":
            return (run, self.node(run), self.pick(("n", "m"), bad=(None, 1))), {}
        if name == "set_stage_status":
            return (run, self.node(run), self.status(STAGE_STATUSES)), {
                "retrying": self.flag(),
                "replay": self.flag(),
                "error": self.error(),
                "attribution": self.attribution(),
            }
        if name == "set_tool_status":
            return (run, self.node(run), self.status(TOOL_STATUSES)), {
                "replay": self.flag(),
                "error": self.error(),
                "attribution": self.attribution(),
            }
        if name == "open_prompt":
            return (
                run,
                self.pick(PROMPT_IDS, bad=BAD),
                self.status(("input", "confirm", "select")),
                self.pick(("?",), bad=(None, 2)),
            ), {
                "stage_id": self.maybe_node(run),
                "choices": self.pick((None, ("x", "y")), bad=("xy", (1,))),
                "created_at": self.pick((None, 3), bad=(math.nan, "t")),
            }
        if name in ("answer_prompt", "cancel_prompt"):
            return (run, self.prompt(run)), {}
        if name == "require_intervention":
            return (run,), {"stage_id": self.maybe_node(run), "budget_stop": self.flag()}
        if name == "clear_intervention":
            return (run,), {"stage_id": self.maybe_node(run)}
        return (run,), {}

    def call(self) -> tuple[str, Callable[[], None]]:
        name = self.draw(st.sampled_from(FACTS))
        args, kwargs = self.arguments(name)
        # Now and then the clock or the id factory goes wrong for this one call.
        self.sources.bad_clock = self.pick((None,), bad=(math.nan, "noon", True))
        self.sources.bad_id = self.pick((None,), bad=(5, b"id"))
        method = getattr(self.tracker, name)
        return name, lambda: method(*args, **kwargs)


def enter_or_leave(
    data: st.DataObject, tracker: RunTracker, blocks: list[contextlib.AbstractContextManager[None]]
) -> None:
    """Open or close a batch or a hydration block: refusals inside them change nothing either."""
    if blocks and data.draw(st.booleans()):
        blocks.pop().__exit__(None, None, None)
        return
    if data.draw(st.booleans()) and not tracker.is_hydrating:
        block = tracker.hydrating()
    else:
        block = tracker.batch()
    block.__enter__()
    blocks.append(block)


def check_oracle(tracker: RunTracker) -> None:
    for root in tracker.activities():
        runs = tracker._ledger.subtree(tracker._ledger.runs[root.root_run_id])
        expected = derive_root(runs, owner_session_id=tracker.owner_session_id, include_graph=True)
        assert root == expected


@settings(max_examples=200, deadline=None)
@given(data=st.data(), steps=st.integers(1, 50))
def test_a_fact_that_raises_changes_nothing(data: st.DataObject, steps: int) -> None:
    """C1: every fact method, called with random good and bad arguments in random sequences,
    either succeeds (and the summaries still equal the definition, D1-D8) or raises and leaves
    the tracker and the hub exactly as they were."""
    hub = WorkflowActivityHub()
    sources = Sources()
    tracker = RunTracker(
        hub.register_publisher(),
        owner_session_id="s",
        clock=sources.clock,
        event_id_factory=sources.event_id,
        include_graph=True,
    )
    tracker.start()
    caller = Caller(data, tracker, sources)
    blocks: list[contextlib.AbstractContextManager[None]] = []
    for _ in range(steps):
        if data.draw(st.integers(0, 9)) == 0:
            enter_or_leave(data, tracker, blocks)
            continue
        name, call = caller.call()
        before = everything(hub, tracker)
        try:
            call()
        except Exception as error:
            # Any refusal at all must leave everything as it was.
            refused = f"{name} raised {type(error).__name__}"
            event(refused)
            sources.bad_clock = sources.bad_id = None
            assert everything(hub, tracker) == before, refused
        else:
            sources.bad_clock = sources.bad_id = None
            check_oracle(tracker)


def test_a_stage_status_for_a_tool_id_raises_and_changes_nothing() -> None:
    """C1 (the report of issue 22): ``set_stage_status`` given a tool's id raises KeyError, and
    every record, its bookkeeping, the graph, the hub's cursor and frames are as they were,
    whatever else the call asked for (a new status, a retry, a replay)."""
    hub = WorkflowActivityHub()
    tracker = RunTracker(
        hub.register_publisher(), owner_session_id="s", clock=lambda: 1.0, include_graph=True
    )
    tracker.start()
    tracker.add_run("root", status="running")
    tracker.add_stage("root", "plan", "Plan", status="running")
    tracker.add_tool("root", "grep", "grep", parent_ids=["plan"])
    tracker.add_stage("root", "next", "Next", parent_ids=["grep"])
    tracker.open_prompt("root", "p", "confirm", "?", stage_id="next")
    before = everything(hub, tracker)
    for status in ("running", "completed", "pending"):
        with pytest.raises(KeyError, match="no stage 'grep'"):
            tracker.set_stage_status("root", "grep", status, retrying=True, replay=True)
        assert everything(hub, tracker) == before
    check_oracle(tracker)


class _Text(str):
    """A str subclass: never the shortcut's type, always the full check's."""


class _Float(float):
    """A float subclass: never the shortcut's type, always the full check's."""


_ARGUMENT_POOLS = {
    "run_id": ("root", "history", "nope", _Text("root"), None, 7, b"root"),
    "node_id": ("plan", "grep", "nope", _Text("plan"), _Text("grep"), None, 1.5),
    "status": (
        *STAGE_STATUSES,
        *TOOL_STATUSES,
        *StageStatus,
        *ToolNodeStatus,
        _Text("running"),
        "exploded",
        3,
        None,
    ),
    "flag": (True, False, 1, 0, None, "yes"),
    "clock": (1_000.0, 2_000.0, 7, -0.0, _Float(3.0), math.nan, math.inf, True, "noon"),
    "event_id": ("e", "é", _Text("e"), 5, b"id"),
}


def _full_checks(
    tracker: RunTracker,
    record: type[StageRecord | ToolRecord],
    run_id: Any,
    node_id: Any,
    status: Any,
    replay: Any,
    retrying: Any,
) -> Any:
    """What a node's status fact checks, in order, with the full checks only (the references
    of ``Ledger.node_status``'s shortcuts): the new status, or what it raises."""
    ledger = tracker._ledger
    publication = ledger.publication
    run = ledger.run(run_id)
    node = ledger.node(run, node_id, record)
    enum = StageStatus if record is StageRecord else ToolNodeStatus
    new = enum_check(enum)(status, "status")
    if retrying is not None:
        check_bool(retrying, "retrying")
    check_bool(replay, "replay")
    if not publication.started and not publication.hydrating:
        raise RuntimeError("not started")
    check_number(ledger.clock(), "clock")
    if new is not node.status and run.live and publication.publishing:
        check_str(publication.event_id_factory(), "event_id")
    return new


def _fact(
    tracker: RunTracker, stage: bool, arguments: tuple[Any, ...], replay: Any, retrying: Any
) -> Any:
    """The fact's new status, or what it raises."""
    try:
        if stage:
            tracker.set_stage_status(*arguments, retrying=retrying, replay=replay)
        else:
            tracker.set_tool_status(*arguments, replay=replay)
    except RuntimeError:  # not started: the reference says so in its own words
        return (RuntimeError, "not started")
    except Exception as error:
        return (type(error), str(error))
    return tracker._ledger.runs[str(arguments[0])].nodes[str(arguments[1])].status


@settings(max_examples=300, deadline=None)
@given(data=st.data(), framing=st.sampled_from(("started", "hydrating", "not started")))
def test_a_node_status_fact_checks_what_the_full_checks_check(
    data: st.DataObject, framing: str
) -> None:
    """C1: ``set_stage_status`` and ``set_tool_status`` take a shortcut past the full checks for
    the usual arguments (``Ledger.node_status``): whatever the arguments, the clock, the event
    id and the framing, a fact raises exactly what the full checks raise, in the same order
    (the type and the message), or succeeds with the status they give."""
    pick = {name: data.draw(st.sampled_from(pool)) for name, pool in _ARGUMENT_POOLS.items()}
    sources: dict[str, Any] = {"clock": 1.0, "event_id": "e"}
    hub = WorkflowActivityHub()
    tracker = RunTracker(
        hub.register_publisher(),
        owner_session_id="s",
        clock=lambda: sources["clock"],
        event_id_factory=lambda: sources["event_id"],
    )
    with contextlib.ExitStack() as stack:
        if framing == "started":
            tracker.start()
        else:
            stack.enter_context(tracker.hydrating())
        for run_id, live in (("root", True), ("history", False)):
            tracker.add_run(run_id, status="running", live=live)
            tracker.add_stage(run_id, "plan", "Plan")
            tracker.add_tool(run_id, "grep", "grep")
        if framing == "not started":
            # A restore that raises leaves its records, and the tracker not started.
            with pytest.raises(ZeroDivisionError), stack.pop_all():
                raise ZeroDivisionError
            assert not tracker._ledger.publication.started
        sources.update(clock=pick["clock"], event_id=pick["event_id"])
        stage = data.draw(st.booleans())
        record = StageRecord if stage else ToolRecord
        retrying = pick["flag"] if stage else None
        replay = data.draw(st.sampled_from(_ARGUMENT_POOLS["flag"]))
        arguments = (pick["run_id"], pick["node_id"], pick["status"])
        try:
            expected = _full_checks(tracker, record, *arguments, replay, retrying)
        except Exception as error:
            expected = (type(error), str(error))
        assert _fact(tracker, stage, arguments, replay, retrying) == expected
        sources.update(clock=1.0, event_id="e")
