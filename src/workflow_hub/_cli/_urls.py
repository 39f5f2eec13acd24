"""What a URL a person types names: a hub served over HTTP, or a fleet in a store. Decided here once.

``watch``, ``status``, ``snapshot`` and ``serve`` take URLs; this module says which kind each one
is (:func:`names_fleet`), checks it before anything connects (a bad database number or port is
one line, not a traceback from deep inside a client), and opens a fleet's engine for it
(:func:`open_fleet`). A fleet's schemes are listed in :data:`FLEET_SCHEMES` with the engine that
reads them: a second engine is one more row here. Nothing is imported at the top but the
standard library: ``status`` of a served hub loads no store's client.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ._errors import UsageError

TYPE_CHECKING = False  # not from typing: a status refresh does not load it
if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from contextlib import AbstractAsyncContextManager
    from typing import Any

    from ..fleet import FleetEngine

__all__ = [
    "FLEET_SCHEMES",
    "STREAM_TIMEOUT",
    "check_fleet_url",
    "fleet_settings",
    "hub_url",
    "names_fleet",
    "open_fleet",
    "open_redis",
]

FLEET_SCHEMES = {"redis": "redis", "rediss": "redis", "unix": "redis"}
"""The schemes of a fleet's URL, each with the engine that reads it (``workflow_hub.redis``)."""

# A request that gets no answer fails after this long instead of waiting forever (docs/fleet.md:
# above the followers' blocking read of one second). The mirror and the followers also bound
# every round trip themselves and replace a connection that stopped answering.
STREAM_TIMEOUT = 5.0

_REDIS_EXAMPLE = "redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0"
_MISSING = "needs the 'redis' extra (coredis): pip install 'workflow-hub[redis]'"


def names_fleet(url: str) -> bool:
    """True when ``url`` names a fleet in a store (``redis://…``), not a hub served over HTTP."""
    return urlsplit(url).scheme in FLEET_SCHEMES if "://" in url else False


def check_fleet_url(text: str, *, option: str = "URL") -> str:
    """A fleet's URL as its engine's client reads it (Redis: ``redis://HOST[:PORT][/DB]``,
    ``rediss://…`` or ``unix:///path``); :class:`UsageError` saying what is wrong otherwise."""
    parts = urlsplit(text)
    if not names_fleet(text):
        raise UsageError(f"{option} {text}: expected redis://HOST:PORT/DB, rediss://… or unix://…")
    if parts.scheme == "unix":
        if not parts.path:
            raise UsageError(f"{option} {text}: expected unix:///PATH/TO/redis.sock")
        return text
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise UsageError(f"{option} {text}: the port must be a number from 0 to 65535") from None
    if not parts.hostname:
        raise UsageError(f"{option} {text}: expected {_REDIS_EXAMPLE}")
    database = parts.path.strip("/")
    if database and not database.isdigit():
        raise UsageError(f"{option} {text}: the database is a number ({_REDIS_EXAMPLE})")
    return text


def hub_url(text: str, *, command: str) -> str:
    """A hub's base URL from what a person typed: ``http://`` is assumed when no scheme is given
    (``127.0.0.1:8765``, as httpie does), a trailing slash is dropped."""
    if names_fleet(text):
        from ._command_line import command_name

        program = command_name()
        raise UsageError(
            f"{text}: {command} reads a hub served over HTTP (http://HOST:PORT); for a fleet in "
            f"Redis use '{program} status {text}' or '{program} watch {text}'"
        )
    url = text if "://" in text else f"http://{text}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{text}: expected an http:// or https:// URL (or HOST:PORT)")
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"{text}: the port must be a number from 0 to 65535") from None
    if not parts.hostname:
        raise UsageError(f"{text}: expected http://HOST:PORT, e.g. http://127.0.0.1:8765")
    del port
    return url.rstrip("/")


def fleet_settings(args: object) -> dict[str, Any]:
    """The engine's settings a command line gave (``--prefix``, ``--stale-after``,
    ``--read-timeout``; ``None`` where not given or not an option of the command)."""
    return {name: getattr(args, name, None) for name in ("prefix", "stale_after", "read_timeout")}


def open_redis(url: str, *, option: str = "redis://") -> AbstractAsyncContextManager[Any]:
    """The coredis client of a Redis URL, with the ``stream_timeout`` docs/fleet.md asks;
    :class:`UsageError` naming the extra when coredis is not installed."""
    try:
        import coredis
    except ImportError:
        raise UsageError(f"{option} {_MISSING}") from None
    client: AbstractAsyncContextManager[Any] = coredis.Redis.from_url(
        url, stream_timeout=STREAM_TIMEOUT
    )
    return client


def open_fleet(
    url: str, *, connect_timeout: float | None = None, **settings: Any
) -> AbstractAsyncContextManager[FleetEngine]:
    """``async with open_fleet(url, prefix=…) as engine``: the fleet ``url`` names, read by its
    engine (``settings`` are the engine's; ``None`` ones keep its defaults). With
    ``connect_timeout``, a store that does not answer that soon is a ``CommandError``."""
    from contextlib import asynccontextmanager

    check_fleet_url(url)
    client = open_redis(url)  # the one engine today: FLEET_SCHEMES maps every scheme to it
    given = {name: value for name, value in settings.items() if value is not None}

    @asynccontextmanager
    async def opened() -> AsyncIterator[FleetEngine]:
        import coredis
        import trio

        from ..redis import RedisFleet
        from ._errors import CommandError

        async with client as redis:
            if connect_timeout is not None:
                try:
                    with trio.fail_after(connect_timeout):
                        await redis.ping()
                except (trio.TooSlowError, coredis.exceptions.ConnectionError, OSError) as error:
                    message = f"cannot connect to {url}: {error or 'no answer'}"
                    raise CommandError(message) from None
            yield RedisFleet(redis, **given)

    return opened()
