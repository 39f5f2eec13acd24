"""A fleet folded: one view per source, and the fleet's status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import final, overload

import attrs

from .._contract import Frame
from ..reporting import ActivityView, AggregateStatus, ViewChange, aggregate, combine

__all__ = ["FleetView"]


@final
class FleetView:
    """One :class:`~workflow_hub.reporting.ActivityView` per source, and the fleet's status.

    Feed it what a fleet follower yields (:meth:`FleetEngine.follow_fleet`):
    ``fleet_view.apply(source, frame)``; a ``None`` frame retires the source (its view is
    dropped).
    """

    def __init__(self) -> None:
        self._views: dict[str, ActivityView] = {}

    @overload
    def apply(self, source: str, frame: Frame) -> ViewChange: ...
    @overload
    def apply(self, source: str, frame: None) -> None: ...
    @overload
    def apply(self, source: str, frame: Frame | None) -> ViewChange | None: ...

    def apply(self, source: str, frame: Frame | None) -> ViewChange | None:
        """Fold one frame of ``source`` into its view (created on its first frame); ``None``
        (a retired source) drops the view."""
        if frame is None:
            self._views.pop(source, None)
            return None
        view = self._views.get(source)
        if view is None:
            view = self._views[source] = ActivityView()
        return view.apply(frame)

    @property
    def views(self) -> Mapping[str, ActivityView]:
        """Every source seen so far and not retired, in discovery order."""
        return self._views

    def statuses(self) -> dict[str, AggregateStatus]:
        """Each source boiled down to one status (see :func:`~workflow_hub.reporting.aggregate`),
        in name order."""
        return {source: aggregate(self._views[source]) for source in sorted(self._views)}

    def aggregate(self) -> AggregateStatus:
        """The whole fleet as one status, with the rules of ``aggregate`` for one source.

        Working if any source works, else blocked if any is blocked, else unknown if any source
        is unknown (or none was seen yet), else idle. Unknown is never idle: one scheduler that
        cannot be seen means "idle" cannot be claimed for the fleet.
        """
        statuses = list(self.statuses().values())
        fleet = combine(statuses)
        sources = f"{len(statuses)} source{'' if len(statuses) == 1 else 's'}"
        return attrs.evolve(fleet, message=" · ".join(filter(None, [sources, fleet.message])))
