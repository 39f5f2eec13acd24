"""The resuming client, ``workflow_hub.remote`` (issue 15; N1, N2, R2).

Loopback only, port 0, ``fail_after`` around every wait.
"""

from __future__ import annotations

import functools
import itertools

import pytest
import trio

from tests.support.builders import root
from tests.support.netutil import CuttingProxy, served
from workflow_hub import ChangedFrame, Cursor, Frame, RemovedFrame, SnapshotFrame, open_hub
from workflow_hub.remote import Backoff, RemoteAuthError, RemoteError, RemoteHub, open_remote
from workflow_hub.reporting import ActivityView, run_reporter

WAIT = 10
FAST = Backoff(initial=0.005, maximum=0.05)


async def test_a_remote_stream_yields_the_snapshot_then_every_frame_with_its_cursor() -> None:
    """O1, O9 over the network: the same frames a local subscriber gets."""
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        with trio.fail_after(WAIT):
            async with open_remote(url) as stream, hub.subscribe() as local:
                first = await stream.receive()
                assert first == await local.receive()
                publisher.publish_changed(root("b"))
                publisher.publish_removed("a")
                remote_frames = [await stream.receive() for _ in range(2)]
                local_frames = [await local.receive() for _ in range(2)]
                assert stream.connected
    assert remote_frames == local_frames
    assert stream.cursor == hub.cursor
    assert stream.reconnects == 0


async def test_a_remote_stream_carries_why_the_source_is_unknown() -> None:
    """C3 over the network: a recovering snapshot's ``detail`` reaches a remote subscriber,
    first as its snapshot, then as a broadcast frame, and is gone from the ready one after."""
    why = "broker unreachable: ConnectionError: [Errno 111] Connection refused"
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("unavailable", detail="starting")
        with trio.fail_after(WAIT):
            async with open_remote(url) as stream:
                first = await stream.receive()
                assert isinstance(first, SnapshotFrame)
                assert first.detail == "starting"
                publisher.publish_snapshot("recovering", detail=why)
                publisher.publish_snapshot("ready", [root("a")])
                recovering, ready = [await stream.receive() for _ in range(2)]
    assert recovering == SnapshotFrame(
        cursor=recovering.cursor, availability="recovering", detail=why
    )
    assert isinstance(ready, SnapshotFrame)
    assert ready.detail is None


async def test_run_reporter_works_unchanged_on_a_remote_hub() -> None:
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        changes = trio.Event()

        def render(view: ActivityView, change: object) -> None:
            if view.cursor == hub.cursor and len(view.roots) == 2:
                changes.set()

        with trio.fail_after(WAIT):
            async with trio.open_nursery() as nursery:
                view = await nursery.start(run_reporter, RemoteHub(url), render)
                publisher.publish_changed(root("b"))
                await changes.wait()
                nursery.cancel_scope.cancel()
    assert [r.root_run_id for r in view.roots] == ["a", "b"]


async def test_a_401_is_raised_at_once_without_retrying() -> None:
    async with open_hub() as hub, served(hub, token="s3cret") as url:
        with trio.fail_after(WAIT), pytest.raises(RemoteAuthError) as error:
            async with open_remote(
                url, token="wrong", backoff=Backoff(initial=60, maximum=60)
            ) as stream:
                await stream.receive()
    assert error.value.status == 401
    assert "token" in str(error.value)


async def test_the_right_token_is_sent_as_a_bearer_header() -> None:
    async with open_hub() as hub, served(hub, token="s3cret") as url:
        with trio.fail_after(WAIT):
            async with open_remote(url, token="s3cret") as stream:
                first = await stream.receive()
    assert isinstance(first, SnapshotFrame)


async def test_another_4xx_is_raised() -> None:
    async with open_hub() as hub, served(hub) as url:
        with trio.fail_after(WAIT), pytest.raises(RemoteError) as error:
            async with open_remote(
                f"{url}/not-here", backoff=Backoff(initial=60, maximum=60)
            ) as stream:
                await stream.receive()
    assert error.value.status == 404


async def test_a_refused_connection_is_retried_until_the_server_is_up() -> None:
    """Network errors are retried with backoff, and the stream starts once the server listens."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    for listener in listeners:
        await listener.aclose()  # nothing listens on the port now: connections are refused
    async with open_hub() as hub, trio.open_nursery() as nursery:
        with trio.fail_after(WAIT):
            async with open_remote(f"http://127.0.0.1:{port}", backoff=FAST) as stream:
                nursery.start_soon(functools.partial(_serve_later, hub, port))
                first = await stream.receive()
        nursery.cancel_scope.cancel()
    assert isinstance(first, SnapshotFrame)
    assert not stream.connected


async def _serve_later(hub: object, port: int) -> None:
    from workflow_hub.server import serve_hub

    await trio.sleep(0.1)
    await serve_hub(hub, port=port)  # type: ignore[arg-type]


def test_backoff_grows_exponentially_with_jitter_up_to_the_maximum() -> None:
    import random

    backoff = Backoff(initial=0.1, maximum=1.0, factor=2.0)
    rng = random.Random(1)
    delays = [backoff.delay(attempt, rng) for attempt in range(10)]
    for attempt, delay in enumerate(delays):
        ceiling = min(1.0, 0.1 * 2**attempt)
        assert ceiling / 2 <= delay <= ceiling
    assert len(set(delays)) == len(delays)


def test_backoff_refuses_nonsense() -> None:
    from workflow_hub import ContractError

    with pytest.raises(ContractError) as error:
        Backoff(initial=0)
    assert error.value.path == "initial"


@pytest.mark.parametrize(
    ("field", "arguments"),
    [
        ("backoff", {"backoff": "fast"}),
        ("backoff", {"backoff": 0.5}),
        ("seed", {"seed": "1"}),
        ("seed", {"seed": True}),
        ("read_timeout", {"read_timeout": float("nan")}),
        ("read_timeout", {"read_timeout": float("inf")}),
        ("read_timeout", {"read_timeout": True}),
        ("read_timeout", {"read_timeout": "45"}),
    ],
)
def test_remote_hub_refuses_bad_arguments_at_the_call(
    field: str, arguments: dict[str, object]
) -> None:
    """Issue 37: ``RemoteHub(url, backoff="fast")`` was accepted and failed at the first
    reconnect; a bad argument is refused when it is given, naming it."""
    from workflow_hub import ContractError

    with pytest.raises(ContractError) as error:
        RemoteHub("http://127.0.0.1:1", **arguments)  # type: ignore[arg-type]
    assert error.value.path == field


async def test_random_drops_across_5000_frames_lose_nothing_and_resume_without_snapshots() -> None:
    """N2: cut at random points (mid-event included), the client resumes from its last cursor.

    It ends with exactly the hub's state, got every broadcast frame in order (a snapshot only
    where the hub broadcast one), and every reconnection resumed: the publisher never runs
    more than a burst ahead of the client, so the history always holds what it missed.
    """
    total = 5000
    burst = 25
    async with open_hub() as hub, served(hub) as url, trio.open_nursery() as nursery:
        proxy = CuttingProxy(int(url.rpartition(":")[2]), seed=15, max_bytes=12_000)
        proxy_port = await nursery.start(proxy.run)
        publisher = hub.register_publisher()
        caught_up = trio.Event()
        target: list[Cursor] = []
        received: list[Frame] = []
        view = ActivityView()
        resumed_on_reconnect: list[bool] = []

        async def consume() -> None:
            async with open_remote(f"http://127.0.0.1:{proxy_port}", backoff=FAST) as stream:
                reconnects = 0
                async for frame in stream:
                    if stream.reconnects != reconnects:
                        reconnects = stream.reconnects
                        # Only a reconnection with a cursor can resume (a cut before the first
                        # frame leaves none, and a snapshot is right then).
                        if received:
                            resumed_on_reconnect.append(stream.lease.resumed)
                    received.append(frame)
                    view.apply(frame)
                    if target and frame.cursor == target[-1]:
                        caught_up.set()

        nursery.start_soon(consume)
        with trio.fail_after(120):
            cursor = publisher.publish_snapshot("ready", [])
            count = 1
            while count < total:
                for _ in range(min(burst, total - count)):
                    index = count % 40
                    if count % 500 == 0:
                        roots = [root(f"r{i}") for i in range(0, 40, 3)]
                        cursor = publisher.publish_snapshot("ready", roots)
                    elif count % 7 == 0:
                        cursor = publisher.publish_removed(f"r{index}")
                    else:
                        cursor = publisher.publish_changed(root(f"r{index}", active=count))
                    assert cursor is not None
                    count += 1
                assert cursor is not None
                caught_up = trio.Event()
                target.append(cursor)
                await caught_up.wait()
        nursery.cancel_scope.cancel()

    # Every publish advanced the revision by one and broadcast one frame.
    final = hub.snapshot_frame()
    assert view.cursor == final.cursor
    assert view.in_sync
    assert list(view.roots) == list(final.roots or ())
    assert proxy.cuts >= 50
    for before, after in itertools.pairwise(received):
        if isinstance(after, SnapshotFrame):
            assert after.cursor.revision > before.cursor.revision
        else:
            assert after.cursor.revision == before.cursor.revision + 1
            assert isinstance(after, ChangedFrame | RemovedFrame)
    # Only the first frame and the hub's own broadcast snapshots are snapshots (revision r is
    # the publish made when count was r - 1).
    snapshots = [f.cursor.revision for f in received if isinstance(f, SnapshotFrame)]
    assert snapshots[1:] == list(range(501, total + 1, 500))
    assert resumed_on_reconnect
    assert all(resumed_on_reconnect)


async def test_a_5xx_is_retried_until_the_server_answers() -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from starlette.responses import JSONResponse
    from starlette.types import Receive, Scope, Send

    from workflow_hub.server import create_app

    async with open_hub() as hub, trio.open_nursery() as nursery:
        app = create_app(hub)
        refusals = [503, 500]

        async def flaky(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and refusals:
                await JSONResponse({"error": "busy"}, status_code=refusals.pop(0))(
                    scope, receive, send
                )
                return
            await app(scope, receive, send)

        config = Config()
        config.bind = ["127.0.0.1:0"]
        config.errorlog = None
        binds = await nursery.start(serve, flaky, config)  # type: ignore[arg-type]
        with trio.fail_after(WAIT):
            async with open_remote(binds[0], backoff=FAST) as stream:
                first = await stream.receive()
        nursery.cancel_scope.cancel()
    assert isinstance(first, SnapshotFrame)
    assert refusals == []


async def test_a_cursor_the_history_no_longer_covers_resyncs_from_a_snapshot() -> None:
    """R2, N2: past the history the client starts over from a snapshot, and says so."""
    async with open_hub(history_limit=4) as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        old = publisher.publish_changed(root("a"))
        for index in range(10):
            publisher.publish_changed(root(f"r{index}"))
        with trio.fail_after(WAIT):
            async with open_remote(url, since=old) as stream:
                first = await stream.receive()
    assert isinstance(first, SnapshotFrame)
    assert first.cursor == hub.cursor
    assert not stream.lease.resumed


async def test_a_cursor_the_history_covers_resumes_without_a_snapshot() -> None:
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        seen = publisher.publish_changed(root("a"))
        later = publisher.publish_removed("a")
        with trio.fail_after(WAIT):
            async with open_remote(url, since=seen) as stream:
                first = await stream.receive()
    assert isinstance(first, RemovedFrame)
    assert first.cursor == later
    assert stream.lease.resumed


async def test_a_url_that_is_not_an_event_stream_is_an_error_not_a_retry_loop() -> None:
    async with open_hub() as hub, served(hub) as url:
        # The client asks for URL + "/v1/activity"; with a trailing "#" that part becomes a
        # fragment, so it reaches /healthz: a 200 with JSON, as from some other service.
        with trio.fail_after(WAIT), pytest.raises(RemoteError) as error:
            async with open_remote(f"{url}/healthz#", backoff=Backoff(initial=60, maximum=60)) as s:
                await s.receive()
    assert error.value.status == 200
    assert "not an event stream" in str(error.value)
