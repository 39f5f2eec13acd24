"""Webhooks: CloudEvents 1.0 in structured JSON mode, signed the Standard Webhooks way.

Each notification is one POST whose body is one CloudEvent (``Content-Type:
application/cloudevents+json``): ``type`` ``io.workflow-hub.alert.firing`` or ``….resolved``,
``subject`` the root (or the source, for a source's alert), ``id`` the notification's
deterministic id, so a receiver deduplicates retries and what a restarted alerter sends again.
The headers sign it as the Standard Webhooks specification says: ``webhook-id`` (the same id),
``webhook-timestamp`` (seconds, at each attempt) and ``webhook-signature`` (``v1,`` and the
base64 HMAC-SHA256 of ``"{id}.{timestamp}.{body}"`` with the secret). The secret comes from the
environment, never from a command line: ``WORKFLOW_HUB_WEBHOOK_SECRET`` (``whsec_`` and base64,
as Standard Webhooks writes secrets), or a file named by ``WORKFLOW_HUB_WEBHOOK_SECRET_FILE``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, final

from .._contract import ContractError
from ._alertmanager import rfc3339
from ._sinks import SinkPolicy, check_answer, require_httpx
from ._values import AlertNotification

__all__ = [
    "EVENT_TYPE_PREFIX",
    "SECRET_FILE_VARIABLE",
    "SECRET_VARIABLE",
    "WebhookSink",
    "cloud_event",
    "sign",
    "webhook_secret",
]

SECRET_VARIABLE = "WORKFLOW_HUB_WEBHOOK_SECRET"
"""The environment variable that holds the webhooks' signing secret (``whsec_…``)."""
SECRET_FILE_VARIABLE = "WORKFLOW_HUB_WEBHOOK_SECRET_FILE"
"""The environment variable that names a file holding the secret (a mounted secret)."""
EVENT_TYPE_PREFIX = "io.workflow-hub.alert"
_SECRET_PREFIX = "whsec_"


def _decode_secret(text: str, where: str) -> bytes:
    text = text.strip()
    if text.startswith(_SECRET_PREFIX):
        text = text[len(_SECRET_PREFIX) :]
    try:
        # Standard Webhooks' own libraries accept unpadded base64: so does this.
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ContractError(
            where, "expected whsec_ and base64 (a Standard Webhooks secret)"
        ) from None
    if not key:
        raise ContractError(where, "the secret is empty")
    return key


def webhook_secret(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The signing key the environment gives (``WORKFLOW_HUB_WEBHOOK_SECRET``, else the file
    ``WORKFLOW_HUB_WEBHOOK_SECRET_FILE`` names); ``None`` when neither is set. A secret that is
    not ``whsec_`` and base64 is a :class:`~workflow_hub.ContractError` naming the variable."""
    environ = os.environ if environ is None else environ
    text = environ.get(SECRET_VARIABLE)
    if text:
        return _decode_secret(text, SECRET_VARIABLE)
    path = environ.get(SECRET_FILE_VARIABLE)
    if path:
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            raise ContractError(SECRET_FILE_VARIABLE, f"cannot read {path}: {error}") from None
        return _decode_secret(text, SECRET_FILE_VARIABLE)
    return None


def sign(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header of one message (Standard Webhooks, ``v1``)."""
    signed = b"%s.%d.%s" % (message_id.encode(), timestamp, body)
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def cloud_event(notification: AlertNotification, *, source: str) -> dict[str, Any]:
    """The CloudEvent (structured JSON mode) of one notification."""
    alert = notification.alert
    data: dict[str, Any] = {
        "status": str(notification.kind),
        "alertname": str(alert.name),
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "startsAt": rfc3339(alert.starts_at),
        "alertId": alert.id,
    }
    if alert.ends_at is not None:
        data["endsAt"] = rfc3339(alert.ends_at)
    return {
        "specversion": "1.0",
        "id": notification.id,
        "source": source,
        "type": f"{EVENT_TYPE_PREFIX}.{notification.kind}",
        "subject": alert.root_run_id or alert.source,
        "time": rfc3339(notification.at),
        "datacontenttype": "application/json",
        "data": data,
    }


@final
class WebhookSink:
    """POSTs each notification to ``url`` as a signed CloudEvent.

    ``secret`` is the signing key (bytes, or a ``whsec_…`` string); by default
    :func:`webhook_secret` reads it from the environment, and without one the requests are not
    signed (``webhook-id`` and ``webhook-timestamp`` are still sent). ``event_source`` is the
    CloudEvents ``source`` (default ``/workflow-hub/alerts``). Any answer but 2xx, a timeout or
    a connection error is retried with backoff and jitter (:class:`SinkPolicy`).
    """

    def __init__(
        self,
        url: str,
        *,
        secret: bytes | str | None = None,
        event_source: str = "/workflow-hub/alerts",
        name: str | None = None,
        policy: SinkPolicy | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ContractError("url", f"expected an http:// or https:// URL, got {url!r}")
        require_httpx("WebhookSink")
        self.url = url
        self.name = name or f"webhook {url}"
        self.policy = SinkPolicy() if policy is None else policy
        if isinstance(secret, str):
            secret = _decode_secret(secret, "secret")
        self._key = webhook_secret() if secret is None else secret
        self._source = event_source
        self._clock = clock
        self._client: Any = None

    @property
    def signed(self) -> bool:
        """Whether requests carry a ``webhook-signature``."""
        return self._key is not None

    def request(self, notification: AlertNotification) -> tuple[dict[str, str], bytes]:
        """The headers and body of one attempt (signed now)."""
        body = json.dumps(
            cloud_event(notification, source=self._source), separators=(",", ":")
        ).encode()
        timestamp = int(self._clock())
        headers = {
            "content-type": "application/cloudevents+json",
            "webhook-id": notification.id,
            "webhook-timestamp": str(timestamp),
        }
        if self._key is not None:
            headers["webhook-signature"] = sign(self._key, notification.id, timestamp, body)
        return headers, body

    async def deliver(self, batch: Sequence[AlertNotification]) -> None:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.policy.timeout)
        for notification in batch:
            headers, body = self.request(notification)
            response = await self._client.post(self.url, content=body, headers=headers)
            check_answer(response.status_code, self.url)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
