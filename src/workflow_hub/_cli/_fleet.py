"""The Redis side of ``watch`` and ``serve``: ``watch redis://…`` and ``serve --redis URL``.

``watch`` follows every source under a prefix and shows one line per source (a live table in a
terminal when ``rich`` is installed, plain lines otherwise: one whenever a source's status
changes). ``serve`` runs the demo's simulated scheduler and mirrors it, so a ``watch`` elsewhere
has something to show. Both need the ``redis`` extra (coredis); ``make demo`` never does.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import random
import sys
import time
from collections.abc import Callable
from typing import IO, Any

import trio

from ..redis import DEFAULT_PREFIX, FleetView, follow_fleet, mirror_hub

__all__ = [
    "add_serve_arguments",
    "add_watch_arguments",
    "is_redis_url",
    "open_client",
    "run_serve",
    "run_watch",
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
        default=DEFAULT_PREFIX,
        help=f"redis:// only: the key prefix (default {DEFAULT_PREFIX})",
    )
    parser.add_argument(
        "--stale-after",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="redis:// only: a source that has not refreshed for this long is unavailable (default 5)",
    )


def is_redis_url(url: str) -> bool:
    return url.startswith(("redis://", "rediss://", "unix://"))


def run_watch(args: argparse.Namespace) -> int:
    """``watch redis://...``: every source under ``--prefix``, live."""
    if not _coredis_available("watch"):
        return 2
    show: Callable[[FleetView], None]
    if sys.stdout.isatty():
        try:
            from rich.live import Live
        except ImportError:
            show = _PlainFleet(sys.stdout).show
        else:
            with Live(_fleet_table(FleetView()), refresh_per_second=4) as live:
                show = lambda fleet: live.update(_fleet_table(fleet))  # noqa: E731
                with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it stops
                    trio.run(_watch, args, show)
            return 0
    else:
        show = _PlainFleet(sys.stdout).show
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(_watch, args, show)
    return 0


async def _watch(args: argparse.Namespace, show: Callable[[FleetView], None]) -> None:
    fleet_view = FleetView()
    with trio.move_on_after(args.duration if args.duration is not None else float("inf")):
        async with (
            open_client(args.url) as redis,
            follow_fleet(redis, prefix=args.prefix, stale_after=args.stale_after) as fleet,
        ):
            async for source, frame in fleet:
                fleet_view.apply(source, frame)
                show(fleet_view)


class _PlainFleet:
    """One line whenever a source's status (or the fleet's) changes."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._last: dict[str, str] = {}

    def show(self, fleet: FleetView) -> None:
        lines = {source: status.message for source, status in fleet.statuses().items()}
        lines[""] = fleet.aggregate().message
        for source, message in lines.items():
            if self._last.get(source) != message:
                self._last[source] = message
                label = source or "fleet"
                self._stream.write(f"{label}: {message}\n")
        self._stream.flush()


def _fleet_table(fleet: FleetView) -> Any:
    from rich.table import Table

    status = fleet.aggregate()
    table = Table(title=f"workflow-hub fleet: {status.state} · {status.message}")
    table.add_column("source")
    table.add_column("state")
    table.add_column("status")
    table.add_column("roots", justify="right")
    for source, source_status in fleet.statuses().items():
        table.add_row(
            source, str(source_status.state), source_status.message, str(source_status.roots)
        )
    return table


# --- serve -------------------------------------------------------------------------------------


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``serve`` has for mirroring into Redis (``--duration`` and ``--seed`` are
    ``serve``'s)."""
    parser.add_argument(
        "--redis",
        default=None,
        metavar="URL",
        help="mirror the demo scheduler into this Redis: redis://HOST:PORT/DB",
    )
    parser.add_argument(
        "--source", default=None, metavar="NAME", help="with --redis: this scheduler's name"
    )
    parser.add_argument(
        "--prefix",
        default=DEFAULT_PREFIX,
        help=f"with --redis or --fleet: the key prefix (default {DEFAULT_PREFIX})",
    )


def run_serve(args: argparse.Namespace) -> int:
    if not args.source:
        print("workflow-hub serve: --redis needs --source NAME", file=sys.stderr)
        return 2
    if not _coredis_available("serve"):
        return 2
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it stops
        trio.run(_serve, args)
    return 0


async def _serve(args: argparse.Namespace) -> None:
    from .._core import open_hub
    from ..tracker import RunTracker
    from ._scenario import run_scenario

    rng = random.Random(args.seed)
    with trio.move_on_after(args.duration if args.duration is not None else float("inf")):
        async with (
            open_hub() as hub,
            open_client(args.redis) as redis,
            trio.open_nursery() as nursery,
        ):
            mirror = await nursery.start(
                functools.partial(mirror_hub, hub, redis, source=args.source, prefix=args.prefix)
            )
            print(
                f"workflow-hub serve: mirroring the demo scheduler as {args.source!r} "
                f"into {args.prefix}:{args.source}:frames",
                flush=True,
            )
            tracker = RunTracker(
                hub.register_publisher(),
                owner_session_id=f"{args.source}-session",
                clock=lambda: time.time() * 1000,
                include_graph=True,
            )
            async with trio.open_nursery() as scheduler:
                await scheduler.start(tracker.run_heartbeats)
                while not mirror.fenced:
                    await run_scenario(tracker, duration=20.0, seed=rng.randrange(2**32))
            nursery.cancel_scope.cancel()
