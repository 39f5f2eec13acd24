"""``/v1/activity?conflate=1`` and ``RemoteHub.subscribe(conflate=True)`` (issue 29; N2, R4).

A client that asks for conflation and lags receives each root's latest frame instead of every
intermediate one. Here the client lags by construction: 300 changes are published without a
checkpoint, so the server's stream task sees them as one backlog (more than the queue limit,
256, which a conflating queue conflates instead of overflowing).
"""

from __future__ import annotations

import httpx
import trio

from tests.support.builders import root
from tests.support.netutil import served, sse
from workflow_hub import ChangedFrame, DiagnosticKind, RemovedFrame, SnapshotFrame, open_hub
from workflow_hub.remote import RemoteHub

WAIT = 5  # seconds: generous for a loaded 2-core machine; a hang fails instead of blocking


async def test_a_conflate_value_other_than_0_or_1_is_a_400_naming_it() -> None:
    """C1 at the edge: never a silent default."""
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}/v1/activity?conflate=yes")
    assert response.status_code == 400
    assert response.json()["field"] == "conflate"


async def test_a_lagging_sse_client_gets_each_roots_latest_frame() -> None:
    """N2 with ?conflate=1: one event for 300 changes of one root, carrying the last cursor."""
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a"), root("b")])
        with trio.fail_after(WAIT):
            async with sse(client, f"{url}/v1/activity?conflate=1") as reader:
                assert (await reader.next()).get("event") == "snapshot"
                for active in range(300):
                    last = publisher.publish_changed(root("a", active=active))
                removed = publisher.publish_removed("b")
                changed_event, removed_event = await reader.events(2)
    assert last is not None
    assert removed is not None
    assert changed_event.get("event") == "changed"
    assert changed_event.get("id") == f"{last.epoch}:{last.revision}"
    assert removed_event.get("id") == f"{removed.epoch}:{removed.revision}"
    assert not [d for d in hub.diagnostics() if d.kind is DiagnosticKind.OBSERVER_OVERFLOW]


async def test_a_remote_subscription_can_ask_for_conflation() -> None:
    """The same through ``RemoteHub``: the frames fold to the hub's state, at its cursor."""
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a"), root("b")])
        with trio.fail_after(WAIT):
            async with RemoteHub(url).subscribe(conflate=True) as stream:
                assert isinstance(await stream.receive(), SnapshotFrame)
                for active in range(300):
                    publisher.publish_changed(root("a", active=active))
                    publisher.publish_changed(root("b", active=active))
                publisher.publish_removed("b")
                frames = [await stream.receive(), await stream.receive()]
    assert isinstance(frames[0], ChangedFrame)
    assert frames[0].root == root("a", active=299)
    assert isinstance(frames[1], RemovedFrame)
    assert frames[1].cursor == hub.cursor
