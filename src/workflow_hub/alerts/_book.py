"""The alerts' state: which conditions are pending, which fired, and when each is due.

:class:`AlertBook` folds frames into a :class:`~workflow_hub.fleet.FleetView` (one
:class:`~workflow_hub.reporting.ActivityView` per source: the fold every reporter uses), asks
``_conditions.derive`` which conditions hold, and adds the durations: a condition fires once it has
held for its rule's duration and resolves when it clears. Everything is a function of the view and
of when each root last changed, so after an overflow resnapshot, an epoch change or a restart the
firing set is simply derived again: an alert that still holds stays (same key, same id, nothing
sent), one that cleared resolves, once.

Time is passed in (``now``, trio's clock in the running alerter): the book never reads a clock but
the wall clock it stamps ``startsAt``/``endsAt`` with.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import final

import attrs

from .._contract import Frame, RootActivity
from ..fleet import FleetView
from ..reporting import ChangeKind
from ._conditions import Condition, ConditionKey, SourceReading, dashboard_link, derive
from ._values import Alert, AlertName, AlertNotification, AlertRules, NotificationKind

__all__ = ["AlertBook"]


@attrs.define
class _Entry:
    condition: Condition
    since: float
    alert: Alert | None = None


@final
class AlertBook:
    """Alerts derived from frames: feed it frames and readings, read its transitions.

    Every method that can change the picture returns the notifications it caused, in order. Call
    :meth:`evaluate` when :meth:`next_deadline` comes (the alerter's timer does).
    """

    def __init__(self, rules: AlertRules, *, wall_clock: Callable[[], float] = time.time) -> None:
        self._rules = rules
        self._wall = wall_clock
        self._fleet = FleetView()
        self._unknown: dict[str, str] = {}
        # Per source: each known root's last value and when it last changed (for WorkflowStuck).
        self._seen: dict[str, dict[str, tuple[RootActivity, float]]] = {}
        self._entries: dict[ConditionKey, _Entry] = {}

    # --- reading ------------------------------------------------------------------------------

    @property
    def rules(self) -> AlertRules:
        return self._rules

    @property
    def fleet(self) -> FleetView:
        """The folded view of every source the book follows."""
        return self._fleet

    def firing(self) -> list[Alert]:
        """The alerts firing now, in the order they fired."""
        return [entry.alert for entry in self._entries.values() if entry.alert is not None]

    def pending(self) -> list[ConditionKey]:
        """The conditions that hold but have not held long enough to fire."""
        return [key for key, entry in self._entries.items() if entry.alert is None]

    def next_deadline(self) -> float:
        """When the next pending condition is due (``inf`` when none is)."""
        held = self._held()
        deadline = math.inf
        for key, entry in self._entries.items():
            if entry.alert is None and not (
                key[1] in held and key[0] is not AlertName.SOURCE_UNKNOWN
            ):
                deadline = min(deadline, entry.since + self._rules.duration(key[0]))
        return deadline

    # --- folding ------------------------------------------------------------------------------

    def apply(self, source: str, frame: Frame | None, now: float) -> list[AlertNotification]:
        """Fold one frame of ``source`` (``None``: the source was retired) and evaluate."""
        change = self._fleet.apply(source, frame)
        if change is None:
            self._seen.pop(source, None)
            self._unknown.pop(source, None)
        elif change.applied and change.kind is not ChangeKind.ADVANCED:
            self._remember(source, change.kind, change.root_ids, now)
        return self.evaluate(now)

    def set_unknown(self, source: str, reason: str | None, now: float) -> list[AlertNotification]:
        """Say that ``source`` cannot be read (``reason``, e.g. ``"unreachable"``), or that it
        can again (``None``: its view decides), and evaluate."""
        if reason is None:
            self._unknown.pop(source, None)
        else:
            self._unknown[source] = reason
        return self.evaluate(now)

    def _remember(
        self, source: str, kind: ChangeKind, root_ids: tuple[str, ...], now: float
    ) -> None:
        view = self._fleet.views[source]
        if not view.known:
            return  # unknown roots are neither changed nor gone: nobody knows
        seen = self._seen.setdefault(source, {})
        if kind is ChangeKind.RESET:
            for gone in seen.keys() - set(root_ids):
                del seen[gone]
        if kind is ChangeKind.REMOVED:
            for root_id in root_ids:
                seen.pop(root_id, None)
            return
        for root_id in root_ids:
            root = view.get(root_id)
            if root is None:
                continue
            before = seen.get(root_id)
            if before is None or before[0] != root:
                seen[root_id] = (root, now)

    def _held(self) -> set[str]:
        return {
            source
            for source, view in self._fleet.views.items()
            if source in self._unknown or not (view.known and view.in_sync)
        }

    # --- evaluating ---------------------------------------------------------------------------

    def evaluate(self, now: float) -> list[AlertNotification]:
        """Derive the conditions again; fire what is due, resolve what cleared."""
        readings = {
            source: SourceReading(view=view, unknown=self._unknown.get(source))
            for source, view in self._fleet.views.items()
        }
        touched = {
            (source, root_id): since
            for source, roots in self._seen.items()
            for root_id, (_, since) in roots.items()
        }
        conditions, held = derive(readings, touched)
        out: list[AlertNotification] = []
        for key in list(self._entries):
            if key in conditions:
                continue
            if key[1] in held and key[0] is not AlertName.SOURCE_UNKNOWN:
                continue  # its source is unknown: neither cleared nor confirmed
            out.extend(self._resolve(key, now))
        for key, condition in conditions.items():
            entry = self._entries.get(key)
            since = now if condition.since is None else min(condition.since, now)
            if entry is not None and condition.since is not None and since > entry.since:
                # A stuck root moved (and is working again with the same reason): that clears
                # the old condition; a new one begins at the move.
                out.extend(self._resolve(key, now))
                entry = None
            if entry is None:
                entry = self._entries[key] = _Entry(condition=condition, since=since)
            else:
                entry.condition = condition
            if entry.alert is not None:
                continue
            if key[1] in held and key[0] is not AlertName.SOURCE_UNKNOWN:
                continue
            if now - entry.since >= self._rules.duration(key[0]):
                entry.alert = self._alert(condition, entry.since, now)
                out.append(
                    AlertNotification(
                        kind=NotificationKind.FIRING, alert=entry.alert, at=self._wall()
                    )
                )
        return out

    def resolve_all(self, now: float) -> list[AlertNotification]:
        """Resolve everything (the alerter is told to stop following a source it will not see
        again); pending conditions are forgotten."""
        out: list[AlertNotification] = []
        for key in list(self._entries):
            out.extend(self._resolve(key, now))
        return out

    def _resolve(self, key: ConditionKey, now: float) -> list[AlertNotification]:
        entry = self._entries.pop(key)
        if entry.alert is None:
            return []
        at = self._wall()
        resolved = attrs.evolve(entry.alert, ends_at=at)
        return [AlertNotification(kind=NotificationKind.RESOLVED, alert=resolved, at=at)]

    def _alert(self, condition: Condition, since: float, now: float) -> Alert:
        annotations = {"summary": condition.summary}
        root_id = condition.key[2] or None
        link = dashboard_link(self._rules.dashboard_url, root_id)
        if link is not None:
            annotations["dashboard"] = link
        return Alert(
            id=condition.alert_id(),
            name=condition.name,
            labels=dict(condition.labels),
            annotations=annotations,
            starts_at=self._wall() - (now - since),
        )

    def statistics(self) -> Mapping[AlertName, int]:
        """How many alerts fire, by name."""
        counts = dict.fromkeys(AlertName, 0)
        for alert in self.firing():
            counts[alert.name] += 1
        return counts
