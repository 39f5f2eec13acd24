"""``workflow-hub alert`` as a user runs it (issue 40): a real process, a real hub served over
HTTP on loopback as its source, a real webhook receiver.

The command line is not an API: the tests run it and read what it prints and what the receiver
gets. Every wait is bounded (``fail_after``) and ends on an event: a line, a request, an exit.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import httpx
import standardwebhooks
import trio

from tests.support.fleet import mirrored
from tests.support.netutil import served
from tests.support.processes import open_owned_process
from tests.support.redis_server import RedisServer
from workflow_hub import Availability, open_hub

from .receiver import receiving
from .support import asking, working

CLI = [sys.executable, "-m", "workflow_hub._cli"]
SECRET = "whsec_" + base64.b64encode(b"the command's secret, 32 bytes..").decode()
BOUND = 30


class Lines:
    """A process's stdout, a line at a time."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""
        self.seen: list[str] = []

    async def until(self, text: str) -> str:
        with trio.fail_after(BOUND):
            while True:
                while b"\n" in self._buffer:
                    line, _, self._buffer = self._buffer.partition(b"\n")
                    self.seen.append(line.decode())
                    if text in self.seen[-1]:
                        return self.seen[-1]
                chunk = await self._stream.receive_some()
                if not chunk:
                    raise AssertionError(f"ended before {text!r}: {self.seen}")
                self._buffer += chunk


@asynccontextmanager
async def alert_command(*args: str) -> AsyncIterator[tuple[trio.Process, Lines]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "WORKFLOW_HUB_WEBHOOK_SECRET": SECRET}
    async with open_owned_process(
        [*CLI, "alert", *args], stdout=subprocess.PIPE, env=env
    ) as process:
        assert process.stdout is not None
        yield process, Lines(process.stdout)


async def test_a_served_hubs_alerts_reach_a_webhook_signed_and_its_loss_is_one_alert() -> None:
    async with receiving() as receiver, open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot(Availability.READY, [working("r1")])
        stopped = trio.CancelScope()
        async with trio.open_nursery() as server:
            hub_url = await server.start(_serve, hub, stopped)
            async with alert_command(
                hub_url,
                "--webhook",
                receiver.url,
                "--needs-attention-for",
                "0",
                "--unknown-after",
                "0.5",
            ) as (process, lines):
                publisher.publish_changed(asking("r1", team="infra"))
                line = await lines.until("firing WorkflowNeedsAttention")
                assert "r1" in line
                assert "deploy to prod?" in line
                with trio.fail_after(BOUND):
                    await receiver.wait_for(1)
                event = standardwebhooks.Webhook(SECRET).verify(
                    receiver.requests[0].body, receiver.requests[0].headers
                )
                assert event["subject"] == "r1"
                assert event["data"]["annotations"]["dashboard"] == f"{hub_url}/#q=r1"
                stopped.cancel()  # the hub's server goes away
                await lines.until("firing WorkflowSourceUnknown")
                process.send_signal(signal.SIGTERM)
                with trio.fail_after(BOUND):
                    assert await process.wait() == 0
    kinds = [json.loads(r.body)["type"].rsplit(".", 1)[1] for r in receiver.requests]
    assert kinds == ["firing", "firing"]  # the root's alert is held, not resolved


async def _serve(
    hub: object, stopped: trio.CancelScope | None = None, *, task_status: trio.TaskStatus[str]
) -> None:
    """Serve ``hub`` until ``stopped`` is cancelled (or the test ends)."""
    with stopped or trio.CancelScope():
        async with served(hub) as url:  # type: ignore[arg-type]
            task_status.started(url)
            await trio.sleep_forever()


async def test_metrics_count_what_fires_and_what_was_sent() -> None:
    from tests.support.redis_server import free_port

    port = free_port()
    async with receiving() as receiver, open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot(Availability.READY, [asking("r1")])
        async with trio.open_nursery() as server:
            hub_url = await server.start(_serve, hub)
            async with alert_command(
                hub_url,
                "--webhook",
                receiver.url,
                "--needs-attention-for",
                "0",
                "--metrics",
                f"127.0.0.1:{port}",
                "--name",
                "sched-1",
            ) as (process, lines):
                await lines.until("firing WorkflowNeedsAttention sched-1 r1")
                with trio.fail_after(BOUND):
                    await receiver.wait_for(1)
                async with httpx.AsyncClient() as client:
                    with trio.fail_after(BOUND):
                        while True:
                            text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
                            if "workflow_hub_alert_notifications_sent_total{sink=" in text and (
                                'sent_total{sink="webhook ' + receiver.url + '"} 1.0' in text
                            ):
                                break
                            await trio.sleep(0.05)
                assert 'workflow_hub_alerts_firing{alertname="WorkflowNeedsAttention"} 1.0' in text
                assert "workflow_hub_alert_sink_latency_seconds_bucket" in text
                process.send_signal(signal.SIGTERM)
                with trio.fail_after(BOUND):
                    assert await process.wait() == 0
            server.cancel_scope.cancel()


def test_an_alert_with_nowhere_to_send_is_a_usage_mistake() -> None:
    done = subprocess.run(
        [*CLI, "alert", "http://127.0.0.1:1"], capture_output=True, text=True, timeout=BOUND
    )
    assert done.returncode == 2
    assert "--alertmanager URL and/or --webhook URL" in done.stderr


async def test_a_fleets_alerts_name_their_source(redis_server: RedisServer) -> None:
    """``alert redis://…``: every member of the fleet, each alert labelled with its source."""
    prefix = "alert-command"
    async with (
        coredis.Redis.from_url(redis_server.url) as redis,
        receiving() as receiver,
        trio.open_nursery() as nursery,
    ):
        hub = await mirrored(nursery, redis, prefix, "sched-7")
        hub.register_publisher().publish_snapshot(Availability.READY, [asking("r1")])
        async with alert_command(
            redis_server.url,
            "--prefix",
            prefix,
            "--webhook",
            receiver.url,
            "--needs-attention-for",
            "0",
        ) as (process, lines):
            await lines.until("firing WorkflowNeedsAttention sched-7 r1")
            with trio.fail_after(BOUND):
                await receiver.wait_for(1)
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(BOUND):
                assert await process.wait() == 0
        nursery.cancel_scope.cancel()
    event = json.loads(receiver.requests[0].body)
    assert event["data"]["labels"]["source"] == "sched-7"
    assert "dashboard" not in event["data"]["annotations"]


def test_an_alertmanager_that_is_not_a_url_is_a_usage_error() -> None:
    for command in ("status", "watch"):
        done = subprocess.run(
            [*CLI, command, "redis://127.0.0.1:1/0", "--alertmanager", "127.0.0.1:9093"],
            capture_output=True,
            text=True,
            timeout=BOUND,
        )
        assert done.returncode == 2, (command, done.stderr)
        assert "--alertmanager 127.0.0.1:9093: expected an http:// URL" in done.stderr


LATER = ("--duration", "1")


def test_a_hub_that_cannot_be_followed_ends_alert_at_once_and_one_not_up_is_said() -> None:
    """An unknown host cannot be waited out: one line, exit 1. A hub that is not up yet is
    said once, and followed once it answers (the rules alert on the unknown source meanwhile)."""
    env = {**os.environ, "WORKFLOW_HUB_WEBHOOK_SECRET": SECRET}
    typo = subprocess.run(
        [*CLI, "alert", "not a url", "--webhook", "http://127.0.0.1:1/hook", "--duration", "30"],
        capture_output=True,
        text=True,
        timeout=BOUND,
        env=env,
    )
    assert typo.returncode == 1
    assert typo.stderr.strip().splitlines() == [
        "workflow-hub alert: cannot connect to not a url: unknown host 'not a url'"
    ]
    waiting = subprocess.run(
        [*CLI, "alert", "http://127.0.0.1:1", "--webhook", "http://127.0.0.1:1/hook", *LATER],
        capture_output=True,
        text=True,
        timeout=BOUND,
        env=env,
    )
    assert waiting.returncode == 0
    assert "connection refused" in waiting.stderr
    assert "following it once it answers" in waiting.stderr
