"""How a long-running command ends on Ctrl-C (SIGINT) or SIGTERM: as when its ``--duration`` is up.

A server stopped by its operator or its supervisor (systemd, Kubernetes, ``docker stop`` send
SIGTERM; a terminal sends SIGINT) ends the way hypercorn and uvicorn end on those signals: what
it was doing stops, then it closes cleanly and exits with status 0. For ``serve --redis`` that
clean close is the one that matters to others: the source declares itself unavailable and that
frame reaches Redis before the command exits, so a fleet shows it stopped, never crashed
(SPEC N5). A second signal ends the command at once.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

__all__ = ["STOP_SIGNALS", "ended_by_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@asynccontextmanager
async def ended_by_signals() -> AsyncIterator[trio.CancelScope]:
    """``async with ended_by_signals() as work: … with work: …``: the first SIGINT or SIGTERM
    cancels ``work`` (a scope the command enters around what it does until ``--duration``), and
    the command goes on with what follows it (its clean close); a second one cancels the whole
    block. The signals are caught from here on, before anything else starts."""
    work = trio.CancelScope()
    with trio.CancelScope() as everything, trio.open_signal_receiver(*STOP_SIGNALS) as received:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_stop, received, work, everything)
            yield work
            nursery.cancel_scope.cancel()


async def _stop(
    received: AsyncIterator[int], work: trio.CancelScope, everything: trio.CancelScope
) -> None:
    async for _ in received:
        if work.cancel_called:
            everything.cancel()
            return
        work.cancel()
