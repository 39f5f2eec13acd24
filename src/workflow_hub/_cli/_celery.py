"""``workflow-hub celery``: a Celery app's canvases, live, on the dashboard (and into a fleet).

``--app module:app`` loads the user's Celery app as ``celery -A`` does (its broker and event
settings apply); ``--broker URL`` needs no code at all (task names come with the events). The
rest is :func:`workflow_hub.celery.serve_celery`: the sync host, the HTTP server, the optional
Redis mirror and the bridge's threads.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from ..celery import DEFAULT_INSPECT_TIMEOUT, serve_celery
from ._errors import UsageError, os_errors_as
from ._labels import given_labels
from ._options import add_bind_arguments

__all__ = ["add_arguments", "run"]


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
    add_bind_arguments(parser, served=" of the dashboard and its streams")
    parser.add_argument(
        "--redis",
        default=None,
        metavar="URL",
        help="also mirror the roots into this Redis fleet (redis://HOST:PORT/DB); a restart "
        "continues from the source's last state there",
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
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label on every root (repeatable), e.g. --label env=prod",
    )
    parser.add_argument(
        "--label-from",
        default="",
        metavar="queue,worker",
        help="also label each root with its tasks' queue and/or worker hostname",
    )


def _labels(args: argparse.Namespace) -> tuple[dict[str, str], tuple[str, ...]]:
    """``--label`` and ``--label-from``, checked before anything starts."""
    labels = given_labels(args.label)
    chosen = tuple(dict.fromkeys(n.strip() for n in args.label_from.split(",") if n.strip()))
    for name in chosen:
        if name not in ("queue", "worker"):
            raise UsageError(f"--label-from: unknown {name!r} (expected queue, worker or both)")
        if name in labels:
            raise UsageError(f"--label-from: {name!r} is also given by --label")
    return labels, chosen


def _load_app(args: argparse.Namespace) -> Any:
    if args.app is not None:
        from celery.app.utils import find_app

        return find_app(args.app)
    from celery import Celery

    return Celery("workflow-hub", broker=args.broker, set_as_current=False)


def run(args: argparse.Namespace) -> int:
    try:
        import celery  # noqa: F401
    except ImportError as error:
        raise UsageError("needs the 'celery' extra: pip install 'workflow-hub[celery]'") from error
    if args.redis is not None:
        try:
            import coredis  # noqa: F401
        except ImportError as error:
            raise UsageError(
                "--redis needs the 'redis' extra: pip install 'workflow-hub[redis]'"
            ) from error
    try:
        app = _load_app(args)
    except Exception as error:  # an import error in the user's module, a bad name ...
        raise UsageError(f"cannot load {args.app}: {error}") from error
    labels, labels_from = _labels(args)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    host = args.host
    with os_errors_as(f"cannot serve at {f'[{host}]' if ':' in host else host}:{args.port}"):
        _serve(args, app, stop, labels, labels_from)
    return 0


def _serve(
    args: argparse.Namespace,
    app: Any,
    stop: threading.Event,
    labels: dict[str, str],
    labels_from: tuple[str, ...],
) -> None:
    with serve_celery(
        app,
        host=args.host,
        port=args.port,
        token=args.token,
        redis_url=args.redis,
        source=args.source,
        prefix=args.prefix,
        settle=args.settle,
        keep_ended=args.keep_ended,
        inspect_timeout=args.inspect_timeout,
        labels=labels,
        labels_from=labels_from,
    ) as served:
        url = served.url
        print(url, flush=True)
        print(
            f"workflow-hub: Celery events from {app.connection_for_read().as_uri()} served "
            f"at {url} (dashboard: {url.rstrip('/')}/)",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(0.5):
            pass
