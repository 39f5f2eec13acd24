"""The Redis side of ``watch`` and ``serve``: ``watch redis://…`` and ``serve --redis URL``.

``watch`` follows every source under a prefix and shows one line per source (a live table in a
terminal when ``rich`` is installed, plain lines otherwise: one whenever a source's status
changes). ``serve`` runs the demo's simulated scheduler and mirrors it, so a ``watch`` elsewhere
has something to show. Both need the ``redis`` extra (coredis); ``make demo`` never does.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import logging
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

import trio

from .._contract import Availability
from ..redis import (
    DEFAULT_BLOCK,
    DEFAULT_PREFIX,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_STALE_AFTER,
    FleetStream,
    FleetView,
    Mirror,
    SourceLiveness,
    follow_fleet,
    mirror_hub,
)

__all__ = [
    "add_serve_arguments",
    "add_watch_arguments",
    "is_redis_url",
    "open_client",
    "run_serve",
    "run_watch",
    "until_ctrl_c",
]

_MISSING = "the redis commands need the 'redis' extra: pip install 'workflow-hub[redis]' (coredis)"


# A request that gets no answer fails after this long instead of waiting forever (docs/fleet.md:
# above the followers' blocking read of one second). The mirror and the followers also bound
# every round trip themselves and replace a connection that stopped answering.
STREAM_TIMEOUT = 5.0


def open_client(url: str) -> Any:
    """The coredis client every command uses, with the ``stream_timeout`` docs/fleet.md asks."""
    import coredis

    return coredis.Redis.from_url(url, stream_timeout=STREAM_TIMEOUT)


@contextlib.contextmanager
def until_ctrl_c() -> Iterator[None]:
    """Ctrl-C is how these commands stop: no traceback, even when trio raises it from inside
    the nurseries (wrapped in an exception group)."""
    try:
        yield
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:
        _, rest = group.split(KeyboardInterrupt)
        if rest is not None:
            raise rest from None


def _coredis_available(command: str) -> bool:
    try:
        import coredis  # noqa: F401
    except ImportError:
        print(f"workflow-hub {command}: {_MISSING}", file=sys.stderr)
        return False
    return True


# --- watch -------------------------------------------------------------------------------------


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``watch`` has for redis:// URLs (the URL and ``--duration`` are ``watch``'s)."""
    parser.add_argument(
        "--prefix",
        default=None,
        help=f"redis:// only: the key prefix (default {DEFAULT_PREFIX})",
    )
    parser.add_argument(
        "--stale-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="redis:// only: a source that has not refreshed for this long is unavailable "
        f"(default {DEFAULT_STALE_AFTER:g})",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="redis:// only: with no read from Redis for this long, every source is unknown "
        f"(default {DEFAULT_READ_TIMEOUT:g})",
    )


def is_redis_url(url: str) -> bool:
    return url.startswith(("redis://", "rediss://", "unix://"))


def refuse_watch_flags(args: argparse.Namespace) -> str | None:
    """Why ``watch redis://…`` cannot run with these flags (one line), or ``None``."""
    if args.token is not None:
        return (
            "--token is for http:// URLs; a Redis password goes in the URL "
            "(redis://:PASSWORD@HOST:PORT/DB)"
        )
    if (problem := _bad_redis_url(args.url)) is not None:
        return problem
    for flag, value in (("--stale-after", args.stale_after), ("--read-timeout", args.read_timeout)):
        if value is not None and not value > 0:
            return f"{flag} must be > 0"
    if args.duration is not None and not args.duration > 0:
        return "--duration must be > 0"
    return None


_LOG_LINES = 3
"""Log lines the live table keeps below itself (older ones are dropped, not scrolled)."""


def run_watch(args: argparse.Namespace) -> int:
    """``watch redis://...``: every source under ``--prefix``, live."""
    refused = refuse_watch_flags(args)
    if refused is not None:
        print(f"workflow-hub watch: {refused}", file=sys.stderr)
        return 2
    if not _coredis_available("watch"):
        return 2
    show: Callable[[FleetView, FleetStream], None]
    if sys.stdout.isatty():
        try:
            from rich.live import Live
        except ImportError:
            show = _PlainFleet(sys.stdout).show
        else:
            tail = _LogTail(_LOG_LINES)
            with (
                _capture_logs(tail),
                Live(_fleet_table(FleetView(), {}, tail), refresh_per_second=4) as live,
            ):
                show = lambda view, fleet: live.update(  # noqa: E731
                    _fleet_table(view, fleet.liveness, tail)
                )
                with until_ctrl_c():
                    trio.run(_watch, args, show)
            return 0
    else:
        show = _PlainFleet(sys.stdout).show
    with until_ctrl_c():
        trio.run(_watch, args, show)
    return 0


async def _watch(args: argparse.Namespace, show: Callable[[FleetView, FleetStream], None]) -> None:
    fleet_view = FleetView()
    read_timeout = args.read_timeout or DEFAULT_READ_TIMEOUT
    with trio.move_on_after(args.duration if args.duration is not None else float("inf")):
        async with (
            open_client(args.url) as redis,
            follow_fleet(
                redis,
                prefix=args.prefix or DEFAULT_PREFIX,
                stale_after=args.stale_after or DEFAULT_STALE_AFTER,
                read_timeout=read_timeout,
                block=min(DEFAULT_BLOCK, read_timeout / 2),
            ) as fleet,
        ):
            async for source, frame in fleet:
                fleet_view.apply(source, frame)
                show(fleet_view, fleet)


def fleet_line(fleet: FleetView) -> str:
    """The fleet in one line, every count a count of sources."""
    status = fleet.aggregate()
    counts: dict[str, int] = {}
    for source_status in fleet.statuses().values():
        counts[str(source_status.state)] = counts.get(str(source_status.state), 0) + 1
    total = len(fleet.views)
    parts = [f"{counts[state]} {state}" for state in _STATE_ORDER if counts.get(state)]
    sources = f"{total} source{'' if total == 1 else 's'}"
    return f"fleet {status.state}: {sources}" + (f" ({', '.join(parts)})" if parts else "")


_STATE_ORDER = ("working", "blocked", "unknown", "idle")


class _PlainFleet:
    """One line whenever a source's status (or the fleet's) changes."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._last: dict[str, str] = {}

    def show(self, fleet: FleetView, stream: FleetStream | None = None) -> None:
        lines = {source: status.message for source, status in fleet.statuses().items()}
        lines[""] = fleet_line(fleet)
        for source in list(self._last):
            if source and source not in lines:
                del self._last[source]
                self._stream.write(f"{source}: retired\n")
        for source, message in lines.items():
            if self._last.get(source) != message:
                self._last[source] = message
                self._stream.write(f"{source}: {message}\n" if source else f"{message}\n")
        self._stream.flush()


class _LogTail(logging.Handler):
    """The last few log lines, shown under the live table instead of scrolling it away."""

    def __init__(self, size: int) -> None:
        super().__init__(logging.INFO)
        self.lines: collections.deque[str] = collections.deque(maxlen=size)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{time.strftime('%H:%M:%S')} {record.getMessage()}")


@contextlib.contextmanager
def _capture_logs(handler: logging.Handler) -> Iterator[None]:
    logger = logging.getLogger("workflow_hub")
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


# The table fits 80 columns, and uses a wider terminal (up to this) for longer names and notes.
_NARROWEST, _WIDEST = 80, 160
_CRASHED = "crashed? (stopped refreshing)"
_DECLARED = "declared unavailable"


def _fleet_table(fleet: FleetView, liveness: Mapping[str, SourceLiveness], tail: _LogTail) -> Any:
    """Sources in name order, counts of roots per source, as wide as the terminal allows."""
    return _FleetTable(fleet, dict(liveness), tail)


class _FleetTable:
    """Built when drawn, so that its width is the terminal's (rich asks ``__rich_console__``)."""

    def __init__(
        self, fleet: FleetView, liveness: Mapping[str, SourceLiveness], tail: _LogTail
    ) -> None:
        self._fleet = fleet
        self._liveness = liveness
        self._tail = tail

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        from rich.table import Table
        from rich.text import Text

        width = max(_NARROWEST, min(_WIDEST, options.max_width))
        # Every column but the note has a fixed width and the note gets what is left: when a
        # no_wrap cell is too long rich shrinks every column alike, which once squeezed the
        # source and its status out of an 80-column terminal.
        longest = max([len("source"), *map(len, self._fleet.views)])
        fixed = {"status": 7, "roots": 5, "work": 4, "wait": 4, "last seen": 9}
        lines = len(fixed) + 3  # the vertical lines between and around the seven columns
        padding = 2 * (len(fixed) + 2)
        room = width - lines - padding - sum(fixed.values())
        source_width = min(longest, max(16, room // 2))
        table = Table(title=fleet_line(self._fleet), title_justify="left", width=width)
        table.add_column("source", no_wrap=True, overflow="ellipsis", width=source_width)
        table.add_column("status", no_wrap=True, overflow="ellipsis", width=fixed["status"])
        for name in ("roots", "work", "wait"):
            table.add_column(name, justify="right", no_wrap=True, width=fixed[name])
        table.add_column("last seen", no_wrap=True, overflow="ellipsis", width=fixed["last seen"])
        table.add_column("note", no_wrap=True, overflow="ellipsis", width=room - source_width)
        now = time.time()
        for source, status in self._fleet.statuses().items():
            live = self._liveness.get(source)
            seen = "—"
            if live is not None and live.last_seen is not None:
                seen = _ago(now - live.last_seen)
            note = status.message
            if live is not None and live.stale:
                note = _CRASHED
            elif self._fleet.views[source].availability is Availability.UNAVAILABLE:
                note = _DECLARED
            table.add_row(
                source,
                str(status.state),
                str(status.roots),
                str(status.working),
                str(status.blocked),
                seen,
                note,
            )
        yield table
        if self._tail.lines:
            yield Text("\n".join(self._tail.lines), style="dim", overflow="ellipsis", no_wrap=True)


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.0f}h ago"


# --- serve ---------------------------------------------------------------------------------------


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``serve`` has for mirroring into Redis (``--duration`` and ``--seed`` are
    ``serve``'s)."""
    parser.add_argument(
        "--redis",
        default=None,
        metavar="URL",
        help="mirror the demo scheduler into this Redis (redis://HOST:PORT/DB), and serve it "
        "over HTTP as plain serve does (unless --no-http)",
    )
    parser.add_argument(
        "--source", default=None, metavar="NAME", help="with --redis: this scheduler's name"
    )
    parser.add_argument(
        "--prefix",
        default=None,
        help=f"with --redis or --fleet: the key prefix (default {DEFAULT_PREFIX})",
    )
    parser.add_argument(
        "--no-http",
        action="store_true",
        help="with --redis: mirror only, open no HTTP server",
    )


def refuse_serve_flags(args: argparse.Namespace, *, default_port: int) -> str | None:
    """Why this combination of ``serve`` flags cannot run (one line), or ``None``.

    Every flag either works in the mode given or is refused: nothing is silently ignored.
    """
    redis, fleet = args.redis is not None, getattr(args, "fleet", None) is not None
    if redis and fleet:
        return "--redis (mirror the demo) and --fleet (serve a fleet) are two modes: give one"
    if args.source is not None and not redis:
        return "--source names the mirrored demo scheduler: it needs --redis"
    if args.prefix is not None and not (redis or fleet):
        return "--prefix needs --redis or --fleet"
    if args.no_http and not redis:
        return "--no-http needs --redis"
    if redis and not args.source:
        return "--redis needs --source NAME"
    if redis and args.no_http:
        if args.token is not None:
            return "--token is for the HTTP server, which --no-http turns off"
        if args.port != default_port or args.host != "127.0.0.1":
            return "--host and --port are for the HTTP server, which --no-http turns off"
    if fleet and args.seed is not None:
        return "--seed is for the demo scheduler; --fleet serves what is in Redis"
    if args.duration is not None and not args.duration > 0:
        return "--duration must be > 0"
    for name in ("redis", "fleet"):
        url = getattr(args, name, None)
        if url is not None and (problem := _bad_redis_url(url)) is not None:
            return f"--{name}: {problem}"
    return None


def _bad_redis_url(url: str) -> str | None:
    """What is wrong with a Redis URL, caught before connecting (a bad database number would
    otherwise surface as a traceback from deep inside the client)."""
    from urllib.parse import urlsplit

    if not is_redis_url(url):
        return f"expected redis://HOST:PORT/DB, rediss://… or unix://…, got {url!r}"
    parts = urlsplit(url)
    database = parts.path.strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        return f"the database must be a number, got {database!r} in {url!r}"
    try:
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        return f"bad port in {url!r}"
    return None


def run_serve(args: argparse.Namespace) -> int:
    """``serve --redis URL --source NAME``: the demo scheduler, mirrored (and served over HTTP)."""
    if not _coredis_available("serve"):
        return 2
    args.prefix = args.prefix or DEFAULT_PREFIX
    fenced = False
    try:
        with until_ctrl_c():
            fenced = trio.run(_serve, args)
    except (OSError, BaseExceptionGroup) as failure:
        _, rest = (
            failure.split(OSError) if isinstance(failure, BaseExceptionGroup) else (failure, None)
        )
        if rest is not None:
            raise
        print(f"workflow-hub serve: cannot serve: {failure}", file=sys.stderr)
        return 1
    if fenced:
        print(
            f"workflow-hub serve: another instance claimed {args.source!r}; this one stopped",
            file=sys.stderr,
        )
        return 1
    return 0


_ROUND_SECONDS = 20.0
"""One round of the demo's script; ``serve --redis`` plays round after round."""


async def _serve(args: argparse.Namespace) -> bool:
    """Run until ``--duration`` is over; True when the mirror was fenced (another instance)."""
    from .._core import HookRunner, open_hub
    from ..tracker import RunTracker
    from ._demo_script import run_scenario

    rng = random.Random(args.seed)
    duration = args.duration if args.duration is not None else float("inf")
    async with (
        open_hub() as hub,
        open_client(args.redis) as redis,
        trio.open_nursery() as nursery,
    ):
        # One runner for the hub's hook handlers: the mirror copies its events into Redis
        # (and the HTTP server, when there is one, serves them on /v1/events).
        runner = HookRunner(hub)
        mirror: Mirror = await nursery.start(
            functools.partial(
                mirror_hub, hub, redis, source=args.source, prefix=args.prefix, runner=runner
            )
        )
        runner.bind()
        print(
            f"workflow-hub serve: mirroring the demo scheduler as {args.source!r} "
            f"into {args.prefix}:{args.source}:frames",
            file=sys.stderr,
            flush=True,
        )
        if not args.no_http:
            from ..server import serve_hub
            from ._serving import dashboard_url

            url: str = await nursery.start(
                functools.partial(
                    serve_hub, hub, host=args.host, port=args.port, token=args.token, runner=runner
                )
            )
            print(url, flush=True)
            print(
                f"workflow-hub serve: serving at {url} (dashboard: {dashboard_url(url)})",
                file=sys.stderr,
                flush=True,
            )
        publisher = None
        with trio.move_on_after(duration):
            rounds = 0
            while not mirror.fenced:
                # A fresh tracker (a new publisher: the newest wins, P1) for every round: the
                # script's runs are tracked once per tracker.
                tracker = RunTracker(
                    hub.register_publisher(),
                    owner_session_id=f"{args.source}-session-{rounds}",
                    clock=lambda: time.time() * 1000,
                    include_graph=True,
                )
                publisher = tracker.publisher
                async with trio.open_nursery() as scheduler:
                    await scheduler.start(tracker.run_heartbeats)
                    await run_scenario(tracker, duration=_ROUND_SECONDS, seed=rng.randrange(2**32))
                    scheduler.cancel_scope.cancel()
                rounds += 1
        if publisher is not None and not mirror.fenced:
            # The scheduler shuts down: its source declares itself unavailable, and that frame
            # reaches Redis before the command ends (followers tell it from a crash).
            publisher.dispose()
            with trio.move_on_after(2.0):
                while mirror.appended_cursor != hub.cursor:  # noqa: ASYNC110
                    await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
        return mirror.fenced
