"""The LangGraph integration's name for what it reports to: ``SchedulerFacts``.

A :class:`workflow_hub.RunTracker` satisfies :class:`workflow_hub.tracker.SchedulerFacts`, and so
do the trackers of the asyncio and thread hosts; a test may pass any object with the same
methods. The integration never reads a tracker.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..tracker import SchedulerFacts

__all__ = ["FactSink"]


@runtime_checkable
class FactSink(SchedulerFacts, Protocol):
    """:class:`~workflow_hub.tracker.SchedulerFacts`, by the name the LangGraph integration gave
    it before there was one protocol for every bridge: the same methods, nothing more. New code
    names ``SchedulerFacts``."""
