"""Real third-party clients on the server: node's ``eventsource`` for ``retry:`` and resuming,
Prometheus' ``promtool`` on ``/metrics`` (issue 23; N2).

The npm packages are installed into ``tests/server/js/node_modules`` from its lock file (``make
node-clients``, or here on first use); Debian's ``prometheus`` package provides ``promtool``.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.support.builders import root
from tests.support.dashboard import require_program
from workflow_hub import open_hub
from workflow_hub.metrics import HubMetrics
from workflow_hub.server import serve_hub

WAIT = 15
JS = Path(__file__).parent / "js"


@pytest.fixture(scope="module")
def node() -> str:
    """node, with the npm packages of tests/server/js installed (fails in CI without them)."""
    found = require_program("node", "WORKFLOW_HUB_NODE")
    if not (JS / "node_modules" / "eventsource").is_dir():
        npm = require_program("npm", "WORKFLOW_HUB_NPM")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, timeout=300)
    return found


class Lines:
    """JSON lines from a process's stdout."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""

    async def next(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            data = await self._stream.receive_some(65536)
            if not data:
                raise EOFError("the node client exited")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return dict(json.loads(line))

    async def until(self, key: str) -> dict[str, Any]:
        while True:
            line = await self.next()
            if key in line:
                return line


async def test_eventsource_reads_retry_and_resumes_after_the_server_restarts(node: str) -> None:
    """The server's ``retry:`` (2000 ms) reaches node's EventSource (its parser reports it, and
    the client waits at least that long before reconnecting) and the client resumes with
    Last-Event-ID: the first event after reconnecting is the frame it missed, no snapshot."""
    async with open_hub() as hub, trio.open_nursery() as nursery:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])

        async def run_server(port: int, *, task_status: trio.TaskStatus[str]) -> None:
            async with trio.open_nursery() as inner:
                task_status.started(await inner.start(functools.partial(serve_hub, hub, port=port)))

        first = trio.CancelScope()

        async def run_first(*, task_status: trio.TaskStatus[str]) -> None:
            with first:
                await run_server(0, task_status=task_status)

        url: str = await nursery.start(run_first)
        port = int(url.rpartition(":")[2])
        client = await trio.lowlevel.open_process(
            [node, str(JS / "eventsource_client.mjs"), f"{url}/v1/activity"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert client.stdout is not None
        assert client.stdin is not None
        lines = Lines(client.stdout)
        try:
            with trio.fail_after(WAIT):
                retry = await lines.until("retry")
                snapshot = await lines.until("event")
                assert snapshot["event"] == "snapshot"
                first.cancel()  # the server stops: the stream ends cleanly
                error = await lines.until("error")
                missed = publisher.publish_changed(root("b"))
                assert missed is not None
                await nursery.start(run_server, port)
                reopened = await lines.until("open")
                after = await lines.until("event")
        finally:
            await client.stdin.aclose()
            with trio.CancelScope(shield=True), trio.fail_after(WAIT):  # a cancelled test too
                await client.wait()
            await client.stdout.aclose()
        nursery.cancel_scope.cancel()
    assert retry["retry"] == 2000
    assert reopened["t"] - error["t"] >= 1900
    assert after["event"] == "changed"
    assert after["id"] == f"{missed.epoch}:{missed.revision}"


async def test_promtool_finds_the_served_metrics_clean() -> None:
    """``promtool check metrics`` (Debian's prometheus package) on both formats of /metrics."""
    from prometheus_client import CollectorRegistry

    promtool = require_program("promtool", "WORKFLOW_HUB_PROMTOOL")
    metrics = HubMetrics(CollectorRegistry())
    async with open_hub(metrics=metrics) as hub, trio.open_nursery() as nursery:
        hub.register_publisher().publish_snapshot("ready", [root("a"), root("b")])
        url: str = await nursery.start(functools.partial(serve_hub, hub, port=0, metrics=metrics))
        async with httpx.AsyncClient() as client:
            with trio.fail_after(WAIT):
                text = await client.get(f"{url}/metrics")
        nursery.cancel_scope.cancel()
    assert text.status_code == 200
    with trio.fail_after(WAIT):
        checked = await trio.run_process(
            [promtool, "check", "metrics"],
            stdin=text.content,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert checked.returncode == 0, (checked.stdout + checked.stderr).decode()
    assert b"workflow_hub_" in text.content
