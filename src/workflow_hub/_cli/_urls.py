"""What a URL a person types names: a hub served over HTTP, or a fleet in a store. Decided here once.

``watch``, ``status``, ``snapshot`` and ``serve`` take URLs; this module says which kind each one
is (:func:`names_fleet`), checks it before anything connects (a bad database number or port is
one line, not a traceback from deep inside a client), and opens a fleet's engine for it
(:func:`open_fleet`). A fleet's schemes are listed in :data:`FLEET_SCHEMES` with the engine that
reads them: a second engine is one more row here. Nothing is imported at the top but the
standard library: ``status`` of a served hub loads no store's client.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

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
    "refuse_misconfigured",
    "shown_url",
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
    """True when ``url`` names a fleet in a store (``redis://…``), not a hub served over HTTP.
    Only the scheme is read: a URL that does not parse is refused later, by the check of its
    kind, in words."""
    scheme, found, _ = url.partition("://")
    return bool(found) and scheme.lower() in FLEET_SCHEMES


def _split(url: str, *, said: str) -> SplitResult:
    """``url``'s parts, its host and port checked; :class:`UsageError` naming what is wrong
    (``said`` starts the line: the option and the URL as typed). The standard library raises a
    ``ValueError`` for an unclosed bracket, an address between brackets that is not one, or a
    port that is not a number, at ``urlsplit`` or only when the port is read."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as error:
        reason = str(error)
        if "port" in reason.lower():
            raise UsageError(f"{said}: the port must be a number from 0 to 65535") from None
        if "IPv6" in reason and "address" not in reason:
            raise UsageError(
                f"{said}: an IPv6 address goes between brackets, e.g. [::1]:8765 "
                "(a bracket is missing)"
            ) from None
        raise UsageError(
            f"{said}: {reason} (between brackets goes an IPv6 address, e.g. [::1])"
        ) from None
    return parts


def shown_url(url: str) -> str:
    """``url`` as a message shows it: a password in it replaced by ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.partition(":")[0]
    return parts._replace(netloc=f"{name}:***@{host}").geturl()


def check_fleet_url(text: str, *, option: str = "URL") -> str:
    """A fleet's URL as its engine's client reads it (Redis: ``redis://HOST[:PORT][/DB]``,
    ``rediss://…`` or ``unix:///path``); :class:`UsageError` saying what is wrong otherwise."""
    if not names_fleet(text):
        raise UsageError(f"{option} {text}: expected redis://HOST:PORT/DB, rediss://… or unix://…")
    parts = _split(text, said=f"{option} {shown_url(text)}")
    if parts.scheme == "unix":
        if not parts.path:
            raise UsageError(f"{option} {text}: expected unix:///PATH/TO/redis.sock")
        return text
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
    parts = _split(url, said=text)
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{text}: expected an http:// or https:// URL (or HOST:PORT)")
    if not parts.hostname:
        raise UsageError(f"{text}: expected http://HOST:PORT, e.g. http://127.0.0.1:8765")
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


async def refuse_misconfigured(
    redis: Any, url: str, *, connect_timeout: float | None = None
) -> None:
    """One ``PING`` at the start of a command that reads or writes Redis, so that a wrong
    setting in ``url`` is one line and a non-zero exit at once (docs/cli.md, "A wrong address,
    database or password"): Redis refusing the password, the user or the database is a
    :class:`CommandError` (waiting would not change its answer). A Redis that does not answer
    is an outage, not a mistake: the command carries on and its consumers retry (the fleet
    shows every source unknown, with the reason, until Redis is back); with
    ``connect_timeout`` (``status``, which answers once) it is a :class:`CommandError` too."""
    import coredis
    import trio

    from ._errors import CommandError

    shown = shown_url(url)
    try:
        with trio.fail_after(STREAM_TIMEOUT if connect_timeout is None else connect_timeout):
            await redis.ping()
    except coredis.exceptions.ResponseError as error:
        refusal = _refusal(error, url)
        if refusal is not None:
            raise CommandError(f"cannot connect to {shown}: {refusal}") from None
        if connect_timeout is not None:
            raise CommandError(f"cannot connect to {shown}: {error}") from None
        # Anything else it answers (LOADING, MASTERDOWN ...) passes: an outage, retried.
    except (trio.TooSlowError, coredis.exceptions.ConnectionError, OSError) as error:
        pool = getattr(redis, "connection_pool", None)
        if pool is not None:  # a connection that did not answer is not used again
            pool.disconnect()
        if connect_timeout is not None:
            raise CommandError(f"cannot connect to {shown}: {error or 'no answer'}") from None


def _refusal(error: Exception, url: str) -> str | None:
    """What Redis' refusal of a new connection says is wrong in the URL, and what to do; ``None``
    when it is not about the URL's settings."""
    from coredis.exceptions import (
        AuthenticationError,
        AuthenticationRequiredError,
        AuthorizationError,
    )

    said = str(error) or type(error).__name__
    if isinstance(error, AuthenticationRequiredError):
        return (  # its words are about HELLO and AUTH: they do not say what to do
            "Redis wants a password: put it in the URL, "
            "redis://:PASSWORD@HOST:PORT/DB (or redis://USER:PASSWORD@…)"
        )
    if isinstance(error, AuthenticationError):
        return (
            f"Redis refused the password ({said}): check the user and password in the URL, "
            "redis://USER:PASSWORD@HOST:PORT/DB"
        )
    if isinstance(error, AuthorizationError):
        return f"Redis refused this user ({said}): check the user's ACL rules"
    if "DB index" in said:  # "DB index is out of range"; older servers: "invalid DB index"
        database = urlsplit(url).path.strip("/") or "0"
        return (
            f"Redis has no database {database} ({said}): pick a number below the server's "
            "'databases' setting (16 by default)"
        )
    return None


def open_fleet(
    url: str, *, connect_timeout: float | None = None, **settings: Any
) -> AbstractAsyncContextManager[FleetEngine]:
    """``async with open_fleet(url, prefix=…) as engine``: the fleet ``url`` names, read by its
    engine (``settings`` are the engine's; ``None`` ones keep its defaults). A store that refuses
    the URL's settings (a password, a database) is a ``CommandError`` at once; with
    ``connect_timeout``, so is one that does not answer that soon (see
    :func:`refuse_misconfigured`)."""
    from contextlib import asynccontextmanager

    check_fleet_url(url)
    client = open_redis(url)  # the one engine today: FLEET_SCHEMES maps every scheme to it
    given = {name: value for name, value in settings.items() if value is not None}

    @asynccontextmanager
    async def opened() -> AsyncIterator[FleetEngine]:
        from ..redis import RedisFleet

        async with client as redis:
            await refuse_misconfigured(redis, url, connect_timeout=connect_timeout)
            yield RedisFleet(redis, **given)

    return opened()
