"""The alerter: follow a source, keep the book, hand every transition to every sink.

:func:`run_alerts` is a task for the caller's nursery, like :func:`~workflow_hub.reporting.run_reporter`.
Its source is anything ``watch`` shows: a hub in this process (``hub.subscribe()``), a hub served
over HTTP (:class:`~workflow_hub.remote.RemoteHub`), or a fleet
(:class:`~workflow_hub.fleet.FleetEngine`, e.g. :class:`~workflow_hub.redis.RedisFleet`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, final

import trio

from .._contract import ContractError, Frame
from .._public import NoPublicConstructor
from ..fleet import FleetEngine, FleetFollower
from ._book import AlertBook
from ._sinks import AlertSink, SinkRunner, SinkStatistics
from ._values import Alert, AlertName, AlertNotification, AlertRules

__all__ = ["LIVENESS_CHECK", "Alerter", "run_alerts"]

_logger = logging.getLogger("workflow_hub.alerts")

LIVENESS_CHECK = 0.25
"""Seconds between two looks at what changes without a frame (a connection lost, a fleet's
source gone stale)."""


class _Subscribable(Protocol):
    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[Frame]]: ...


@final
class Alerter(metaclass=NoPublicConstructor):
    """A running alerter, as :func:`run_alerts` hands it to ``nursery.start`` (no public
    constructor: only a running alerter has one)."""

    def __init__(
        self,
        book: AlertBook,
        sinks: Sequence[SinkRunner],
        on_notification: Callable[[AlertNotification], None] | None = None,
    ) -> None:
        self.book = book
        self.runners = tuple(sinks)
        self._timer: trio.CancelScope | None = None
        self._on_notification = on_notification
        self.notifications = 0
        self.metrics_address: tuple[str, int] | None = None
        """Where ``/metrics`` is served (:func:`serve_alerts`), ``None`` when it is not."""
        # Replaced whole on every change: a scrape in another thread reads one consistent dict.
        self._counts: Mapping[AlertName, int] = book.statistics()

    def firing(self) -> list[Alert]:
        """The alerts firing now."""
        return self.book.firing()

    def firing_counts(self) -> Mapping[AlertName, int]:
        """How many alerts fire, by name (safe to read from another thread)."""
        return self._counts

    def sink_statistics(self) -> list[SinkStatistics]:
        return [runner.statistics for runner in self.runners]

    async def wait_delivered(self) -> None:
        """Until every sink has delivered (or given up) what it was handed so far."""
        for runner in self.runners:
            await runner.wait_idle()

    # --- driven by run_alerts -----------------------------------------------------------------

    def hand_out(self, notifications: Iterable[AlertNotification]) -> None:
        for notification in notifications:
            self.notifications += 1
            if self._on_notification is not None:
                self._on_notification(notification)
            for runner in self.runners:
                runner.offer(notification)
        self._counts = self.book.statistics()
        if self._timer is not None:
            self._timer.deadline = self.book.next_deadline()

    async def run_timer(self) -> None:
        """Evaluate when the next pending condition is due."""
        while True:
            with trio.CancelScope(deadline=self.book.next_deadline()) as scope:
                self._timer = scope
                await trio.sleep_forever()
            self._timer = None
            self.hand_out(self.book.evaluate(trio.current_time()))


async def run_alerts(
    source: _Subscribable | FleetEngine,
    sinks: Iterable[AlertSink],
    *,
    rules: AlertRules | None = None,
    name: str = "hub",
    wall_clock: Callable[[], float] = time.time,
    on_notification: Callable[[AlertNotification], None] | None = None,
    task_status: trio.TaskStatus[Alerter] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Follow ``source`` and send its alerts to ``sinks`` until cancelled.

    ``source`` is a hub (or anything with its ``subscribe()``, such as a
    :class:`~workflow_hub.remote.RemoteHub`), its alerts' ``source`` label being ``name``; or a
    :class:`~workflow_hub.fleet.FleetEngine`, each of whose sources is its own ``source``. Start
    it with ``alerter = await nursery.start(run_alerts, hub, [sink])``: the subscription is
    attached when ``start`` returns. Each sink runs in a task of its own behind a bounded queue
    (see :class:`SinkRunner`), so a slow sink slows nothing else. ``on_notification`` is called
    with every transition as it happens (metrics).
    """
    rules = AlertRules() if rules is None else rules
    if not isinstance(rules, AlertRules):
        raise ContractError("rules", f"expected AlertRules, got {type(rules).__name__}")
    if not isinstance(name, str):
        raise ContractError("name", f"expected a str, got {type(name).__name__}")
    book = AlertBook(rules, wall_clock=wall_clock)
    runners = [SinkRunner(sink, firing=book.firing, wall_clock=wall_clock) for sink in sinks]
    alerter = Alerter._create(book, runners, on_notification)
    async with trio.open_nursery() as nursery:
        for runner in runners:
            nursery.start_soon(runner.run)
        nursery.start_soon(alerter.run_timer)
        if isinstance(source, FleetEngine):
            async with source.follow_fleet() as fleet:
                task_status.started(alerter)
                nursery.start_soon(_watch_liveness, alerter, fleet)
                async for member, frame in fleet:
                    alerter.hand_out(book.apply(member, frame, trio.current_time()))
        else:
            if not callable(getattr(source, "subscribe", None)):
                raise ContractError(
                    "source",
                    f"expected a hub, a RemoteHub or a FleetEngine, got {type(source).__name__}",
                )
            async with source.subscribe() as stream:
                task_status.started(alerter)
                if hasattr(stream, "connected"):  # a remote hub's stream
                    nursery.start_soon(_watch_connection, alerter, stream, name)
                async for frame in stream:
                    alerter.hand_out(book.apply(name, frame, trio.current_time()))
            # The hub was disposed: nothing more will come from it.
            alerter.hand_out(book.set_unknown(name, "ended", trio.current_time()))
            await trio.sleep_forever()


async def _watch_connection(alerter: Alerter, stream: object, name: str) -> None:
    """A remote hub's stream that is not connected makes its source unknown ("unreachable")."""
    shown: str | None = None
    while True:
        reason = None if getattr(stream, "connected", True) else "unreachable"
        if reason != shown:
            shown = reason
            alerter.hand_out(alerter.book.set_unknown(name, reason, trio.current_time()))
        await trio.sleep(LIVENESS_CHECK)


async def _watch_liveness(alerter: Alerter, fleet: FleetFollower) -> None:
    """A fleet's source that crashed, or a fleet that cannot be read, is unknown with that reason
    (its frames already say "unavailable"; this tells why)."""
    unseen = "not seen yet"  # never a reason: the first look at a source always says
    shown: dict[str, str | None] = {}
    while True:
        readable = fleet.readable
        reasons: dict[str, str | None] = {}
        for member, live in fleet.liveness.items():
            if not readable:
                reasons[member] = "unreachable"
            elif live.crashed:
                reasons[member] = "crashed"
            elif live.stale:
                reasons[member] = "stopped"
            else:
                reasons[member] = None
        now = trio.current_time()
        for member, reason in reasons.items():
            if shown.get(member, unseen) != reason and member in alerter.book.fleet.views:
                shown[member] = reason
                alerter.hand_out(alerter.book.set_unknown(member, reason, now))
        await trio.sleep(LIVENESS_CHECK)
