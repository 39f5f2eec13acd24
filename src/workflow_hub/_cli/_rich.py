"""The demo's live terminal view, drawn with rich: a table of roots and a pane of hook events.

Everything that comes from data (ids, names, prompt messages, hook lines) goes in as
:class:`rich.text.Text`, never as a plain ``str``: rich reads a plain string as markup, so
``[quit requested]`` would vanish as an unknown tag and ``nightly-build:package:`` would turn into
an emoji.

The screen lays itself out for the terminal it is drawn on (:meth:`Screen.__rich_console__`): the
table takes what its rows need, and the hook pane gets the lines that are left. At 80x24 every
column header is whole and the "now" column keeps a readable width.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Sequence

import trio
from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from .._contract import Frame, RootActivity, WorkflowEvent
from .._status_line import SEPARATOR
from ..reporting import ActivityView, aggregate
from ._output import (
    describe_event,
    describe_failure,
    describe_running,
    first_failure,
    fit_root_name,
    root_attention,
    root_name,
    root_name_room,
    short_ids,
)
from ._served_hub import dashboard_url, watch_command
from ._words import group_of, headline, shown_state, words

__all__ = ["RichOutput", "Screen"]

_RESYNCED = "resynced from a snapshot"
_CONNECTION_STYLES = {"live": "green", "reconnecting": "yellow", _RESYNCED: "cyan"}
_STATE_STYLES = {"working": "green", "blocked": "bold red", "idle": "dim", "unknown": "yellow"}
# Below this many columns the table drops its vertical rules and abbreviates the counts.
_WIDE = 110
# Labels take a column only where "now" keeps at least this much (or its longest cell).
_NOW_FOR_LABELS = 60
# The "now" column never shrinks below this: it is the column that says what is happening.
_NOW_MIN_WIDTH = 12
# A root id column narrower than this says too little (it is cut with an ellipsis).
_ROOT_MIN_WIDTH = 12
# What a table of seven columns spends on rules and padding, by layout (wide or not).
_RULES = {True: 22, False: 18}
_PANE_MIN_LINES = 3
# The lines a table takes besides its rows: rules and the column headers, by layout (wide or not).
_TABLE_LINES = {True: 4, False: 2}
# The reason's words wrap at a space below their longest, never below this ("intervention").
_REASON_MIN_WIDTH = 12
# What a root id may take before "now" gets its room (a UUID is cut to it, with an ellipsis).
_ROOT_WANT_WIDTH = 16
# What a task's name beside a generated id may take at most, before "now" gets its room.
_ROOT_NAME_MAX_WIDTH = 24
# A "now" that wraps anyway gives the reason its room back, down to this width.
_NOW_KEEP_WIDTH = 24
_LABELS_MAX_WIDTH = 40
# What the abbreviated headers of a narrow terminal mean.
_LEGEND = ("! needs attention", "act: running", "blk: blocks to act on")


_GROUPS = ("attention", "working", "idle")


def _ordered(roots: Iterable[RootActivity]) -> tuple[list[RootActivity], dict[str, int]]:
    """Roots that need a person first, then those working, then the idle (each as published),
    and how many of each group there are."""
    groups: dict[str, list[RootActivity]] = {group: [] for group in _GROUPS}
    for root in roots:
        groups[group_of(root.state, root.needs_attention)].append(root)
    return [root for group in _GROUPS for root in groups[group]], {
        group: len(members) for group, members in groups.items()
    }


def _hidden(sizes: dict[str, int], shown: int) -> dict[str, int]:
    """How many roots of each group the first ``shown`` of the ordered roots leave out."""
    hidden: dict[str, int] = {}
    for group in _GROUPS:
        taken = min(shown, sizes[group])
        shown -= taken
        if sizes[group] > taken:
            hidden[group] = sizes[group] - taken
    return hidden


def _reason(root: RootActivity) -> str:
    """The reason in the dashboard's words; none for a settled failure (its state says
    "failed": "nothing to do" never stands beside it)."""
    if root.state == "idle" and root.needs_attention and root.reason == "quiescent":
        return ""
    return words(root.reason)


def _now(root: RootActivity) -> str:
    """What a person reads of a root: what it asks, else what failed (when it needs a person),
    else what runs."""
    running = describe_running(root)
    if root.reason == "awaiting_input" and running.startswith(_AWAITING):
        return running[len(_AWAITING) :]  # the reason already says "waiting for input"
    if running.startswith(_AWAITING) or group_of(root.state, root.needs_attention) != "attention":
        return running
    failed = first_failure(root)
    if failed is None:
        return running
    return describe_failure(failed) + (f"; running: {running}" if running else "")


_AWAITING = "awaiting: "


def _labels(root: RootActivity) -> str:
    return " ".join(f"{key}:{value}" for key, value in (root.labels or {}).items())


def _phrases(text: Text, phrases: Sequence[tuple[str, str, str]], width: int) -> Text:
    """``text`` followed by ``phrases`` ((phrase, separator after it, style)), a line broken
    only between two phrases, never inside one (unless one alone is wider than a line)."""
    column = text.cell_len
    separator, separator_style = "", ""
    last = len(phrases) - 1
    for index, (phrase, after, style) in enumerate(phrases):
        # What must fit on the line: the phrase and, unless it is the last, the visible part
        # of its separator (a comma), which stays with it when the line breaks after it.
        tail = 0 if index == last else len(after.rstrip())
        if separator and column + len(separator) + len(phrase) + tail > width:
            text.append(separator.rstrip() + "\n", style=separator_style)
            column = 0
        elif separator:
            text.append(separator, style=separator_style)
            column += len(separator)
        text.append(phrase, style=style)
        column = (
            (column + len(phrase)) % width if column + len(phrase) > width else column + len(phrase)
        )
        separator, separator_style = after, style if after.strip() not in ("·", "") else ""
    return text


class Screen:
    """What the live view shows, laid out for the console it is rendered on."""

    def __init__(self, events: Iterable[str]) -> None:
        self.view: ActivityView | None = None
        self._events = events
        self.title = "workflow-hub demo"
        self.url: str | None = None
        """Where the hub is served (``--serve``): the dashboard's address is shown."""
        self.connection: str | None = None
        """For ``watch``: live, reconnecting, resynced from a snapshot."""
        self.updated_at: float | None = None
        """When the last frame arrived (wall clock), to say how old a stale picture is."""
        self.hooks_off_why: str | None = None
        """For ``watch``: why the server sends no hook events; one line then takes the pane's place."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        height = options.height or console.height
        wide = width >= _WIDE
        rows, sizes = _ordered(self.view.roots if self.view is not None else ())
        header = self._header(wide=wide, width=width)
        # As many roots as leave the hook pane its lines, those that need a person first; the
        # line under the table says how many more there are (and of which kind).
        # Each row takes a line at least, below the header, the table's own lines (its rules
        # and column headers) and the footer's (there is one when roots are left out, and the
        # legend when the terminal is narrow; two lines at 80 columns): the first guess is
        # never short of room and, when no row wraps, exact. Each try renders the whole table
        # (what the view costs to draw: two tries were twice the CPU of a watch's redraws), so
        # rows that wrap are taken off two lines of excess at a time.
        unbounded = options.update(height=None)
        header_lines = len(console.render_lines(header, unbounded, pad=False))
        room = height - _PANE_MIN_LINES - header_lines - _TABLE_LINES[wide]
        footer = 0
        if not wide or len(rows) > room:
            hidden = _hidden(sizes, min(len(rows), max(0, room - 1)))
            for text in self._footer(hidden, wide=wide, width=width):
                footer += len(console.render_lines(text, unbounded, pad=False))
        shown = min(len(rows), max(0, room - footer))
        while True:
            top = Group(
                header,
                self._table(rows[:shown], wide=wide, width=width),
                *self._footer(_hidden(sizes, shown), wide=wide, width=width),
            )
            lines = console.render_lines(top, unbounded)
            used = len(lines)
            excess = used - (height - _PANE_MIN_LINES)
            if shown == 0 or excess <= 0:
                break
            shown = max(0, shown - max(1, excess // 2))
        # The lines just measured are the ones drawn: the table is not rendered once more.
        newline = Segment.line()
        for line in lines:
            yield from line
            yield newline
        yield self._pane(max(_PANE_MIN_LINES, height - used))

    def _header(self, *, wide: bool = True, width: int = 80) -> Text:
        view = self.view
        phrases: list[tuple[str, str, str]] = []
        if view is None:
            phrases.append(("waiting for the first snapshot…", "", "yellow"))
        else:
            # What needs a person first ("2 need attention: 1 waiting for input, 1 failed at
            # probe"), in the dashboard's words, then the overall state ("2 working"); each
            # once, the cursor never (it is for the wire, not for people).
            status = aggregate(view)
            parts = status.message.split(SEPARATOR)
            first = headline(root_attention(root) for root in view.roots)
            if first:
                count, _, reasons = first.partition(": ")
                items = reasons.split(", ")
                phrases.append((f"{count}:", " ", "bold red"))
                phrases += [(item, ", ", "bold red") for item in items[:-1]]
                phrases.append((items[-1], SEPARATOR, "bold red"))
                if status.state != "blocked":
                    phrases.append((parts[0], SEPARATOR, _STATE_STYLES.get(status.state, "")))
            else:
                style = _STATE_STYLES.get(status.state, "")
                if status.state == "unknown" and view.detail is not None:
                    # Why it is unknown (C3) may break to a line of its own, cut to one line:
                    # the caption under the table says it whole.
                    unknown, _, why = parts[0].partition(": ")
                    cut = why if len(why) <= width else why[: width - 1] + "…"
                    parts = [cut, *parts[1:]]
                    phrases.append((f"{unknown}:", " ", style))
                phrases += [(part, SEPARATOR, style) for part in parts]
        header = _phrases(Text(f"{self.title}  ", style="bold"), phrases, width)
        if self.url is not None:
            # Where to look next: the page, and the command for another terminal (a line each
            # when the terminal is narrow, rather than a command wrapped in two).
            between = "  ·  " if wide else "\n"
            header.append(
                f"\ndashboard at {dashboard_url(self.url)}{between}"
                f"in a terminal: {watch_command(self.url)}",
                style="cyan",
            )
        if self.connection is not None:
            header.append(
                f"\nconnection: {self.connection}",
                style=_CONNECTION_STYLES.get(self.connection.partition(" (")[0], ""),
            )
            if self.stale:
                at = time.strftime("%H:%M:%S", time.localtime(self.updated_at or time.time()))
                header.append(
                    f"  (the picture below is stale: as it was at {at})", style="bold yellow"
                )
        return header

    @property
    def stale(self) -> bool:
        """``watch`` lost its connection: what is drawn may no longer be true."""
        return self.view is not None and self.connection not in (None, "live", _RESYNCED)

    def _table(self, roots: Sequence[RootActivity], *, wide: bool, width: int) -> Table:
        view = self.view
        table = Table(
            width=width,
            box=box.HEAVY_HEAD if wide else box.SIMPLE_HEAD,
            pad_edge=wide,
            show_edge=wide,
            padding=(0, 1),
            style="dim" if self.stale else "",
        )
        # The attention flag leads (the eye starts at the left edge); the reason in the
        # dashboard's words; "now" says what runs, what is asked or what failed.
        headers = (
            ("attention", "root", "state", "reason", "now", "active", "blocks")
            if wide
            else ("!", "root", "state", "reason", "now", "act", "blk")
        )
        attention = "yes" if wide else "!"
        rows = [
            (
                root,
                (
                    attention if root.state == "blocked" or root.needs_attention else "",
                    root_name(root),
                    shown_state(root.state, root.needs_attention),
                    _reason(root),
                    _now(root),
                    str(root.active_execution_count),
                    str(root.actionable_block_count),
                ),
            )
            for root in roots
        ]
        labels = wide and any(root.labels for root in roots)
        # Every column has a width of its own, computed here: when a no_wrap cell is too long,
        # rich shrinks every column alike, which cut "working" to "worki…" and the counts'
        # headers to "…" at 80 columns once root ids were UUIDs (Celery's). The flag, the
        # state and the counts keep what their longest cell needs; then "now" gets its room
        # first (a question is what a person reads), the reason its longest words (wrapped at
        # a space when it must give way), and the root id the rest (cut with an ellipsis).
        longest = [
            max([len(header), *(len(cells[index]) for _, cells in rows)])
            for index, header in enumerate(headers)
        ]
        fixed = longest[0] + longest[2] + longest[5] + longest[6]
        label_width = (
            min(_LABELS_MAX_WIDTH, max(len(_labels(root)) for root in roots)) if labels else 0
        )
        if labels:
            # Labels are the last thing a person needs: shown only where the root, the reason
            # and "now" (up to _NOW_FOR_LABELS) keep their room beside them.
            spare = width - _RULES[wide] - fixed - label_width - 3
            needed = (
                min(longest[1], _ROOT_WANT_WIDTH) + longest[3] + min(longest[4], _NOW_FOR_LABELS)
            )
            if spare < needed:
                labels, label_width = False, 0
        rules = _RULES[wide] + (3 if labels else 0)
        room = max(0, width - rules - fixed - label_width)
        # A task's name beside a generated id gets the room its last part needs (up to
        # _ROOT_NAME_MAX_WIDTH): "…resize_image 3f2a", never "proj.tasks.resi…".
        named = max((root_name_room(root) for root, _ in rows), default=0)
        root_want = min(longest[1], max(_ROOT_WANT_WIDTH, min(named, _ROOT_NAME_MAX_WIDTH)))
        reason_min = min(longest[3], _REASON_MIN_WIDTH)
        now_width = max(_NOW_MIN_WIDTH, min(longest[4], room - root_want - reason_min))
        if now_width < longest[4]:
            # "now" wraps anyway: the reason takes its words back, down to what "now" keeps.
            now_width -= min(longest[3] - reason_min, max(0, now_width - _NOW_KEEP_WIDTH))
        left = max(0, room - now_width)
        reason_width = max(reason_min, min(longest[3], left - root_want))
        root_width = min(longest[1], max(_ROOT_MIN_WIDTH, left - reason_width))
        now_width = max(now_width, room - reason_width - root_width)  # what is left over
        widths = (
            longest[0],
            root_width,
            longest[2],
            reason_width,
            now_width,
            longest[5],
            longest[6],
        )
        for index, (header, column_width) in enumerate(zip(headers, widths, strict=True)):
            wraps = index in (3, 4)
            table.add_column(
                header,
                no_wrap=not wraps,
                overflow="fold" if wraps else "ellipsis",
                width=column_width,
            )
        if labels:
            table.add_column("labels", no_wrap=True, overflow="ellipsis", width=label_width)
        if view is None:
            return table
        for root, (flag, name, state, reason, now, active, blocks) in rows:
            table.add_row(
                Text(flag, style="bold red"),
                # A generated id the column cannot hold whole gives way first, then the task's
                # name keeps its tail (fit_root_name), rather than losing its end to an ellipsis.
                Text(name if len(name) <= root_width else fit_root_name(root, root_width)),
                Text(state, style=_STATE_STYLES.get(state, "")),
                Text(reason),
                Text(now, style="red" if now.startswith("failed at ") else ""),
                Text(active),
                Text(blocks),
                *([Text(_labels(root), style="dim")] if labels else []),
            )
        if not view.known:
            why = "" if view.detail is None else f": {view.detail}"
            table.caption = Text(f"source {view.availability}: activity unknown (not idle){why}")
        elif view.roots and all(root.graph is None for root in view.roots):
            table.caption = Text(
                "now: empty, the publisher sends no graph "
                "(RunTracker(..., include_graph=True) sends it)",
                style="dim",
            )
        return table

    def _footer(self, hidden: dict[str, int], *, wide: bool, width: int) -> list[Text]:
        """How many roots did not fit (``hidden``, by group), and, when the headers are
        abbreviated, what they mean."""
        phrases: list[tuple[str, str, str]] = []
        if hidden:
            kinds = [
                f"{count} {'needs attention' if count == 1 else 'need attention'}"
                if group == "attention"
                else f"{count} {group}"
                for group, count in hidden.items()
            ]
            style = "bold red" if "attention" in hidden else "yellow"
            more = f"{sum(hidden.values())} more not shown ({', '.join(kinds)})"
            phrases.append((more, SEPARATOR, style))
        if not wide:
            phrases += [(text, SEPARATOR, "dim") for text in _LEGEND]
        if not phrases:
            return []
        return [_phrases(Text(), phrases, width)]

    def _pane(self, lines: int) -> RenderableType:
        if self.hooks_off_why is not None:
            return Text(
                f"hook events: {self.hooks_off_why}", style="dim", no_wrap=True, overflow="ellipsis"
            )
        shown = list(self._events)[-(lines - 2) :] if lines > 2 else []
        body = Text("\n".join(shown) or "(no hook events yet)", no_wrap=True, overflow="ellipsis")
        return Panel(body, title="hook events", height=lines)


REDRAW_EVERY = 0.25
"""Seconds between two redraws of the live view at most: frames that arrive within one are drawn
once, and nothing is drawn while nothing changes."""


class RichOutput(Screen):
    """The screen, drawn live on the terminal; what ``demo`` and ``watch`` set on their output
    (``title``, ``url``, ``connection``) is the screen's own.

    A frame, a hook event or a new connection state only marks the screen changed; the task
    :meth:`draw_changes` (which the command starts beside its stream) draws it, at most once
    per :data:`REDRAW_EVERY`. A busy hub's hundreds of frames a second cost four redraws a
    second, not one each, and a quiet one costs none: rich's own refresh thread, which
    redrew ten times a second whatever happened, is not used.
    """

    def __init__(
        self, *, pane_lines: int, events: deque[str], console: Console | None = None
    ) -> None:
        super().__init__(events)
        self._pane_lines = pane_lines
        self._event_lines = events
        self.closed = trio.Event()  # a terminal does not go away; Ctrl-C ends the demo
        self._live = Live(self, console=console, auto_refresh=False, transient=False)
        self._changed = trio.Event()
        self.draws = 0
        """How many times the screen was drawn (the first and the last included)."""

    def __enter__(self) -> RichOutput:
        self._live.__enter__()
        self.draws += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.update(self, refresh=True)
        self.draws += 1
        self._live.__exit__(None, None, None)

    async def draw_changes(self, every: float = REDRAW_EVERY) -> None:
        """Draw the screen when it changed, at most once per ``every`` seconds, until cancelled."""
        while True:
            await self._changed.wait()
            self._changed = trio.Event()
            if self._live.is_started:
                self._live.refresh()
                self.draws += 1
            await trio.sleep(every)

    def frame(self, frame: Frame, view: ActivityView) -> None:
        self.view = view
        self.updated_at = time.time()
        self._changed.set()

    def refresh(self) -> None:
        """Redraw soon: the connection state changed without a frame."""
        self._changed.set()

    def hooks_off(self, why: str) -> None:
        """The server sends no hook events (``why``): a line says so where the pane was."""
        self.hooks_off_why = why
        self._changed.set()

    def hook(self, event: WorkflowEvent) -> None:
        self._event_lines.append(describe_event(event, short_ids))
        self._changed.set()

    def renderable(self) -> RenderableType:
        """The screen, for tests that render it on a console of their own."""
        return self
