"""The Celery bridge's name for what it reports to: :class:`workflow_hub.tracker.SchedulerFacts`.

A :class:`workflow_hub.tracker.RunTracker` called from its hub's thread satisfies it, and so does
the thread-safe tracker of the sync host (``workflow_hub.sync``): the bridge never imports either.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..tracker import SchedulerFacts

__all__ = ["Facts"]


@runtime_checkable
class Facts(SchedulerFacts, Protocol):
    """:class:`~workflow_hub.tracker.SchedulerFacts`, by the name the Celery bridge gave it
    before there was one protocol for every bridge: the same methods, nothing more. New code
    names ``SchedulerFacts``."""
