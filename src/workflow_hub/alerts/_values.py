"""What an alert is, what the rules say, and what a sink is handed.

These are plain values (attrs, frozen): an :class:`Alert` names one condition of one root or one
source, with the labels Alertmanager routes on and the annotations a person reads; an
:class:`AlertNotification` is one transition of it (fired, resolved) as every sink receives it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from typing import final

import attrs

from .._contract import ContractError

__all__ = [
    "DEFAULT_NEEDS_ATTENTION_FOR",
    "DEFAULT_STUCK_AFTER",
    "DEFAULT_UNKNOWN_AFTER",
    "Alert",
    "AlertName",
    "AlertNotification",
    "AlertRules",
    "NotificationKind",
]

DEFAULT_NEEDS_ATTENTION_FOR = 30.0
"""Seconds a root needs attention before ``WorkflowNeedsAttention`` fires: short, because a
person waiting for an approval is the point, and long enough that an answer given at once (or a
flapping root) pages nobody."""
DEFAULT_STUCK_AFTER = 1800.0
"""Seconds a working root may go without any change before ``WorkflowStuck`` fires."""
DEFAULT_UNKNOWN_AFTER = 60.0
"""Seconds a source may be unknown (unreachable, crashed, unavailable) before
``WorkflowSourceUnknown`` fires."""


class AlertName(StrEnum):
    """The conditions, by the ``alertname`` label they fire with."""

    NEEDS_ATTENTION = "WorkflowNeedsAttention"
    """A root needs attention: it waits for input, needs manual intervention, or failed."""
    STUCK = "WorkflowStuck"
    """A root has been working with no change for the rules' ``stuck_after``."""
    SOURCE_UNKNOWN = "WorkflowSourceUnknown"
    """A source (a hub, or a fleet's member) has been unknown for the rules' ``unknown_after``."""


class NotificationKind(StrEnum):
    """What happened to an alert."""

    FIRING = "firing"
    """Its condition has held for its duration."""
    RESOLVED = "resolved"
    """Its condition cleared (or its root was removed, or its source retired)."""


def _duration(_instance: object, attribute: attrs.Attribute[float], value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ContractError(attribute.name, f"expected a number of seconds >= 0, got {value!r}")


@final
@attrs.frozen(kw_only=True)
class AlertRules:
    """How long each condition must hold before it fires, as a Prometheus rule's ``for``.

    A condition that clears before its duration fires nothing; one that fired resolves when it
    clears. So a root that flaps pages at most once per duration.
    """

    needs_attention_for: float = attrs.field(
        default=DEFAULT_NEEDS_ATTENTION_FOR, validator=_duration
    )
    """Seconds for ``WorkflowNeedsAttention`` (default 30)."""
    stuck_after: float = attrs.field(default=DEFAULT_STUCK_AFTER, validator=_duration)
    """Seconds without a change of a working root for ``WorkflowStuck`` (default 1800)."""
    unknown_after: float = attrs.field(default=DEFAULT_UNKNOWN_AFTER, validator=_duration)
    """Seconds for ``WorkflowSourceUnknown`` (default 60)."""
    dashboard_url: str | None = attrs.field(default=None)
    """The dashboard the alerts link to (``{url}/#q=ROOT`` filters it on the root); ``None``:
    no link. ``workflow-hub alert http://…`` links to the served hub's own dashboard."""

    @dashboard_url.validator
    def _check_url(self, _attribute: attrs.Attribute[str | None], value: object) -> None:
        if value is not None and not isinstance(value, str):
            raise ContractError("dashboard_url", f"expected a str, got {type(value).__name__}")

    def duration(self, name: AlertName) -> float:
        """The duration of the condition ``name``."""
        if name is AlertName.NEEDS_ATTENTION:
            return self.needs_attention_for
        if name is AlertName.STUCK:
            return self.stuck_after
        return self.unknown_after


@final
@attrs.frozen(kw_only=True)
class Alert:
    """One alert: a condition of one root (or one source), as Alertmanager and receivers see it.

    ``id`` is deterministic: the same condition of the same root, for the same cause (the same
    question, the same failed stage), has the same id in every process that derives it, so a
    receiver deduplicates what a restarted ``workflow-hub alert`` sends again.
    """

    id: str
    """A hex digest of the labels and the cause."""
    name: AlertName
    labels: Mapping[str, str]
    """``alertname``, ``source``, ``root_run_id`` (not for a source's alert), ``reason``, and the
    root's own labels."""
    annotations: Mapping[str, str]
    """``summary`` (one line), and ``dashboard`` when the rules name one."""
    starts_at: float
    """When the condition began to hold (seconds since the epoch, as this process saw it)."""
    ends_at: float | None = None
    """When it resolved; ``None`` while firing."""

    @property
    def source(self) -> str:
        return self.labels["source"]

    @property
    def root_run_id(self) -> str | None:
        return self.labels.get("root_run_id")

    @property
    def summary(self) -> str:
        return self.annotations.get("summary", "")


@final
@attrs.frozen(kw_only=True)
class AlertNotification:
    """One transition of one alert, as handed to every sink."""

    kind: NotificationKind
    alert: Alert
    at: float
    """When it happened (seconds since the epoch)."""

    @property
    def id(self) -> str:
        """This notification's own deterministic id (the alert's, and the kind)."""
        return f"{self.alert.id}-{self.kind}"
