"""The ``workflow-hub`` command: one entry point, one subcommand a module.

Each subcommand module has ``add_arguments(parser)`` and ``run(args) -> int`` and keeps its
heavy imports (the server, Redis, the terminal UI, hypothesis) inside ``run``. Only the module of
the subcommand being run is imported (``workflow-hub status`` never loads the demo's), so a
one-shot command costs little more than ``import workflow_hub``. Helpers shared by several
commands live in leaf modules (``_output``, ``_served_hub``, ``_rich``, ``_fetch_hub``, ``_urls``,
``_command_line``) that import no command.

Every subcommand runs inside one error path (``_errors``): a mistake is one line on stderr and
exit status 2 (usage) or 1 (run time); ``--debug`` or ``WORKFLOW_HUB_DEBUG=1`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys

from ._errors import DEBUG_VARIABLE, Parser, debug_requested, run_reported

TYPE_CHECKING = False  # not from typing: a one-shot command (status) does not load it
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType
    from typing import Any

__all__ = ["main"]


def _load_demo() -> ModuleType:
    from . import _demo

    return _demo


def _load_serve() -> ModuleType:
    from . import _serve

    return _serve


def _load_watch() -> ModuleType:
    from . import _watch

    return _watch


def _load_status() -> ModuleType:
    from . import _status

    return _status


def _load_snapshot() -> ModuleType:
    from . import _snapshot

    return _snapshot


def _load_celery() -> ModuleType:
    from . import _celery

    return _celery


def _load_otel() -> ModuleType:
    from . import _otel

    return _otel


def _load_airflow() -> ModuleType:
    from . import _airflow

    return _airflow


def _load_conformance() -> ModuleType:
    from . import _conformance

    return _conformance


def _load_alert() -> ModuleType:
    from . import _alert

    return _alert


# subcommand -> (help, the module, imported only when that subcommand runs)
SUBCOMMANDS: dict[str, tuple[str, Callable[[], ModuleType]]] = {
    "demo": ("run a simulated scheduler and show its activity live", _load_demo),
    "serve": (
        "serve the demo scheduler over HTTP (looping), mirror it into Redis, or serve a fleet",
        _load_serve,
    ),
    "watch": ("show a served hub (http://) or a fleet (redis://), live", _load_watch),
    "status": (
        "print one line of status (for tmux, prompts, scripts); the exit status tells the state",
        _load_status,
    ),
    "snapshot": ("print a served hub's snapshot as JSON", _load_snapshot),
    "alert": (
        "send a served hub's or a fleet's alerts (needs attention, stuck, unknown) to "
        "Alertmanager and signed webhooks",
        _load_alert,
    ),
    "otel": (
        "send a served hub's or a fleet's runs to an OpenTelemetry backend as traces (OTLP)",
        _load_otel,
    ),
    "celery": (
        "show a Celery app's workflows live, from its workers' events (-E), served with the dashboard",
        _load_celery,
    ),
    "airflow": (
        "show an Airflow 3 deployment's DAG runs live, from its REST API, served with the dashboard",
        _load_airflow,
    ),
    "conformance": (
        "check an implementation of the contract against the reference model",
        _load_conformance,
    ),
}

_EPILOG = (
    "exit status: 0 on success, 1 when something failed at run time, 2 for a usage mistake "
    "('status' has its own: see 'workflow-hub status --help'). "
    f"--debug or {DEBUG_VARIABLE}=1 shows the traceback of a failure."
)


class _Version(argparse.Action):
    """``--version``: read from the installed metadata only when asked (importlib.metadata
    costs some 10 ms and 5 MB that no other command needs)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from .. import __version__

        print(f"workflow-hub {__version__}")
        parser.exit(0)


def build_parser(chosen: str | None) -> tuple[Parser, ModuleType | None]:
    """The parser; only ``chosen``'s module is imported and given its options.

    With a subcommand chosen, the other subcommands' parsers are not even built: each costs
    argparse a formatter and its translations, about 1 ms, which ``status`` in a status bar
    would pay on every refresh. Without one, all are listed (``workflow-hub --help``).
    """
    parser = Parser(
        prog="workflow-hub",
        description="workflow-hub: a trio hub for workflow activity",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action=_Version)
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"show the traceback of a failure (also {DEBUG_VARIABLE}=1)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    module: ModuleType | None = None
    for name, (help_text, load) in SUBCOMMANDS.items():
        if chosen is not None and name != chosen:
            continue
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--debug", action="store_true", help="show the traceback of a failure")
        if name == chosen:
            module = load()
            module.add_arguments(sub)
            sub.set_defaults(run=module.run)
    return parser, module


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line: its first word that is one."""
    for word in argv:
        if word in SUBCOMMANDS:
            return word
        if not word.startswith("-"):
            return None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(words)
    chosen = _chosen(words)
    prog = f"workflow-hub {chosen}" if chosen else "workflow-hub"

    def run() -> int:
        parser, _ = build_parser(chosen)
        args = parser.parse_args(words)
        result: int = args.run(args)
        return result

    return run_reported(prog, run, debug=debug)
