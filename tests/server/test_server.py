"""The HTTP server: endpoints, the SSE wire format, security and shutdown (issue 15; N1, N2, R4).

Every test runs a real server on 127.0.0.1, port 0, inside the test's own nursery, and bounds
every wait with ``fail_after``.
"""

from __future__ import annotations

import functools
import gc
import json
import os

import httpx
import pytest
import trio

from tests.support.builders import heartbeat, root
from tests.support.netutil import WsClosed, hooks_for, served, sse, websocket
from workflow_hub import ContractError, HookRunner, open_hub
from workflow_hub.server import create_app, serve_hub
from workflow_hub.wire import loads

WAIT = 5  # seconds: generous for a loaded 2-core machine; a hang fails instead of blocking


async def test_healthz_answers_without_a_token() -> None:
    async with open_hub() as hub, served(hub, token="s3cret") as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body == {
        "status": "ok",
        "cursor": f"{hub.cursor.epoch}:{hub.cursor.revision}",
        "availability": "unavailable",
    }
    assert response.headers["cache-control"] == "no-store"


async def test_snapshot_is_the_current_frame_with_the_cursor_as_etag() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a"), root("b")])
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}/v1/snapshot")
            again = await client.get(
                f"{url}/v1/snapshot", headers={"If-None-Match": response.headers["etag"]}
            )
    assert response.status_code == 200
    assert loads(type(hub.snapshot_frame()), response.text) == hub.snapshot_frame()
    assert response.headers["etag"] == f'"{hub.cursor.epoch}:{hub.cursor.revision}"'
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["content-type"] == "application/json"
    assert again.status_code == 304


async def test_activity_stream_sends_one_event_per_frame_with_id_name_and_one_data_line() -> None:
    """N2: every frame carries its cursor; the snapshot comes first (O1)."""
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        with trio.fail_after(WAIT):
            async with sse(client, f"{url}/v1/activity") as reader:
                assert reader.response.headers["content-type"].startswith("text/event-stream")
                assert reader.response.headers["cache-control"] == "no-store"
                first = await reader.next()
                changed = publisher.publish_changed(
                    root("b", state="blocked", reason="awaiting_input", blocks=1)
                )
                removed = publisher.publish_removed("a")
                second, third = await reader.events(2)
    assert [e.get("event") for e in (first, second, third)] == ["snapshot", "changed", "removed"]
    assert changed is not None
    assert removed is not None
    assert second.get("id") == f"{changed.epoch}:{changed.revision}"
    assert third.get("id") == f"{removed.epoch}:{removed.revision}"
    for event in (first, second, third):
        assert [key for key, _ in event.fields] == ["id", "event", "data"]
        data = event.get("data")
        assert data is not None
        assert "\n" not in data
        assert json.loads(data)["kind"] == event.get("event")
        assert json.loads(data)["cursor"] == {
            "epoch": event.get(
                "id",
            ).rpartition(":")[0],  # type: ignore[union-attr]
            "revision": int(event.get("id").rpartition(":")[2]),  # type: ignore[union-attr]
        }


async def test_an_idle_stream_gets_keepalive_comments() -> None:
    async with open_hub() as hub, served(hub, keepalive=0.05) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            async with sse(client, f"{url}/v1/activity") as reader:
                snapshot = await reader.next()
                idle = await reader.next()
    assert snapshot.get("event") == "snapshot"
    assert idle.comment
    assert idle.fields == (("", "keep-alive"),)


@pytest.mark.parametrize(
    ("query", "headers", "field"),
    [
        ("?since=nocolon", {}, "since"),
        ("?since=epoch:-1", {}, "since"),
        ("?since=epoch:1x", {}, "since"),
        ("?since=:5", {}, "since"),
        ("", {"Last-Event-ID": "epoch:abc"}, "Last-Event-ID"),
        ("?since=garbage", {"Last-Event-ID": "epoch:1"}, "since"),
    ],
)
async def test_a_malformed_cursor_is_a_400_naming_the_field(
    query: str, headers: dict[str, str], field: str
) -> None:
    """R4: never a silent snapshot."""
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}/v1/activity{query}", headers=headers)
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == field
    assert body["error"]
    assert response.headers["cache-control"] == "no-store"


# --- security ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/snapshot", "/v1/activity", "/v1/events", "/metrics"])
@pytest.mark.parametrize(
    "credentials",
    [{}, {"headers": {"Authorization": "Bearer wrong"}}, {"params": {"token": "wrong"}}],
    ids=["missing", "wrong-header", "wrong-query"],
)
async def test_without_the_right_token_every_endpoint_is_a_401(
    path: str, credentials: dict[str, dict[str, str]]
) -> None:
    async with open_hub() as hub, served(hub, token="s3cret") as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}{path}", **credentials)  # type: ignore[arg-type]
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]
    assert response.headers["cache-control"] == "no-store"


async def test_the_token_is_accepted_as_a_bearer_header_or_a_query_parameter() -> None:
    async with open_hub() as hub, served(hub, token="s3cret") as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            by_header = await client.get(
                f"{url}/v1/snapshot", headers={"Authorization": "Bearer s3cret"}
            )
            by_query = await client.get(f"{url}/v1/snapshot", params={"token": "s3cret"})
            async with sse(client, f"{url}/v1/activity?token=s3cret") as reader:
                first = await reader.next()
    assert by_header.status_code == by_query.status_code == 200
    assert first.get("event") == "snapshot"


async def test_a_websocket_handshake_without_the_token_is_refused_with_401() -> None:
    # A handshake by hand: trio-websocket leaks its socket when a handshake is rejected.
    handshake = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    }
    async with open_hub() as hub, served(hub, token="s3cret") as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            refused = await client.get(f"{url}/v1/ws", headers=handshake)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "example.com"])
async def test_binding_beyond_loopback_without_a_token_is_refused(host: str) -> None:
    async with open_hub() as hub, trio.open_nursery() as nursery:
        with pytest.raises(ContractError) as error:
            await nursery.start(
                lambda task_status: serve_hub(hub, host=host, port=0, task_status=task_status)
            )
    assert error.value.path == "token"
    assert "insecure=True" in str(error.value)


async def test_insecure_allows_a_wildcard_bind_without_a_token() -> None:
    async with (
        open_hub() as hub,
        served(hub, host="0.0.0.0", insecure=True) as url,
        httpx.AsyncClient() as client,
    ):
        port = url.rpartition(":")[2]
        with trio.fail_after(WAIT):
            response = await client.get(f"http://127.0.0.1:{port}/healthz")
    assert response.status_code == 200


async def test_no_cors_headers_unless_origins_are_given() -> None:
    origin = {"Origin": "https://dash.example"}
    async with open_hub() as hub, httpx.AsyncClient() as client:
        async with served(hub) as url:
            with trio.fail_after(WAIT):
                plain = await client.get(f"{url}/v1/snapshot", headers=origin)
        async with served(hub, cors_origins=["https://dash.example"]) as url:
            with trio.fail_after(WAIT):
                allowed = await client.get(f"{url}/v1/snapshot", headers=origin)
                preflight = await client.options(
                    f"{url}/v1/activity",
                    headers={
                        **origin,
                        "Access-Control-Request-Method": "GET",
                        "Access-Control-Request-Headers": "Last-Event-ID",
                    },
                )
    assert not any(name.startswith("access-control-") for name in plain.headers)
    assert allowed.headers["access-control-allow-origin"] == "https://dash.example"
    assert preflight.status_code == 200


def test_create_app_refuses_bad_arguments() -> None:
    with pytest.raises(ContractError) as error:
        create_app("not a hub")  # type: ignore[arg-type]
    assert error.value.path == "hub"


async def test_create_app_refuses_a_runner_of_another_hub() -> None:
    async with open_hub() as hub, open_hub() as other:
        with pytest.raises(ContractError) as error:
            create_app(hub, runner=HookRunner(other))
    assert error.value.path == "runner"


# --- other endpoints -----------------------------------------------------------------------


async def test_metrics_are_served_when_given_and_a_404_otherwise() -> None:
    from prometheus_client import CollectorRegistry

    from workflow_hub.metrics import HubMetrics

    metrics = HubMetrics(CollectorRegistry())
    async with open_hub(metrics=metrics) as hub, httpx.AsyncClient() as client:
        async with served(hub, metrics=metrics) as url:
            with trio.fail_after(WAIT):
                on = await client.get(f"{url}/metrics")
        async with served(hub) as url:
            with trio.fail_after(WAIT):
                off = await client.get(f"{url}/metrics")
    assert on.status_code == 200
    assert "workflow_hub_" in on.text
    assert off.status_code == 404


async def test_the_web_page_is_served_at_the_root() -> None:
    async with open_hub() as hub, served(hub, token="s3cret") as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            page = await client.get(f"{url}/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")


async def test_hook_events_are_a_404_without_a_runner() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}/v1/events")
    assert response.status_code == 404
    assert "HookRunner" in response.json()["error"]


async def test_hook_events_stream_in_hub_order_named_by_type() -> None:
    async with open_hub() as hub, httpx.AsyncClient() as client:
        runner = hooks_for(hub)
        async with served(hub, runner=runner) as url:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            with trio.fail_after(WAIT):
                async with sse(client, f"{url}/v1/events") as reader:
                    await trio.testing.wait_all_tasks_blocked()
                    publisher.publish_changed(root("a"))
                    publisher.publish_heartbeat(heartbeat())
                    events = await reader.events(2)
    assert [e.get("event") for e in events] == ["workflow_activity_changed", "workflow_heartbeat"]
    assert json.loads(events[0].get("data") or "")["type"] == "workflow_activity_changed"
    assert all(e.get("id") is None for e in events)


async def test_a_hook_client_that_falls_behind_is_told_how_many_events_it_missed() -> None:
    async with open_hub() as hub, httpx.AsyncClient() as client:
        runner = hooks_for(hub)
        async with served(hub, runner=runner, events_buffer=3) as url:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [])
            with trio.fail_after(WAIT):
                async with sse(client, f"{url}/v1/events") as reader:
                    await trio.testing.wait_all_tasks_blocked()
                    # Published synchronously: the hook task dispatches all ten before the
                    # client's stream task runs again, so its buffer of three overflows.
                    for index in range(10):
                        publisher.publish_changed(root(f"r{index}"))
                    events = await reader.events(4)
    assert events[0].get("event") == "dropped"
    assert json.loads(events[0].get("data") or "") == {"count": 7}
    assert [json.loads(e.get("data") or "")["root"]["rootRunId"] for e in events[1:]] == [
        "r7",
        "r8",
        "r9",
    ]


# --- WebSocket -----------------------------------------------------------------------------


async def test_websocket_carries_frames_with_their_cursor_text() -> None:
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        with trio.fail_after(WAIT):
            async with websocket(url, "/v1/ws") as ws:
                first = json.loads(await ws.get_message())
                cursor = publisher.publish_changed(root("a"))
                second = json.loads(await ws.get_message())
    assert first["frame"]["kind"] == "snapshot"
    assert first["id"] == f"{hub.cursor.epoch}:1"
    assert cursor is not None
    assert second["id"] == f"{cursor.epoch}:{cursor.revision}"
    assert second["frame"]["kind"] == "changed"


# --- shutdown and resources ----------------------------------------------------------------


async def test_cancelling_the_server_ends_streams_cleanly_within_a_second() -> None:
    server = trio.CancelScope()

    async def run_server(task_status: trio.TaskStatus[str]) -> None:
        with server:
            async with trio.open_nursery() as nursery:
                task_status.started(await nursery.start(functools.partial(serve_hub, hub, port=0)))

    async with open_hub() as hub, httpx.AsyncClient() as client, trio.open_nursery() as outer:
        url: str = await outer.start(run_server)
        with trio.fail_after(WAIT):
            async with (
                sse(client, f"{url}/v1/activity") as reader,
                websocket(url, "/v1/ws") as ws,
            ):
                await reader.next()
                await ws.get_message()
                started = trio.current_time()
                server.cancel()
                with pytest.raises(StopAsyncIteration):
                    await reader.next()
                with pytest.raises(WsClosed) as closed:
                    await ws.get_message()
                elapsed = trio.current_time() - started
    assert reader.ended
    assert closed.value.code == 1001
    assert elapsed < 1.0


async def test_disposing_the_hub_ends_the_streams() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            async with sse(client, f"{url}/v1/activity") as reader:
                await reader.next()
                hub.dispose()
                with pytest.raises(StopAsyncIteration):
                    await reader.next()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _task_count() -> int:
    def count(task: trio.lowlevel.Task) -> int:
        return 1 + sum(count(child) for n in task.child_nurseries for child in n.child_tasks)

    return count(trio.lowlevel.current_root_task())


async def test_a_thousand_dropped_connections_leave_nothing_behind() -> None:
    async with open_hub() as hub, served(hub) as url:
        port = int(url.rpartition(":")[2])
        request = b"GET /v1/activity HTTP/1.1\r\nHost: x\r\n\r\n"

        async def open_and_drop(read: bool) -> None:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            async with stream:
                await stream.send_all(request)
                if read:
                    await stream.receive_some(65536)

        with trio.fail_after(60):
            for index in range(300):  # warm up: lazily created objects and caches settle
                await open_and_drop(read=index % 2 == 0)
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            gc.collect()
            fds = _open_fds()
            tasks = _task_count()
            objects = len(gc.get_objects())
            for index in range(1000):
                await open_and_drop(read=index % 2 == 0)
            # Hypercorn notices closed connections asynchronously; wait until it has.
            for _ in range(1000):
                if not hub.statistics().observers and _open_fds() <= fds:
                    break
                await trio.sleep(0.01)
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        assert hub.statistics().observers == 0
        assert _open_fds() <= fds
        assert _task_count() <= tasks
        gc.collect()
        # Memory: nothing per connection survives. A leak of even one object per connection
        # would be 1 000 more; caches that settle (logging, interned strings) stay far below.
        assert len(gc.get_objects()) - objects < 500


# --- resuming (R2, N2) ---------------------------------------------------------------------


async def test_last_event_id_resumes_without_a_snapshot() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        seen = publisher.publish_changed(root("b"))
        later = publisher.publish_changed(root("c"))
        assert seen is not None
        assert later is not None
        with trio.fail_after(WAIT):
            async with sse(
                client,
                f"{url}/v1/activity",
                headers={"Last-Event-ID": f"{seen.epoch}:{seen.revision}"},
            ) as reader:
                first = await reader.next()
    assert reader.response.headers["x-workflow-hub-resumed"] == "true"
    assert first.get("event") == "changed"
    assert first.get("id") == f"{later.epoch}:{later.revision}"


async def test_the_since_parameter_wins_over_last_event_id() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        first_change = publisher.publish_changed(root("a"))
        publisher.publish_changed(root("b"))
        assert first_change is not None
        epoch = first_change.epoch
        with trio.fail_after(WAIT):
            async with sse(
                client,
                f"{url}/v1/activity?since={epoch}:1",
                headers={"Last-Event-ID": f"{epoch}:{first_change.revision}"},
            ) as reader:
                events = await reader.events(2)
    assert [e.get("id") for e in events] == [f"{epoch}:2", f"{epoch}:3"]


async def test_a_cursor_of_another_epoch_starts_with_a_snapshot() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        hub.register_publisher().publish_snapshot("ready", [root("a")])
        with trio.fail_after(WAIT):
            async with sse(client, f"{url}/v1/activity?since=gone:7") as reader:
                first = await reader.next()
    assert reader.response.headers["x-workflow-hub-resumed"] == "false"
    assert first.get("event") == "snapshot"
    assert first.get("id") == f"{hub.cursor.epoch}:{hub.cursor.revision}"


async def test_websocket_resumes_from_since() -> None:
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        seen = publisher.publish_changed(root("a"))
        later = publisher.publish_removed("a")
        assert seen is not None
        assert later is not None
        with trio.fail_after(WAIT):
            async with websocket(url, f"/v1/ws?since={seen.epoch}:{seen.revision}") as ws:
                first = json.loads(await ws.get_message())
    assert first["id"] == f"{later.epoch}:{later.revision}"
    assert first["frame"]["kind"] == "removed"


async def test_a_websocket_with_a_malformed_since_is_refused_with_400() -> None:
    async with open_hub() as hub, served(hub) as url:
        with trio.fail_after(WAIT), pytest.raises(WsClosed) as refused:
            async with websocket(url, "/v1/ws?since=nonsense"):
                pass  # pragma: no cover
    assert refused.value.code == 400


# --- a stalled client (N1) -----------------------------------------------------------------


async def test_a_stalled_client_overflows_alone_and_never_slows_another() -> None:
    """N1, O4: a client that never reads gets overflow resnapshots; another gets every frame."""
    from workflow_hub import DiagnosticKind, RootActivity

    big = "s" * 2000  # about 2 kB a frame: 4 000 frames are far more than socket buffers hold
    async with open_hub(queue_limit=64) as hub, served(hub) as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        port = int(url.rpartition(":")[2])
        stalled = trio.socket.socket()
        stalled.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4096)
        with stalled, trio.fail_after(60):
            await stalled.connect(("127.0.0.1", port))
            await stalled.send(b"GET /v1/activity HTTP/1.1\r\nHost: x\r\n\r\n")
            async with sse(client, f"{url}/v1/activity") as reader:
                await reader.next()
                received = 0
                for burst in range(80):
                    for index in range(50):
                        revision = publisher.publish_changed(
                            RootActivity(
                                root_run_id=f"r{index}",
                                owner_session_id=big,
                                state="working",
                                reason="executing",
                                active_execution_count=burst,
                                actionable_block_count=0,
                                needs_attention=False,
                            )
                        )
                    events = await reader.events(50)
                    received += len(events)
                    assert all(e.get("event") == "changed" for e in events)
                    assert revision is not None
                    assert events[-1].get("id") == f"{revision.epoch}:{revision.revision}"
    assert received == 4000
    overflows = [d for d in hub.diagnostics() if d.kind is DiagnosticKind.OBSERVER_OVERFLOW]
    assert overflows


def test_the_network_modules_export_what_they_document() -> None:
    from workflow_hub import remote, server

    for module in (server, remote):
        assert len(module.__all__) == len(set(module.__all__))
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type):
                assert value.__module__ == module.__name__, name


async def test_a_cors_preflight_needs_no_token_but_the_request_does() -> None:
    origin = {"Origin": "https://dash.example"}
    async with (
        open_hub() as hub,
        served(hub, token="s3cret", cors_origins=["https://dash.example"]) as url,
        httpx.AsyncClient() as client,
    ):
        with trio.fail_after(WAIT):
            preflight = await client.options(
                f"{url}/v1/snapshot",
                headers={
                    **origin,
                    "Access-Control-Request-Method": "GET",
                    "Access-Control-Request-Headers": "Authorization",
                },
            )
            without = await client.get(f"{url}/v1/snapshot", headers=origin)
            with_token = await client.get(
                f"{url}/v1/snapshot", headers={**origin, "Authorization": "Bearer s3cret"}
            )
    assert preflight.status_code == 200
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    assert without.status_code == 401
    assert without.headers["access-control-allow-origin"] == "https://dash.example"
    assert with_token.status_code == 200
    assert with_token.headers["access-control-allow-origin"] == "https://dash.example"
