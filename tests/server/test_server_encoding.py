"""Frames are encoded once and backlogs joined once, whatever the number of clients (N1).

The encoder is internal (``workflow_hub.server._encode``); these tests are about it.
"""

from __future__ import annotations

import httpx
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from tests.support.builders import root
from tests.support.netutil import sse
from workflow_hub import ChangedFrame, Cursor, Frame, open_hub
from workflow_hub.server import create_app
from workflow_hub.server._encode import FrameEncoder


def _frames(count: int) -> list[Frame]:
    return [
        ChangedFrame(cursor=Cursor(epoch="e", revision=index + 1), root=root(f"r{index}"))
        for index in range(count)
    ]


def test_a_backlog_is_joined_once_and_reused_for_the_same_frames() -> None:
    encoder = FrameEncoder()
    frames = _frames(5)
    first = encoder.backlog(frames)
    again = encoder.backlog(list(frames))
    assert again == first
    assert encoder.batches_joined == 1
    assert encoder.encodings == 5
    assert first == b"".join(encoder.sse(frame) for frame in frames)


def test_a_different_backlog_is_never_served_from_the_cache() -> None:
    encoder = FrameEncoder()
    frames = _frames(6)
    encoder.backlog(frames[0:5])
    shorter = encoder.backlog([frames[0], *frames[2:5]])  # same first and last, one fewer
    assert shorter == b"".join(encoder.sse(f) for f in (frames[0], *frames[2:5]))
    assert encoder.batches_joined == 2


def test_a_backlog_of_one_frame_is_its_event() -> None:
    encoder = FrameEncoder()
    (frame,) = _frames(1)
    assert encoder.backlog([frame]) == encoder.sse(frame)
    assert encoder.batches_joined == 0


async def test_each_frame_is_encoded_once_for_many_clients() -> None:
    async with open_hub() as hub, httpx.AsyncClient() as client:
        app = create_app(hub)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        # The app from create_app, served as a user mounting it would, to read its encoder.
        async with trio.open_nursery() as nursery:
            config = Config()
            config.bind = ["127.0.0.1:0"]
            config.errorlog = None
            binds = await nursery.start(serve, app, config)  # type: ignore[arg-type]
            base = binds[0]
            with trio.fail_after(10):
                async with (
                    sse(client, f"{base}/v1/activity") as a,
                    sse(client, f"{base}/v1/activity") as b,
                    sse(client, f"{base}/v1/activity") as c,
                ):
                    for reader in (a, b, c):
                        await reader.next()
                    before = app.encoder.encodings
                    for index in range(30):
                        publisher.publish_changed(root(f"r{index}"))
                    for reader in (a, b, c):
                        await reader.events(30)
            nursery.cancel_scope.cancel()
    assert app.encoder.encodings - before == 30
