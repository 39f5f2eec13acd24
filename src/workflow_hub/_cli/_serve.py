"""``workflow-hub serve``: the demo scheduler served over HTTP, mirrored into Redis, or a fleet.

Three modes: plain ``serve`` runs the demo scheduler with the HTTP server on and prints its URL
(the demo's story at its natural pace, 20 seconds, again and again with fresh runs, until
``--duration`` or Ctrl-C);
``--redis URL --source NAME`` mirrors the demo scheduler into Redis instead (``_serve_mirror``);
``--fleet URL`` serves every source mirrored into a Redis. The server's and Redis' dependencies
(the ``server`` and ``redis`` extras) are imported only when they start.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any

import trio

from .._defaults import DEFAULT_PORT
from ._errors import os_errors_as, until_ctrl_c
from ._options import add_bind_arguments, seconds
from ._serve_mirror import add_serve_arguments, refuse_serve_flags, run_serve
from ._served_hub import dashboard_url
from ._signals import ended_by_signals
from ._urls import check_fleet_url, fleet_settings, open_fleet, shown_url

__all__ = ["add_arguments", "run"]

# No longer the default (which is None: until Ctrl-C); the fleet mode below still compares to it.
_DEFAULT_DURATION = 3600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_bind_arguments(parser)
    parser.add_argument(
        "--duration",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="end the whole command after this long (default: run until Ctrl-C or SIGTERM); the "
        "demo scheduler plays its 20-second story at its natural pace, again and again with "
        "fresh runs",
    )
    parser.add_argument("--seed", type=int, default=None, help="reproducible ids and timing")
    add_server_arguments(parser)

    add_serve_arguments(parser)
    parser.add_argument(
        "--fleet",
        default=None,
        metavar="URL",
        help="serve every source mirrored into this Redis (redis://HOST:PORT/DB, with "
        "--prefix) instead of the demo scheduler: the dashboard shows the fleet",
    )


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve_hub`` (and ``serve_fleet``) a deployer sets."""
    parser.add_argument(
        "--cors-origin",
        action="append",
        dest="cors_origins",
        default=None,
        metavar="ORIGIN",
        help="a browser origin allowed to call the API (repeatable; default: no CORS headers)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without --token (something in front authenticates)",
    )
    parser.add_argument(
        "--keepalive",
        type=float,
        default=None,
        metavar="SECONDS",
        help="idle seconds before an event stream sends a keep-alive comment (default 15)",
    )
    parser.add_argument(
        "--events-buffer",
        type=int,
        default=None,
        metavar="N",
        help="hook events buffered per /v1/events client (default 1000)",
    )
    parser.add_argument(
        "--no-metrics",
        action="store_true",
        help="do not serve Prometheus metrics at /metrics on the served port",
    )


def server_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of ``serve_hub`` the command line set (unset ones keep their defaults)."""
    options: dict[str, Any] = {
        "cors_origins": getattr(args, "cors_origins", None),
        "insecure": getattr(args, "insecure", False),
    }
    for name in ("keepalive", "events_buffer"):
        value = getattr(args, name, None)
        if value is not None:
            options[name] = value
    return options


def run(args: argparse.Namespace) -> int:
    for option in ("fleet", "redis"):
        if getattr(args, option) is not None:
            check_fleet_url(getattr(args, option), option=f"--{option}")
    refused = refuse_serve_flags(args, default_port=DEFAULT_PORT)
    if refused is not None:
        print(f"workflow-hub serve: {refused}", file=sys.stderr)
        return 2
    if args.fleet is not None:
        return run_fleet(args)
    if args.redis is not None:
        return run_serve(args)
    return _run_demo(args)


def _address(args: argparse.Namespace) -> str:
    host = args.host
    return f"[{host}]:{args.port}" if ":" in host else f"{host}:{args.port}"


def _run_demo(args: argparse.Namespace) -> int:
    address = _address(args)
    demo_args = argparse.Namespace(
        duration=args.duration,
        seed=args.seed,
        metrics_port=None,
        serve=address,
        token=args.token,
        loop=True,
        no_metrics=args.no_metrics,
        server_options=server_options(args),
    )
    with os_errors_as(f"cannot serve at {address}"):
        trio.run(_serve_demo, demo_args)
    return 0


async def _serve_demo(demo_args: argparse.Namespace) -> None:
    from ._demo import play_demo

    # The demo ends itself on Ctrl-C (as when its time is up); SIGTERM ends it too.
    async with ended_by_signals() as playing:
        with playing:
            await play_demo(demo_args, _Quiet())


def run_fleet(args: argparse.Namespace) -> int:
    """``serve --fleet redis://...``: every source mirrored under ``--prefix``, over HTTP."""
    with until_ctrl_c():
        trio.run(_serve_fleet, args)
    return 0


async def _serve_fleet(args: argparse.Namespace) -> None:
    from ..server import serve_fleet

    # --duration is the demo's (default one hour); a fleet is served until Ctrl-C unless it is given.
    given = args.duration is not None and args.duration != _DEFAULT_DURATION
    duration = args.duration if given else float("inf")
    async with ended_by_signals() as serving:
        with trio.move_on_after(duration), serving:
            async with (
                open_fleet(args.fleet, **fleet_settings(args)) as engine,
                trio.open_nursery() as nursery,
            ):
                with os_errors_as(f"cannot serve the fleet at {_address(args)}"):
                    url: str = await nursery.start(
                        partial(
                            serve_fleet,
                            engine,
                            host=args.host,
                            port=args.port,
                            token=args.token,
                            insecure=args.insecure,
                            cors_origins=args.cors_origins,
                            **({} if args.keepalive is None else {"keepalive": args.keepalive}),
                        )
                    )
                print(url, flush=True)
                print(
                    f"workflow-hub: serving the fleet {engine.prefix!r} from {shown_url(args.fleet)} at "
                    f"{url} (dashboard: {dashboard_url(url)})",
                    file=sys.stderr,
                    flush=True,
                )


class _Quiet:
    """A server prints its URL (on stdout, for scripts) and nothing per frame."""

    def __init__(self) -> None:
        self.closed = trio.Event()
        self._url: str | None = None

    @property
    def url(self) -> str | None:
        return self._url

    @url.setter
    def url(self, value: str | None) -> None:
        self._url = value
        print(value, flush=True)

    def frame(self, frame: object, view: object) -> None:
        pass

    def hook(self, event: object) -> None:
        pass

    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        pass
