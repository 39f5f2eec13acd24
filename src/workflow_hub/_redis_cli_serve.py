"""``workflow-hub serve``: the demo scheduler mirrored into Redis (``--redis URL --source NAME``)
or, with the network server, served over HTTP; ``--fleet URL`` serves a whole fleet instead.

The Redis part lives in ``_redis_cli``. When the network server's ``_serve_cli`` is installed,
its options are the base and ``serve`` without ``--redis`` is handed to it.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

from ._redis_cli import add_serve_arguments, run_serve

__all__ = ["add_arguments", "run"]


def _http() -> ModuleType | None:
    try:
        return importlib.import_module("workflow_hub._serve_cli")
    except ModuleNotFoundError as error:
        if error.name != "workflow_hub._serve_cli":
            raise
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    http = _http()
    if http is None:
        add_serve_arguments(parser)
    else:
        http.add_arguments(parser)
        add_serve_arguments(parser, shared=False)
        parser.add_argument(
            "--fleet",
            default=None,
            metavar="URL",
            help="serve every source mirrored into this Redis (redis://HOST:PORT/DB, with "
            "--prefix) instead of the demo scheduler: the dashboard shows the fleet",
        )


def run(args: argparse.Namespace) -> int:
    http = _http()
    if http is not None and args.fleet is not None:
        fleet: int = http.run_fleet(args)
        return fleet
    if args.redis is None and http is not None:
        result: int = http.run(args)
        return result
    return run_serve(args)
