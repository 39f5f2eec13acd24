"""The ``workflow-hub`` command: one entry point, one subcommand per job.

Each subcommand lives in its own module with ``add_arguments(parser)`` and ``run(args) -> int``.
Modules keep heavy imports (terminal UI, hypothesis) inside ``run`` so that one subcommand's
dependencies never load for another.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

# subcommand -> (module, help). Each module has ``add_arguments(parser)`` and ``run(args) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("workflow_hub._demo", "run a simulated scheduler and show its activity live"),
    "snapshot": ("workflow_hub._snapshot_cli", "print a served hub's snapshot as JSON"),
    "conformance": (
        "workflow_hub.testing._conformance_cli",
        "check an implementation of the contract against the reference model",
    ),
    # watch/serve: the Redis modules take redis:// URLs and --redis, and hand everything else to
    # the network server's _watch_cli/_serve_cli when those are installed.
    "watch": ("workflow_hub._redis_cli_watch", "show a fleet (redis://) or a served hub, live"),
    "serve": ("workflow_hub._redis_cli_serve", "run the demo scheduler, mirrored or served"),
    "celery": ("workflow_hub.celery._command", "show a Celery app's canvases live, as roots"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="workflow-hub", description="workflow-hub: a trio hub for workflow activity"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(module_name=module_name)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:  # a subcommand whose module is not built yet
            if error.name != module_name:
                raise
            sub.set_defaults(module_name=None)
            continue
        module.add_arguments(sub)
    args = parser.parse_args(argv)
    if args.module_name is None:
        parser.error(f"{args.command} is not available in this build")
    result: int = importlib.import_module(args.module_name).run(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
