"""What every wrapper over one tracker shares: each thread's mapper, and the failures.

A web service builds ``watch(graph, tracker)`` per request; the wrappers of one tracker must
behave as one, so what the integration knows about a thread (its root, its open prompts, its
stages) lives here, found by the tracker's identity, not in the wrapper. A tracker that takes
weak references is forgotten with it; one that does not (``__slots__`` without ``__weakref__``)
is kept for the life of the process, as its threads' roots are kept by the tracker itself.

Whatever goes wrong inside the integration (a fact the tracker refuses, a hub that is gone, a
bug of ours) is caught where it happens and told to :meth:`Shared.failed`: logged on the
``workflow_hub`` logger (a traceback for the first failure of each kind, then counts) and
counted, never raised into the graph.
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, final

import attrs

from .._failure_log import FailureLog
from ..sync import Tracker as SyncTracker
from ..tracker import RunTracker
from ._gates import HubReporter, Reporter
from ._mapping import ThreadMapper

if TYPE_CHECKING:
    from ._gates import Gate

__all__ = ["Shared", "WatchStatistics", "shared_state"]

logger = logging.getLogger("workflow_hub")


@final
@attrs.frozen
class WatchStatistics:
    """Counts since the first wrapper over a tracker was built, for all its wrappers."""

    failures: int
    """Exceptions the integration caught while reporting (a fact the tracker refused, a hub
    that is gone, a bug): each logged (the first of its kind with a traceback) and never raised
    into the graph."""
    unreported_invocations: int
    """Invocations that ran without being reported: the tracker refused their thread's root."""
    threads: int
    """Threads whose state the integration keeps (one per thread id it has reported)."""


@final
class Shared:
    """The threads one tracker's wrappers report (use ``lock`` around ``mappers``), and what
    went wrong while reporting them."""

    __slots__ = (
        "_failures",
        "_log",
        "_unreported",
        "active",
        "hub",
        "lock",
        "mappers",
        "reporter",
    )

    def __init__(self, hub: HubReporter | None = None) -> None:
        self.lock = threading.Lock()
        self.mappers: dict[str, ThreadMapper] = {}
        self.active: set[Gate] = set()  # the gates of the invocations running now
        # A thread host's tracker: every invocation is reported in the hub's thread.
        self.hub = hub
        self.reporter = Reporter()  # applies sync invocations' facts to any other tracker
        self._log = FailureLog(logger, "reporting a LangGraph event to the tracker")
        self._failures = 0
        self._unreported = 0

    def take(self, root: str) -> ThreadMapper | None:
        """The mapper of thread ``root``, counted in use until :meth:`release` (None: none)."""
        with self.lock:
            mapper = self.mappers.get(root)
            if mapper is not None:
                mapper.users += 1
            return mapper

    def keep(self, root: str, mapper: ThreadMapper) -> None:
        """Register ``mapper`` (in use) for thread ``root``: the tracker took its root."""
        with self.lock:
            self.mappers[root] = mapper

    def release(self, mapper: ThreadMapper) -> None:
        """An invocation that never ran is done with ``mapper``."""
        with self.lock:
            mapper.users -= 1

    def forget_removed(self, tracker: RunTracker) -> None:
        """In ``tracker``'s thread, as a new thread is kept: look at the two threads kept
        longest, and forget those no invocation uses whose root the tracker no longer has
        (``remove_run``). So the threads kept stay about as many as the roots tracked, however
        many thread ids come and go; a forgotten thread that is invoked again starts over."""
        with self.lock:
            mappers = self.mappers
            for root in list(itertools.islice(mappers, 2)):
                mapper = mappers.pop(root)
                if mapper.users or root in tracker:
                    mappers[root] = mapper  # kept: to the back of the line

    def failed(self, error: BaseException) -> None:
        """Something inside the integration raised ``error``: log it (once per kind), count it.

        Call it from the ``except`` block that caught it, from any thread.
        """
        with self.lock:
            self._failures += 1
            self._log.failed(error)

    def unreported(self) -> None:
        """An invocation runs without being reported (its failure was told to :meth:`failed`)."""
        with self.lock:
            self._unreported += 1

    def statistics(self) -> WatchStatistics:
        with self.lock:
            return WatchStatistics(self._failures, self._unreported, len(self.mappers))


_registry_lock = threading.Lock()
# id(tracker) -> (something that gives the tracker back while it lives, its shared state)
_registry: dict[int, tuple[Callable[[], object | None], Shared]] = {}
# (id, weak reference) of trackers that died, for the next use of the registry to drop.
_dead: deque[tuple[int, object]] = deque()


def _forget(key: int, dead: deque[tuple[int, object]] = _dead) -> Callable[[object], None]:
    # Only an append, which takes no lock: the garbage collector may run this callback in a
    # thread that holds the registry's lock (it did, in shared_state, and waited for ever).
    # The deque is bound here: at interpreter exit the module may be gone.
    def forget(ref: object) -> None:
        dead.append((key, ref))

    return forget


def _drop_dead() -> None:
    """Forget the trackers that died (hold the registry's lock)."""
    while _dead:
        key, ref = _dead.popleft()
        found = _registry.get(key)
        if found is not None and found[0] is ref:
            del _registry[key]


def registered(tracker_id: int) -> bool:
    """Whether a live tracker of this ``id`` has shared state (tests)."""
    with _registry_lock:
        _drop_dead()
        return tracker_id in _registry


def shared_state(tracker: object) -> Shared:
    """The shared state of ``tracker``'s wrappers (made on first use)."""
    key = id(tracker)
    with _registry_lock:
        _drop_dead()
        found = _registry.get(key)
        if found is not None and found[0]() is tracker:
            return found[1]
        shared = Shared(
            HubReporter(tracker.hub_thread()) if isinstance(tracker, SyncTracker) else None
        )
        try:
            ref: Callable[[], object | None] = weakref.ref(tracker, _forget(key))
        except TypeError:  # no weak references: keep it

            def ref() -> object:
                return tracker

        _registry[key] = (ref, shared)
        return shared
