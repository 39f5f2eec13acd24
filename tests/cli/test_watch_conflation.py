"""The live view of ``watch`` asks the server to conflate while it lags and to gather each root's
changes for a tenth of a second between writes, and takes the full stream from a server that
cannot (issue 38: a ``watch`` cost more CPU than the bridge it watched).

The live view draws each root's latest state, so frames a lagging watch would only fold away
need not be sent nor decoded (N2 with ``?conflate=1``); a hub served from a host
(``create_app`` of a ``workflow_hub.asyncio`` hub) answers that request with a 400, and the view must still work there.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import queue
import threading
from collections import deque

import trio
import trio.testing
from rich.console import Console

import workflow_hub.asyncio
from tests.hosts.test_asyncio_asgi import uvicorn_app
from tests.support.builders import root
from tests.support.netutil import served
from workflow_hub import DiagnosticKind, Frame, WorkflowActivityHub, open_hub
from workflow_hub._cli._rich import RichOutput
from workflow_hub._cli._watch import _watch
from workflow_hub.reporting import ActivityView

WAIT = 10  # seconds: generous for a loaded 2-core machine; a hang fails instead of blocking


class _Counted(RichOutput):
    """The live view, counting the frames it was given."""

    def __init__(self) -> None:
        console = Console(file=io.StringIO(), width=80, height=24, force_terminal=True)
        super().__init__(pane_lines=4, events=deque(maxlen=10), console=console)
        self.frames: list[Frame] = []
        self.first = trio.Event()
        self.seen = trio.Event()
        self.wanted: tuple[str, int] | None = None

    def frame(self, frame: Frame, view: ActivityView) -> None:
        super().frame(frame, view)
        self.frames.append(frame)
        self.first.set()
        if self.wanted is not None:
            root_id, active = self.wanted
            if any(
                r.root_run_id == root_id and r.active_execution_count == active for r in view.roots
            ):
                self.seen.set()


def _args(url: str) -> argparse.Namespace:
    return argparse.Namespace(url=url, token=None, duration=None, alertmanager=None)


async def _view_of_changes(count: int, pause: float) -> tuple[_Counted, WorkflowActivityHub]:
    """A live view of a served hub whose one root changes ``count`` times, ``pause`` seconds
    after each change (none at all for 0: one backlog); the view once it showed the last."""
    output = _Counted()
    async with open_hub() as hub, served(hub) as url, trio.open_nursery() as nursery:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        nursery.start_soon(_watch, _args(url), output)
        with trio.fail_after(WAIT):
            await output.first.wait()
            output.wanted = ("a", count - 1)
            for active in range(count):
                publisher.publish_changed(root("a", active=active))
                if pause:
                    await trio.sleep(pause)
            await output.seen.wait()
        nursery.cancel_scope.cancel()
    return output, hub


async def test_a_lagging_live_view_gets_each_roots_latest_frame_not_every_frame() -> None:
    """N2: 300 changes published at once reach the view as far fewer frames, ending in the last
    state, and the server's queue for it never overflows into a snapshot."""
    output, hub = await _view_of_changes(300, 0)
    assert len(output.frames) < 100
    assert not [d for d in hub.diagnostics() if d.kind is DiagnosticKind.OBSERVER_OVERFLOW]


async def test_the_live_view_takes_each_roots_latest_once_a_tenth_of_a_second() -> None:
    """N2 with ``?interval=0.1``: 100 changes spread over at least 0.2 s, each with time for a
    watch that keeps up to receive it, reach the view as a few frames ending in the last state:
    the view decodes a busy root a few times a second, not once per change."""
    output, _ = await _view_of_changes(100, 0.002)
    # The snapshot, then one frame a tenth of a second (the full stream: 100 more).
    assert len(output.frames) < 30


def _asyncio_hub(urls: queue.Queue[str], stop: threading.Event) -> None:
    async def main() -> None:
        async with workflow_hub.asyncio.open_hub() as hub:
            publisher = hub.register_publisher()
            publisher.publish_snapshot("ready", [root("a", active=5)])
            # ``create_app(hub)`` on an asyncio ASGI server: a hosted hub, which cannot conflate.
            async with uvicorn_app(hub) as url:
                urls.put(f"{url}/hub")
                await asyncio.to_thread(stop.wait)

    asyncio.run(main())


def test_the_live_view_of_a_hosted_hub_takes_the_full_stream() -> None:
    """A hub served by an asyncio ASGI server cannot conflate (400): the view follows it
    anyway."""
    urls: queue.Queue[str] = queue.Queue()
    stop = threading.Event()
    host = threading.Thread(target=_asyncio_hub, args=(urls, stop))
    host.start()
    output = _Counted()
    try:
        url = urls.get(timeout=WAIT)
        output.wanted = ("a", 5)

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_watch, _args(url), output)
                with trio.fail_after(WAIT):
                    await output.seen.wait()
                nursery.cancel_scope.cancel()

        trio.run(main)
    finally:
        stop.set()
        host.join(WAIT)
    assert output.frames
