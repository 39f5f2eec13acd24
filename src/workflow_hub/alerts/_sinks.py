"""Sinks: where notifications go, each behind its own bounded queue and retrying task.

A sink is anything with ``async def deliver(batch)`` (:class:`AlertSink`): it sends the batch or
raises. Everything else is the same for every sink and lives here, in :class:`SinkRunner`: a
bounded queue (a full queue drops the new notification and counts it), delivery in the runner's
own task (so a slow or dead sink never slows another sink, the alerter or the hub), retries with
exponential backoff and jitter within a budget of attempts (past it the batch is dropped and
counted), and, for a sink that asks for it (Alertmanager), the firing alerts sent again on an
interval.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, final, runtime_checkable

import attrs
import trio

from .._contract import ContractError
from .._exceptions import WorkflowHubError
from .._failure_log import FailureLog
from ._values import Alert, AlertNotification, NotificationKind

__all__ = [
    "LATENCY_BUCKETS",
    "AlertSink",
    "CallbackSink",
    "SinkPolicy",
    "SinkRefused",
    "SinkRunner",
    "SinkStatistics",
    "check_answer",
    "require_httpx",
]

_logger = logging.getLogger("workflow_hub.alerts")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""The buckets of a sink's delivery latency (seconds), for ``/metrics``."""


class SinkRefused(WorkflowHubError):
    """The receiver refused a batch for good: retrying would get the same answer, so the
    runner drops the batch at once (and counts it). The HTTP sinks raise it for a 4xx other
    than 408 and 429; a sink of your own (or a :class:`CallbackSink`'s function) raises it for
    its own reasons. Any other exception is retried within the budget."""


_RETRIED_4XX = frozenset({408, 429})


def check_answer(status: int, said: str) -> None:
    """Raise unless ``status`` is 2xx: :class:`SinkRefused` when retrying cannot help."""
    if status // 100 == 2:
        return
    if status // 100 == 4 and status not in _RETRIED_4XX:
        raise SinkRefused(f"{said} refused it: {status}")
    raise RuntimeError(f"{said} answered {status}")


def require_httpx(sink: str) -> None:
    """The HTTP sinks need httpx (the ``alerts`` extra): say so when the sink is made, not on
    every retried delivery."""
    if importlib.util.find_spec("httpx") is None:
        raise ImportError(
            f"{sink} needs the 'alerts' extra (httpx): pip install 'workflow-hub[alerts]'"
        )


@runtime_checkable
class AlertSink(Protocol):
    """Where notifications go: ``await sink.deliver(batch)`` sends them, or raises to be retried.

    A batch holds at most the sink's ``policy.batch_limit`` notifications, in the order they
    happened. A sink may have a ``name`` (for metrics and logs; default: its class's name) and a
    ``policy`` (:class:`SinkPolicy`; default: ``SinkPolicy()``).
    """

    async def deliver(self, batch: Sequence[AlertNotification]) -> None: ...


def _positive(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ContractError(attribute.name, f"expected a number > 0, got {value!r}")
    if not math.isfinite(value):
        raise ContractError(attribute.name, f"expected a finite number, got {value!r}")


def _count(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ContractError(attribute.name, f"expected an int >= 1, got {value!r}")


@final
@attrs.frozen(kw_only=True)
class SinkPolicy:
    """How a sink's runner queues, retries and re-sends.

    Attempt ``n`` (from 0) of a failed batch waits a random time between half and all of
    ``min(backoff_max, backoff_initial * 2 ** n)`` ("equal jitter") before the next one.
    """

    queue_limit: int = attrs.field(default=1000, validator=_count)
    """Notifications waiting at most; one more is dropped (and counted)."""
    batch_limit: int = attrs.field(default=1, validator=_count)
    """Notifications handed to one ``deliver`` call at most."""
    attempts: int = attrs.field(default=8, validator=_count)
    """Attempts per batch (the retry budget); past them the batch is dropped (and counted)."""
    backoff_initial: float = attrs.field(default=0.5, validator=_positive)
    backoff_max: float = attrs.field(default=30.0, validator=_positive)
    timeout: float = attrs.field(default=10.0, validator=_positive)
    """Seconds one attempt may take; a slower one counts as failed."""
    resend_interval: float | None = attrs.field(default=None)
    """Seconds between two re-sendings of every firing alert (Alertmanager wants them, as
    Prometheus does); ``None``: each notification is sent once."""

    @resend_interval.validator
    def _check_resend(self, attribute: attrs.Attribute[float | None], value: object) -> None:
        if value is not None:
            _positive(self, attribute, value)

    def delay(self, attempt: int, rng: random.Random) -> float:
        ceiling = min(self.backoff_max, self.backoff_initial * 2.0 ** min(attempt, 64))
        return ceiling * (0.5 + 0.5 * rng.random())


@final
@attrs.define
class SinkStatistics:
    """What one sink's runner did so far (read by ``/metrics``)."""

    name: str
    sent: int = 0
    """Notifications delivered (re-sent firing alerts included)."""
    failed: int = 0
    """Attempts that failed (each retried until the budget is spent)."""
    dropped: int = 0
    """Notifications given up: the queue was full, or the retry budget was spent."""
    queued: int = 0
    """Notifications waiting now."""
    latency_buckets: list[int] = attrs.field(factory=lambda: [0] * len(LATENCY_BUCKETS))
    """Successful deliveries by duration, cumulative over :data:`LATENCY_BUCKETS`."""
    latency_sum: float = 0.0
    latency_count: int = 0

    def observe(self, seconds: float) -> None:
        self.latency_sum += seconds
        self.latency_count += 1
        for index, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                self.latency_buckets[index] += 1


@final
class CallbackSink:
    """A sink that calls a function of yours with each notification (sync or async): a chat bot,
    a pager, the scheduler's own UI. An exception is retried like any sink's failure;
    :class:`SinkRefused` drops the notification at once."""

    def __init__(
        self,
        callback: Callable[[AlertNotification], Awaitable[object] | object],
        *,
        name: str = "callback",
        policy: SinkPolicy | None = None,
    ) -> None:
        if not callable(callback):
            raise ContractError("callback", f"expected a callable, got {type(callback).__name__}")
        self._callback = callback
        self.name = name
        self.policy = SinkPolicy() if policy is None else policy

    async def deliver(self, batch: Sequence[AlertNotification]) -> None:
        for notification in batch:
            result = self._callback(notification)
            if inspect.isawaitable(result):
                await result


@final
class SinkRunner:
    """One sink's queue and delivery task. :meth:`offer` never blocks; :meth:`run` delivers."""

    def __init__(
        self,
        sink: AlertSink,
        *,
        firing: Callable[[], Sequence[Alert]] = list,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(sink, AlertSink):
            raise ContractError("sink", f"expected an AlertSink, got {type(sink).__name__}")
        self.sink = sink
        policy = getattr(sink, "policy", None)
        self.policy: SinkPolicy = policy if isinstance(policy, SinkPolicy) else SinkPolicy()
        self.statistics = SinkStatistics(name=str(getattr(sink, "name", type(sink).__name__)))
        self._firing = firing
        self._wall = wall_clock
        self._rng = rng or random.Random()
        self._send, self._receive = trio.open_memory_channel[AlertNotification](
            self.policy.queue_limit
        )
        self._failures = FailureLog(_logger, f"alert sink {self.statistics.name!r}")
        self._idle = trio.Event()
        self._idle.set()

    def offer(self, notification: AlertNotification) -> None:
        """Queue a notification; when the queue is full it is dropped and counted."""
        try:
            self._send.send_nowait(notification)
        except trio.WouldBlock:
            self.statistics.dropped += 1
            return
        self.statistics.queued += 1
        self._idle = trio.Event() if self._idle.is_set() else self._idle

    async def wait_idle(self) -> None:
        """Until nothing is queued or being delivered (tests, and a graceful stop)."""
        await self._idle.wait()

    async def run(self) -> None:
        """Deliver until cancelled; then the sink's ``aclose()``, if it has one."""
        try:
            await self._run()
        finally:
            self._failures.close()
            close = getattr(self.sink, "aclose", None)
            if close is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(5.0):
                    await close()

    async def _run(self) -> None:
        interval = self.policy.resend_interval
        resend_at = math.inf if interval is None else trio.current_time() + interval
        while True:
            batch: list[AlertNotification] = []
            with trio.move_on_at(resend_at):
                if self.statistics.queued == 0:
                    self._idle.set()
                batch.append(await self._receive.receive())
            if not batch:
                assert interval is not None
                resend_at = trio.current_time() + interval
                await self._resend()
                continue
            while len(batch) < self.policy.batch_limit:
                try:
                    batch.append(self._receive.receive_nowait())
                except trio.WouldBlock:
                    break
            self.statistics.queued -= len(batch)
            await self._deliver(batch)

    async def _resend(self) -> None:
        at = self._wall()
        alerts = list(self._firing())
        step = self.policy.batch_limit
        for start in range(0, len(alerts), step):
            await self._deliver(
                [
                    AlertNotification(kind=NotificationKind.FIRING, alert=alert, at=at)
                    for alert in alerts[start : start + step]
                ]
            )

    async def _deliver(self, batch: list[AlertNotification]) -> bool:
        policy = self.policy
        for attempt in range(policy.attempts):
            started = trio.current_time()
            try:
                with trio.fail_after(policy.timeout):
                    await self.sink.deliver(batch)
            except Exception as error:  # a sink's failure is counted and retried, never raised
                self.statistics.failed += 1
                self._failures.failed(error)
                if isinstance(error, SinkRefused):
                    break
                if attempt + 1 < policy.attempts:
                    await trio.sleep(policy.delay(attempt, self._rng))
                continue
            self.statistics.sent += len(batch)
            self.statistics.observe(trio.current_time() - started)
            return True
        self.statistics.dropped += len(batch)
        _logger.warning(
            "alert sink %r: dropped %d notification(s) after %d attempt(s)",
            self.statistics.name,
            len(batch),
            attempt + 1,
        )
        return False
