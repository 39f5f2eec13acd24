"""Random operation sequences on a real hub, checked against the reference model at every settle.

SPEC §3 as a whole (P1-P9, O1-O9, L2, L3, R1-R3) and the hub's hook queue (K1, K2). The
sequences are the conformance kit's scenarios (one vocabulary of operations: disconnects are
``DisposeObserver``, reconnects ``Observe(since=SeenBy(n))``), played by the kit's harness, which
already demands exact agreement with :class:`workflow_hub.testing.model.HubModel`. On top of
that, a settle hook checks the invariants the issues name, against the frames the model says
were broadcast:

1. folding an observer's frames reproduces ``hub.snapshot_frame()`` once it has caught up (a
   resumed observer continues the fold of what it held at its cursor);
2. the first frame is a snapshot, unless the observer resumed (R2); the first frame of every new
   epoch is a snapshot;
3. revisions strictly increase within an epoch (they may skip: lifecycle events advance the
   cursor without a frame);
4. every changed or removed frame an observer receives is one the hub broadcast (nothing from a
   fenced publisher, nothing made up);
5. pending frames never exceed the queue limit; diagnostics never exceed their limit;
6. a resumed observer whose queue never overflowed received exactly the frames broadcast after
   its cursor, in order, as an observer that never left would have, except that the replay may
   start at the latest snapshot the hub broadcast in that range, and at no other snapshot;
7. the history never holds more than ``history_limit`` frames, nor any frame older than the
   latest broadcast snapshot of the epoch (R1).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import event, given, settings

from tests.support.builders import fold, held_at
from workflow_hub import ChangedFrame, Frame, RemovedFrame, SnapshotFrame
from workflow_hub.testing.conformance import (
    Checkpoint,
    HubAdapter,
    Scenario,
    play_scenario,
)
from workflow_hub.testing.model import HubModel, ModelObserver
from workflow_hub.testing.strategies import scenarios


def never_left(observer: ModelObserver, model: HubModel) -> list[Frame]:
    """What an observer that never left got after the cursor a resumed ``observer`` came back
    from: the frames of that epoch broadcast after it while it was away, then everything since."""
    since = observer.since
    assert since is not None
    attached = observer.attached_after
    missed = [
        frame
        for frame in model.broadcast[:attached]
        if frame.cursor.epoch == since.epoch and frame.cursor.revision > since.revision
    ]
    return missed + model.broadcast[attached:]


def check_resumed(observer: ModelObserver, frames: Sequence[Frame], model: HubModel) -> None:
    """(6): the frames of a resumed observer are a run of what an observer that never left got."""
    expected = never_left(observer, model)
    if not frames:
        return
    start = expected.index(frames[0])
    assert start == 0 or isinstance(expected[start], SnapshotFrame), (start, frames[0])
    if start:
        # The replay skipped frames only because a broadcast snapshot replaced them.
        event("a resume started at a broadcast snapshot")
    assert list(frames) == expected[start : start + len(frames)]


def check_frames(observer: ModelObserver, frames: Sequence[Frame], model: HubModel) -> None:
    if not frames:
        return
    if observer.resumed:
        event("an observer resumed")
        since = observer.since
        assert since is not None
        first = frames[0]
        assert isinstance(first, SnapshotFrame) or (
            first.cursor.epoch == since.epoch and first.cursor.revision > since.revision
        )  # (2)
        if not observer.overflowed:
            check_resumed(observer, frames, model)
    else:
        assert isinstance(frames[0], SnapshotFrame)  # (2)
    for before, later in itertools.pairwise(frames):
        if later.cursor.epoch != before.cursor.epoch:
            assert isinstance(later, SnapshotFrame)  # (2)
        else:
            assert later.cursor.revision > before.cursor.revision  # (3)
    for frame in frames:
        if isinstance(frame, ChangedFrame | RemovedFrame):
            assert frame in model.broadcast  # (4)


async def invariants(checkpoint: Checkpoint) -> None:
    adapter = checkpoint.adapter
    assert isinstance(adapter, HubAdapter)
    hub, model, config = adapter.hub, checkpoint.model, checkpoint.scenario.config
    snapshot = hub.snapshot_frame()
    # The harness has just checked that the hub's observers got exactly the model's frames; the
    # model's copies carry the model's epoch names, like everything in ``model.broadcast``.
    for index, observer in enumerate(model.observers):
        frames = observer.received
        pending = await adapter.pending(index)
        assert pending <= config.queue_limit  # (5)
        check_frames(observer, frames, model)
        caught_up = pending == 0 and not observer.in_flight and not observer.disposed
        if caught_up and frames and frames[-1].cursor.epoch == model.epoch:
            expected = (
                None if snapshot.roots is None else {r.root_run_id: r for r in snapshot.roots}
            )
            held: list[Frame] = []
            if observer.resumed and observer.since is not None:
                # A resume continues the fold of what the client held at its cursor.
                held.append(held_at(model.broadcast[: observer.attached_after], observer.since))
            assert fold([*held, *frames]) == expected  # (1)
    assert len(hub.diagnostics()) <= config.diagnostics_limit  # (5)
    # (7): the epoch's frames after its revision-0 snapshot (that one is not history), from the
    # latest snapshot on, bound what the history may hold.
    epoch = [
        frame
        for frame in model.broadcast
        if frame.cursor.epoch == model.epoch and frame.cursor.revision > 0
    ]
    snapshots = [index for index, frame in enumerate(epoch) if isinstance(frame, SnapshotFrame)]
    retainable = len(epoch) - (snapshots[-1] if snapshots else 0)
    history = hub.statistics().history_frames
    assert history <= min(config.history_limit, retainable)  # (7)
    assert history == min(config.history_limit, retainable)  # nothing is dropped early either


@settings(deadline=None)
@given(scenarios(diagnostics_limits=(8,)))
def test_hub_agrees_with_the_model_and_keeps_its_invariants(scenario: Scenario) -> None:
    """P1-P9, O1-O9, L2, L3, K1, K2, R1-R3: exact agreement with the model, and invariants."""
    play_scenario(HubAdapter, scenario, on_settle=invariants)


@settings(deadline=None)
@given(scenarios(max_steps=60, queue_limits=(3,), history_limits=(4, 1024)))
def test_overflow_and_resumes_under_a_tiny_bound(scenario: Scenario) -> None:
    """O4, R3: overflow resnapshots and resumes larger than the queue, with a bound of 3."""
    play_scenario(HubAdapter, scenario, on_settle=invariants)


@settings(deadline=None)
@given(scenarios(queue_limits=(256, 3), history_limits=(2, 5, 1024)))
def test_resumes_within_and_past_a_small_history(scenario: Scenario) -> None:
    """R1-R3: with history always on and small, resumes land on both sides of its edge."""
    play_scenario(HubAdapter, scenario, on_settle=invariants)
