"""What the integration needs from a tracker: RunTracker's fact methods, nothing more.

A :class:`workflow_hub.RunTracker` has them, and so do the trackers of the asyncio and thread
hosts; a test may pass any object with the same methods. The integration never reads a tracker.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Protocol

__all__ = ["FactSink"]


class FactSink(Protocol):
    """The fact methods of :class:`workflow_hub.RunTracker` the integration calls."""

    def add_run(
        self,
        run_id: str,
        *,
        parent_run_id: str | None = ...,
        host_stage_id: str | None = ...,
        status: str = ...,
        heartbeat_interval_minutes: float | None = ...,
    ) -> None: ...

    def set_run_status(self, run_id: str, status: str, *, executor_ended: bool = ...) -> None: ...

    def request_control(
        self, run_id: str, action: str, *, attribution: str | None = ...
    ) -> None: ...

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

    def add_tool(
        self,
        run_id: str,
        tool_id: str,
        name: str,
        *,
        parent_ids: Iterable[str] = ...,
        ordinal: int = ...,
        status: str = ...,
    ) -> None: ...

    def set_tool_status(self, run_id: str, tool_id: str, status: str) -> None: ...

    def open_prompt(
        self,
        run_id: str,
        prompt_id: str,
        kind: str,
        message: str,
        *,
        stage_id: str | None = ...,
        choices: Iterable[str] | None = ...,
    ) -> None: ...

    def answer_prompt(self, run_id: str, prompt_id: str) -> None: ...

    def cancel_prompt(self, run_id: str, prompt_id: str) -> None: ...

    def batch(self) -> AbstractContextManager[None]: ...
