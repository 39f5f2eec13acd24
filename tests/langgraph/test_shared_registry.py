"""The wrappers' shared state of a tracker is forgotten with the tracker (issue 38).

``watch(graph, tracker)`` built per request finds its tracker's shared state by the tracker's
identity; both trackers take weak references, so a tracker that is dropped (a service that
builds one per deployment, say) takes its threads' mappers with it instead of keeping them for
the life of the process.
"""

from __future__ import annotations

import gc

from workflow_hub import open_hub
from workflow_hub import sync as hub_sync
from workflow_hub.langgraph._shared import _registry, shared_state
from workflow_hub.tracker import RunTracker


async def test_a_dropped_run_tracker_is_forgotten() -> None:
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
        key = id(tracker)
        assert shared_state(tracker) is shared_state(tracker)
        assert key in _registry
        del tracker
        gc.collect()
        assert key not in _registry


def test_a_dropped_thread_host_tracker_is_forgotten() -> None:
    with hub_sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="s")
        key = id(tracker)
        shared_state(tracker)
        assert key in _registry
        del tracker
        gc.collect()
        assert key not in _registry
