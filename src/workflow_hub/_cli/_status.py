"""``workflow-hub status URL``: one line for a status bar, a prompt or a script.

It prints the aggregate sentence of a served hub (``http://…``, see
:func:`~workflow_hub.reporting.aggregate`) or of a fleet (``redis://…``, see
:meth:`~workflow_hub.fleet.FleetView.aggregate`) once, and exits with a status that tells the
state (:data:`EXIT_STATUSES`); ``--format`` makes the line of the fields of :data:`FIELDS`,
``--json`` prints them as one JSON object, and ``--follow`` stays connected and prints a new line
only when the line changes (for status bars that read a pipe).

One refresh of a served hub is one ``GET /v1/snapshot`` with the standard library: no httpx,
no trio run, no rich, no server, no Redis client (``--follow`` and ``redis://`` load theirs), and
for a snapshot that is plainly valid not even the contract's classes nor attrs: ``_summary``
reads its JSON (anything else takes the ordinary path, ``wire.loads`` and ``aggregate``).
What cannot be known (the hub is not running, the token is refused) is a line too:
``activity unknown: connection refused``, exit status 3, and the whole reason on stderr.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from contextlib import contextmanager

from ._errors import CommandError, UsageError, leaves
from ._fetch_hub import decode_snapshot, fetch_snapshot_body, short_reason, why_down
from ._options import seconds
from ._summary import Summary, summarize
from ._urls import check_fleet_url, fleet_settings, hub_url, names_fleet, open_fleet

TYPE_CHECKING = False  # not from typing: a status refresh does not load it
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any, TypeAlias

    from .._contract import RootActivity
    from ..fleet import FleetView
    from ..reporting import AggregateStatus
    from ._alert_count import AlertCount

    Status: TypeAlias = Summary

__all__ = ["EXIT_STATUSES", "FIELDS", "add_arguments", "exit_status", "fields", "run", "with_roots"]

EXIT_STATUSES: Mapping[str, int] = {
    "idle": 0,
    "working": 1,
    "blocked or needs attention": 2,
    "unknown": 3,
}
"""The exit status of ``status``: the first row that applies (unknown, then attention, …)."""

SYMBOLS: Mapping[str, str] = {"working": "●", "blocked": "■", "idle": "○", "unknown": "?"}

FIELDS: Mapping[str, str] = {
    "message": "the aggregate sentence, e.g. '4 working · 1 needs attention' (the default line)",
    "state": "working, blocked, idle or unknown",
    "reason": "the most significant reason (e.g. awaiting_input); empty when unknown",
    "symbol": "one character for the state: ● working, ■ blocked, ○ idle, ? unknown",
    "attention": "'!' when some root needs attention or is blocked, else empty",
    "roots": "how many roots",
    "working": "how many roots are working",
    "blocked": "how many roots are blocked",
    "awaiting_input": "how many blocked roots wait for input",
    "failed": "how many roots need a person because something failed in them",
    "labels": "the roots' labels, key:value, comma-separated (e.g. env:prod,team:infra)",
    "attention_labels": "the labels of the roots that need attention (whose problem it is)",
}

_DEFAULT_FORMAT = "{message}"
_LOST_AFTER = 1.0
"""--follow: seconds the connection may be down before the line says unknown."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "exit status: 0 idle, 1 working, 2 blocked or needs attention, 3 unknown (also when the "
        "hub cannot be reached: the line says why); a usage mistake also exits 2, with nothing "
        "on stdout.\n\n--format fields:\n"
        + "\n".join(f"  {{{name}}}  {text}" for name, text in FIELDS.items())
        + "\n\ntmux:  set -g status-right '#(workflow-hub status --follow http://127.0.0.1:8765)'"
    )
    parser.add_argument(
        "url",
        help="a served hub (http://127.0.0.1:8765; http:// may be left out) or a fleet's Redis "
        "(redis://HOST:PORT/DB)",
    )
    parser.add_argument("--token", default=None, help="http:// only: the token the server wants")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument(
        "--format",
        default=_DEFAULT_FORMAT,
        metavar="TEXT",
        help="the line, with {fields} (listed below), e.g. '{symbol} {working}w {blocked}b'",
    )
    shape.add_argument(
        "--json", action="store_true", help="the fields as one JSON object a line, instead"
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="stay connected and print a new line whenever the line changes (until Ctrl-C)",
    )
    parser.add_argument(
        "--duration",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="with --follow: stop after this long",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for an answer (default 5)",
    )
    parser.add_argument(
        "--alertmanager",
        metavar="URL",
        default=None,
        help="also say how many workflow alerts this Alertmanager has firing (for a served hub: "
        "those of its HOST:PORT, the 'source' 'workflow-hub alert' gives it); asked every 5 s "
        "with --follow",
    )
    parser.add_argument(
        "--prefix", default=None, help="redis:// only: the key prefix (default workflow-hub)"
    )
    parser.add_argument(
        "--stale-after",
        type=seconds,
        default=5.0,
        metavar="SECONDS",
        help="redis:// only: a source silent this long is unavailable (default 5)",
    )


def fields(status: Status) -> dict[str, Any]:
    """What ``--format`` and ``--json`` can show of a status."""
    return {
        "message": status.message,
        "state": str(status.state),
        "reason": str(status.reason) if status.reason is not None else "",
        "symbol": SYMBOLS.get(str(status.state), "?"),
        "attention": "!" if status.attention else "",
        "roots": status.roots,
        "working": status.working,
        "blocked": status.blocked,
        "awaiting_input": status.awaiting_input,
        "failed": status.failed,
        "labels": ",".join(status.labels),
        "attention_labels": ",".join(status.attention_labels),
    }


def with_roots(status: AggregateStatus, roots: Iterable[RootActivity]) -> Summary:
    """``status`` with what ``aggregate`` does not say of ``roots``: how many failed, and their
    labels (as ``_summary`` reads them from JSON)."""
    from ._output import root_attention
    from ._words import is_failure

    failed = 0
    labels: set[str] = set()
    attention_labels: set[str] = set()
    for root in roots:
        own = [f"{key}:{value}" for key, value in (root.labels or {}).items()]
        labels.update(own)
        why = root_attention(root)
        if why:
            attention_labels.update(own)
            failed += is_failure(why)
    return Summary(
        state=str(status.state),
        reason=str(status.reason) if status.reason is not None else None,
        attention=status.attention,
        roots=status.roots,
        working=status.working,
        blocked=status.blocked,
        awaiting_input=status.awaiting_input,
        message=status.message,
        failed=failed,
        labels=tuple(sorted(labels)),
        attention_labels=tuple(sorted(attention_labels)),
    )


def exit_status(status: Status) -> int:
    """0 idle, 1 working, 2 blocked or needs attention, 3 unknown."""
    state = str(status.state)
    if state == "unknown":
        return EXIT_STATUSES["unknown"]
    if state == "blocked" or status.attention:
        return EXIT_STATUSES["blocked or needs attention"]
    if state == "working":
        return EXIT_STATUSES["working"]
    return EXIT_STATUSES["idle"]


def _formatter(args: argparse.Namespace) -> Callable[[Status], str]:
    if args.json:

        def as_json(status: Status) -> str:
            values = fields(status)
            values["attention"] = status.attention
            values["reason"] = values["reason"] or None
            values["labels"] = list(status.labels)
            values["attention_labels"] = list(status.attention_labels)
            values["exit_status"] = exit_status(status)
            return json.dumps(values, ensure_ascii=False)

        return as_json
    template: str = args.format
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as error:
        raise UsageError(f"--format {template!r}: {error} (write {{{{ for a brace)") from None
    unknown = sorted(
        {name for name in names if name.partition(".")[0].partition("[")[0] not in FIELDS}
    )
    if unknown:
        raise UsageError(
            f"--format: unknown field {{{unknown[0]}}}; the fields are "
            + ", ".join(f"{{{name}}}" for name in FIELDS)
        )
    return lambda status: template.format_map(fields(status))


def _with_alerts(
    args: argparse.Namespace, line: Callable[[Status], str], alerts: AlertCount
) -> Callable[[Status], str]:
    """``line`` with how many alerts Alertmanager has firing (``--alertmanager``)."""
    from ._alert_count import alert_suffix

    def with_alerts(status: Status) -> str:
        count = alerts.now()
        if args.json:
            values = json.loads(line(status))
            values["alerts_firing"] = count
            return json.dumps(values, ensure_ascii=False)
        return line(status) + alert_suffix(count)

    return with_alerts


def unknown_status(why: str) -> Summary:
    """What ``status`` says when it cannot know: unknown, with the reason as its message."""
    return Summary(
        state="unknown",
        reason=None,
        attention=False,
        roots=0,
        working=0,
        blocked=0,
        awaiting_input=0,
        message=f"activity unknown: {why}",
        failed=0,
        labels=(),
        attention_labels=(),
    )


class _Printer:
    """Prints a status's line, with ``--follow`` only when it differs from the last one."""

    def __init__(self, line: Callable[[Status], str]) -> None:
        self._line = line
        self._last: str | None = None
        self.status: Status | None = None

    def again(self) -> None:
        """The last status once more (the alerts' count changed without a frame)."""
        if self.status is not None:
            self.show(self.status)

    def show(self, status: Status) -> None:
        self.status = status
        text = self._line(status)
        if text != self._last:
            self._last = text
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    line = _formatter(args)
    fleet = names_fleet(args.url)
    if args.alertmanager is not None and not args.alertmanager.startswith(("http://", "https://")):
        raise UsageError(f"--alertmanager {args.alertmanager}: expected an http:// URL")
    if not fleet:
        args.url = hub_url(args.url, command="status")
    elif args.token is not None:
        raise UsageError("--token is for http:// URLs; a Redis URL carries its password")
    else:
        check_fleet_url(args.url)
    alerts: AlertCount | None = None
    if args.alertmanager is not None:
        from ._alert_count import AlertCount

        hub = None if fleet else args.url
        alerts = AlertCount(args.alertmanager, hub, timeout=args.timeout)
        line = _with_alerts(args, line, alerts)
    printer = _Printer(line)
    try:
        with _first_command_error():
            if args.follow:
                import trio

                trio.run(_follow, args, printer, fleet, alerts)
            else:
                printer.show(_fleet_once(args) if fleet else _hub_once(args))
    except KeyboardInterrupt:
        pass
    except CommandError as error:
        if isinstance(error, UsageError):
            raise
        printer.show(unknown_status(short_reason(error)))
        # Said by the one error path (with the traceback under --debug), with status's exit
        # status for what it printed.
        status = exit_status(printer.status) if printer.status is not None else 3
        raise CommandError(str(error), exit_status=status) from error
    return exit_status(printer.status) if printer.status is not None else 3


async def _follow(
    args: argparse.Namespace, printer: _Printer, fleet: bool, alerts: AlertCount | None
) -> None:
    import trio

    with trio.move_on_after(args.duration if args.duration else float("inf")):
        async with trio.open_nursery() as nursery:
            if alerts is not None:  # counted before the first line, then every few seconds
                await nursery.start(alerts.follow, printer.again)
            if fleet:
                await _read_fleet(args, printer)
            else:
                await _follow_hub(args, printer)
            nursery.cancel_scope.cancel()


@contextmanager
def _first_command_error() -> Iterator[None]:
    """A :class:`CommandError` raised inside a nursery (an exception group) as itself."""
    try:
        yield
    except BaseExceptionGroup as group:
        found = [leaf for leaf in leaves(group) if isinstance(leaf, CommandError)]
        if found:
            raise found[0] from group
        raise


# --- a served hub -----------------------------------------------------------------------------


def _hub_once(args: argparse.Namespace) -> Status:
    body, content_type = fetch_snapshot_body(args.url, args.token, timeout=args.timeout)
    summary = summarize(body)
    if summary is not None:
        return summary
    # Not plainly a valid snapshot: the decoder decides, and says what is wrong.
    from ..reporting import aggregate

    snapshot = decode_snapshot(args.url, body, content_type)
    return with_roots(aggregate(snapshot), snapshot.roots or ())


async def _follow_hub(args: argparse.Namespace, printer: _Printer) -> None:
    import trio

    from ..remote import RemoteError, open_remote
    from ..reporting import ActivityView, aggregate

    view = ActivityView()
    async with open_remote(args.url, token=args.token) as stream, trio.open_nursery() as nursery:

        async def watch_connection() -> None:
            down_since: float | None = trio.current_time()
            was_connected = False
            while True:
                await trio.sleep(0.25)
                now = trio.current_time()
                if stream.connected:
                    if not was_connected and view.cursor is not None:
                        printer.show(
                            with_roots(aggregate(view), view.roots)
                        )  # back: the picture is true again
                    was_connected, down_since = True, None
                    continue
                was_connected = False
                down_since = now if down_since is None else down_since
                if now - down_since >= _LOST_AFTER:
                    why = await trio.to_thread.run_sync(why_down, args.url, args.token)
                    if not stream.connected:
                        printer.show(unknown_status(why or "reconnecting"))
                    down_since = trio.current_time()

        nursery.start_soon(watch_connection)
        try:
            async for frame in stream:
                view.apply(frame)
                printer.show(with_roots(aggregate(view), view.roots))
        except RemoteError as error:
            raise CommandError(f"{args.url}: {error}") from None
        nursery.cancel_scope.cancel()


# --- a fleet (in Redis) ---------------------------------------------------------------------------


def _fleet_once(args: argparse.Namespace) -> Summary:
    import trio

    return trio.run(_read_fleet, args, None)


def _fleet_status(fleet_view: FleetView) -> Summary:
    roots = [root for view in fleet_view.views.values() for root in view.roots]
    return with_roots(fleet_view.aggregate(), roots)


async def _read_fleet(args: argparse.Namespace, printer: _Printer | None) -> Summary:
    """The fleet's status once every source discovered has said something (``printer`` None),
    or every change of it, until cancelled."""
    import trio

    from ..fleet import FleetView

    fleet_view = FleetView()
    async with (
        open_fleet(args.url, connect_timeout=args.timeout, **fleet_settings(args)) as engine,
        engine.follow_fleet() as fleet,
    ):
        if printer is not None:
            printer.show(_fleet_status(fleet_view))
            async for source, frame in fleet:
                fleet_view.apply(source, frame)
                printer.show(_fleet_status(fleet_view))
            return _fleet_status(fleet_view)
        frames = aiter(fleet)
        with trio.move_on_after(args.timeout):
            while True:
                complete = bool(fleet.liveness) and all(
                    source in fleet_view.views for source in fleet.liveness
                )
                # Sources are listed at once; give the first listing a moment, then each
                # source its first frame, then what is already queued.
                with trio.move_on_after(0.1 if complete else 0.5) as quiet:
                    source, frame = await anext(frames)
                    fleet_view.apply(source, frame)
                if quiet.cancelled_caught and (complete or not fleet.liveness):
                    break
    return _fleet_status(fleet_view)
