"""``workflow-hub celery``: a Celery app's canvases, live, on the dashboard (and into a fleet).

``--app module:app`` loads the user's Celery app as ``celery -A`` does (its broker and event
settings apply); ``--broker URL`` needs no code at all (task names come with the events). The
hub, its HTTP server and the optional Redis mirror run in trio; the bridge's threads reach the
tracker through ``trio.from_thread``: nothing of trio runs in the user's Celery code.
"""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from collections.abc import Callable
from typing import Any

import trio

from ..tracker import RunTracker
from ._runner import DEFAULT_INSPECT_TIMEOUT, watch_celery

__all__ = ["add_arguments", "run"]

_DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--app",
        "-A",
        default=None,
        metavar="MODULE:APP",
        help="the Celery app, as for `celery -A` (its broker and settings are used)",
    )
    source.add_argument(
        "--broker", default=None, metavar="URL", help="or only the broker URL (redis://, amqp://)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=_DEFAULT_PORT,
        help=f"port of the dashboard and its streams (default {_DEFAULT_PORT}; 0 picks one)",
    )
    parser.add_argument("--token", default=None, help="the token clients must send")
    parser.add_argument(
        "--redis",
        default=None,
        metavar="URL",
        help="also mirror the roots into this Redis fleet (redis://HOST:PORT/DB)",
    )
    parser.add_argument(
        "--source", default="celery", help="with --redis: this source's name (default celery)"
    )
    parser.add_argument(
        "--prefix", default=None, help="with --redis: the key prefix (default workflow-hub)"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how long a root whose tasks all succeeded waits for a next step before it ends "
        "(default 1)",
    )
    parser.add_argument(
        "--keep-ended",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long ended roots stay on show (default 300)",
    )
    parser.add_argument(
        "--inspect-timeout",
        type=float,
        default=DEFAULT_INSPECT_TIMEOUT,
        metavar="SECONDS",
        help="how long start-up waits for the workers' inspect replies "
        f"(default {DEFAULT_INSPECT_TIMEOUT:g})",
    )


def _load_app(args: argparse.Namespace) -> Any:
    if args.app is not None:
        from celery.app.utils import find_app

        return find_app(args.app)
    from celery import Celery

    return Celery("workflow-hub", broker=args.broker, set_as_current=False)


def run(args: argparse.Namespace) -> int:
    try:
        import celery  # noqa: F401
    except ImportError:
        print(
            "workflow-hub celery: needs the 'celery' extra: pip install 'workflow-hub[celery]'",
            file=sys.stderr,
        )
        return 2
    if args.redis is not None:
        try:
            import coredis  # noqa: F401
        except ImportError:
            print(
                "workflow-hub celery: --redis needs the 'redis' extra: "
                "pip install 'workflow-hub[redis]'",
                file=sys.stderr,
            )
            return 2
    try:
        app = _load_app(args)
    except Exception as error:  # an import error in the user's module, a bad name ...
        print(f"workflow-hub celery: cannot load {args.app}: {error}", file=sys.stderr)
        return 2
    try:
        trio.run(_serve, args, app)
    except KeyboardInterrupt:
        return 0
    except OSError as error:
        print(f"workflow-hub celery: {error}", file=sys.stderr)
        return 1
    return 0


async def _serve(args: argparse.Namespace, app: Any) -> None:
    from .. import open_hub
    from ..server import serve_hub

    token = trio.lowlevel.current_trio_token()

    def call(function: Callable[[], None]) -> None:
        trio.from_thread.run_sync(function, trio_token=token)

    async with open_hub() as hub, trio.open_nursery() as nursery:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="celery", include_graph=True
        )
        url: str = await nursery.start(
            functools.partial(serve_hub, hub, host=args.host, port=args.port, token=args.token)
        )
        if args.redis is not None:
            nursery.start_soon(_mirror, hub, args)
        print(url, flush=True)
        print(
            f"workflow-hub: Celery events from {app.connection_for_read().as_uri()} served at "
            f"{url} (dashboard: {url.rstrip('/')}/)",
            file=sys.stderr,
            flush=True,
        )
        manager = watch_celery(
            app,
            tracker,
            call=call,
            settle=args.settle,
            keep_ended=args.keep_ended,
            inspect_timeout=args.inspect_timeout,
        )
        manager.__enter__()
        try:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    break
        finally:
            await trio.to_thread.run_sync(manager.__exit__, None, None, None)
            nursery.cancel_scope.cancel()


async def _mirror(hub: Any, args: argparse.Namespace) -> None:
    import coredis

    from ..redis import DEFAULT_PREFIX, mirror_hub

    prefix = args.prefix or DEFAULT_PREFIX
    async with coredis.Redis.from_url(args.redis) as redis:
        await mirror_hub(hub, redis, source=args.source, prefix=prefix)
