"""The ``workflow-hub`` command: one entry point, one subcommand a module.

Each subcommand module has ``add_arguments(parser)`` and ``run(args) -> int`` and keeps its
heavy imports (the server, Redis, the terminal UI, hypothesis) inside ``run``, so building the
parser loads none of them and one subcommand's extra never loads for another. Output helpers
shared by several commands live in leaf modules (``_output``, ``_serving``, ``_rich``) that
import no command.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from types import ModuleType

from . import _conformance, _demo, _serve, _snapshot, _watch

__all__ = ["main"]

# subcommand -> (module, help)
SUBCOMMANDS: dict[str, tuple[ModuleType, str]] = {
    "demo": (_demo, "run a simulated scheduler and show its activity live"),
    "serve": (_serve, "run the demo scheduler served over HTTP, mirrored into Redis, or a fleet"),
    "watch": (_watch, "show a served hub (http://) or a fleet (redis://), live"),
    "snapshot": (_snapshot, "print a served hub's snapshot as JSON"),
    "conformance": (
        _conformance,
        "check an implementation of the contract against the reference model",
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="workflow-hub", description="workflow-hub: a trio hub for workflow activity"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=module.run)
        module.add_arguments(sub)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result
