"""``workflow-hub status`` (issue 24): one line for a status bar, an exit status for scripts.

The command runs as a real process against a hub served on loopback by the test (or a fleet
mirrored into a real redis-server), whose state the test sets; the line must be what
:func:`workflow_hub.reporting.aggregate` says for that state (R-rules of SPEC §5: unknown is never
idle), and the exit status the documented one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from functools import partial

import coredis
import pytest
import trio

from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.netutil import served
from tests.support.redis_server import RedisServer
from workflow_hub import RootActivity, WorkflowActivityHub
from workflow_hub._cli._status import EXIT_STATUSES, FIELDS, fields, with_roots
from workflow_hub.reporting import aggregate

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
TIMEOUT = 60

IDLE = root("done", state="idle", reason="quiescent", active=0)
WORKING = root("build", state="working", reason="executing")
BLOCKED = root("deploy", state="blocked", reason="manual_intervention", active=0, blocks=1)
FAILED = root("smoke", state="idle", reason="quiescent", active=0, attention=True)


async def status(*args: str) -> tuple[int, str, str]:
    with trio.fail_after(TIMEOUT):
        result = await trio.run_process(
            [*CLI, "status", *args], capture_stdout=True, capture_stderr=True, check=False, env=ENV
        )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def expected(hub: WorkflowActivityHub) -> str:
    return aggregate(hub.snapshot_frame()).message


@pytest.fixture
async def url(hub: WorkflowActivityHub) -> AsyncIterator[str]:
    async with served(hub) as served_url:
        yield served_url


@pytest.mark.parametrize(
    ("roots", "code"),
    [
        ((IDLE,), 0),
        ((), 0),
        ((IDLE, WORKING), 1),
        ((BLOCKED,), 2),
        ((WORKING, BLOCKED), 2),  # working, and a human is needed: 2
        ((FAILED,), 2),
        ((WORKING, FAILED), 2),
    ],
)
async def test_one_line_the_aggregate_sentence_and_the_exit_status(
    hub: WorkflowActivityHub, url: str, roots: tuple[RootActivity, ...], code: int
) -> None:
    hub.register_publisher().publish_snapshot("ready", roots)
    returned, out, err = await status(url)
    assert (returned, err) == (code, "")
    assert out == expected(hub) + "\n"


async def test_unknown_is_three_and_never_idle(hub: WorkflowActivityHub, url: str) -> None:
    """No snapshot yet, then a recovering source: unknown (3), however few roots there are."""
    returned, out, _ = await status(url)
    assert returned == EXIT_STATUSES["unknown"] == 3
    assert out.startswith("activity unknown")
    hub.register_publisher().publish_snapshot("recovering")
    returned, out, _ = await status(url)
    assert (returned, out) == (3, "activity unknown: source recovering\n")


async def test_unknown_says_why_when_the_source_said(hub: WorkflowActivityHub, url: str) -> None:
    """C3 (issue 38): a source that says why it is unknown (``detail``) has it on the status
    line in place of its availability, on the fast path as on the ordinary one; ``snapshot``
    prints it as the wire has it."""
    why = "broker unreachable: ConnectionError: [Errno 111] Connection refused"
    hub.register_publisher().publish_snapshot("recovering", detail=why)
    returned, out, _ = await status(url)
    assert (returned, out) == (3, f"activity unknown: {why}\n")
    assert out == expected(hub) + "\n"
    with trio.fail_after(TIMEOUT):
        result = await trio.run_process(
            [*CLI, "snapshot", url], capture_stdout=True, check=False, env=ENV
        )
    assert result.returncode == 0
    assert json.loads(result.stdout)["detail"] == why


async def test_a_hub_that_cannot_be_reached_is_unknown_with_the_reason(url: str) -> None:
    dead = "http://127.0.0.1:1"
    returned, out, err = await status(dead)
    assert returned == 3
    assert out == "activity unknown: connection refused\n"
    assert err.startswith("workflow-hub status: cannot connect to 127.0.0.1:1: connection refused")


async def test_format_and_json(hub: WorkflowActivityHub, url: str) -> None:
    roots = (WORKING, BLOCKED, FAILED)
    hub.register_publisher().publish_snapshot("ready", roots)
    template = " ".join(f"{name}={{{name}}}" for name in FIELDS)
    returned, out, _ = await status(url, "--format", template)
    assert returned == 2
    assert out == (
        f"message={expected(hub)} state=working reason=executing symbol=● attention=! "
        "roots=3 working=1 blocked=1 awaiting_input=0 failed=1 labels= attention_labels=\n"
    )
    returned, out, _ = await status(url, "--json")
    assert returned == 2
    values = json.loads(out)
    frame = hub.snapshot_frame()
    assert values == {
        **fields(with_roots(aggregate(frame), frame.roots or ())),
        "labels": [],
        "attention_labels": [],
        "attention": True,
        "exit_status": 2,
    }


async def readline(stream: trio.abc.ReceiveStream, buffer: bytearray) -> str:
    while b"\n" not in buffer:
        chunk = await stream.receive_some()
        assert chunk, "the command ended"
        buffer.extend(chunk)
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode()


async def test_follow_prints_a_line_only_when_the_line_changes(
    hub: WorkflowActivityHub, url: str
) -> None:
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [WORKING])
    command = [*CLI, "status", "--follow", url, "--format", "{state}: {message}"]
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                partial(trio.run_process, command, stdout=subprocess.PIPE, check=False, env=ENV)
            )
            assert process.stdout is not None
            buffer = bytearray()
            assert await readline(process.stdout, buffer) == "working: 1 working"
            # Same sentence (another working root replaced by itself): no new line ...
            publisher.publish_changed(root("build", state="working", reason="retrying"))
            # ... a new sentence: one line each.
            publisher.publish_changed(BLOCKED)
            assert await readline(process.stdout, buffer) == (
                "working: 1 working · 1 needs intervention"
            )
            publisher.publish_removed("build")
            assert await readline(process.stdout, buffer) == "blocked: 1 needs intervention"
            publisher.dispose()
            assert await readline(process.stdout, buffer) == (
                "unknown: activity unknown: source unavailable"
            )
            process.terminate()


async def test_a_fleet_in_redis(redis_server: RedisServer) -> None:
    """``status redis://…``: the fleet's sentence (FleetView.aggregate), once."""
    async with coredis.Redis.from_url(redis_server.url) as redis, trio.open_nursery() as nursery:
        prefix = "status-test"
        one = await mirrored(nursery, redis, prefix, "one")
        two = await mirrored(nursery, redis, prefix, "two")
        one.register_publisher().publish_snapshot("ready", [WORKING])
        two.register_publisher().publish_snapshot("ready", [IDLE])
        await trio.sleep(0.3)  # the mirrors append (every 50 ms)
        returned, out, err = await status(redis_server.url, "--prefix", prefix)
        assert (returned, err) == (1, "")
        assert out == "2 sources · 1 working\n"
        nursery.cancel_scope.cancel()


async def test_follow_a_fleet_in_redis(redis_server: RedisServer) -> None:
    """``status --follow redis://…``: a line for each change of the fleet's sentence."""
    command = [*CLI, "status", "--follow", redis_server.url, "--prefix", "follow-test"]
    command += ["--format", "{state}: {message}"]
    async with coredis.Redis.from_url(redis_server.url) as redis, trio.open_nursery() as nursery:
        one = await mirrored(nursery, redis, "follow-test", "one")
        publisher = one.register_publisher()
        publisher.publish_snapshot("ready", [WORKING])
        with trio.fail_after(TIMEOUT):
            process: trio.Process = await nursery.start(
                partial(trio.run_process, command, stdout=subprocess.PIPE, check=False, env=ENV)
            )
            assert process.stdout is not None
            buffer = bytearray()
            line = await readline(process.stdout, buffer)
            while line != "working: 1 source · 1 working":
                assert line == "unknown: 0 sources", line  # before the first frame

                line = await readline(process.stdout, buffer)
            publisher.publish_changed(BLOCKED)
            assert await readline(process.stdout, buffer) == (
                "working: 1 source · 1 working · 1 blocked"
            )
            process.terminate()
        nursery.cancel_scope.cancel()


async def test_follow_says_unknown_when_the_hub_goes_away(hub: WorkflowActivityHub) -> None:
    """A status bar never keeps showing "working" for a hub that is gone."""
    hub.register_publisher().publish_snapshot("ready", [WORKING])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            async with served(hub) as url:
                command = [*CLI, "status", "--follow", url]
                process: trio.Process = await nursery.start(
                    partial(trio.run_process, command, stdout=subprocess.PIPE, check=False, env=ENV)
                )
                assert process.stdout is not None
                buffer = bytearray()
                assert await readline(process.stdout, buffer) == "1 working"
            # The server stopped: within a second or two the line says why nothing is known.
            assert await readline(process.stdout, buffer) == "activity unknown: connection refused"
            process.terminate()
