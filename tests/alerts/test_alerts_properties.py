"""The firing set is the folded view's, whatever the frames: a property test (issue 40).

Random programs drive a REAL hub (``queue_limit=4``, so bursts overflow the alerter's queue into a
fresh snapshot, SPEC O4) through changes, removals, ready and unavailable snapshots and publisher
replacements (new epochs, P1), with time passing on trio's ``MockClock``. After every step the
alerts a recording sink holds as firing must equal what a small oracle derives from the hub's own
folded snapshot (``ActivityView`` of ``hub.snapshot_frame()``) and the durations; at the end,
everything clears and every alert that fired has resolved exactly once.

The oracle is written apart from ``workflow_hub.alerts._book`` (as the reference model is from the
hub): a condition holds while the view shows it; a root's alerts are frozen while the source is
unknown; an alert fires once its condition has held for its duration.
"""

from __future__ import annotations

import functools
from typing import Any

import trio
import trio.testing
from hypothesis import event, given
from hypothesis import strategies as st

from workflow_hub import Availability, RootActivity, State, open_hub
from workflow_hub.alerts import AlertRules, run_alerts
from workflow_hub.reporting import ActivityView

from .support import Recorder, asking, idle, working

RULES = AlertRules(needs_attention_for=30, stuck_after=100, unknown_after=60)
DURATION = {
    "WorkflowNeedsAttention": 30.0,
    "WorkflowStuck": 100.0,
    "WorkflowSourceUnknown": 60.0,
}
Key = tuple[str, str, str, str]


def failed(root_run_id: str) -> RootActivity:
    from tests.support.builders import root_in

    return root_in(root_run_id, "idle", "quiescent", attention=True)


KINDS = {"asking": asking, "working": working, "idle": idle, "failed": failed}
ids = st.sampled_from(["a", "b", "c"])
kinds = st.sampled_from(sorted(KINDS))
steps = st.one_of(
    st.tuples(st.just("change"), ids, kinds),
    st.tuples(st.just("remove"), ids),
    st.tuples(st.just("burst"), st.lists(kinds, min_size=1, max_size=12)),
    st.tuples(st.just("restart")),
    st.tuples(st.just("unavailable")),
    st.tuples(
        st.just("ready"), st.lists(st.tuples(ids, kinds), max_size=3, unique_by=lambda p: p[0])
    ),
)
# Each step, then this many seconds (time passing is what fires alerts).
pauses = st.sampled_from([0, 0, 1, 10, 29, 31, 61, 150])


class Oracle:
    """What should fire, from the hub's folded snapshot at each step."""

    def __init__(self) -> None:
        self.since: dict[Key, float] = {}
        self.firing: set[Key] = set()
        self.values: dict[str, tuple[RootActivity, float]] = {}

    def step(self, view: ActivityView, now: float) -> None:
        known = view.known and view.in_sync
        holding: dict[Key, float | None] = {}
        # When each holding condition began: ``None`` for "when first seen" (now, if new).
        if known:
            present = {root.root_run_id: root for root in view.roots}
            for gone in set(self.values) - set(present):
                del self.values[gone]
            for root_id, root in present.items():
                if root_id not in self.values or self.values[root_id][0] != root:
                    self.values[root_id] = (root, now)
                if root.state is State.BLOCKED:
                    reason = str(root.reason)
                elif root.needs_attention:
                    reason = "failed" if root.state is State.IDLE else "partly_blocked"
                else:
                    reason = ""
                if reason:
                    holding[("WorkflowNeedsAttention", "hub", root_id, reason)] = None
                if root.state is State.WORKING:
                    key = ("WorkflowStuck", "hub", root_id, str(root.reason))
                    holding[key] = self.values[root_id][1]
        else:
            holding[("WorkflowSourceUnknown", "hub", "", "unknown")] = None
            for key in self.since:  # frozen: neither cleared nor confirmed
                if key[0] != "WorkflowSourceUnknown":
                    holding[key] = None
        for key in list(self.since):
            if key not in holding:
                del self.since[key]
                self.firing.discard(key)
        for key, began in holding.items():
            if began is not None and key in self.since and began > self.since[key]:
                self.firing.discard(key)  # a stuck root moved: a new condition begins
                self.since[key] = began
            self.since.setdefault(key, now if began is None else began)
            frozen = not known and key[0] != "WorkflowSourceUnknown"
            if not frozen and now - self.since[key] >= DURATION[key[0]]:
                self.firing.add(key)


def firing_keys(recorder: Recorder) -> set[Key]:
    return {
        (
            str(alert.name),
            alert.labels["source"],
            alert.labels.get("root_run_id", ""),
            alert.labels["reason"],
        )
        for alert in recorder.firing.values()
    }


async def play(program: list[tuple[tuple[Any, ...], int]]) -> None:
    recorder = Recorder()
    oracle = Oracle()
    fresh = 0
    async with open_hub(queue_limit=4) as hub, trio.open_nursery() as nursery:
        await nursery.start(
            functools.partial(
                run_alerts, hub, [recorder], rules=RULES, wall_clock=trio.current_time
            )
        )
        publisher = hub.register_publisher()
        publisher.publish_snapshot(Availability.READY, [])

        async def check() -> None:
            # The oracle looks at the hub when the step happened, then again once the alerter is
            # done: waiting may let the autojump clock move to the alerter's next deadline.
            view = ActivityView()
            view.apply(hub.snapshot_frame())
            oracle.step(view, trio.current_time())
            await trio.testing.wait_all_tasks_blocked()
            oracle.step(view, trio.current_time())
            assert firing_keys(recorder) == oracle.firing, (trio.current_time(), oracle.since)

        await check()
        for step, pause in program:
            match step:
                case ("change", root_id, kind):
                    publisher.publish_changed(KINDS[kind](root_id))
                case ("remove", root_id):
                    publisher.publish_removed(root_id)
                case ("burst", burst):
                    for kind in burst:  # fresh roots, each changed once: no checkpoint between
                        fresh += 1
                        publisher.publish_changed(KINDS[kind](f"w{fresh}"))
                case ("restart",):
                    publisher = hub.register_publisher()
                case ("unavailable",):
                    publisher.publish_snapshot(Availability.UNAVAILABLE)
                case ("ready", roots):
                    publisher.publish_snapshot(
                        Availability.READY, [KINDS[kind](root_id) for root_id, kind in roots]
                    )
            await check()
            for _ in range(pause):  # every second, so the oracle sees each moment the alerter can
                await trio.sleep(1)
                await check()
        fired = {n.alert.id for n in recorder.notifications if n.kind == "firing"}
        event(f"alerts fired: {min(len(fired), 3)}{'+' if len(fired) >= 3 else ''}")
        if any(d.kind == "ObserverOverflow" for d in hub.diagnostics()):
            event("an overflow resnapshot")
        # Everything clears: every alert that fired resolves, exactly once (Recorder checks).
        publisher.publish_snapshot(Availability.READY, [])
        await check()
        assert recorder.firing == {}
        assert recorder.resolved == fired
        nursery.cancel_scope.cancel()


@given(st.lists(st.tuples(steps, pauses), min_size=3, max_size=25))
def test_the_firing_set_is_the_folded_views(program: list[tuple[tuple[Any, ...], int]]) -> None:
    """Issue 40: after any frames (overflow resnapshots and epoch changes included), the sink's
    firing set equals the one derived from the folded view; each fired alert resolves once."""
    trio.run(play, program, clock=trio.testing.MockClock(autojump_threshold=0))
