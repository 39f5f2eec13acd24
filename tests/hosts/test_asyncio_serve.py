"""``await hub.serve()`` from asyncio, observed by ``workflow_hub.remote`` in another process.

SPEC H1 and N1/N2: the server runs inside the trio guest, and leaving the asyncio host delivers
the final ``unavailable`` frame to the remote observer before the server closes (the bug the
issue reports: a hand-made guest run lost it, and ``watch`` kept showing the roots as idle).
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import httpx

from workflow_hub import SnapshotFrame
from workflow_hub.asyncio import open_hub
from workflow_hub.wire import loads

from .remote import watching
from .support import run


def test_a_remote_watch_sees_the_hub_and_then_the_final_unavailable_frame() -> None:
    """H1, N1: serve from asyncio; ``watch`` in another process sees the clean exit."""

    async def main() -> list[str]:
        async with AsyncExitStack() as processes:
            async with open_hub() as hub:
                tracker = hub.tracker(owner_session_id="session-1")
                tracker.start()
                tracker.add_run("run-1", status="running")
                url = await hub.serve(host="127.0.0.1", port=0)
                watcher = await processes.enter_async_context(watching(url))
                await watcher.wait_for(lambda line: "ready roots=1" in line)
                tracker.add_run("run-2", status="running")
                await watcher.wait_for(lambda line: "run-2" in line)
                # Now leave the host while the remote observer is connected.
            final = await watcher.wait_for(lambda line: "unavailable" in line)
            assert final.startswith("frame snapshot")
            return watcher.lines

    lines = run(main)
    frames = [line for line in lines if line.startswith("frame ")]
    assert "unavailable" in frames[-1]
    assert "ready" not in frames[-1]


def test_the_server_answers_from_asyncio_code_with_an_async_client() -> None:
    """H1: the hub's server, inside the guest, answers an asyncio HTTP client in the same loop."""

    async def main() -> None:
        async with open_hub() as hub:
            hub.register_publisher().publish_snapshot("ready", [])
            url = await hub.serve(port=0)
            async with httpx.AsyncClient(timeout=10) as client:
                response = await client.get(f"{url}/v1/snapshot")
            assert response.status_code == 200
            frame = loads(SnapshotFrame, response.text)
            assert frame == hub.snapshot_frame()

    run(main)
