"""``watch`` of a fleet (``watch redis://…``): one line per source, live.

It follows every source of the fleet the URL names (through its engine, ``_urls.open_fleet``)
and shows one line per source: a live table in a terminal when ``rich`` is installed, plain
lines otherwise (one whenever a source's status changes). Redis needs the ``redis`` extra
(coredis); ``make demo`` never does.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any

import trio

from ..fleet import FleetFollower, FleetView, SourceLiveness
from ..redis import DEFAULT_PREFIX, DEFAULT_READ_TIMEOUT, DEFAULT_STALE_AFTER
from ._errors import until_ctrl_c
from ._urls import fleet_settings, open_fleet

if TYPE_CHECKING:
    from ._alert_count import AlertCount

__all__ = ["CRASHED", "DECLARED", "add_watch_arguments", "fleet_line", "liveness_note", "run_watch"]


# --- watch -------------------------------------------------------------------------------------


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``watch`` has for redis:// URLs (the URL and ``--duration`` are ``watch``'s)."""
    parser.add_argument(
        "--prefix",
        default=None,
        help=f"redis:// only: the key prefix (default {DEFAULT_PREFIX})",
    )
    parser.add_argument(
        "--stale-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="redis:// only: a source that has not refreshed for this long is unavailable "
        f"(default {DEFAULT_STALE_AFTER:g})",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="redis:// only: with no read from Redis for this long, every source is unknown "
        f"(default {DEFAULT_READ_TIMEOUT:g})",
    )


def refuse_watch_flags(args: argparse.Namespace) -> str | None:
    """Why ``watch redis://…`` cannot run with these flags (one line), or ``None``."""
    if args.token is not None:
        return (
            "--token is for http:// URLs; a Redis password goes in the URL "
            "(redis://:PASSWORD@HOST:PORT/DB)"
        )
    for flag, value in (("--stale-after", args.stale_after), ("--read-timeout", args.read_timeout)):
        if value is not None and not value > 0:
            return f"{flag} must be > 0"
    if args.duration is not None and not args.duration > 0:
        return "--duration must be > 0"
    return None


_LOG_LINES = 3
"""Log lines the live table keeps below itself (older ones are dropped, not scrolled)."""


def run_watch(args: argparse.Namespace) -> int:
    """``watch redis://...``: every source under ``--prefix``, live."""
    refused = refuse_watch_flags(args)
    if refused is not None:
        print(f"workflow-hub watch: {refused}", file=sys.stderr)
        return 2
    alerts = _alert_count(args)
    show: Callable[[FleetView, FleetFollower], None]
    if sys.stdout.isatty():
        try:
            from rich.live import Live
        except ImportError:
            show = _PlainFleet(sys.stdout, alerts).show
        else:
            tail = _LogTail(_LOG_LINES)
            with (
                _capture_logs(tail),
                Live(_fleet_table(FleetView(), {}, tail, alerts), refresh_per_second=4) as live,
            ):
                show = lambda view, fleet: live.update(  # noqa: E731
                    _fleet_table(view, fleet.liveness, tail, alerts)
                )
                with until_ctrl_c():
                    trio.run(_watch, args, show, alerts)
            return 0
    else:
        show = _PlainFleet(sys.stdout, alerts).show
    with until_ctrl_c():
        trio.run(_watch, args, show, alerts)
    return 0


def _alert_count(args: argparse.Namespace) -> AlertCount | None:
    """``--alertmanager``: every workflow alert that Alertmanager has firing (a fleet's
    sources are its members, so none is filtered out), asked every few seconds."""
    alertmanager = getattr(args, "alertmanager", None)
    if alertmanager is None:
        return None
    from ._alert_count import AlertCount

    return AlertCount(alertmanager, None, timeout=5.0)


async def _watch(
    args: argparse.Namespace,
    show: Callable[[FleetView, FleetFollower], None],
    alerts: AlertCount | None = None,
) -> None:
    fleet_view = FleetView()
    with trio.move_on_after(args.duration if args.duration is not None else float("inf")):
        async with (
            open_fleet(args.url, **fleet_settings(args)) as engine,
            engine.follow_fleet() as fleet,
            trio.open_nursery() as nursery,
        ):
            if alerts is not None:
                await nursery.start(alerts.follow, lambda: show(fleet_view, fleet))
            nursery.start_soon(_show_liveness, fleet_view, fleet, show)
            async for source, frame in fleet:
                fleet_view.apply(source, frame)
                show(fleet_view, fleet)
            nursery.cancel_scope.cancel()


LIVENESS_CHECK = 0.25
"""Seconds between two looks at what changes without a frame (a source that went stale)."""


async def _show_liveness(
    fleet_view: FleetView,
    fleet: FleetFollower,
    show: Callable[[FleetView, FleetFollower], None],
) -> None:
    """Shows the fleet again when a source's liveness note changed without a frame."""
    shown: dict[str, str | None] = {}
    while True:
        await trio.sleep(LIVENESS_CHECK)
        notes = {source: liveness_note(fleet.liveness.get(source)) for source in fleet_view.views}
        if notes != shown:
            if shown:
                show(fleet_view, fleet)
            shown = notes


def liveness_note(live: SourceLiveness | None) -> str | None:
    """What a source's liveness says, in the one wording of every view of a fleet (``watch``'s
    lines and table here, the fleet page's ``static/fleet_liveness.js``), or ``None`` for a
    live source (its status says how it is doing). SPEC N5: only a source that stopped without
    a word is "crashed?"; one that declared itself unavailable stays declared, with the time it
    stopped (local time)."""
    if live is None or not (live.stale or live.declared):
        return None
    at = (
        None
        if live.last_seen is None
        else time.strftime("%H:%M:%S", time.localtime(live.last_seen))
    )
    if live.crashed:
        return CRASHED + ("" if at is None else f" (no refresh since {at})")
    if not live.stale:
        return DECLARED
    return DECLARED + (" (stopped)" if at is None else f" (stopped at {at})")


CRASHED = "crashed?"
DECLARED = "declared unavailable"


def fleet_line(fleet: FleetView) -> str:
    """The fleet in one line, every count a count of sources."""
    status = fleet.aggregate()
    counts: dict[str, int] = {}
    for source_status in fleet.statuses().values():
        counts[str(source_status.state)] = counts.get(str(source_status.state), 0) + 1
    total = len(fleet.views)
    parts = [f"{counts[state]} {state}" for state in _STATE_ORDER if counts.get(state)]
    sources = f"{total} source{'' if total == 1 else 's'}"
    return f"fleet {status.state}: {sources}" + (f" ({', '.join(parts)})" if parts else "")


_STATE_ORDER = ("working", "blocked", "unknown", "idle")


class _PlainFleet:
    """One line whenever a source's status (or the fleet's) changes."""

    def __init__(self, stream: IO[str], alerts: AlertCount | None = None) -> None:
        self._stream = stream
        self._alerts = alerts
        self._last: dict[str, str] = {}

    def show(self, fleet: FleetView, stream: FleetFollower | None = None) -> None:
        liveness = {} if stream is None else stream.liveness
        lines = {
            source: liveness_note(liveness.get(source)) or status.message
            for source, status in fleet.statuses().items()
        }
        lines[""] = fleet_line(fleet) + ("" if self._alerts is None else self._alerts.suffix())
        for source in list(self._last):
            if source and source not in lines:
                del self._last[source]
                self._stream.write(f"{source}: retired\n")
        for source, message in lines.items():
            if self._last.get(source) != message:
                self._last[source] = message
                self._stream.write(f"{source}: {message}\n" if source else f"{message}\n")
        self._stream.flush()


class _LogTail(logging.Handler):
    """The last few log lines, shown under the live table instead of scrolling it away."""

    def __init__(self, size: int) -> None:
        super().__init__(logging.INFO)
        self.lines: collections.deque[str] = collections.deque(maxlen=size)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{time.strftime('%H:%M:%S')} {record.getMessage()}")


@contextlib.contextmanager
def _capture_logs(handler: logging.Handler) -> Iterator[None]:
    logger = logging.getLogger("workflow_hub")
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


# The table fits 80 columns, and uses a wider terminal (up to this) for longer names and notes.
_NARROWEST, _WIDEST = 80, 160


def _fleet_table(
    fleet: FleetView,
    liveness: Mapping[str, SourceLiveness],
    tail: _LogTail,
    alerts: AlertCount | None = None,
) -> Any:
    """Sources in name order, counts of roots per source, as wide as the terminal allows."""
    return _FleetTable(fleet, dict(liveness), tail, alerts)


class _FleetTable:
    """Built when drawn, so that its width is the terminal's (rich asks ``__rich_console__``)."""

    def __init__(
        self,
        fleet: FleetView,
        liveness: Mapping[str, SourceLiveness],
        tail: _LogTail,
        alerts: AlertCount | None = None,
    ) -> None:
        self._fleet = fleet
        self._title = fleet_line(fleet) + ("" if alerts is None else alerts.suffix())
        self._liveness = liveness
        self._tail = tail

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        from rich.table import Table
        from rich.text import Text

        width = max(_NARROWEST, min(_WIDEST, options.max_width))
        # Every column but the note has a fixed width and the note gets what is left: when a
        # no_wrap cell is too long rich shrinks every column alike, which once squeezed the
        # source and its status out of an 80-column terminal.
        longest = max([len("source"), *map(len, self._fleet.views)])
        fixed = {"status": 7, "roots": 5, "work": 4, "wait": 4, "last seen": 9}
        lines = len(fixed) + 3  # the vertical lines between and around the seven columns
        padding = 2 * (len(fixed) + 2)
        room = width - lines - padding - sum(fixed.values())
        source_width = min(longest, max(16, room // 2))
        table = Table(title=self._title, title_justify="left", width=width)
        table.add_column("source", no_wrap=True, overflow="ellipsis", width=source_width)
        table.add_column("status", no_wrap=True, overflow="ellipsis", width=fixed["status"])
        for name in ("roots", "work", "wait"):
            table.add_column(name, justify="right", no_wrap=True, width=fixed[name])
        table.add_column("last seen", no_wrap=True, overflow="ellipsis", width=fixed["last seen"])
        table.add_column("note", no_wrap=True, overflow="ellipsis", width=room - source_width)
        now = time.time()
        for source, status in self._fleet.statuses().items():
            live = self._liveness.get(source)
            seen = "—"
            if live is not None and live.last_seen is not None:
                seen = _ago(now - live.last_seen)
            said = liveness_note(live)
            # The liveness note is never cut (it wraps); a status sentence is.
            note = status.message if said is None else Text(said, no_wrap=False, overflow="fold")
            table.add_row(
                source,
                str(status.state),
                str(status.roots),
                str(status.working),
                str(status.blocked),
                seen,
                note,
            )
        yield table
        if self._tail.lines:
            yield Text("\n".join(self._tail.lines), style="dim", overflow="ellipsis", no_wrap=True)


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.0f}h ago"
