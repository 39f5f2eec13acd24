"""The one error path of the ``workflow-hub`` command: a mistake is one line, never a traceback.

Every subcommand runs inside :func:`run_reported`. Whatever escapes it (an exception, or an
exception group from a nursery, however nested) becomes one line on stderr that says what went
wrong and what to do, and an exit status: 2 for a usage mistake (a bad option, a URL of the wrong
kind, a value the contract refuses), 1 for a failure at run time (nothing listens there, a token
is refused, the port is taken). ``--debug`` or ``WORKFLOW_HUB_DEBUG=1`` prints the traceback
first. A reader that goes away (``… | head``) ends the command quietly; Ctrl-C exits 130.

Commands raise :class:`UsageError` and :class:`CommandError` for the mistakes they recognise;
the rest is recognised here by type, looking only at modules already loaded (it never imports
an extra to explain an error).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from contextlib import contextmanager, suppress

from .._exceptions import WorkflowHubError

TYPE_CHECKING = False  # not from typing: every command runs through here, status too
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import NoReturn

__all__ = [
    "DEBUG_VARIABLE",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "CommandError",
    "Parser",
    "UsageError",
    "debug_requested",
    "explain",
    "leaves",
    "os_errors_as",
    "run_reported",
    "until_ctrl_c",
]

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
DEBUG_VARIABLE = "WORKFLOW_HUB_DEBUG"

# The module a missing import belongs to -> the extra that installs it.
_EXTRAS = {
    "httpx": "server",
    "httpx_sse": "server",
    "hypercorn": "server",
    "starlette": "server",
    "wsproto": "server",
    "coredis": "redis",
    "rich": "demo",
    "hypothesis": "testing",
    "prometheus_client": "server",
}


class CommandError(WorkflowHubError):
    """A failure at run time the command recognised: ``str(error)`` says what to do.

    ``exit_status`` is 1 unless the command gives its own (``status`` exits 3: unknown)."""

    exit_status = EXIT_FAILURE

    def __init__(self, message: str, *, exit_status: int | None = None) -> None:
        super().__init__(message)
        if exit_status is not None:
            self.exit_status = exit_status


class UsageError(CommandError):
    """The command line asks for something that cannot be done as written."""

    exit_status = EXIT_USAGE


class Parser(argparse.ArgumentParser):
    """argparse, with its complaints on one line: ``workflow-hub watch: … (see … --help)``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups: what actually went wrong."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


def run_reported(prog: str, run: Callable[[], int], *, debug: bool) -> int:
    """``run()``'s exit status, or the status of what it raised, reported in one line."""
    try:
        return run()
    except SystemExit:
        raise
    except BaseException as failure:  # the one place that reports them
        found = [leaf for leaf in leaves(failure) if not _is_cancellation(leaf)] or [failure]
        if all(isinstance(leaf, BrokenPipeError) for leaf in found):
            _silence_stdout()
            return 0
        if all(isinstance(leaf, KeyboardInterrupt) for leaf in found):
            return EXIT_INTERRUPTED
        if debug:
            import traceback  # only here: a one-shot command (status) should not pay for it

            traceback.print_exception(failure)
        status, message = _report(found)
        print(f"{prog}: {message}", file=sys.stderr, flush=True)
        return status


def _report(found: list[BaseException]) -> tuple[int, str]:
    """The status and the line for the first error recognised; a bug is said to be one."""
    for leaf in found:
        status, message = explain(leaf)
        if message is not None:
            return status, message
    leaf = found[0]
    return EXIT_FAILURE, (
        f"internal error: {type(leaf).__name__}: {leaf} "
        f"(run with --debug or {DEBUG_VARIABLE}=1 for the traceback, and report it)"
    )


def explain(error: BaseException) -> tuple[int, str | None]:
    """The exit status and one line for an error a user can cause; ``None`` for a bug."""
    if isinstance(error, CommandError):
        return error.exit_status, str(error)
    if isinstance(error, ModuleNotFoundError) and error.name:
        extra = _EXTRAS.get(error.name.partition(".")[0])
        if extra is not None:
            return EXIT_USAGE, (
                f"this needs the '{extra}' extra ({error.name} is not installed): "
                f"pip install 'workflow-hub[{extra}]'"
            )
    message = _remote_error(error)
    if message is not None:
        return EXIT_FAILURE, message
    contract = _contract_error(error)
    if contract is not None:
        return EXIT_USAGE, contract
    if isinstance(error, OSError):
        return EXIT_FAILURE, describe_os_error(error)
    return EXIT_FAILURE, None


def describe_os_error(error: OSError) -> str:
    """An operating system's refusal, with what to do about the usual ones."""
    reason = error.strerror or str(error)
    if error.errno == errno.EADDRINUSE:
        return (
            f"{reason}: another program listens there; pick another port (port 0 picks a free one)"
        )
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"{reason}: ports below 1024 need privileges; pick a port above 1024 (or 0)"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{reason}: this machine has no such address; use 127.0.0.1, or 0.0.0.0 for all"
    if error.errno == errno.ECONNREFUSED:
        return f"{reason}: nothing listens there; is it running?"
    return reason


def _remote_error(error: BaseException) -> str | None:
    # Only when httpx was loaded: then the client (and its errors) may have been used.
    httpx = sys.modules.get("httpx")
    if httpx is None:
        return None
    from ..remote import RemoteAuthError, RemoteError

    if isinstance(error, RemoteAuthError):
        return f"the server refused the request ({error}): pass the server's token with --token"
    if isinstance(error, RemoteError):
        return f"the server refused the request ({error}): is this a workflow-hub URL?"
    if isinstance(error, httpx.TransportError):
        return f"cannot reach the server: {error or type(error).__name__}"
    return None


def _contract_error(error: BaseException) -> str | None:
    from .._contract import ContractError

    if isinstance(error, ContractError):
        return f"{error}"
    return None


def _is_cancellation(error: BaseException) -> bool:
    trio = sys.modules.get("trio")
    return trio is not None and isinstance(error, trio.Cancelled)


def _silence_stdout() -> None:
    # Python would complain again when it flushes stdout at exit.
    with suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@contextmanager
def os_errors_as(prefix: str) -> Iterator[None]:
    """An operating system's refusal inside (say, a port in use inside a server's nursery) as one
    :class:`CommandError` that says where: ``cannot serve at 127.0.0.1:8765: …``."""
    try:
        yield
    except BaseException as failure:
        for leaf in leaves(failure):
            if isinstance(leaf, OSError) and not isinstance(leaf, BrokenPipeError):
                raise CommandError(f"{prefix}: {describe_os_error(leaf)}") from failure
        raise


@contextmanager
def until_ctrl_c() -> Iterator[None]:
    """Ctrl-C is how the long-running commands stop: no traceback and exit status 0, even when
    trio raises it from inside the nurseries (wrapped in an exception group)."""
    try:
        yield
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:
        _, rest = group.split(KeyboardInterrupt)
        if rest is not None:
            raise rest from None
