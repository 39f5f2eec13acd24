"""``serve --redis URL --source NAME``: the demo's scheduler, mirrored into Redis.

It runs the demo's simulated scheduler round after round and mirrors its hub (frames and hook
events), so that a ``watch`` or a fleet server elsewhere has something to show; the hub is
served over HTTP too, unless ``--no-http``. Needs the ``redis`` extra (coredis).
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time

import trio

from ..redis import DEFAULT_PREFIX, Mirror, mirror_hub
from ._errors import os_errors_as, until_ctrl_c
from ._signals import ended_by_signals
from ._urls import open_redis, refuse_misconfigured

__all__ = ["add_serve_arguments", "refuse_serve_flags", "run_serve"]


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
    return None


def run_serve(args: argparse.Namespace) -> int:
    """``serve --redis URL --source NAME``: the demo scheduler, mirrored (and served over HTTP)."""
    args.prefix = args.prefix or DEFAULT_PREFIX
    with until_ctrl_c():
        if trio.run(_serve, args):
            print(
                f"workflow-hub serve: another instance claimed {args.source!r}; this one stopped",
                file=sys.stderr,
            )
            return 1
    return 0


_ROUND_SECONDS = 20.0
"""One round of the demo's script; ``serve --redis`` plays round after round."""
_DECLARE_GRACE = 2.0
"""Seconds the command waits at its end for its ``unavailable`` frame to reach Redis."""


async def _serve(args: argparse.Namespace) -> bool:
    """Run until ``--duration`` is over, or Ctrl-C or SIGTERM; True when the mirror was fenced
    (another instance claimed the source)."""
    async with ended_by_signals() as playing:
        return await _mirror_the_demo(args, playing)
    return False  # a second signal: ended at once


async def _mirror_the_demo(args: argparse.Namespace, playing: trio.CancelScope) -> bool:
    from .._core import HookRunner, open_hub
    from ..tracker import RunTracker
    from ._demo_script import run_scenario

    rng = random.Random(args.seed)
    duration = args.duration if args.duration is not None else float("inf")
    async with (
        open_hub() as hub,
        open_redis(args.redis, option="--redis") as redis,
        trio.open_nursery() as nursery,
    ):
        # A password or database Redis refuses is one line now, not a retry for ever (a Redis
        # that is down is an outage: the mirror retries until it is back).
        await refuse_misconfigured(redis, args.redis)
        # One runner for the hub's hook handlers: the mirror copies its events into Redis
        # (and the HTTP server, when there is one, serves them on /v1/events).
        runner = HookRunner(hub)
        mirror: Mirror = await nursery.start(
            functools.partial(
                mirror_hub, hub, redis, source=args.source, prefix=args.prefix, runner=runner
            )
        )
        runner.bind()
        if not args.no_http:
            from ..server import serve_hub
            from ._served_hub import dashboard_url

            address = (
                f"[{args.host}]:{args.port}" if ":" in args.host else f"{args.host}:{args.port}"
            )
            with os_errors_as(f"cannot serve at {address}"):
                url: str = await nursery.start(
                    functools.partial(
                        serve_hub,
                        hub,
                        host=args.host,
                        port=args.port,
                        token=args.token,
                        runner=runner,
                    )
                )
            print(url, flush=True)
            print(
                f"workflow-hub serve: serving at {url} (dashboard: {dashboard_url(url)})",
                file=sys.stderr,
                flush=True,
            )
        print(
            f"workflow-hub serve: mirroring the demo scheduler as {args.source!r} "
            f"into {args.prefix}:{args.source}:frames",
            file=sys.stderr,
            flush=True,
        )
        publisher = None
        # Until --duration is over, or the first Ctrl-C or SIGTERM: the same ending.
        with trio.move_on_after(duration), playing:
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
            # reaches Redis before the command ends (followers tell it from a crash, N5).
            publisher.dispose()
            with trio.move_on_after(_DECLARE_GRACE):
                while mirror.appended_cursor != hub.cursor:  # noqa: ASYNC110
                    await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
        return mirror.fenced
