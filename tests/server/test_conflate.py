"""``/v1/activity?conflate=1`` and ``RemoteHub.subscribe(conflate=True)`` (issue 29; N2, R4), and
``?interval=`` (``subscribe(conflate=True, interval=…)``, issue 38).

A client that asks for conflation and lags receives each root's latest frame instead of every
intermediate one. Here the client lags by construction: 300 changes are published without a
checkpoint, so the server's stream task sees them as one backlog (more than the queue limit,
256, which a conflating queue conflates instead of overflowing).
"""

from __future__ import annotations

import httpx
import pytest
import trio

from tests.support.builders import root
from tests.support.netutil import served, sse
from workflow_hub import (
    ChangedFrame,
    ContractError,
    DiagnosticKind,
    RemovedFrame,
    SnapshotFrame,
    open_hub,
)
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


# --- ?interval= (issue 38): a paced conflating stream ---------------------------------------


async def test_an_interval_out_of_range_or_without_conflation_is_a_400_naming_it() -> None:
    """C1 at the edge: seconds above 0 and at most 10, and only with conflate=1."""
    bad = [
        "conflate=1&interval=0",
        "conflate=1&interval=-1",
        "conflate=1&interval=10.5",
        "conflate=1&interval=nan",
        "conflate=1&interval=inf",
        "conflate=1&interval=soon",
        "conflate=1&interval=",
        "interval=0.1",
        "conflate=0&interval=0.1",
    ]
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            responses = [await client.get(f"{url}/v1/activity?{query}") for query in bad]
    assert [r.status_code for r in responses] == [400] * len(bad)
    assert {r.json()["field"] for r in responses} == {"interval"}


async def test_a_paced_stream_writes_each_roots_latest_once_an_interval() -> None:
    """N2 with ?interval=: 50 changes of one root, each with time for the server to write it,
    reach a client that asked for 0.5 s as a few frames, the last one the root's last state."""
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        with trio.fail_after(WAIT):
            async with RemoteHub(url).subscribe(conflate=True, interval=0.5) as stream:
                assert isinstance(await stream.receive(), SnapshotFrame)
                for active in range(50):
                    publisher.publish_changed(root("a", active=active))
                    await trio.sleep(0.001)  # an unpaced stream writes each one
                frames = [await stream.receive()]
                while frames[-1].root != root("a", active=49):  # type: ignore[union-attr]
                    frames.append(await stream.receive())
    assert all(isinstance(frame, ChangedFrame) for frame in frames)
    assert len(frames) <= 5  # 50 unpaced; a few when the publishing took several intervals
    assert frames[-1].cursor == hub.cursor


async def test_a_paced_stream_writes_early_when_half_its_queue_is_pending() -> None:
    """The pause ends when half the queue limit is pending, not at the end of a 10 s interval:
    a paced queue never overflows into a snapshot for waiting (O4)."""
    async with open_hub(queue_limit=8) as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        with trio.fail_after(WAIT):
            async with RemoteHub(url).subscribe(conflate=True, interval=10) as stream:
                assert isinstance(await stream.receive(), SnapshotFrame)
                for name in "abcd":  # four roots: half of the limit, nothing to conflate
                    publisher.publish_changed(root(name))
                frames = [await stream.receive() for _ in range(4)]
    assert [frame.root.root_run_id for frame in frames] == list("abcd")  # type: ignore[union-attr]
    assert not [d for d in hub.diagnostics() if d.kind is DiagnosticKind.OBSERVER_OVERFLOW]


async def test_a_remote_subscription_refuses_an_interval_it_cannot_ask_for() -> None:
    """C1 in the client: checked before any request, naming the field."""
    remote = RemoteHub("http://127.0.0.1:9")
    for conflate, interval in [(False, 0.1), (True, 0), (True, 11), (True, True), (True, "1")]:
        with pytest.raises(ContractError) as raised:
            async with remote.subscribe(conflate=conflate, interval=interval):  # type: ignore[arg-type]
                pass
        assert raised.value.path == "interval"
