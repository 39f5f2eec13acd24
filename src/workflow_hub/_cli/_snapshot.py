"""``workflow-hub snapshot URL``: the current snapshot of a served hub, as wire JSON.

One ``GET /v1/snapshot`` with the standard library (``_fetch_hub``): no httpx, no trio run.
"""

from __future__ import annotations

import argparse
import sys

from ._fetch_hub import fetch_snapshot
from ._options import seconds
from ._urls import hub_url

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url", help="the server's base URL, e.g. http://127.0.0.1:8765 (http:// may be left out)"
    )
    parser.add_argument("--token", default=None, help="the token the server wants")
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for the server (default 5)",
    )


def run(args: argparse.Namespace) -> int:
    from ..wire import dumps

    snapshot = fetch_snapshot(
        hub_url(args.url, command="snapshot"), args.token, timeout=args.timeout
    )
    sys.stdout.write(dumps(snapshot) + "\n")
    sys.stdout.flush()
    return 0
