"""Shutdown with clients that never read: every stream ends, and the server is gone, within a
second (issue 23, defect 1; N1).

hypercorn's trio worker shields its socket writes from cancellation, so a client whose socket
buffers are full used to hold ``serve_hub`` open until the client itself went away.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import httpx
import trio
import trio.testing

from tests.server.stalled import http_get, port_of, stalled_clients, ws_handshake
from tests.support.builders import root
from tests.support.netutil import SseReader, hooks_for, sse
from workflow_hub import RootActivity, open_hub
from workflow_hub.server import serve_hub
from workflow_hub.server._serve import SHUTDOWN_GRACE

WAIT = 10


def big_root(name: str, size: int) -> RootActivity:
    return RootActivity(
        root_run_id=name,
        owner_session_id="s" * size,
        state="working",
        reason="executing",
        active_execution_count=1,
        actionable_block_count=0,
        needs_attention=False,
    )


async def wait_for(condition: Callable[[], bool]) -> None:
    """Poll ``condition``: what it watches (connections being accepted) has no event to wait on."""
    while not condition():  # noqa: ASYNC110
        await trio.sleep(0.01)


async def read_to_the_end(reader: SseReader) -> None:
    with trio.fail_after(WAIT):
        while True:
            try:
                await reader.next()
            except StopAsyncIteration:
                return


async def test_cancelling_the_server_with_stalled_clients_ends_within_a_second(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """100 stalled SSE, 20 WebSocket and 20 ``/v1/events`` clients, each with its writes blocked,
    and one well-behaved client that still sees its stream end properly."""
    server = trio.CancelScope()
    done = trio.Event()

    async def run_server(task_status: trio.TaskStatus[str]) -> None:
        try:
            with server:
                async with trio.open_nursery() as nursery:
                    url = await nursery.start(
                        functools.partial(serve_hub, hub, port=0, runner=runner)
                    )
                    task_status.started(url)
        finally:
            done.set()

    async with open_hub() as hub, httpx.AsyncClient() as client, trio.open_nursery() as outer:
        runner = hooks_for(hub)
        publisher = hub.register_publisher()
        # A snapshot of about 1 MB: far more than a 4 kB receive window and a socket's send buffer.
        publisher.publish_snapshot("ready", [big_root(f"r{n}", 50_000) for n in range(20)])
        url: str = await outer.start(run_server)
        port = port_of(url)
        requests = [http_get("/v1/activity")] * 100
        requests += [ws_handshake("/v1/ws")] * 20
        requests += [http_get("/v1/events")] * 20
        with trio.fail_after(60):
            async with (
                stalled_clients(port, requests),
                sse(client, f"{url}/v1/activity") as good,
                trio.open_nursery() as reading,
            ):
                await good.next()
                reading.start_soon(read_to_the_end, good)
                # Every stalled client is attached (hook clients are no hub observers).
                await wait_for(lambda: hub.statistics().observers == 121)
                # Hook events for the /v1/events clients: 2 MB each.
                for n in range(40):
                    publisher.publish_changed(big_root(f"h{n}", 50_000))
                publisher.publish_changed(root("small"))
                await trio.testing.wait_all_tasks_blocked(cushion=0.2)
                started = trio.current_time()
                server.cancel()
                with trio.fail_after(WAIT):
                    await done.wait()
                elapsed = trio.current_time() - started
    assert good.ended
    # The server's own bound is its grace, then a cut half a second later (1.3 s). A stalled
    # client used to hold it open for as long as the client stayed (here WAIT would fail the
    # test). On the autojump clock only the server's timers move time (everything here is in
    # this trio run, the clients too): the bound holds exactly, however loaded the machine.
    assert elapsed <= SHUTDOWN_GRACE + 0.5, elapsed
