"""Prometheus Alertmanager as a sink: its v2 API, fed the way Prometheus feeds it.

Alertmanager owns grouping, inhibition, silences and routing (Slack, PagerDuty, e-mail): this sink
only tells it which alerts fire. As Prometheus does, it sends every firing alert again on an
interval with ``endsAt`` a few intervals ahead (so that an alerter that died lets its alerts
expire instead of firing forever), and a resolved one once, with ``endsAt`` the time it resolved.
Alertmanager identifies an alert by its labels, so a restarted alerter that sends the same alert
again refreshes it; nothing is duplicated.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any, final

from .._contract import ContractError
from ._sinks import SinkPolicy, check_answer, require_httpx
from ._values import Alert, AlertNotification, NotificationKind

__all__ = ["DEFAULT_RESEND_INTERVAL", "AlertmanagerSink", "rfc3339"]

DEFAULT_RESEND_INTERVAL = 60.0
"""Seconds between two re-sendings of the firing alerts (Prometheus' ``--rules.alert.resend-delay``
is one minute)."""
_VALID_FOR = 4
"""A firing alert's ``endsAt`` is this many resend intervals ahead (Prometheus' rule too)."""


def rfc3339(seconds: float) -> str:
    """Seconds since the epoch as RFC 3339 in UTC, with milliseconds."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@final
class AlertmanagerSink:
    """Posts alerts to an Alertmanager (``http://127.0.0.1:9093``) at ``/api/v2/alerts``.

    ``generator_url`` is what Alertmanager shows as the alert's origin (default: the alert's
    dashboard link, when it has one). Its :attr:`policy` batches up to 64 alerts a request and
    re-sends the firing ones every ``resend_interval`` seconds.
    """

    def __init__(
        self,
        url: str,
        *,
        resend_interval: float = DEFAULT_RESEND_INTERVAL,
        generator_url: str | None = None,
        headers: dict[str, str] | None = None,
        name: str | None = None,
        policy: SinkPolicy | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ContractError("url", f"expected an http:// or https:// URL, got {url!r}")
        require_httpx("AlertmanagerSink")
        self.url = url.rstrip("/")
        self.name = name or f"alertmanager {self.url}"
        self.policy = (
            SinkPolicy(batch_limit=64, resend_interval=resend_interval)
            if policy is None
            else policy
        )
        self._valid_for = _VALID_FOR * (self.policy.resend_interval or resend_interval)
        self._generator_url = generator_url
        self._headers = dict(headers or {})
        self._client: Any = None

    def body(self, batch: Sequence[AlertNotification]) -> list[dict[str, Any]]:
        """The JSON Alertmanager is posted for ``batch`` (its ``postableAlerts``)."""
        return [self._postable(notification) for notification in batch]

    def _postable(self, notification: AlertNotification) -> dict[str, Any]:
        alert: Alert = notification.alert
        if notification.kind is NotificationKind.RESOLVED and alert.ends_at is not None:
            ends_at = alert.ends_at
        else:
            ends_at = notification.at + self._valid_for
        postable: dict[str, Any] = {
            "labels": dict(alert.labels),
            "annotations": dict(alert.annotations),
            "startsAt": rfc3339(alert.starts_at),
            "endsAt": rfc3339(ends_at),
        }
        generator = self._generator_url or alert.annotations.get("dashboard")
        if generator:
            postable["generatorURL"] = generator
        return postable

    async def deliver(self, batch: Sequence[AlertNotification]) -> None:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(headers=self._headers, timeout=self.policy.timeout)
        response = await self._client.post(f"{self.url}/api/v2/alerts", json=self.body(batch))
        check_answer(response.status_code, f"Alertmanager ({response.text[:200]!r})")

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
