"""Serving a hub from a command: the address a person types, and where its dashboard opens."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from ._command_line import command_name
from ._options import parse_address

if TYPE_CHECKING:
    from .._core import HookRunner, WorkflowActivityHub
    from ..metrics import HubMetrics
    from ._output import Output

__all__ = ["dashboard_url", "start_serving", "watch_command"]


async def start_serving(
    nursery: trio.Nursery,
    hub: WorkflowActivityHub,
    runner: HookRunner,
    output: Output,
    address: str,
    token: str | None,
    metrics: HubMetrics | None = None,
    options: Mapping[str, Any] | None = None,
) -> str:
    """Serve ``hub`` (and its hook events, and ``metrics`` at ``/metrics``) in ``nursery``; the
    URL is shown by ``output``. ``options`` are further keywords of ``serve_hub``."""
    from ..server import serve_hub

    host, port = parse_address(address)
    url: str = await nursery.start(
        partial(
            serve_hub,
            hub,
            host=host,
            port=port,
            token=token,
            runner=runner,
            metrics=metrics,
            **(options or {}),
        )
    )
    output.url = url
    token_option = " --token TOKEN" if token else ""
    command = command_name()
    print(
        f"workflow-hub: serving at {url} (dashboard: {dashboard_url(url)})\n"
        f"workflow-hub: in a terminal: {command} watch {url}{token_option}"
        f"  ·  one line: {command} status {url}{token_option}",
        file=sys.stderr,
        flush=True,
    )
    return url


def dashboard_url(url: str) -> str:
    """Where a browser opens the live dashboard of a hub served at ``url``: its root page."""
    return url.rstrip("/") + "/"


def watch_command(url: str) -> str:
    """What a person types to watch a hub served at ``url`` from a terminal."""
    return f"{command_name()} watch {url}"
