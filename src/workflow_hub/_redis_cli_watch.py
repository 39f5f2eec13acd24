"""``workflow-hub watch URL``: a fleet from Redis (redis://…) or, with the network server, a hub
over HTTP.

The Redis part lives in ``_redis_cli``. When the network server's ``_watch_cli`` is installed,
its options are the base and every URL that is not redis:// is handed to it, so one ``watch``
takes both kinds of URL.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from ._redis_cli import add_watch_arguments, is_redis_url, run_watch

__all__ = ["add_arguments", "run"]


def _http() -> ModuleType | None:
    try:
        return importlib.import_module("workflow_hub._watch_cli")
    except ModuleNotFoundError as error:
        if error.name != "workflow_hub._watch_cli":
            raise
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    http = _http()
    if http is None:
        add_watch_arguments(parser)
    else:
        http.add_arguments(parser)
        add_watch_arguments(parser, shared=False)


def run(args: argparse.Namespace) -> int:
    if is_redis_url(args.url):
        return run_watch(args)
    http = _http()
    if http is None:
        print(
            "workflow-hub watch: expected a redis:// URL "
            "(watching a hub over HTTP needs the network server, not in this build)",
            file=sys.stderr,
        )
        return 2
    result: int = http.run(args)
    return result
