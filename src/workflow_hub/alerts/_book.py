"""The alerts' state: which conditions are pending, which fired, and when each is due.

:class:`AlertBook` folds frames into a :class:`~workflow_hub.fleet.FleetView` (one
:class:`~workflow_hub.reporting.ActivityView` per source: the fold every reporter uses), asks
``_conditions`` which conditions hold, and adds the durations: a condition fires once it has held
for its rule's duration and resolves when it clears. Everything is a function of the view and of
when each root last changed, so after an overflow resnapshot, an epoch change or a restart the
firing set is simply derived again: an alert that still holds stays (same key, same id, nothing
sent), one that cleared resolves, once.

A frame costs what it changed: a changed or removed frame re-derives its one root, a snapshot its
source. Pending conditions wait in a heap of deadlines, so a timer costs what is due.

Time is passed in (``now``, trio's clock in the running alerter): the book never reads a clock but
the wall clock it stamps ``startsAt``/``endsAt`` with.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Mapping
from typing import final

import attrs

from .._contract import Frame, RootActivity
from ..fleet import FleetView
from ..reporting import ChangeKind
from ._conditions import (
    Condition,
    ConditionKey,
    dashboard_link,
    root_conditions,
    source_condition,
    unknown_reason,
)
from ._values import Alert, AlertName, AlertNotification, AlertRules, NotificationKind

__all__ = ["AlertBook"]

_SOURCE = ""
"""The ``root_run_id`` slot of a source's own condition."""


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
        self._unknown: dict[str, str] = {}  # what the transport says, per source
        self._held: set[str] = set()  # sources that are unknown now
        # Per source: each known root's last value and when it last changed (for WorkflowStuck).
        self._seen: dict[str, dict[str, tuple[RootActivity, float]]] = {}
        # Per source, per root ("" for the source itself): the keys of the conditions it holds.
        self._keys: dict[str, dict[str, list[ConditionKey]]] = {}
        self._entries: dict[ConditionKey, _Entry] = {}
        self._deadlines: list[tuple[float, ConditionKey]] = []
        self._counts = dict.fromkeys(AlertName, 0)

    # --- reading ------------------------------------------------------------------------------

    @property
    def rules(self) -> AlertRules:
        return self._rules

    @property
    def fleet(self) -> FleetView:
        """The folded view of every source the book follows."""
        return self._fleet

    def firing(self) -> list[Alert]:
        """The alerts firing now, in the order their conditions began."""
        return [entry.alert for entry in self._entries.values() if entry.alert is not None]

    def pending(self) -> list[ConditionKey]:
        """The conditions that hold but have not held long enough to fire."""
        return [key for key, entry in self._entries.items() if entry.alert is None]

    def statistics(self) -> Mapping[AlertName, int]:
        """How many alerts fire, by name (a copy)."""
        return dict(self._counts)

    def next_deadline(self) -> float:
        """When the next pending condition is due (``inf`` when none is)."""
        heap = self._deadlines
        while heap and not self._due_entry(*heap[0]):
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def _due_entry(self, deadline: float, key: ConditionKey) -> bool:
        """Whether a heap item still stands for a pending, unheld condition with that deadline."""
        entry = self._entries.get(key)
        return (
            entry is not None
            and entry.alert is None
            and not self._frozen(key)
            and entry.since + self._rules.duration(key[0]) == deadline
        )

    def _frozen(self, key: ConditionKey) -> bool:
        """A root's condition while its source is unknown: neither fired nor resolved."""
        return key[0] is not AlertName.SOURCE_UNKNOWN and key[1] in self._held

    # --- folding ------------------------------------------------------------------------------

    def apply(self, source: str, frame: Frame | None, now: float) -> list[AlertNotification]:
        """Fold one frame of ``source`` (``None``: the source was retired) and evaluate it."""
        out: list[AlertNotification] = []
        change = self._fleet.apply(source, frame)
        if change is None:  # retired: everything it had resolves
            self._seen.pop(source, None)
            self._unknown.pop(source, None)
            self._held.discard(source)
            for keys in self._keys.pop(source, {}).values():
                for key in keys:
                    out.extend(self._resolve(key))
            return out
        if self._refresh_held(source, now, out):
            return out  # the whole source was derived again
        if change.kind is ChangeKind.RESET or not change.applied:
            self._refresh_source(source, now, out)
        elif change.kind is not ChangeKind.ADVANCED and source not in self._held:
            for root_id in change.root_ids:
                self._refresh_root(source, root_id, now, out)
        return out

    def set_unknown(self, source: str, reason: str | None, now: float) -> list[AlertNotification]:
        """Say that ``source`` cannot be read (``reason``, e.g. ``"unreachable"``), or that it
        can again (``None``: its view decides)."""
        if reason is None:
            self._unknown.pop(source, None)
        else:
            self._unknown[source] = reason
        out: list[AlertNotification] = []
        if source in self._fleet.views and not self._refresh_held(source, now, out):
            self._refresh_unknown(source, now, out)
        return out

    def _reason(self, source: str) -> str | None:
        return unknown_reason(self._fleet.views[source], self._unknown.get(source))

    def _refresh_held(self, source: str, now: float, out: list[AlertNotification]) -> bool:
        """If the source went unknown or came back, derive it again; whether it did."""
        held = self._reason(source) is not None
        if held == (source in self._held):
            return False
        if held:
            self._held.add(source)
            self._refresh_source(source, now, out)
            return True
        self._held.discard(source)
        self._refresh_source(source, now, out)
        # Thawed: its roots' pending conditions wait for their deadlines again.
        for keys in self._keys.get(source, {}).values():
            for key in keys:
                self._schedule(key)
        return True

    def _refresh_unknown(self, source: str, now: float, out: list[AlertNotification]) -> None:
        """The source's own condition: held while it is unknown (its reason may change)."""
        reason = self._reason(source)
        conditions = [] if reason is None else [source_condition(source, reason)]
        self._replace(source, _SOURCE, conditions, now, out)

    def _refresh_source(self, source: str, now: float, out: list[AlertNotification]) -> None:
        self._refresh_unknown(source, now, out)
        view = self._fleet.views[source]
        if source in self._held:
            # Frozen as they were; a pending one that is due fires when the source is back.
            return
        self._forget_gone(source)
        roots = self._keys.get(source, {})
        for root_id in [r for r in roots if r != _SOURCE and view.get(r) is None]:
            self._replace(source, root_id, [], now, out)
        for root in view.roots:
            self._refresh_root(source, root.root_run_id, now, out)

    def _forget_gone(self, source: str) -> None:
        view = self._fleet.views[source]
        seen = self._seen.setdefault(source, {})
        present = {root.root_run_id for root in view.roots}
        for gone in [root_id for root_id in seen if root_id not in present]:
            del seen[gone]

    def _refresh_root(
        self, source: str, root_id: str, now: float, out: list[AlertNotification]
    ) -> None:
        root = self._fleet.views[source].get(root_id)
        seen = self._seen.setdefault(source, {})
        if root is None:
            seen.pop(root_id, None)
            self._replace(source, root_id, [], now, out)
            return
        before = seen.get(root_id)
        if before is None or before[0] != root:
            seen[root_id] = before = (root, now)
        self._replace(source, root_id, root_conditions(source, root, before[1]), now, out)

    def _replace(
        self,
        source: str,
        root_id: str,
        conditions: list[Condition],
        now: float,
        out: list[AlertNotification],
    ) -> None:
        """Make ``conditions`` the ones ``root_id`` of ``source`` holds: resolve what cleared,
        start what began, fire what is due."""
        roots = self._keys.setdefault(source, {})
        old = roots.get(root_id, [])
        new = [condition.key for condition in conditions]
        for key in old:
            if key not in new:
                out.extend(self._resolve(key))
        if new:
            roots[root_id] = new
        else:
            roots.pop(root_id, None)
        for condition in conditions:
            key = condition.key
            entry = self._entries.get(key)
            since = now if condition.since is None else min(condition.since, now)
            if entry is not None and condition.since is not None and since > entry.since:
                # A stuck root moved (and works on with the same reason): the old condition
                # cleared, a new one begins at the move.
                out.extend(self._resolve(key))
                entry = None
            if entry is None:
                entry = self._entries[key] = _Entry(condition=condition, since=since)
                self._schedule(key)
            else:
                entry.condition = condition
            self._fire_if_due(key, entry, now, out)

    def _fire_if_due(
        self, key: ConditionKey, entry: _Entry, now: float, out: list[AlertNotification]
    ) -> None:
        if entry.alert is not None or self._frozen(key):
            return
        if now < entry.since + self._rules.duration(key[0]):
            return
        entry.alert = self._alert(entry.condition, entry.since, now)
        self._counts[key[0]] += 1
        out.append(
            AlertNotification(kind=NotificationKind.FIRING, alert=entry.alert, at=self._wall())
        )

    def _schedule(self, key: ConditionKey) -> None:
        """Put a pending condition's deadline in the heap (rebuilt when stale items, left by
        stuck roots that moved, outnumber the live ones)."""
        entry = self._entries[key]
        if entry.alert is not None:
            return
        heap = self._deadlines
        if len(heap) > 2 * len(self._entries) + 64:
            heap[:] = [
                (e.since + self._rules.duration(k[0]), k)
                for k, e in self._entries.items()
                if e.alert is None
            ]
            heapq.heapify(heap)
            return
        heapq.heappush(heap, (entry.since + self._rules.duration(key[0]), key))

    # --- evaluating ---------------------------------------------------------------------------

    def evaluate(self, now: float) -> list[AlertNotification]:
        """Fire every pending condition whose duration has passed by ``now``."""
        out: list[AlertNotification] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            deadline, key = heapq.heappop(heap)
            entry = self._entries.get(key)
            if entry is not None and self._due_entry(deadline, key):
                self._fire_if_due(key, entry, now, out)
        return out

    def _resolve(self, key: ConditionKey) -> list[AlertNotification]:
        entry = self._entries.pop(key, None)
        if entry is None or entry.alert is None:
            return []
        self._counts[key[0]] -= 1
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
