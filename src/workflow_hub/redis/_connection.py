"""Round trips to Redis that cannot hang, and what counts as a transient failure.

A connection can stop passing bytes while staying open (a stalled proxy, a half-open TCP
connection after a network partition). coredis then times a request out with the client's
``stream_timeout``, if it has one, but leaves a non-blocking command's connection in its pool, so
the next command waits on the same dead connection. Every round trip of the mirror and the
followers therefore runs under a deadline of its own, and a round trip that misses it drops the
client's connections: the retry opens a fresh one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import trio

from .._exceptions import WorkflowHubError

if TYPE_CHECKING:
    import coredis

__all__ = [
    "OutageLog",
    "RoundTripTimeout",
    "bounded",
    "describe",
    "not_streams",
    "server_errors",
    "single",
    "text",
    "transient_errors",
    "unexpected",
]


class RoundTripTimeout(WorkflowHubError, TimeoutError):
    """A round trip to Redis missed its deadline; the client's connections were dropped."""


def transient_errors() -> tuple[type[Exception], ...]:
    """What a lost connection or a restarting server raises: retried, never fatal."""
    from coredis.exceptions import ConnectionError as RedisConnectionError

    return (RedisConnectionError, TimeoutError, OSError)


def server_errors() -> tuple[type[Exception], ...]:
    """What the server answers to a command it refuses (a key of the wrong type, out of memory,
    a read-only replica ...): logged and retried later, never fatal to the scheduler."""
    from coredis.exceptions import ResponseError

    return (ResponseError,)


class OutageLog:
    """What a consumer (a mirror, a follower, a fleet's reader) logs of its failures: each
    distinct failure once, not once per retry, until a round trip succeeds again (an outage is
    one story, told once). A consumer that fails on every item instead of every retry counts
    with ``workflow_hub._failure_log.FailureLog``.

    The rule every consumer follows (``docs/fleet.md``, "When Redis goes away"): no error of
    its own ever reaches the nursery of the scheduler or host that runs it. A lost connection
    is a warning, a refusal by the server an error, and anything else (an error of the client
    library, e.g. the ``RuntimeError`` of a coredis client whose ``async with`` ended under the
    consumer, or a bug) an error with its traceback; each is counted by the caller and retried
    with a backoff. Cancellation and ``KeyboardInterrupt`` are never caught (they are not
    ``Exception``).
    """

    __slots__ = ("_last", "_logger")

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._last: tuple[type[BaseException], str] | None = None

    def report(self, level: int, message: str, *args: object, error: Exception) -> bool:
        """Log ``message % args`` unless it is the failure logged last; True when logged.
        An unexpected error (see :func:`unexpected`) carries its traceback."""
        key = (type(error), str(error))
        if key == self._last:
            return False
        self._last = key
        self._logger.log(
            level,
            message,
            *args,
            exc_info=error if unexpected(error) else None,
            stacklevel=2,  # the consumer's line, not this one
        )
        return True

    def recovered(self) -> None:
        """A round trip succeeded: the next failure is logged again."""
        self._last = None


def unexpected(error: BaseException) -> bool:
    """Neither a lost connection nor a refusal by the server: an error of the client library
    or of this package, logged with its traceback, counted apart and retried all the same."""
    return not isinstance(error, (*transient_errors(), *server_errors(), WorkflowHubError))


def single(error: Exception) -> Exception:
    """One failure for what may be an exception group (round trips run at once in a nursery
    fail together when Redis goes away): its first unexpected error if it has one (see
    :func:`unexpected`), else its first error; any other error as it is."""
    if not isinstance(error, ExceptionGroup):
        return error
    leaves = [single(inner) for inner in error.exceptions]
    return next((leaf for leaf in leaves if unexpected(leaf)), leaves[0])


def text(value: object) -> str:
    """A reply as text, whether the client decodes responses or not (undecodable bytes raise
    ``UnicodeDecodeError``: callers decide what a foreign value means)."""
    if isinstance(value, bytes):
        return value.decode()
    return str(value)


def drop_connections(redis: coredis.Redis[Any]) -> None:
    """Close every connection of the client's pool; the next command opens a fresh one."""
    pool = getattr(redis, "connection_pool", None)
    if pool is not None:
        pool.disconnect()


@contextmanager
def bounded(redis: coredis.Redis[Any], seconds: float) -> Iterator[None]:
    """Run one round trip within ``seconds``; on a timeout (ours or the client's), drop the
    client's connections and raise :class:`RoundTripTimeout`."""
    try:
        with trio.fail_after(seconds):
            yield
    except (trio.TooSlowError, TimeoutError) as error:
        drop_connections(redis)
        if isinstance(error, RoundTripTimeout):
            raise
        raise RoundTripTimeout(f"no answer from Redis within {seconds:g}s") from error


def describe(error: BaseException) -> str:
    """An error as text for a log line (never the exception itself: a log record holding it
    would keep its traceback, and every connection in it, alive)."""
    return str(error) or type(error).__name__


async def not_streams(redis: coredis.Redis[Any], keys: Iterable[str]) -> dict[str, str]:
    """The keys among ``keys`` that hold something else than a stream (or nothing), with the
    type they hold: what made an ``XREAD`` of them fail. One round trip: the ``TYPE`` commands
    run at once over the client's multiplexed connection."""
    kinds: dict[str, str] = {}

    async def kind_of(key: str) -> None:
        kinds[key] = text(await redis.type(key))

    async with trio.open_nursery() as nursery:
        for key in keys:
            nursery.start_soon(kind_of, key)
    return {key: kind for key, kind in kinds.items() if kind not in ("stream", "none")}
