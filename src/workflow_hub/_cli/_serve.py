"""``workflow-hub serve``: the demo scheduler served over HTTP, mirrored into Redis, or a fleet.

Three modes: plain ``serve`` runs the demo scheduler with the HTTP server on and prints its URL;
``--redis URL --source NAME`` mirrors the demo scheduler into Redis instead (``_fleet``);
``--fleet URL`` serves every source mirrored into a Redis. The server's and Redis' dependencies
(the ``server`` and ``redis`` extras) are imported only when they start.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import TYPE_CHECKING

import trio

from ..redis import DEFAULT_PREFIX
from ._fleet import add_serve_arguments, open_client, refuse_serve_flags, run_serve, until_ctrl_c
from ._serving import dashboard_url

if TYPE_CHECKING:
    pass

__all__ = ["add_arguments", "run"]

_DEFAULT_PORT = 8765
_DEFAULT_DURATION = 3600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=_DEFAULT_PORT,
        help=f"port (default {_DEFAULT_PORT}; 0 picks one)",
    )
    parser.add_argument("--token", default=None, help="the token clients must send")
    parser.add_argument(
        "--duration",
        type=float,
        default=_DEFAULT_DURATION,
        metavar="SECONDS",
        help="how long the demo scheduler runs (default one hour; Ctrl-C ends it earlier)",
    )
    parser.add_argument("--seed", type=int, default=None, help="reproducible ids and timing")

    add_serve_arguments(parser)
    parser.add_argument(
        "--fleet",
        default=None,
        metavar="URL",
        help="serve every source mirrored into this Redis (redis://HOST:PORT/DB, with "
        "--prefix) instead of the demo scheduler: the dashboard shows the fleet",
    )


def run(args: argparse.Namespace) -> int:
    refused = refuse_serve_flags(args, default_port=_DEFAULT_PORT)
    if refused is not None:
        print(f"workflow-hub serve: {refused}", file=sys.stderr)
        return 2
    if args.fleet is not None:
        return run_fleet(args)
    if args.redis is not None:
        return run_serve(args)
    return _run_demo(args)


def _run_demo(args: argparse.Namespace) -> int:
    from .._contract import ContractError
    from ._demo import play_demo

    if args.duration <= 0:
        print("workflow-hub serve: --duration must be > 0", file=sys.stderr)
        return 2
    host = args.host
    address = f"[{host}]:{args.port}" if ":" in host else f"{host}:{args.port}"
    demo_args = argparse.Namespace(
        duration=args.duration,
        seed=args.seed,
        metrics_port=None,
        serve=address,
        token=args.token,
    )
    try:
        trio.run(play_demo, demo_args, _Quiet())
    except (ContractError, OSError, BaseExceptionGroup) as failure:
        errors = _leaves(failure)
        if not all(isinstance(error, ContractError | OSError) for error in errors):
            raise
        for error in errors:
            print(f"workflow-hub serve: cannot serve at {address}: {error}", file=sys.stderr)
        return 2 if all(isinstance(error, ContractError) for error in errors) else 1
    return 0


def run_fleet(args: argparse.Namespace) -> int:
    """``serve --fleet redis://...``: every source mirrored under ``--prefix``, over HTTP."""
    from .._contract import ContractError

    try:
        import coredis  # noqa: F401
    except ImportError:
        print(
            "workflow-hub serve: --fleet needs the 'redis' extra: pip install 'workflow-hub[redis]'",
            file=sys.stderr,
        )
        return 2
    try:
        with until_ctrl_c():
            trio.run(_serve_fleet, args)
    except (ContractError, OSError, BaseExceptionGroup) as failure:
        errors = _leaves(failure)
        if not all(isinstance(error, ContractError | OSError) for error in errors):
            raise
        for error in errors:
            print(f"workflow-hub serve: cannot serve the fleet: {error}", file=sys.stderr)
        return 2 if all(isinstance(error, ContractError) for error in errors) else 1
    return 0


async def _serve_fleet(args: argparse.Namespace) -> None:
    from ..server import serve_fleet

    # --duration is the demo's (default one hour); a fleet is served until Ctrl-C unless it is given.
    given = args.duration is not None and args.duration != _DEFAULT_DURATION
    duration = args.duration if given else float("inf")
    with trio.move_on_after(duration):
        async with open_client(args.fleet) as redis, trio.open_nursery() as nursery:
            url: str = await nursery.start(
                partial(
                    serve_fleet,
                    redis,
                    prefix=args.prefix or DEFAULT_PREFIX,
                    host=args.host,
                    port=args.port,
                    token=args.token,
                )
            )
            print(url, flush=True)
            print(
                f"workflow-hub: serving the fleet {args.prefix or DEFAULT_PREFIX!r} from {args.fleet} at {url} "
                f"(dashboard: {dashboard_url(url)})",
                file=sys.stderr,
                flush=True,
            )


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: what actually went wrong."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


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
