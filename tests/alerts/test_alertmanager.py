"""End to end through Debian's Alertmanager (issue 40): hub -> alerter -> Alertmanager -> a
webhook receiver on loopback.

One Alertmanager process and one receiver serve the whole module; each test uses its own
``source`` label, so Alertmanager's groups (by alertname, source and root) never mix tests. The
network and Alertmanager run on the real clock: durations are fractions of a second and every
wait is bounded (``fail_after`` or the receiver's own timeout).
"""

from __future__ import annotations

import datetime
import functools
import io
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import coredis
import httpx
import pytest
import trio
from rich.console import Console

from tests.support.netutil import served
from tests.support.redis_server import RedisServer
from workflow_hub import Availability, WorkflowActivityHub, open_hub
from workflow_hub._cli._alert_count import AlertCount
from workflow_hub._cli._watch_fleet import _fleet_table, _LogTail
from workflow_hub.alerts import AlertmanagerSink, AlertRules, run_alerts
from workflow_hub.fleet import FleetView
from workflow_hub.redis import RedisFleet, mirror_hub
from workflow_hub.remote import RemoteHub
from workflow_hub.server import serve_fleet

from .alertmanager import AlertmanagerReceiver, running_alertmanager
from .support import asking, working

CLI = [sys.executable, "-m", "workflow_hub._cli"]
RULES = AlertRules(needs_attention_for=0.2, stuck_after=60, unknown_after=0.5)
BOUND = 20


@pytest.fixture(scope="module")
def receiver() -> Iterator[AlertmanagerReceiver]:
    opened = AlertmanagerReceiver()
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def alertmanager(receiver: AlertmanagerReceiver) -> Iterator[str]:
    with running_alertmanager(receiver.url) as url:
        yield url


@asynccontextmanager
async def alerting(
    source: Any, alertmanager: str, *, name: str = "hub", rules: AlertRules = RULES
) -> AsyncIterator[None]:
    sink = AlertmanagerSink(alertmanager, resend_interval=1.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(run_alerts, source, [sink], rules=rules, name=name))
        yield
        nursery.cancel_scope.cancel()


async def posted(receiver: AlertmanagerReceiver, **wanted: str) -> dict[str, Any]:
    """The first alert Alertmanager posted whose labels (and ``status``) are ``wanted``."""
    status = wanted.pop("status", "firing")

    def matches(alert: dict[str, Any]) -> bool:
        labels = alert["labels"]
        return alert["status"] == status and all(labels.get(k) == v for k, v in wanted.items())

    return await trio.to_thread.run_sync(functools.partial(receiver.wait_for, matches, BOUND))


def ready(hub: WorkflowActivityHub, *roots: Any) -> Any:
    publisher = hub.register_publisher()
    publisher.publish_snapshot(Availability.READY, roots)
    return publisher


async def test_a_blocked_root_reaches_the_receiver_and_resolves_when_answered(
    alertmanager: str, receiver: AlertmanagerReceiver
) -> None:
    async with open_hub() as hub, alerting(hub, alertmanager, name="am-blocked"):
        publisher = ready(hub, working("r1"))
        publisher.publish_changed(asking("r1", team="infra"))
        fired = await posted(receiver, source="am-blocked", root_run_id="r1")
        assert fired["labels"] == {
            "alertname": "WorkflowNeedsAttention",
            "source": "am-blocked",
            "root_run_id": "r1",
            "reason": "awaiting_input",
            "team": "infra",
        }
        assert "deploy to prod?" in fired["annotations"]["summary"]
        publisher.publish_changed(working("r1"))
        resolved = await posted(receiver, source="am-blocked", root_run_id="r1", status="resolved")
        assert resolved["labels"]["alertname"] == "WorkflowNeedsAttention"


async def test_a_stuck_root_fires_after_its_duration(
    alertmanager: str, receiver: AlertmanagerReceiver
) -> None:
    rules = AlertRules(needs_attention_for=0.2, stuck_after=0.5, unknown_after=60)
    async with open_hub() as hub, alerting(hub, alertmanager, name="am-stuck", rules=rules):
        started = trio.current_time()
        ready(hub, working("r1"))
        fired = await posted(receiver, source="am-stuck", alertname="WorkflowStuck")
        assert trio.current_time() - started >= 0.5
        assert fired["labels"]["root_run_id"] == "r1"


async def test_a_silence_in_alertmanager_silences_the_alert(
    alertmanager: str, receiver: AlertmanagerReceiver
) -> None:
    now = datetime.datetime.now(datetime.UTC)
    silence = {
        "matchers": [
            {"name": "source", "value": "am-silence", "isRegex": False, "isEqual": True},
            {"name": "root_run_id", "value": "quiet", "isRegex": False, "isEqual": True},
        ],
        "startsAt": now.isoformat(),
        "endsAt": (now + datetime.timedelta(hours=1)).isoformat(),
        "createdBy": "tests",
        "comment": "a maintenance window",
    }
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{alertmanager}/api/v2/silences", json=silence)
        assert answer.status_code == 200, answer.text
        async with open_hub() as hub, alerting(hub, alertmanager, name="am-silence"):
            ready(hub, asking("quiet"), asking("loud"))
            await posted(receiver, source="am-silence", root_run_id="loud")
            with trio.fail_after(BOUND):
                while True:
                    held = await client.get(
                        f"{alertmanager}/api/v2/alerts",
                        params={"filter": ['source="am-silence"', 'root_run_id="quiet"']},
                    )
                    states = [alert["status"]["state"] for alert in held.json()]
                    if states:
                        break
                    await trio.sleep(0.05)
    assert states == ["suppressed"]
    quiet = [a for a in receiver.alerts() if a["labels"].get("root_run_id") == "quiet"]
    assert quiet == []


async def test_a_killed_fleet_source_fires_source_unknown(
    alertmanager: str, receiver: AlertmanagerReceiver, redis_server: RedisServer
) -> None:
    """N4, N5: a fleet member that stops refreshing without a word is unknown (crashed); one
    alert for the source, its roots' alerts held."""
    prefix = "alerts-killed"
    async with coredis.Redis.from_url(redis_server.url) as redis, open_hub() as hub:
        # A live mirror refreshes every 0.05 s: 2 s without one is a crash, even on a busy machine.
        fleet = RedisFleet(redis, prefix=prefix, stale_after=2.0, retire_after=600)
        async with trio.open_nursery() as nursery:
            killed = trio.CancelScope()

            async def mirror_until_killed(*, task_status: trio.TaskStatus[Any]) -> None:
                with killed:
                    await mirror_hub(
                        hub,
                        redis,
                        source="am-killed",
                        prefix=prefix,
                        refresh_interval=0.05,
                        task_status=task_status,
                    )

            mirror = await nursery.start(mirror_until_killed)
            await mirror.wait_claimed()
            async with alerting(fleet, alertmanager):
                ready(hub, asking("r1"))
                await posted(receiver, source="am-killed", alertname="WorkflowNeedsAttention")
                killed.cancel()  # no goodbye in Redis: the source crashed
                lost = await posted(receiver, source="am-killed", alertname="WorkflowSourceUnknown")
    assert "crashed" in lost["annotations"]["summary"]
    resolved = [
        a
        for a in receiver.alerts()
        if a["labels"].get("source") == "am-killed" and a["status"] == "resolved"
    ]
    assert resolved == []


async def test_status_and_watch_say_how_many_alerts_alertmanager_has_firing_for_a_hub(
    alertmanager: str, receiver: AlertmanagerReceiver
) -> None:
    """``status URL --alertmanager AM``: the hub's line, and the alerts firing for it (those whose
    ``source`` is the hub's HOST:PORT, as ``workflow-hub alert`` labels a served hub); ``watch``
    says the same beside its connection's state."""
    async with open_hub() as hub, served(hub) as url:
        name = urlsplit(url).netloc
        ready(hub, asking("r1"), asking("r2", prompt_id="p2"), working("w"))
        async with alerting(RemoteHub(url), alertmanager, name=name):
            await posted(receiver, source=name, root_run_id="r1")
            await posted(receiver, source=name, root_run_id="r2")
            done = await trio.run_process(
                [*CLI, "status", url, "--alertmanager", alertmanager],
                capture_stdout=True,
                check=False,
            )
            line = done.stdout.decode().strip()
            assert line.endswith("· 2 alerts firing"), line
            assert done.returncode == 2  # needs attention: the hub's exit status, as without
            unasked = await trio.run_process(
                [*CLI, "status", url, "--alertmanager", "http://127.0.0.1:1", "--json"],
                capture_stdout=True,
                check=False,
            )
            assert json.loads(unasked.stdout)["alerts_firing"] is None
            watched = await trio.run_process(
                [*CLI, "watch", url, "--alertmanager", alertmanager, "--duration", "2"],
                capture_stdout=True,
                check=False,
            )
            assert "connection live · 2 alerts firing" in watched.stdout.decode()


async def test_status_follow_counts_alerts_and_redraws_when_only_the_count_changes(
    alertmanager: str, receiver: AlertmanagerReceiver
) -> None:
    """``status --follow --alertmanager``: the first line already has the count; the count is
    asked again every few seconds, and a change of it alone redraws the line (here the
    ``AlertCount`` the command uses, asking every 0.1 s, while the root is answered)."""
    async with open_hub() as hub, served(hub) as url:
        name = urlsplit(url).netloc
        publisher = ready(hub, asking("r1"), working("w"))
        async with alerting(RemoteHub(url), alertmanager, name=name):
            await posted(receiver, source=name, root_run_id="r1")
            followed = await trio.run_process(
                [
                    *CLI,
                    "status",
                    url,
                    "--alertmanager",
                    alertmanager,
                    "--follow",
                    "--duration",
                    "1.5",
                ],
                capture_stdout=True,
                check=False,
            )
            first = followed.stdout.decode().splitlines()[0]
            assert first.endswith("· 1 alert firing"), first
            counted = AlertCount(alertmanager, url, timeout=5.0, every=0.1)
            changed = trio.Event()
            assert counted.suffix() == ""  # not asked yet: a view drawn now does not wait
            async with trio.open_nursery() as nursery:
                await nursery.start(counted.follow, changed.set)
                assert counted.now() == 1
                table = _fleet_table(FleetView(), {}, _LogTail(3), counted)
                console = Console(width=100, file=io.StringIO(), record=True, color_system=None)
                console.print(table)  # watch redis://…'s live table: the count in its title
                assert "fleet unknown: 0 sources · 1 alert firing" in console.export_text()
                publisher.publish_changed(working("r1"))  # answered: it resolves
                with trio.fail_after(BOUND):
                    await changed.wait()
                nursery.cancel_scope.cancel()
            assert counted.now() == 0


async def test_watch_of_a_fleet_shows_how_many_alerts_fire(
    alertmanager: str, receiver: AlertmanagerReceiver, redis_server: RedisServer
) -> None:
    """``watch redis://… --alertmanager``: the fleet's line says how many workflow alerts fire
    (every source of the fleet: Alertmanager's whole count of them)."""
    prefix = "alerts-watched"
    async with coredis.Redis.from_url(redis_server.url) as redis, open_hub() as hub:
        fleet = RedisFleet(redis, prefix=prefix, stale_after=5.0, retire_after=600)
        async with trio.open_nursery() as nursery:
            mirror = await nursery.start(
                functools.partial(
                    mirror_hub, hub, redis, source="am-watched", prefix=prefix, refresh_interval=0.1
                )
            )
            await mirror.wait_claimed()
            async with alerting(fleet, alertmanager):
                ready(hub, asking("r1"))
                await posted(receiver, source="am-watched", root_run_id="r1")
                watched = await trio.run_process(
                    [
                        *CLI,
                        "watch",
                        redis_server.url,
                        "--prefix",
                        prefix,
                        "--alertmanager",
                        alertmanager,
                        "--duration",
                        "2",
                    ],
                    capture_stdout=True,
                    check=False,
                )
            nursery.cancel_scope.cancel()
    fleet_lines = [
        line for line in watched.stdout.decode().splitlines() if line.startswith("fleet")
    ]
    assert fleet_lines, watched.stdout
    assert re.search(r"· [1-9]\d* alerts? firing$", fleet_lines[-1]), fleet_lines


async def test_a_served_fleets_source_is_labelled_by_its_name(
    alertmanager: str, receiver: AlertmanagerReceiver, redis_server: RedisServer
) -> None:
    """SOURCE is anything ``watch`` takes, a served fleet's ``URL/sources/NAME`` too: its alerts'
    ``source`` is NAME (as ``alert redis://…`` labels the same source), and ``status`` of that
    URL counts them."""
    prefix = "alerts-served"
    async with (
        coredis.Redis.from_url(redis_server.url) as redis,
        open_hub() as hub,
        trio.open_nursery() as nursery,
    ):
        mirror = await nursery.start(
            functools.partial(
                mirror_hub, hub, redis, source="am-served", prefix=prefix, refresh_interval=0.1
            )
        )
        await mirror.wait_claimed()
        ready(hub, asking("r1"))
        served_url = await nursery.start(
            functools.partial(serve_fleet, redis, prefix=prefix, port=0)
        )
        url = f"{served_url.rstrip('/')}/sources/am-served"
        alert = await nursery.start(
            functools.partial(
                trio.run_process,
                [*CLI, "alert", url, "--alertmanager", alertmanager, "--needs-attention-for", "0"],
                stdout=subprocess.DEVNULL,
            )
        )
        fired = await posted(receiver, source="am-served", root_run_id="r1")
        done = await trio.run_process(
            [*CLI, "status", url, "--alertmanager", alertmanager],
            capture_stdout=True,
            check=False,
        )
        alert.terminate()
        nursery.cancel_scope.cancel()
    assert fired["annotations"]["dashboard"] == f"{url}/#q=r1"
    line = done.stdout.decode().strip()
    assert line.endswith("· 1 alert firing"), line
