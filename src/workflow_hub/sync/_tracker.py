"""A :class:`~workflow_hub.RunTracker` any thread may drive: facts queued, applied in order.

The tracker itself lives in the hub's trio thread (it is not thread-safe, and what it publishes
wakes trio tasks). A fact reported here is checked as far as it can be in the calling thread
(the type of every id, every status and action: a bad one raises
:class:`~workflow_hub.ContractError` there and nothing is queued), then queued for the hub's
thread, and the call returns at once: facts cost a ``deque.append``, not a trip to the hub's
thread and back. The facts of one thread are applied in the order it reported them (facts of
several threads interleave in the order they were queued).

What only the tracker can check (an unknown run, a run that is already tracked, a tracker not
started) is checked when the fact is applied: a fact that fails there changes nothing (C1), the
facts after it are applied on their own, and the error is raised **in the thread that reported
the fact, by that thread's next call on this tracker that waits for the hub's thread**: the end
of a ``batch()`` or ``hydrating()`` block, :meth:`Tracker.flush`, or a reading (``activity()``,
``run_status()``, ``in``, ...). The first such error is raised; a count of later ones is added
to its notes. A thread that never waits never sees them: call ``flush()`` where it matters.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from functools import wraps
from typing import Any, Concatenate, Final, ParamSpec, TypeVar, final

from .. import ContractError
from .._contract import check_error
from .._public import NoPublicConstructor
from ..contract import Attribution, ControlAction, Labels, RunStatus, StageStatus, ToolNodeStatus
from ..tracker import RunTracker
from ._hub_thread import HubThread
from ._portal import Portal

__all__ = ["Tracker"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _enum_values(enum: type[Any]) -> frozenset[str]:
    return frozenset(member.value for member in enum)


# What the calling thread checks, by parameter: positional ones by position, keywords by name.
# Each value is None (an id: a str) or the allowed values of an enum.
_Checks = dict[str, frozenset[str] | None]
_IDS: Final = None
_RUN: Final = _enum_values(RunStatus)
_STAGE: Final = _enum_values(StageStatus)
_TOOL: Final = _enum_values(ToolNodeStatus)
_ACTION: Final = _enum_values(ControlAction)
_ATTRIBUTION: Final = _enum_values(Attribution)

_POSITIONAL: Final[dict[str, tuple[tuple[str, frozenset[str] | None], ...]]] = {
    "add_run": (("run_id", _IDS),),
    "set_run_status": (("run_id", _IDS), ("status", _RUN)),
    "set_labels": (("root_run_id", _IDS),),
    "take_ownership": (("run_id", _IDS),),
    "release_ownership": (("run_id", _IDS),),
    "request_control": (("run_id", _IDS), ("action", _ACTION)),
    "remove_run": (("run_id", _IDS),),
    "add_stage": (("run_id", _IDS), ("stage_id", _IDS), ("name", _IDS)),
    "add_tool": (("run_id", _IDS), ("tool_id", _IDS), ("name", _IDS)),
    "set_stage_name": (("run_id", _IDS), ("stage_id", _IDS), ("name", _IDS)),
    "set_stage_status": (("run_id", _IDS), ("stage_id", _IDS), ("status", _STAGE)),
    "set_tool_status": (("run_id", _IDS), ("tool_id", _IDS), ("status", _TOOL)),
    "open_prompt": (("run_id", _IDS), ("prompt_id", _IDS)),
    "answer_prompt": (("run_id", _IDS), ("prompt_id", _IDS)),
    "cancel_prompt": (("run_id", _IDS), ("prompt_id", _IDS)),
    "require_intervention": (("run_id", _IDS),),
    "clear_intervention": (("run_id", _IDS),),
    "acknowledge_failure": (("run_id", _IDS),),
}
_KEYWORDS: Final[dict[str, _Checks]] = {
    "add_run": {"status": _RUN, "parent_run_id": _IDS, "host_stage_id": _IDS},
    "add_stage": {"status": _STAGE},
    "add_tool": {"status": _TOOL},
    "set_run_status": {"attribution": _ATTRIBUTION},
    "set_stage_status": {"attribution": _ATTRIBUTION},
    "set_tool_status": {"attribution": _ATTRIBUTION},
    "request_control": {"attribution": _ATTRIBUTION},
}


# The facts that take ``error=`` (C3), with where their status is: (position, default).
_ERROR_STATUS: Final[dict[str, tuple[int, str | None]]] = {
    "set_run_status": (1, None),
    "set_stage_status": (2, None),
    "set_tool_status": (2, None),
    "add_stage": (3, "pending"),
    "add_tool": (3, "pending"),
}
# The facts that take labels (C3), with the position of ``labels`` (None: keyword only).
_LABELS: Final[dict[str, int | None]] = {"add_run": None, "set_labels": 1}


_Arguments = tuple[tuple[Any, ...], dict[str, Any]]


def _converter(name: str) -> Callable[[tuple[Any, ...], dict[str, Any]], _Arguments] | None:
    """For a fact that takes ``error=`` or labels (C3): what checks them as the tracker does,
    here, and hands on the checked values.

    ``error`` (a FailureDetail, an exception or a message, only with a failed status) becomes
    its detail: an exception is read now, in the thread that caught it, not held until the
    hub's thread applies the fact. Labels become a :class:`Labels` copy: a dict the caller
    changes after the call does not change the queued fact."""
    error_status = _ERROR_STATUS.get(name)
    labels_at = _LABELS.get(name, -1)
    if error_status is None and labels_at == -1:
        return None

    def convert(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Arguments:
        if error_status is not None and kwargs.get("error") is not None:
            position, default = error_status
            status = args[position] if len(args) > position else kwargs.get("status", default)
            kwargs = {**kwargs, "error": check_error(kwargs["error"], str(status))}
        if labels_at != -1:
            if labels_at is not None and len(args) > labels_at:
                args = (*args[:labels_at], _labels(args[labels_at]), *args[labels_at + 1 :])
            elif "labels" in kwargs:
                kwargs = {**kwargs, "labels": _labels(kwargs["labels"])}
        return args, kwargs

    return convert


def _labels(labels: object) -> Labels | None:
    """Labels as ``RunTracker`` takes them (a Labels, a mapping of str to str, or None),
    checked (ContractError naming ``labels``)."""
    if labels is None or type(labels) is Labels:
        return labels
    if isinstance(labels, Mapping) and not labels:
        return None
    return Labels(labels)  # type: ignore[arg-type]  # it checks the type and every item


def _check_value(value: object, allowed: frozenset[str] | None, path: str) -> None:
    if allowed is None:
        if not isinstance(value, str):
            raise ContractError(path, f"expected a string, got {type(value).__name__}")
        return
    if isinstance(value, str):
        if value not in allowed:
            raise ContractError(
                path, f"unknown value {value!r}; expected one of {', '.join(sorted(allowed))}"
            )
        return
    raise ContractError(
        path, f"expected one of {', '.join(sorted(allowed))}, got {type(value).__name__}"
    )


def _checker(name: str) -> Callable[[tuple[object, ...], dict[str, object]], None]:
    positional = _POSITIONAL.get(name, ())
    keywords = _KEYWORDS.get(name, {})

    def check(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        for value, (path, allowed) in zip(args, positional, strict=False):
            _check_value(value, allowed, path)
        for path, allowed in keywords.items():
            value = kwargs.get(path)
            if value is not None:
                _check_value(value, allowed, path)

    if name not in ("set_stage_status", "set_tool_status"):
        return check
    # A node's status, the hottest fact (every step of a LangGraph run): two ids and a status,
    # recognised with type tests; anything else is checked, and explained, by ``check``.
    statuses = positional[2][1]
    assert statuses is not None

    def check_node_status(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        if len(args) == 3:
            run_id, node_id, status = args
            if (
                type(run_id) is str
                and type(node_id) is str
                and isinstance(status, str)
                and status in statuses
                and (not kwargs or kwargs.get("attribution") is None)
            ):
                return
        check(args, kwargs)

    return check_node_status


@final
class _Errors:
    """The errors of one thread's queued facts that the thread has not been told yet."""

    __slots__ = ("blocks", "first", "more")

    def __init__(self) -> None:
        self.first: Exception | None = None
        self.more = 0
        self.blocks = 0  # batch blocks the thread is inside

    def record(self, error: Exception) -> None:
        # Runs in the hub's thread; read (and reset) by the owning thread after a round trip.
        if self.first is None:
            self.first = error
        else:
            self.more += 1

    def raise_pending(self) -> None:
        error, more = self.first, self.more
        if error is None:
            return
        self.first, self.more = None, 0
        if more:
            error.add_note(f"{more} later queued fact(s) of this thread failed too")
        raise error


def _queued(
    method: Callable[Concatenate[RunTracker, _P], None],
) -> Callable[Concatenate[Tracker, _P], None]:
    """A fact of :class:`Tracker`: checked here, queued for the hub's thread, no waiting."""
    check = _checker(method.__name__)
    convert = _converter(method.__name__)
    # set_labels takes its labels by position; the other facts take error= and labels= by
    # keyword only: a fact called without keywords (the hot path) converts nothing.
    positional = method.__name__ == "set_labels"

    @wraps(method)
    def fact(self: Tracker, /, *args: _P.args, **kwargs: _P.kwargs) -> None:
        check(args, kwargs)
        if convert is not None and (kwargs or positional):
            args, kwargs = convert(args, kwargs)  # type: ignore[assignment]
        try:
            errors: _Errors = self._local.errors
        except AttributeError:
            errors = self._errors()
        tracker = self._tracker

        def apply() -> None:
            try:
                method(tracker, *args, **kwargs)
            except Exception as error:
                errors.record(error)

        # Inside this thread's batch block the hub's thread sleeps on: the block's end wakes it.
        self._portal.submit(apply, wake=not errors.blocks)

    return fact


def _reading(
    method: Callable[Concatenate[RunTracker, _P], _T],
) -> Callable[Concatenate[Tracker, _P], _T]:
    """A reading of :class:`Tracker`: run in the hub's thread after this thread's queued
    facts; their pending error is raised first."""

    @wraps(method)
    def read(self: Tracker, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        value = self._portal.call(method, self._tracker, *args, **kwargs)
        self._errors().raise_pending()
        return value

    return read


@final
class Tracker(metaclass=NoPublicConstructor):
    """A thread-safe :class:`~workflow_hub.RunTracker`; get it from ``hub.tracker(...)``.

    Every fact and reading of ``RunTracker`` is here with the same signature, callable from any
    thread. Facts are queued (see the module's notes for when an error of a fact is raised);
    readings, :meth:`flush` and the end of ``batch()`` and ``hydrating()`` wait for the hub's
    thread. ``with tracker.batch():`` and ``with tracker.hydrating():`` work from a thread too:
    the block is the tracker's, so facts reported inside it by *any* thread are published
    together when it ends. Heartbeats run in the host.
    """

    __slots__ = ("__weakref__", "_local", "_portal", "_tracker")

    def __init__(self, tracker: RunTracker, portal: Portal) -> None:
        self._tracker = tracker
        self._portal = portal
        self._local = threading.local()

    def _errors(self) -> _Errors:
        try:
            errors: _Errors = self._local.errors
        except AttributeError:
            errors = self._local.errors = _Errors()
        return errors

    @property
    def owner_session_id(self) -> str:
        return self._tracker.owner_session_id

    @property
    def started(self) -> bool:
        value = self._portal.call(lambda: self._tracker.started)
        self._errors().raise_pending()
        return value

    @property
    def is_hydrating(self) -> bool:
        value = self._portal.call(lambda: self._tracker.is_hydrating)
        self._errors().raise_pending()
        return value

    def __contains__(self, run_id: object) -> bool:
        value = self._portal.call(self._tracker.__contains__, run_id)
        self._errors().raise_pending()
        return value

    def hub_thread(self) -> HubThread:
        """The hub's thread, with the :class:`~workflow_hub.RunTracker` this tracker drives: for
        an integration that runs its own code there, a backlog at a time, instead of queueing
        each fact (``workflow_hub.langgraph`` does)."""
        return HubThread(self._tracker, self._portal)

    def flush(self) -> None:
        """Wait until the facts this thread queued have been applied; raise the first error of
        one that failed (see the module's notes). Returns at once when there is nothing to say."""
        self._portal.call(_nothing)
        self._errors().raise_pending()

    def batch(self, *, wait: bool = True) -> AbstractContextManager[None]:
        """:meth:`RunTracker.batch`, from any thread: changed roots are published once, at the
        end of the (outermost) block. Entering queues; the end waits for the hub's thread and
        raises the first error of a fact this thread queued.

        With ``wait=False`` a block that ends without an exception queues its end too and
        returns at once: what it reported is applied, in order, before anything asked of the
        hub's thread afterwards (a reading, ``flush()``, leaving the host), and the error of a
        fact is raised by this thread's next call that waits, as for a fact outside a block."""
        return self._block(self._tracker.batch(), wait_to_enter=False, wait_to_leave=wait)

    def hydrating(self, detail: str | None = None) -> AbstractContextManager[None]:
        """:meth:`RunTracker.hydrating`, from any thread: ``recovering`` now (with ``detail``,
        checked here), a full ``ready`` snapshot at the end of the block (``unavailable`` if it
        raises). Entering waits (it raises if a hydration is under way); the end waits and
        raises as ``batch()``'s does."""
        # The manager is made here: RunTracker.hydrating checks the detail, and only that.
        return self._block(self._tracker.hydrating(detail), wait_to_enter=True, wait_to_leave=True)

    def recovering_because(self, detail: str | None) -> None:
        """:meth:`RunTracker.recovering_because`, from any thread (waits for the hub's thread
        and raises its error)."""
        self._errors().raise_pending()
        self._portal.call(self._tracker.recovering_because, detail)

    @contextmanager
    def _block(
        self, manager: AbstractContextManager[None], *, wait_to_enter: bool, wait_to_leave: bool
    ) -> Iterator[None]:
        # The manager is created here (a generator not started yet) and entered and left in the
        # hub's thread; the block itself runs in the calling thread.
        portal = self._portal
        errors = self._errors()
        if wait_to_enter:
            errors.raise_pending()
            portal.call(manager.__enter__)
        else:
            portal.submit(manager.__enter__, wake=False)
        errors.blocks += 1
        try:
            yield
        except BaseException as error:
            errors.blocks -= 1
            if not portal.call(manager.__exit__, type(error), error, error.__traceback__):
                raise
        else:
            errors.blocks -= 1
            if not wait_to_leave:
                portal.submit(lambda: manager.__exit__(None, None, None))
                return
            portal.call(manager.__exit__, None, None, None)
        errors.raise_pending()

    now = _reading(RunTracker.now)
    activity = _reading(RunTracker.activity)
    activities = _reading(RunTracker.activities)
    run_status = _reading(RunTracker.run_status)
    start = _queued(RunTracker.start)
    add_run = _queued(RunTracker.add_run)
    set_run_status = _queued(RunTracker.set_run_status)
    set_labels = _queued(RunTracker.set_labels)
    take_ownership = _queued(RunTracker.take_ownership)
    release_ownership = _queued(RunTracker.release_ownership)
    request_control = _queued(RunTracker.request_control)
    remove_run = _queued(RunTracker.remove_run)
    add_stage = _queued(RunTracker.add_stage)
    add_tool = _queued(RunTracker.add_tool)
    set_stage_name = _queued(RunTracker.set_stage_name)
    set_stage_status = _queued(RunTracker.set_stage_status)
    set_tool_status = _queued(RunTracker.set_tool_status)
    open_prompt = _queued(RunTracker.open_prompt)
    answer_prompt = _queued(RunTracker.answer_prompt)
    cancel_prompt = _queued(RunTracker.cancel_prompt)
    require_intervention = _queued(RunTracker.require_intervention)
    clear_intervention = _queued(RunTracker.clear_intervention)
    acknowledge_failure = _queued(RunTracker.acknowledge_failure)


def _nothing() -> None:
    return None
