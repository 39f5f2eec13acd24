"""Memory bounded per client, whatever the roots (issue 37; N1, N2, R2).

Clients that never read, on a hub whose snapshot is far larger than a client's budget: each
stalled client holds a bounded number of bytes of its own beyond the snapshots' shared
encodings, one over its budget is closed (its connection cut, its subscription ended), and it
can resume from its last event.
"""

from __future__ import annotations

import functools
import tracemalloc
from collections.abc import Callable
from contextlib import ExitStack

import trio

from tests.server.stalled import http_get, port_of, stalled_socket, ws_handshake
from workflow_hub import RootActivity, open_hub
from workflow_hub.server import HubApp
from workflow_hub.server._encode import SNAPSHOTS_KEPT, FrameEncoder
from workflow_hub.server._serve import run_asgi
from workflow_hub.server._streams import CLIENT_BUDGET, WRITE_SLICE

WAIT = 30
ROOTS = 4000  # a snapshot of about 700 KB: more than twice a client's budget


def make_root(index: int, executions: int = 1) -> RootActivity:
    return RootActivity(
        root_run_id=f"root-{index:05d}-" + "x" * 100,
        owner_session_id="session",
        state="working",
        reason="executing",
        active_execution_count=executions,
        actionable_block_count=0,
        needs_attention=False,
    )


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition``: a socket's buffers filling up has no event to wait on."""
    while not condition():  # noqa: ASYNC110
        await trio.sleep(0.01)


async def read_to_end(sock: trio.socket.SocketType) -> int:
    total = 0
    while chunk := await sock.recv(1 << 16):
        total += len(chunk)
    return total


async def test_stalled_clients_hold_little_of_their_own_and_are_cut_over_budget() -> None:
    """N1: three clients that never read (two SSE streams, one WebSocket) on a hub whose
    snapshot is about 700 KB. While they stall, what the server holds for them on their own
    stays within their budgets (the snapshot's encoding is shared, never copied per client);
    once newer snapshots have replaced theirs in the encoder, each is closed and its hub
    subscription ends, and the memory they held is returned."""
    requests = [
        http_get("/v1/activity"),
        http_get("/v1/activity?conflate=1"),
        ws_handshake("/v1/ws"),
    ]
    with trio.fail_after(WAIT):
        async with open_hub() as hub, trio.open_nursery() as nursery:
            publisher = hub.register_publisher()
            roots = [make_root(index) for index in range(ROOTS)]
            publisher.publish_snapshot("ready", roots)
            app = HubApp(hub)
            url = await nursery.start(
                functools.partial(run_asgi, app, app, host="127.0.0.1", port=0, keepalive=15.0)
            )
            snapshot_size = len(FrameEncoder().sse(hub.snapshot_frame()))
            assert snapshot_size > 2 * CLIENT_BUDGET
            tracemalloc.start()
            with ExitStack() as held:
                held.callback(tracemalloc.stop)
                floor = tracemalloc.get_traced_memory()[0]
                sockets = [
                    held.enter_context(await stalled_socket(port_of(url), request))
                    for request in requests
                ]
                writers = app.budget._writers
                await until(
                    lambda: (
                        len(writers) == len(requests) and all(writer.sending for writer in writers)
                    )
                )
                # Stalled: beyond the encodings the encoder shares (at most SNAPSHOTS_KEPT
                # snapshots, in their SSE, JSON and WebSocket forms), each client costs its budget.
                stalled = tracemalloc.get_traced_memory()[0] - floor
                shared = SNAPSHOTS_KEPT * 3 * snapshot_size
                assert stalled <= shared + len(requests) * CLIENT_BUDGET, (stalled, shared)
                assert app.budget.held() <= len(requests) * (snapshot_size + WRITE_SLICE)

                # Newer snapshots (clients attaching at later revisions) replace theirs.
                revision = 0
                while app.budget.closed < len(requests):
                    revision += 1
                    publisher.publish_changed(make_root(revision % ROOTS, 2))
                    app.encoder.sse(hub.snapshot_frame())
                    await trio.lowlevel.checkpoint()
                # Cut: each stalled socket reads to its end (what its buffers held, then EOF).
                for sock in sockets:
                    await read_to_end(sock)
                await until(lambda: not writers and hub.statistics().observers == 0)
                assert app.budget.held() == 0
                left = tracemalloc.get_traced_memory()[0] - floor
                assert left <= SNAPSHOTS_KEPT * 3 * snapshot_size + WRITE_SLICE, left
            nursery.cancel_scope.cancel()
