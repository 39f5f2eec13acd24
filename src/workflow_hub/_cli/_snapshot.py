"""``workflow-hub snapshot URL``: the current snapshot of a served hub, as wire JSON.

Needs the ``server`` extra (httpx), imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys

import trio

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the server's base URL, e.g. http://127.0.0.1:8765")
    parser.add_argument("--token", default=None, help="the token the server wants")


def run(args: argparse.Namespace) -> int:
    import httpx

    from ..remote import RemoteError, RemoteHub
    from ..wire import dumps

    try:
        snapshot = trio.run(RemoteHub(args.url, token=args.token).snapshot)
    except (RemoteError, httpx.HTTPError) as error:
        print(f"workflow-hub snapshot: {args.url}: {error}", file=sys.stderr)
        return 1
    print(dumps(snapshot))
    return 0
