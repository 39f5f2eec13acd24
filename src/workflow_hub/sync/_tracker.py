"""A :class:`~workflow_hub.RunTracker` any thread may drive: each fact runs in the hub's thread.

The tracker itself lives in the hub's trio thread (it is not thread-safe, and what it publishes
wakes trio tasks). Each method here hands the call to that thread and waits for it, so a fact
behaves exactly as on the tracker itself: its checks raise in the calling thread, a fact that
raises changes nothing (C1), a reading returns its value, and the facts of one thread take
effect in the order it reported them. A fact costs one hand-over to the hub's thread (tens of
microseconds), which is what makes its errors the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import wraps
from typing import Concatenate, ParamSpec, TypeVar, final

from .._public import NoPublicConstructor
from ..tracker import RunTracker
from ._portal import Portal

__all__ = ["Tracker"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _in_hub_thread(
    method: Callable[Concatenate[RunTracker, _P], _T],
) -> Callable[Concatenate[Tracker, _P], _T]:
    """A method of :class:`Tracker` that runs the same-named ``RunTracker`` method in the hub's
    thread and waits for it: same signature, same docstring."""

    @wraps(method)
    def call(self: Tracker, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return self._portal.call(method, self._tracker, *args, **kwargs)

    return call


@contextmanager
def _block_in_hub_thread(
    portal: Portal, enter: Callable[[], AbstractContextManager[None]]
) -> Iterator[None]:
    """A tracker's context manager (``batch()``, ``hydrating()``) entered and left in the hub's
    thread, with the block itself in the calling thread."""
    manager = portal.call(enter)
    portal.call(manager.__enter__)
    try:
        yield
    except BaseException as error:
        if not portal.call(manager.__exit__, type(error), error, error.__traceback__):
            raise
    else:
        portal.call(manager.__exit__, None, None, None)


@final
class Tracker(metaclass=NoPublicConstructor):
    """A thread-safe :class:`~workflow_hub.RunTracker`; get it from ``hub.tracker(...)``.

    Every fact and reading of ``RunTracker`` is here with the same signature, callable from any
    thread. ``with tracker.batch():`` and ``with tracker.hydrating():`` work from a thread too:
    the block is the tracker's, so facts reported inside it by *any* thread are published
    together when it ends. Heartbeats run in the host.
    """

    __slots__ = ("_portal", "_tracker")

    def __init__(self, tracker: RunTracker, portal: Portal) -> None:
        self._tracker = tracker
        self._portal = portal

    @property
    def owner_session_id(self) -> str:
        return self._tracker.owner_session_id

    @property
    def started(self) -> bool:
        return self._portal.call(lambda: self._tracker.started)

    @property
    def is_hydrating(self) -> bool:
        return self._portal.call(lambda: self._tracker.is_hydrating)

    def __contains__(self, run_id: object) -> bool:
        return self._portal.call(self._tracker.__contains__, run_id)

    def batch(self) -> AbstractContextManager[None]:
        """:meth:`RunTracker.batch`, from any thread: changed roots are published once, at the
        end of the (outermost) block."""
        return _block_in_hub_thread(self._portal, self._tracker.batch)

    def hydrating(self) -> AbstractContextManager[None]:
        """:meth:`RunTracker.hydrating`, from any thread: ``recovering`` now, a full ``ready``
        snapshot at the end of the block (``unavailable`` if it raises)."""
        return _block_in_hub_thread(self._portal, self._tracker.hydrating)

    now = _in_hub_thread(RunTracker.now)
    activity = _in_hub_thread(RunTracker.activity)
    activities = _in_hub_thread(RunTracker.activities)
    run_status = _in_hub_thread(RunTracker.run_status)
    start = _in_hub_thread(RunTracker.start)
    add_run = _in_hub_thread(RunTracker.add_run)
    set_run_status = _in_hub_thread(RunTracker.set_run_status)
    take_ownership = _in_hub_thread(RunTracker.take_ownership)
    release_ownership = _in_hub_thread(RunTracker.release_ownership)
    request_control = _in_hub_thread(RunTracker.request_control)
    remove_run = _in_hub_thread(RunTracker.remove_run)
    add_stage = _in_hub_thread(RunTracker.add_stage)
    add_tool = _in_hub_thread(RunTracker.add_tool)
    set_stage_status = _in_hub_thread(RunTracker.set_stage_status)
    set_tool_status = _in_hub_thread(RunTracker.set_tool_status)
    open_prompt = _in_hub_thread(RunTracker.open_prompt)
    answer_prompt = _in_hub_thread(RunTracker.answer_prompt)
    cancel_prompt = _in_hub_thread(RunTracker.cancel_prompt)
    require_intervention = _in_hub_thread(RunTracker.require_intervention)
    clear_intervention = _in_hub_thread(RunTracker.clear_intervention)
    acknowledge_failure = _in_hub_thread(RunTracker.acknowledge_failure)
