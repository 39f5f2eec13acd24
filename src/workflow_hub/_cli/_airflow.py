"""``workflow-hub airflow``: an Airflow 3 deployment's DAG runs, live, on the dashboard.

Arguments only: the work is :func:`workflow_hub.airflow.serve_airflow` (the hub, the server,
the optional Redis mirror and the poller). The password is read from a file or from the
environment, never from the command line (where ``ps`` would show it).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

import trio

from .. import ContractError, Labels
from ._errors import UsageError, os_errors_as, until_ctrl_c
from ._labels import given_labels
from ._options import add_bind_arguments, seconds
from ._signals import ended_by_signals

__all__ = ["add_arguments", "run"]

PASSWORD_VARIABLE = "WORKFLOW_HUB_AIRFLOW_PASSWORD"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="Airflow's API server (http://localhost:8080)")
    parser.add_argument(
        "--user", default=None, help="the Airflow user to read as (a JWT from /auth/token)"
    )
    parser.add_argument(
        "--password-file",
        default=None,
        metavar="PATH",
        help=f"a file holding the user's password (default: ${PASSWORD_VARIABLE})",
    )
    parser.add_argument(
        "--interval",
        type=seconds,
        default=2.0,
        metavar="SECONDS",
        help="time between two polls of the API (default 2)",
    )
    parser.add_argument(
        "--keep-ended",
        type=seconds,
        default=300.0,
        metavar="SECONDS",
        help="how long ended DAG runs stay on show (default 300)",
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label on every root (repeatable), e.g. --label env=prod",
    )
    parser.add_argument(
        "--label-conf",
        action="append",
        default=[],
        metavar="KEY",
        help="a key of each DAG run's conf whose value becomes the label KEY (repeatable)",
    )
    parser.add_argument(
        "--no-tag-labels",
        action="store_true",
        help="do not put each DAG's tags on its runs' roots as the label 'tags'",
    )
    add_bind_arguments(parser, served=" of the dashboard and its streams")
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without --token (something in front authenticates)",
    )
    parser.add_argument(
        "--redis",
        default=None,
        metavar="URL",
        help="also mirror the roots into this Redis fleet (redis://HOST:PORT/DB)",
    )
    parser.add_argument(
        "--source", default="airflow", help="with --redis: this source's name (default airflow)"
    )
    parser.add_argument(
        "--prefix", default=None, help="with --redis: the key prefix (default workflow-hub)"
    )


def _labels(args: argparse.Namespace) -> dict[str, str]:
    labels = given_labels(args.label)
    keys = {*labels, *args.label_conf, *([] if args.no_tag_labels else ["tags"])}
    try:  # each conf key must be a label key; all the labels together, at most sixteen
        Labels({key: "x" for key in keys})
    except ContractError as error:
        raise UsageError(f"--label-conf: {error}") from None
    return labels


def _password(args: argparse.Namespace) -> str | None:
    if args.password_file is not None:
        try:
            return Path(args.password_file).read_text().strip()
        except OSError as error:
            raise UsageError(f"--password-file: {error}") from None
    return os.environ.get(PASSWORD_VARIABLE)


def run(args: argparse.Namespace) -> int:
    try:
        import httpx  # noqa: F401
    except ImportError as error:
        raise UsageError(
            "needs the 'airflow' extra: pip install 'workflow-hub[airflow]'"
        ) from error
    if not args.url.startswith(("http://", "https://")):
        raise UsageError(f"--url {args.url!r}: expected http:// or https://")
    labels = _labels(args)
    password = _password(args)
    host = args.host
    with (
        until_ctrl_c(),
        os_errors_as(f"cannot serve at {f'[{host}]' if ':' in host else host}:{args.port}"),
    ):
        trio.run(functools.partial(_serve, args, labels, password))
    return 0


async def _serve(args: argparse.Namespace, labels: dict[str, str], password: str | None) -> None:
    from ..airflow import serve_airflow

    async with ended_by_signals() as work, trio.open_nursery() as nursery:
        with work:
            served = await nursery.start(
                functools.partial(
                    serve_airflow,
                    args.url,
                    username=args.user,
                    password=password,
                    interval=args.interval,
                    keep_ended=args.keep_ended,
                    labels=labels,
                    label_conf=args.label_conf,
                    tag_labels=not args.no_tag_labels,
                    host=args.host,
                    port=args.port,
                    serve_token=args.token,
                    insecure=args.insecure,
                    redis_url=args.redis,
                    source=args.source,
                    prefix=args.prefix,
                )
            )
            print(served.url, flush=True)
            print(
                f"workflow-hub: Airflow at {args.url} served at {served.url} "
                f"(dashboard: {served.url.rstrip('/')}/)",
                file=sys.stderr,
                flush=True,
            )
            await trio.sleep_forever()
        nursery.cancel_scope.cancel()
