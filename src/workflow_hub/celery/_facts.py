"""What the bridge needs from a tracker: RunTracker's fact methods, nothing of trio.

A :class:`workflow_hub.tracker.RunTracker` called from its hub's thread satisfies it, and so does
the thread-safe tracker of the sync host (``workflow_hub.sync``): the bridge never imports either.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Protocol

__all__ = ["Facts"]


class Facts(Protocol):
    """The subset of :class:`~workflow_hub.tracker.RunTracker` the Celery bridge reports to."""

    def hydrating(self) -> AbstractContextManager[None]: ...

    def batch(self) -> AbstractContextManager[None]: ...

    def add_run(self, run_id: str, *, status: str = ...) -> None: ...

    def set_run_status(self, run_id: str, status: str, *, executor_ended: bool = ...) -> None: ...

    def remove_run(self, run_id: str) -> None: ...

    def add_stage(
        self,
        run_id: str,
        stage_id: str,
        name: str,
        *,
        parent_ids: Iterable[str] = ...,
        status: str = ...,
    ) -> None: ...

    def set_stage_status(
        self, run_id: str, stage_id: str, status: str, *, retrying: bool = ...
    ) -> None: ...

    def request_control(
        self, run_id: str, action: str, *, attribution: str | None = ...
    ) -> None: ...

    def require_intervention(self, run_id: str, *, stage_id: str | None = ...) -> None: ...

    def clear_intervention(self, run_id: str, *, stage_id: str | None = ...) -> None: ...
