"""``serve_hub``: the hub's HTTP server as one task in the scheduler's own trio nursery."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence
from functools import partial
from typing import Final

import trio
from hypercorn.config import Config
from starlette.types import ASGIApp

from .._contract import ContractError
from .._core import HookRunner, WorkflowActivityHub
from .._defaults import DEFAULT_PORT
from ..metrics import HubMetrics
from ._app import DEFAULT_EVENTS_BUFFER, DEFAULT_KEEPALIVE, HubApp, StreamTracker
from ._worker import serve_connections

__all__ = ["SHUTDOWN_GRACE", "WS_MAX_MESSAGE", "check_binding", "run_asgi", "serve_hub"]

logger = logging.getLogger("workflow_hub.server")

SHUTDOWN_GRACE: Final = 0.8
"""Seconds open connections get to finish once the server stops; then they are cut."""

WS_MAX_MESSAGE: Final = 4096
"""Bytes of one incoming WebSocket message (its fragments together) before the server closes
the connection with code 1009 (message too big)."""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def serve_hub(
    hub: WorkflowActivityHub,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    runner: HookRunner | None = None,
    metrics: HubMetrics | None = None,
    insecure: bool = False,
    cors_origins: Sequence[str] | None = None,
    keepalive: float = DEFAULT_KEEPALIVE,
    events_buffer: int = DEFAULT_EVENTS_BUFFER,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``hub`` over HTTP until cancelled: ``url = await nursery.start(serve_hub, hub)``.

    ``nursery.start`` returns the base URL actually bound (``port=0`` picks a free port). The
    server is hypercorn's trio worker in the caller's nursery: no thread, no second event loop.
    Binding anything but a loopback address needs a ``token`` (or ``insecure=True``: for a
    trusted network, or a proxy in front that authenticates). When the task is cancelled, every
    stream ends cleanly (SSE streams end, WebSockets get close code 1001) and the server is gone
    within a second.
    """
    check_binding(host, port, token, insecure)
    app = HubApp(
        hub,
        token=token,
        runner=runner,
        metrics=metrics,
        cors_origins=cors_origins,
        keepalive=keepalive,
        events_buffer=events_buffer,
    )
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(
            partial(run_asgi, app, app, host=host, port=port, keepalive=keepalive)
        )
        task_status.started(url)


def check_binding(host: str, port: int, token: str | None, insecure: bool) -> None:
    """Refuse a bad address, and a non-loopback one without a token (unless ``insecure``)."""
    if not isinstance(host, str) or not host:
        raise ContractError("host", f"expected a host name or address, got {host!r}")
    if type(port) is not int or not 0 <= port <= 65535:
        raise ContractError("port", f"expected a port number 0-65535, got {port!r}")
    if token is None and not insecure and not _is_loopback(host):
        raise ContractError(
            "token",
            f"binding {host!r} (not a loopback address) without a token would let anyone on the "
            "network read the hub: pass token=..., or insecure=True if something in front "
            "authenticates",
        )


async def run_asgi(
    app: ASGIApp,
    streams: StreamTracker,
    *,
    host: str,
    port: int,
    keepalive: float,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``app`` with hypercorn's trio worker until cancelled; ``streams`` end first."""
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.graceful_timeout = SHUTDOWN_GRACE
    config.errorlog = logger
    config.accesslog = None
    config.keep_alive_timeout = 30
    # WebSocket pings at the SSE keep-alive interval: proxies close idle connections either way.
    config.websocket_ping_interval = keepalive
    # The server ignores what WebSocket clients send: a few KiB, then close code 1009, rather
    # than hypercorn's 16 MiB buffered per client.
    config.websocket_max_message_size = WS_MAX_MESSAGE

    stopping = trio.Event()
    # The server runs shielded from the caller's cancellation, so that a cancelled nursery still
    # gets a graceful end; serve_connections bounds it (it cuts what is left after the grace).
    server_scope = trio.CancelScope(shield=True)

    async def run_server(*, task_status: trio.TaskStatus[list[str]]) -> None:
        with server_scope:
            await serve_connections(
                app, config, stopping=stopping, grace=SHUTDOWN_GRACE, task_status=task_status
            )

    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(run_server)
        try:
            task_status.started(binds[0])
            await trio.sleep_forever()
        finally:
            streams.close()
            stopping.set()
            # A backstop only: serve_connections returns well before it.
            server_scope.deadline = trio.current_time() + SHUTDOWN_GRACE + 0.5
