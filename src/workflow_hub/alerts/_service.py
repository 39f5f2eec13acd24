"""``workflow-hub alert``'s composition: sinks from addresses, metrics on a port, the alerter.

The command parses its arguments and opens its source; everything else is here, so that a
program gets the same service with one call.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import trio

from .._contract import ContractError
from ..fleet import FleetEngine
from ._alertmanager import DEFAULT_RESEND_INTERVAL, AlertmanagerSink
from ._metrics import AlertMetrics
from ._run import Alerter, run_alerts
from ._sinks import AlertSink
from ._values import AlertNotification, AlertRules
from ._webhook import WebhookSink

__all__ = ["serve_alerts"]


async def serve_alerts(
    source: Any,
    *,
    alertmanager: str | None = None,
    webhooks: Sequence[str] = (),
    sinks: Sequence[AlertSink] = (),
    rules: AlertRules | None = None,
    name: str = "hub",
    resend_interval: float = DEFAULT_RESEND_INTERVAL,
    metrics_address: tuple[str, int] | None = None,
    on_notification: Callable[[AlertNotification], None] | None = None,
    task_status: trio.TaskStatus[Alerter] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Follow ``source`` (a hub, a :class:`~workflow_hub.remote.RemoteHub`, a
    :class:`~workflow_hub.fleet.FleetEngine`) and send its alerts to an Alertmanager, to
    webhooks (signed with the secret the environment gives, see :func:`webhook_secret`) and to
    ``sinks``, until cancelled. With ``metrics_address`` (host, port), ``/metrics`` is served
    there (prometheus-client's own server, in a thread) with :class:`AlertMetrics`.
    """
    chosen: list[AlertSink] = list(sinks)
    if alertmanager is not None:
        chosen.append(AlertmanagerSink(alertmanager, resend_interval=resend_interval))
    chosen.extend(WebhookSink(url) for url in webhooks)
    if not chosen and on_notification is None:
        raise ContractError("sinks", "no sink: give an Alertmanager, a webhook or a sink")
    if not isinstance(source, FleetEngine) and not callable(getattr(source, "subscribe", None)):
        raise ContractError("source", f"expected a hub or a fleet, got {type(source).__name__}")
    async with trio.open_nursery() as nursery:
        alerter: Alerter = await nursery.start(
            functools.partial(
                run_alerts,
                source,
                chosen,
                rules=rules,
                name=name,
                on_notification=on_notification,
            )
        )
        with _metrics_served(alerter, metrics_address):
            task_status.started(alerter)
            await trio.sleep_forever()


@contextlib.contextmanager
def _metrics_served(alerter: Alerter, address: tuple[str, int] | None) -> Iterator[None]:
    if address is None:
        yield
        return
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    AlertMetrics(alerter, registry)
    server, thread = start_http_server(address[1], address[0], registry=registry)
    alerter.metrics_address = (address[0], server.server_address[1])
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
