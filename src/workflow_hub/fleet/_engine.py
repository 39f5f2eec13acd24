"""The fleet-engine interface: what the fleet server, ``watch`` and ``status`` need of a fleet.

A fleet is many sources (schedulers' hubs) mirrored into one store. Whatever the store, a reader
needs the same five things of it: the sources there are (discovered as they come and go), the
frames of one source, the frames of all of them, each source's liveness (a mirror that stopped
refreshing is unknown, never its last state) and the hooks' events. :class:`FleetEngine` names
them; :class:`workflow_hub.redis.RedisFleet` is the engine over Redis Streams. A second engine is
one new folder with one class of this shape: nothing that reads a fleet changes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from .._contract import Frame
from ._values import EventItem, SourceLiveness

__all__ = ["EventFollower", "FleetEngine", "FleetFollower"]


class FleetFollower(Protocol):
    """Every source of a fleet, followed: ``(source, frame)`` pairs with ``async for``.

    Each source's frames come with a local subscription's guarantees (a snapshot first, then in
    order, a fresh snapshot whenever continuity is lost) and an ``unavailable`` snapshot while the
    source is unknown (stale, or unreadable). ``frame`` is ``None`` once for a source that was
    retired (its mirror stopped refreshing for the retirement time): drop it.
    """

    @property
    def liveness(self) -> Mapping[str, SourceLiveness]:
        """Every source discovered so far and not retired, with what the registry says of it."""
        ...

    @property
    def readable(self) -> bool:
        """False while the fleet cannot be read (no read completed within the engine's
        ``read_timeout``): every source is then shown unknown. For readiness probes."""
        ...

    def __aiter__(self) -> AsyncIterator[tuple[str, Frame | None]]: ...


class EventFollower(Protocol):
    """The hook events of one source or of a fleet: :class:`SourceEvent` items in the order the
    source's hub dispatched them, and a :class:`ContinuityLost` wherever events may be missing."""

    @property
    def sources(self) -> Sequence[str]:
        """The sources followed right now, in name order."""
        ...

    def __aiter__(self) -> AsyncIterator[EventItem]: ...


@runtime_checkable
class FleetEngine(Protocol):
    """A fleet in some store, read with one engine: the door every fleet reader goes through.

    An engine is configured when it is made (where the store is, the namespace, how long a
    silent source stays shown before it is stale or retired); its methods open followers that
    run for as long as their ``async with`` block. Implemented by
    :class:`workflow_hub.redis.RedisFleet`.

    A follower never ends because its store failed: a store that goes away (or fails in any
    other way) makes every source unknown, with the reason logged once, and the follower
    recovers when the store is back. Only cancellation ends it early.
    """

    @property
    def prefix(self) -> str:
        """The namespace the fleet lives under in its store (Redis: the key prefix); what
        ``/v1/sources`` reports as ``prefix``."""
        ...

    @property
    def read_timeout(self) -> float:
        """Seconds without a completed read after which every source is shown unknown."""
        ...

    def follow_fleet(self) -> AbstractAsyncContextManager[FleetFollower]:
        """``async with engine.follow_fleet() as fleet: async for source, frame in fleet``:
        every source, discovered as it registers, each with its liveness."""
        ...

    def follow_source(self, source: str) -> AbstractAsyncContextManager[AsyncIterator[Frame]]:
        """``async with engine.follow_source("sched-1") as frames: async for frame in frames``:
        one source, with the guarantees of ``hub.subscribe()``."""
        ...

    def follow_events(
        self, source: str | None = None
    ) -> AbstractAsyncContextManager[EventFollower]:
        """The hook events of ``source``, or (``None``) of every source, from the newest on."""
        ...
