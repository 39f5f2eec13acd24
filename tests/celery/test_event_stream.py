"""Celery events sent through the real broker to the bridge's real receiver, in orders and
with contents a worker cannot be made to produce on demand (issue 37): a bad event inside a
burst, a task's events overtaking each other. Celery's own ``EventDispatcher`` sends them, as
a worker does; no worker is needed."""

from __future__ import annotations

import uuid
from typing import Any

from celery.events.event import get_exchange

from tests.support.redis_server import RedisServer

from .app import app
from .support import blocking, bridged, ended, stages


def _send(events: list[tuple[str, dict[str, Any]]]) -> None:
    """Send ``events`` in this order on one connection, as one worker's burst."""
    with app.events.default_dispatcher(hostname="w9@workflow-hub-tests") as dispatcher:
        for kind, fields in events:
            dispatcher.send(kind, **fields)


async def test_a_bad_event_in_a_burst_is_refused_alone(broker: RedisServer) -> None:
    """Issue 37 (P3): a ``task-received`` whose name holds a lone surrogate, in the middle of a
    burst, is refused alone and counted; the next good task of the same burst is shown and
    ends. (``linger`` gathers the burst into one batch, as a busy worker's events are.)"""
    good, bad, later = (str(uuid.uuid4()) for _ in range(3))
    async with bridged(linger=0.5) as (roots, watch, _tracker):
        await blocking(
            _send,
            [
                ("task-received", {"uuid": good, "name": "ok", "root_id": good, "retries": 0}),
                ("task-received", {"uuid": bad, "name": "bad\ud800", "root_id": bad}),
                ("task-received", {"uuid": later, "name": "ok", "root_id": later}),
                ("task-started", {"uuid": later}),
                ("task-succeeded", {"uuid": good, "result": "1"}),
                ("task-succeeded", {"uuid": later, "result": "2"}),
            ],
        )
        for root_id in (good, later):
            root = await roots.wait_root(root_id, ended, "the good task ended")
            assert stages(root)[root_id].status == "completed"
        assert roots.get(bad) is None
        assert watch.statistics().refused == 1
        assert watch.errors == 0


async def test_a_task_succeeded_before_it_started_ends_its_root(broker: RedisServer) -> None:
    """Issue 37 (D4, D8): ``task-succeeded`` arriving before ``task-started`` and
    ``task-received`` (a worker's pool process and main process send on connections of their
    own) ends the root: never left working/executing."""
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    async with bridged() as (roots, _watch, _tracker):
        await blocking(
            _send,
            [
                ("task-received", {"uuid": first, "name": "one", "root_id": first}),
                ("task-succeeded", {"uuid": first, "result": "1"}),
                ("task-succeeded", {"uuid": second, "result": "2"}),
                ("task-started", {"uuid": second}),
                (
                    "task-received",
                    {"uuid": second, "name": "two", "root_id": first, "parent_id": first},
                ),
            ],
        )
        root = await roots.wait_root(
            first, lambda r: ended(r) and len(stages(r)) == 2, "both tasks, ended"
        )
        assert {key: node.status for key, node in stages(root).items()} == {
            first: "completed",
            second: "completed",
        }
        assert stages(root)[second].name == "two"
        assert (root.state, root.reason, root.active_execution_count) == ("idle", "quiescent", 0)
        history = roots.history[first]
        assert not any(v.reason == "executing" for v in history[history.index(root) :])


def _publish_raw(bodies: list[Any]) -> None:
    """Publish ``bodies`` as they are on the events exchange: what no Celery sends, but a
    broker shared with other programs can carry."""
    with app.connection_for_write() as connection:
        exchange = get_exchange(connection, name=app.conf.event_exchange)
        producer = connection.Producer(exchange=exchange, serializer="json")
        for body in bodies:
            producer.publish(body, routing_key="task.received", declare=[exchange])


async def test_messages_that_are_not_events_are_dropped_and_a_list_of_events_applies(
    broker: RedisServer,
) -> None:
    """Issue 38 (P3): the receiver hands the bridge each message's events as they are (no
    clock or timestamp work the bridge would not read): a message that is no event (text, a
    number) is dropped without a refusal or an error, a list of events is applied event by
    event, and what is not an event inside the list is dropped alone."""
    task = str(uuid.uuid4())
    async with bridged(linger=0.2) as (roots, watch, _tracker):
        received = {"type": "task-received", "uuid": task, "name": "ok", "root_id": task}
        await blocking(
            _publish_raw,
            [
                "not an event",
                7,
                [received, "junk", {"type": "task-started", "uuid": task}],
                {"type": "task-succeeded", "uuid": task, "result": "1"},
            ],
        )
        root = await roots.wait_root(task, ended, "the task ended")
        assert stages(root)[task].status == "completed"
        assert (watch.statistics().refused, watch.errors) == (0, 0)
