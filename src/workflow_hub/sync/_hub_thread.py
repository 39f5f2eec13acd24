"""The hub's own thread, for an integration that runs its code there, next to the tracker.

A thread host's :class:`~workflow_hub.sync.Tracker` queues every fact for the hub's thread, one
hand-over a fact. An integration that turns a stream of events into facts
(``workflow_hub.langgraph``) can instead hand its own code to that thread, a backlog at a time,
and call the :class:`~workflow_hub.RunTracker` itself there: one hand-over for many facts, and
no thread of its own in between.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar, final

from ..tracker import RunTracker
from ._portal import Portal

__all__ = ["HubThread"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


@final
class HubThread:
    """The thread a thread host's tracker lives in: get it from ``tracker.hub_thread()``."""

    __slots__ = ("_portal", "tracker")

    def __init__(self, tracker: RunTracker, portal: Portal) -> None:
        self.tracker = tracker
        """The tracker itself: call it in this thread only (:meth:`submit`, :meth:`call`)."""
        self._portal = portal

    def submit(self, call: Callable[[], object]) -> None:
        """Run ``call`` (no arguments, must not block) in the hub's thread, after everything
        queued for it before (facts of the host's trackers included), and return at once. Its
        exception is logged there. Raises :class:`~workflow_hub.sync.HostClosedError` once the
        host has closed."""
        self._portal.submit(call)

    def call(self, function: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run ``function(*args, **kwargs)`` in the hub's thread and wait: its result, or its
        exception raised here. From the hub's thread itself this raises ``RuntimeError``."""
        return self._portal.call(function, *args, **kwargs)

    def catch_up(self) -> None:
        """In the hub's thread: run what every thread queued for it so far (facts included), in
        order, as its next wake-up would. Code that runs there on a schedule of its own (a
        timer) calls this first, so that it never overtakes what a thread queued before
        handing it work."""
        self._portal.run_queued()

    def is_current(self) -> bool:
        """True in the hub's thread."""
        return threading.get_ident() == self._portal.thread
