"""What every wrapper over one tracker shares: each thread's mapper.

A web service builds ``watch(graph, tracker)`` per request; the wrappers of one tracker must
behave as one, so what the integration knows about a thread (its root, its open prompts, its
stages) lives here, found by the tracker's identity, not in the wrapper. A tracker that takes
weak references is forgotten with it; one that does not (``__slots__`` without ``__weakref__``)
is kept for the life of the process, as its threads' roots are kept by the tracker itself.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import final

from ._mapping import ThreadMapper

__all__ = ["Shared", "shared_state"]


@final
class Shared:
    """The threads one tracker's wrappers report (use ``lock`` around ``mappers``)."""

    __slots__ = ("lock", "mappers")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mappers: dict[str, ThreadMapper] = {}


_registry_lock = threading.Lock()
# id(tracker) -> (something that gives the tracker back while it lives, its shared state)
_registry: dict[int, tuple[Callable[[], object | None], Shared]] = {}


def _forget(key: int) -> Callable[[object], None]:
    def forget(_: object) -> None:
        with _registry_lock:
            _registry.pop(key, None)

    return forget


def shared_state(tracker: object) -> Shared:
    """The shared state of ``tracker``'s wrappers (made on first use)."""
    key = id(tracker)
    with _registry_lock:
        found = _registry.get(key)
        if found is not None and found[0]() is tracker:
            return found[1]
        shared = Shared()
        try:
            ref: Callable[[], object | None] = weakref.ref(tracker, _forget(key))
        except TypeError:  # no weak references: keep it

            def ref() -> object:
                return tracker

        _registry[key] = (ref, shared)
        return shared
