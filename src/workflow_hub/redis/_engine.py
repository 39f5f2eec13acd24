"""The fleet engine over Redis Streams: :class:`RedisFleet`."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, final

from .._contract import ContractError
from ._events import EventStream, follow_events
from ._follow import DEFAULT_BLOCK, DEFAULT_READ_TIMEOUT, SourceStream, check_block, follow_source
from ._follow_fleet import DEFAULT_STALE_AFTER, FleetStream, follow_fleet
from ._keys import DEFAULT_PREFIX, DEFAULT_RETIRE_AFTER, check_name
from ._mirror import check_seconds

if TYPE_CHECKING:
    import coredis

__all__ = ["RedisFleet"]


@final
class RedisFleet:
    """A fleet mirrored into Redis (by :func:`mirror_hub`), as a
    :class:`~workflow_hub.fleet.FleetEngine`: ``RedisFleet(redis, prefix="workflow-hub")``.

    ``redis`` is a coredis client the caller opened and closes. The settings are those of
    :func:`follow_fleet`, :func:`follow_source` and :func:`follow_events`, checked here once;
    ``block`` (the longest blocking read) defaults to one second, or half the ``read_timeout``
    when that is shorter.
    """

    def __init__(
        self,
        redis: coredis.Redis[Any],
        *,
        prefix: str = DEFAULT_PREFIX,
        stale_after: float = DEFAULT_STALE_AFTER,
        retire_after: float = DEFAULT_RETIRE_AFTER,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        block: float | None = None,
    ) -> None:
        check_name(prefix, "prefix")
        stale = check_seconds(stale_after, "stale_after")
        retire = check_seconds(retire_after, "retire_after")
        if retire <= stale:
            raise ContractError("retire_after", f"must be longer than stale_after, got {retire:g}")
        timeout = check_seconds(read_timeout, "read_timeout")
        chosen = min(DEFAULT_BLOCK, timeout / 2) if block is None else block
        check_block(chosen, timeout)
        self.redis = redis
        """The client every follower reads with."""
        self.prefix = prefix
        """The key prefix: every key of the fleet is ``{prefix}:…``."""
        self.stale_after = float(stale)
        self.retire_after = float(retire)
        self.read_timeout = float(timeout)
        """Seconds without a completed read after which every source is shown unknown."""
        self.block = float(chosen)

    def follow_fleet(self) -> AbstractAsyncContextManager[FleetStream]:
        """Every source under the prefix (:func:`follow_fleet`)."""
        return follow_fleet(
            self.redis,
            prefix=self.prefix,
            stale_after=self.stale_after,
            retire_after=self.retire_after,
            read_timeout=self.read_timeout,
            block=self.block,
        )

    def follow_source(self, source: str) -> AbstractAsyncContextManager[SourceStream]:
        """One source (:func:`follow_source`)."""
        return follow_source(
            self.redis,
            source=source,
            prefix=self.prefix,
            block=self.block,
            read_timeout=self.read_timeout,
        )

    def follow_events(self, source: str | None = None) -> AbstractAsyncContextManager[EventStream]:
        """The hook events of ``source``, or of every source (:func:`follow_events`)."""
        return follow_events(
            self.redis,
            prefix=self.prefix,
            source=source,
            block=self.block,
            read_timeout=self.read_timeout,
            retire_after=self.retire_after,
        )

    def __repr__(self) -> str:
        return f"RedisFleet(prefix={self.prefix!r})"


if TYPE_CHECKING:
    from ..fleet import FleetEngine

    def _checked(engine: RedisFleet) -> FleetEngine:
        return engine  # mypy proves here that a RedisFleet is a FleetEngine
