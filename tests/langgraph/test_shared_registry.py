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
from workflow_hub.langgraph._shared import registered, shared_state
from workflow_hub.tracker import RunTracker


async def test_a_dropped_run_tracker_is_forgotten() -> None:
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
        key = id(tracker)
        assert shared_state(tracker) is shared_state(tracker)
        assert registered(key)
        del tracker
        gc.collect()
        assert not registered(key)


def test_a_dropped_thread_host_tracker_is_forgotten() -> None:
    with hub_sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="s")
        key = id(tracker)
        shared_state(tracker)
        assert registered(key)
        del tracker
        gc.collect()
        assert not registered(key)


def test_a_tracker_collected_while_the_registry_is_busy_does_not_block_it() -> None:
    """The registry's weak-reference callback runs wherever the garbage collector does, which
    may be inside ``shared_state`` holding the registry's lock (a CI run hung so): it only
    queues the dead tracker, forgotten at the registry's next use."""
    from workflow_hub.langgraph import _shared

    class Tracker:
        def __init__(self) -> None:
            self.cycle = self  # freed by the collector, not by its reference count

    tracker = Tracker()
    key = id(tracker)
    shared_state(tracker)
    del tracker
    with _shared._registry_lock:  # the collector runs while the lock is held
        gc.collect()
    assert not registered(key)
