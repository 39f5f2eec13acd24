"""A thread-safe stand-in for the thread host's tracker, until ``workflow_hub.sync`` lands.

It forwards every fact from any thread to a real RunTracker on the hub's trio thread; a
``batch()`` block collects the facts of its thread and reports them in one ``tracker.batch()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import trio

from workflow_hub import RunTracker

FACTS = frozenset(
    {
        "add_run",
        "set_run_status",
        "request_control",
        "add_stage",
        "set_stage_status",
        "add_tool",
        "set_tool_status",
        "open_prompt",
        "answer_prompt",
        "cancel_prompt",
    }
)


class ThreadSafeTracker:
    def __init__(self, tracker: RunTracker, token: trio.lowlevel.TrioToken) -> None:
        self.tracker = tracker
        self._token = token
        self._local = threading.local()

    def _run(self, call: Callable[[], None]) -> None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            trio.from_thread.run_sync(call, trio_token=self._token)
        else:
            call()

    def __getattr__(self, name: str) -> Any:
        if name not in FACTS:
            raise AttributeError(name)
        method = getattr(self.tracker, name)

        def fact(*args: Any, **kwargs: Any) -> None:
            buffer = getattr(self._local, "buffer", None)
            call = partial(method, *args, **kwargs)
            if buffer is not None:
                buffer.append(call)
            else:
                self._run(call)

        return fact

    @contextmanager
    def batch(self) -> Iterator[None]:
        if getattr(self._local, "buffer", None) is not None:
            yield
            return
        buffer: list[Callable[[], None]] = []
        self._local.buffer = buffer
        try:
            yield
        finally:
            self._local.buffer = None

        def flush() -> None:
            with self.tracker.batch():
                for call in buffer:
                    call()

        self._run(flush)
