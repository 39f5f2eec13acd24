"""The webhook sink against a real receiver on loopback (issue 40).

Signatures are checked with the ``standardwebhooks`` package (the specification's own Python
library), not with this package's code; bodies are read as CloudEvents 1.0 structured JSON. The
network runs on the real clock: the rules fire at once, retries wait milliseconds, and every wait
is bounded by ``fail_after``.
"""

from __future__ import annotations

import base64
import functools
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import standardwebhooks
import trio
import trio.testing

from workflow_hub import Availability, WorkflowActivityHub, WorkflowHubError, open_hub
from workflow_hub.alerts import (
    Alerter,
    AlertNotification,
    AlertRules,
    AlertSink,
    CallbackSink,
    SinkPolicy,
    SinkRefused,
    WebhookSink,
    run_alerts,
)

from .receiver import receiving
from .support import asking, working

SECRET = "whsec_" + base64.b64encode(b"a secret of thirty-two bytes....").decode()
AT_ONCE = AlertRules(needs_attention_for=0)
QUICK = SinkPolicy(backoff_initial=0.01, backoff_max=0.05, timeout=2.0)  # loaded CI: 2 s
BOUND = 10  # seconds any one wait of these tests may take at most


@asynccontextmanager
async def alerting(hub: WorkflowActivityHub, *sinks: AlertSink) -> AsyncIterator[Alerter]:
    async with trio.open_nursery() as nursery:
        alerter: Alerter = await nursery.start(
            functools.partial(run_alerts, hub, list(sinks), rules=AT_ONCE, name="sched-1")
        )
        yield alerter
        nursery.cancel_scope.cancel()


def verified(request: object, secret: str = SECRET) -> dict[str, object]:
    """The CloudEvent of a request, its signature checked by standardwebhooks."""
    event = standardwebhooks.Webhook(secret).verify(request.body, request.headers)  # type: ignore[attr-defined]
    assert isinstance(event, dict)
    return event


async def test_webhooks_are_signed_cloud_events_an_independent_library_verifies() -> None:
    async with receiving() as receiver, open_hub() as hub:
        sink = WebhookSink(receiver.url, secret=SECRET)
        async with alerting(hub, sink):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [asking("r1", team="infra")])
            with trio.fail_after(BOUND):
                await receiver.wait_for(1)
            publisher.publish_changed(working("r1"))
            with trio.fail_after(BOUND):
                await receiver.wait_for(2)
    firing, resolved = (verified(request) for request in receiver.requests)
    assert receiver.requests[0].headers["content-type"] == "application/cloudevents+json"
    assert firing["specversion"] == "1.0"
    assert firing["type"] == "io.workflow-hub.alert.firing"
    assert resolved["type"] == "io.workflow-hub.alert.resolved"
    assert firing["subject"] == resolved["subject"] == "r1"
    assert firing["id"] == receiver.requests[0].headers["webhook-id"]
    assert firing["id"] != resolved["id"]
    data = firing["data"]
    assert isinstance(data, dict)
    assert data["labels"]["alertname"] == "WorkflowNeedsAttention"
    assert data["labels"]["team"] == "infra"
    assert "deploy to prod?" in data["annotations"]["summary"]
    assert "endsAt" in resolved["data"]  # type: ignore[operator]


async def test_a_tampered_body_does_not_verify() -> None:
    async with (
        receiving() as receiver,
        open_hub() as hub,
        alerting(hub, WebhookSink(receiver.url, secret=SECRET)),
    ):
        hub.register_publisher().publish_snapshot(Availability.READY, [asking("r1")])
        with trio.fail_after(BOUND):
            await receiver.wait_for(1)
    request = receiver.requests[0]
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(SECRET).verify(request.body + b" ", request.headers)


async def test_the_secret_comes_from_a_file_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    monkeypatch.delenv("WORKFLOW_HUB_WEBHOOK_SECRET", raising=False)
    monkeypatch.setenv("WORKFLOW_HUB_WEBHOOK_SECRET_FILE", str(secret_file))
    async with receiving() as receiver, open_hub() as hub:
        sink = WebhookSink(receiver.url)
        assert sink.signed
        async with alerting(hub, sink):
            hub.register_publisher().publish_snapshot(Availability.READY, [asking("r1")])
            with trio.fail_after(BOUND):
                await receiver.wait_for(1)
    verified(receiver.requests[0])


async def test_500s_and_timeouts_are_retried_under_the_same_id() -> None:
    async with receiving() as receiver, open_hub() as hub:
        receiver.answers.extend([500, 503, "hang", 200])
        sink = WebhookSink(receiver.url, secret=SECRET, policy=QUICK)
        async with alerting(hub, sink) as alerter:
            hub.register_publisher().publish_snapshot(Availability.READY, [asking("r1")])
            with trio.fail_after(BOUND):
                await receiver.wait_for(4)
                await alerter.wait_delivered()
            [stats] = alerter.sink_statistics()
    assert (stats.sent, stats.failed, stats.dropped) == (1, 3, 0)
    assert len({request.headers["webhook-id"] for request in receiver.requests}) == 1
    for request in receiver.requests:  # each attempt signed afresh
        verified(request)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_nothing_is_lost_while_the_receiver_is_down_within_the_budget() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    policy = SinkPolicy(attempts=100, backoff_initial=0.01, backoff_max=0.05, timeout=2.0)
    async with (
        open_hub() as hub,
        alerting(hub, WebhookSink(url, secret=SECRET, policy=policy)) as alerter,
    ):
        hub.register_publisher().publish_snapshot(
            Availability.READY, [asking(f"r{index}") for index in range(3)]
        )
        with trio.fail_after(BOUND):
            # Statistics have no event: look until the refusals have begun to be retried.
            while alerter.sink_statistics()[0].failed < 3:  # noqa: ASYNC110
                await trio.sleep(0.01)
        async with receiving(port=port) as receiver:
            with trio.fail_after(BOUND):
                await receiver.wait_for(3)
                await alerter.wait_delivered()
        [stats] = alerter.sink_statistics()
    assert (stats.sent, stats.dropped) == (3, 0)
    assert sorted(verified(r)["subject"] for r in receiver.requests) == ["r0", "r1", "r2"]  # type: ignore[type-var]


async def test_past_its_budget_a_notification_is_dropped_and_counted() -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"
    policy = SinkPolicy(attempts=3, backoff_initial=0.01, backoff_max=0.02, timeout=0.5)
    async with (
        open_hub() as hub,
        alerting(hub, WebhookSink(url, secret=SECRET, policy=policy)) as alerter,
    ):
        hub.register_publisher().publish_snapshot(Availability.READY, [asking("r0"), asking("r1")])
        with trio.fail_after(BOUND):
            await trio.testing.wait_all_tasks_blocked()
            await alerter.wait_delivered()
        [stats] = alerter.sink_statistics()
    assert (stats.sent, stats.failed, stats.dropped) == (0, 6, 2)


async def test_a_full_queue_drops_and_counts() -> None:
    policy = SinkPolicy(queue_limit=2, timeout=60)
    async with receiving() as receiver, open_hub() as hub:
        receiver.default = "hang"
        async with alerting(hub, WebhookSink(receiver.url, policy=policy)) as alerter:
            hub.register_publisher().publish_snapshot(
                Availability.READY, [asking(f"r{index}") for index in range(6)]
            )
            with trio.fail_after(BOUND):
                await receiver.wait_for(1)
            # One in flight, two queued, three dropped.
            [stats] = alerter.sink_statistics()
            assert (stats.queued, stats.dropped) == (2, 3)


async def test_a_dead_sink_slows_neither_the_others_nor_the_hub() -> None:
    async with receiving() as dead, receiving() as alive, open_hub() as hub:
        dead.default = "hang"
        slow = WebhookSink(dead.url, policy=SinkPolicy(timeout=60))
        fast = WebhookSink(alive.url, secret=SECRET)
        async with alerting(hub, slow, fast):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [asking("r1"), asking("r2")])
            publisher.publish_changed(working("r1"))
            with trio.fail_after(BOUND):
                await alive.wait_for(3)
                await dead.wait_for(1)
    kinds = [json.loads(request.body)["type"].rsplit(".", 1)[1] for request in alive.requests]
    assert kinds == ["firing", "firing", "resolved"]
    assert len(dead.requests) == 1


def test_a_secret_that_is_not_base64_is_refused_naming_the_variable() -> None:
    from workflow_hub import ContractError
    from workflow_hub.alerts import webhook_secret

    with pytest.raises(ContractError, match="WORKFLOW_HUB_WEBHOOK_SECRET"):
        webhook_secret({"WORKFLOW_HUB_WEBHOOK_SECRET": "whsec_not base64!"})
    assert webhook_secret({}) is None


async def test_ids_are_the_same_after_a_restart_of_the_alerter() -> None:
    """Restarts: a second alerter on the same picture sends the same alerts under the same
    ``webhook-id``, so a receiver that deduplicates shows each once."""
    async with receiving() as receiver, open_hub() as hub:
        hub.register_publisher().publish_snapshot(
            Availability.READY, [asking("r1"), asking("r2", prompt_id="p2")]
        )
        for run in (1, 2):
            async with alerting(hub, WebhookSink(receiver.url, secret=SECRET)):
                with trio.fail_after(BOUND):
                    await receiver.wait_for(2 * run)
    first, second = receiver.requests[:2], receiver.requests[2:]
    assert sorted(r.headers["webhook-id"] for r in first) == sorted(
        r.headers["webhook-id"] for r in second
    )


async def test_a_refusal_for_good_is_dropped_at_once_not_retried() -> None:
    """A 4xx other than 408 and 429 would get the same answer again: dropped, counted, next."""
    async with receiving() as receiver, open_hub() as hub:
        receiver.answers.extend([400, 429, 200])
        sink = WebhookSink(receiver.url, secret=SECRET, policy=QUICK)
        async with alerting(hub, sink) as alerter:
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [asking("r1")])
            with trio.fail_after(BOUND):
                await receiver.wait_for(1)
            publisher.publish_snapshot(
                Availability.READY, [asking("r1"), asking("r2", prompt_id="p2")]
            )
            with trio.fail_after(BOUND):
                await receiver.wait_for(3)
                await alerter.wait_delivered()
            [stats] = alerter.sink_statistics()
    assert (stats.sent, stats.failed, stats.dropped) == (1, 2, 1)
    assert [verified(r)["subject"] for r in receiver.requests] == ["r1", "r2", "r2"]


async def test_a_sink_of_your_own_refuses_for_good_with_sink_refused() -> None:
    """The public ``SinkRefused``: a function of yours says retrying cannot help; the runner
    drops that notification after one attempt (counted), while another exception is retried."""
    calls: list[str | None] = []

    def chat(notification: AlertNotification) -> None:
        root = notification.alert.root_run_id
        calls.append(root)
        if root == "gone":
            raise SinkRefused("the channel does not exist")
        if calls.count(root) == 1:
            raise RuntimeError("the chat is busy")  # retried

    async with open_hub() as hub, alerting(hub, CallbackSink(chat, policy=QUICK)) as alerter:
        hub.register_publisher().publish_snapshot(
            Availability.READY, [asking("gone"), asking("kept", prompt_id="p2")]
        )
        with trio.fail_after(BOUND):
            await trio.testing.wait_all_tasks_blocked()
            await alerter.wait_delivered()
        [stats] = alerter.sink_statistics()
    assert sorted(calls, key=str) == ["gone", "kept", "kept"]
    assert (stats.sent, stats.failed, stats.dropped) == (1, 2, 1)
    assert issubclass(SinkRefused, WorkflowHubError)
