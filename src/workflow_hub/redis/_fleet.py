"""A fleet: every source mirrored under one prefix, discovered, followed and folded together.

Sources register themselves in ``{prefix}:sources`` with the server time of their last refresh.
:func:`follow_fleet` polls that set, follows each source it finds (a :class:`SourceStream` per
source) and marks a source unavailable when its mirror stopped refreshing: a scheduler that died
or was partitioned away is shown as unknown, never as its last state.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, final

import attrs
import trio

from .._contract import ContractError, Frame
from .._public import NoPublicConstructor
from ..reporting import ActivityView, AggregateStatus, ViewChange, aggregate, combine
from ._follow import DEFAULT_BLOCK, DEFAULT_READ_COUNT, SourceStream
from ._keys import DEFAULT_PREFIX, ServerScript, check_name, source_keys, sources_key
from ._mirror import text, transient_errors

if TYPE_CHECKING:
    import coredis

__all__ = ["FleetStream", "FleetView", "follow_fleet"]

logger = logging.getLogger("workflow_hub.redis")

DEFAULT_STALE_AFTER = 5.0
DEFAULT_POLL_INTERVAL = 1.0

_DISCOVER_SCRIPT = """
local now = redis.call('TIME')
return {string.format('%.0f', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)),
  redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')}
"""
_DISCOVER = ServerScript(_DISCOVER_SCRIPT)


@final
class FleetView:
    """One :class:`~workflow_hub.reporting.ActivityView` per source, and the fleet's status.

    Feed it what :func:`follow_fleet` yields: ``fleet_view.apply(source, frame)``.
    """

    def __init__(self) -> None:
        self._views: dict[str, ActivityView] = {}

    def apply(self, source: str, frame: Frame) -> ViewChange:
        """Fold one frame of ``source`` into its view (created on its first frame)."""
        view = self._views.get(source)
        if view is None:
            view = self._views[source] = ActivityView()
        return view.apply(frame)

    @property
    def views(self) -> Mapping[str, ActivityView]:
        """Every source seen so far, in discovery order."""
        return self._views

    def statuses(self) -> dict[str, AggregateStatus]:
        """Each source boiled down to one status (see :func:`~workflow_hub.reporting.aggregate`)."""
        return {source: aggregate(view) for source, view in self._views.items()}

    def aggregate(self) -> AggregateStatus:
        """The whole fleet as one status, with the rules of ``aggregate`` for one source.

        Working if any source works, else blocked if any is blocked, else unknown if any source
        is unknown (or none was seen yet), else idle. Unknown is never idle: one scheduler that
        cannot be seen means "idle" cannot be claimed for the fleet.
        """
        statuses = list(self.statuses().values())
        fleet = combine(statuses)
        sources = f"{len(statuses)} source{'' if len(statuses) == 1 else 's'}"
        return attrs.evolve(fleet, message=" · ".join(filter(None, [sources, fleet.message])))


@final
class FleetStream(metaclass=NoPublicConstructor):
    """``(source, frame)`` pairs from every source of a fleet; made by :func:`follow_fleet`."""

    def __init__(
        self,
        receive: trio.MemoryReceiveChannel[tuple[str, Frame]],
        streams: Mapping[str, SourceStream],
    ) -> None:
        self._receive = receive
        self._streams = streams

    @property
    def streams(self) -> Mapping[str, SourceStream]:
        """The follower of each source discovered so far (for their statistics)."""
        return self._streams

    def __aiter__(self) -> AsyncIterator[tuple[str, Frame]]:
        return self

    async def __anext__(self) -> tuple[str, Frame]:
        try:
            return await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None


def _check_seconds(value: object, field: str) -> float:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ContractError(field, f"expected seconds > 0, got {value!r}")
    return float(value)


@asynccontextmanager
async def follow_fleet(
    redis: coredis.Redis[Any],
    *,
    prefix: str = DEFAULT_PREFIX,
    stale_after: float = DEFAULT_STALE_AFTER,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    block: float = DEFAULT_BLOCK,
    count: int = DEFAULT_READ_COUNT,
) -> AsyncIterator[FleetStream]:
    """``async with follow_fleet(redis) as fleet: async for source, frame in fleet``.

    Discovers the sources in ``{prefix}:sources`` every ``poll_interval`` seconds and follows
    each one with the guarantees of :func:`follow_source`. A source whose mirror has not
    refreshed for ``stale_after`` seconds (server time) gets an ``unavailable`` snapshot; when it
    refreshes again, its state comes back (or a fresh snapshot, if entries were lost).
    """
    check_name(prefix, "prefix")
    stale_ms = _check_seconds(stale_after, "stale_after") * 1000
    poll = _check_seconds(poll_interval, "poll_interval")
    _check_seconds(block, "block")
    if type(count) is not int or count < 1:
        raise ContractError("count", f"expected an int >= 1, got {count!r}")
    streams: dict[str, SourceStream] = {}
    send, receive = trio.open_memory_channel[tuple[str, Frame]](1024)

    async def follow(stream: SourceStream) -> None:
        async for frame in stream:
            await send.send((stream.source, frame))

    async def run_discovery(nursery: trio.Nursery) -> None:
        while True:
            try:
                reply: Any = await _DISCOVER(redis, keys=[sources_key(prefix)], args=[])
            except transient_errors() as error:
                logger.warning("fleet discovery: Redis unreachable (%s)", error)
                await trio.sleep(poll)
                continue
            now = int(text(reply[0]))
            flat = list(reply[1])
            listed = {text(flat[index]) for index in range(0, len(flat), 2)}
            for known, follower in streams.items():
                if known not in listed:
                    follower.mark_stale()  # the registry itself was lost (a Redis restart)
            for index in range(0, len(flat), 2):
                source, seen = text(flat[index]), float(text(flat[index + 1]))
                stream = streams.get(source)
                if stream is None:
                    stream = streams[source] = SourceStream._create(
                        redis,
                        source=source,
                        keys=source_keys(prefix, source),
                        block=block,
                        count=count,
                    )
                    nursery.start_soon(follow, stream)
                if now - seen > stale_ms:
                    stream.mark_stale()
                else:
                    stream.mark_fresh()
            await trio.sleep(poll)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_discovery, nursery)
        try:
            yield FleetStream._create(receive, streams)
        finally:
            nursery.cancel_scope.cancel()
