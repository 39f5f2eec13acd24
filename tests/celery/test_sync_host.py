"""The bridge as a Celery user embeds it: plain threads, the sync host, its thread-safe tracker.

No trio in the test: ``workflow_hub.sync.open_hub()`` runs the hub in a background thread,
``hub.tracker()`` is the "object with RunTracker's fact methods" the bridge reports to, and the
frames are read with the host's blocking iterator (SPEC H1, O9, §5).
"""

from __future__ import annotations

import time

from celery import chain

from workflow_hub import RootActivity, SnapshotFrame, sync
from workflow_hub.celery import watch_celery
from workflow_hub.reporting import ActivityView

from .app import add, app, boom
from .support import CeleryWorker, check_root, ended, stages


def test_a_chain_that_fails_midway_through_the_sync_host(worker: CeleryWorker) -> None:
    """A chain whose second step fails: the third never runs, the root is one settled failure;
    every frame on the way obeys §5, and the source is recovering until the bridge is ready."""
    view = ActivityView()
    availabilities: list[str] = []
    with sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="celery", include_graph=True)
        with hub.subscribe() as frames, watch_celery(app, tracker, settle=0.3) as watch:
            assert watch.ready.wait(15)
            result = chain(add.s(1, 2), boom.si("second"), add.si(0, 0)).apply_async()
            root_id = result.parent.parent.id

            def root() -> RootActivity | None:
                return view.get(root_id)

            deadline = time.monotonic() + 20
            while (current := root()) is None or not ended(current):
                assert time.monotonic() < deadline, f"the chain did not end: {view.roots}"
                frame = frames.receive(timeout=max(0.0, deadline - time.monotonic()))
                assert view.apply(frame).applied
                if isinstance(frame, SnapshotFrame):
                    availabilities.append(frame.availability)
                for each in view.roots:
                    check_root(each)
        final = hub.snapshot_frame()
    # The subscription starts on the new source (unavailable), then the bridge takes over.
    assert availabilities[:3] == ["unavailable", "recovering", "ready"]
    nodes = stages(current)
    assert sorted(node.status for node in nodes.values()) == ["completed", "failed"]
    assert (current.state, current.reason, current.needs_attention) == ("idle", "quiescent", True)
    assert final.availability == "ready"
