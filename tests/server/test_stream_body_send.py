"""An event stream's body goes past the application's own layers, never past anything that
wraps the application (issue 29, fifth pass): driven as ASGI, in-process, with the token and
CORS on, so every layer of the application is there."""

from __future__ import annotations

import trio
from starlette.types import Message, Scope

from tests.support.builders import root
from workflow_hub import open_hub
from workflow_hub.server import create_app

WAIT = 5


async def test_an_outer_layer_sees_the_start_and_every_body_message_of_a_stream() -> None:
    """The start went through CORS and ``NoStore`` (their headers are on it); the bodies reach
    the ``send`` the application was called with, in order: the ``retry:`` field and the
    snapshot first, then each change (S1, S3)."""
    seen: list[Message] = []
    snapshot = trio.Event()
    bodies = trio.Event()

    async def outer_send(message: Message) -> None:
        seen.append(message)
        if message.get("body"):
            snapshot.set()
        if sum(m.get("body", b"").count(b"event: changed") for m in seen) >= 2:
            bodies.set()

    async def receive() -> Message:
        if not seen:
            return {"type": "http.request", "body": b"", "more_body": False}
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/v1/activity",
        "raw_path": b"/v1/activity",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"hub"),
            (b"authorization", b"Bearer s3cret"),
            (b"origin", b"https://dash.example"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    async with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("r1")])
        app = create_app(hub, token="s3cret", cors_origins=["https://dash.example"])
        with trio.fail_after(WAIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(app, scope, receive, outer_send)
                await snapshot.wait()
                publisher.publish_changed(root("r1", active=2))
                publisher.publish_changed(root("r1", active=3))
                await bodies.wait()
                nursery.cancel_scope.cancel()
    start, *rest = seen
    assert start["type"] == "http.response.start"
    headers = dict(start["headers"])
    assert headers[b"access-control-allow-origin"] == b"https://dash.example"
    assert headers[b"cache-control"] == b"no-store"
    assert headers[b"content-type"] == b"text/event-stream; charset=utf-8"
    assert all(m["type"] == "http.response.body" and m["more_body"] for m in rest)
    body = b"".join(m["body"] for m in rest).decode()
    assert body.startswith("retry: 2000\n")
    kinds = [line for line in body.split("\n") if line.startswith("event: ")]
    assert kinds == ["event: snapshot", "event: changed", "event: changed"]
