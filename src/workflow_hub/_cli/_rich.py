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
from collections.abc import Iterable

import trio
from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._contract import Frame, WorkflowEvent
from ..reporting import ActivityView, aggregate
from ._output import describe_event, describe_running, short_ids
from ._served_hub import dashboard_url, watch_command

__all__ = ["RichOutput", "Screen"]

_RESYNCED = "resynced from a snapshot"
_CONNECTION_STYLES = {"live": "green", "reconnecting": "yellow", _RESYNCED: "cyan"}
_STATE_STYLES = {"working": "green", "blocked": "bold red", "idle": "dim", "unknown": "yellow"}
# Below this many columns the table drops its vertical rules and abbreviates the counts.
_WIDE = 110
# The "now" column never shrinks below this: it is the column that says what is happening.
_NOW_MIN_WIDTH = 12
# A root id column narrower than this says too little (it is cut with an ellipsis).
_ROOT_MIN_WIDTH = 12
# What a table of seven columns spends on rules and padding, by layout (wide or not).
_RULES = {True: 22, False: 18}
_PANE_MIN_LINES = 3


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
        top = Group(self._header(wide=wide), self._table(wide=wide, width=width))
        used = len(console.render_lines(top, options.update(height=None), pad=False))
        yield top
        yield self._pane(max(_PANE_MIN_LINES, height - used))

    def _header(self, *, wide: bool = True) -> Text:
        view = self.view
        if view is None:
            header = Text(f"{self.title}  ", style="bold")
            header.append("waiting for the first snapshot…", style="yellow")
        else:
            status = aggregate(view)
            # The message says the state and the attention ("2 working · 1 needs attention"):
            # each once, in the state's colour; the cursor is for the wire, not for people.
            header = Text.assemble(
                (f"{self.title}  ", "bold"),
                (status.message, _STATE_STYLES.get(status.state, "")),
            )
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

    def _table(self, *, wide: bool, width: int) -> Table:
        view = self.view
        table = Table(
            width=width,
            box=box.HEAVY_HEAD if wide else box.SIMPLE_HEAD,
            pad_edge=wide,
            show_edge=wide,
            padding=(0, 1),
            style="dim" if self.stale else "",
        )
        headers = (
            ("root", "state", "reason", "active", "blocks", "attention")
            if wide
            else ("root", "state", "reason", "act", "blk", "!")
        )
        # Every column has a width of its own, computed here: when a no_wrap cell is too long,
        # rich shrinks every column alike, which cut "working" to "worki…" and the counts'
        # headers to "…" at 80 columns once root ids were UUIDs (Celery's). The state, the
        # reason and the counts keep what their longest cell needs; the root id and "now"
        # share the rest, the root id at most half of it (cut with an ellipsis).
        attention = "yes" if wide else "!"
        rows = [
            (
                root,
                (
                    root.state,
                    root.reason,
                    str(root.active_execution_count),
                    str(root.actionable_block_count),
                    attention if root.needs_attention else "",
                ),
            )
            for root in (view.roots if view is not None else ())
        ]
        fixed = [
            max([len(header), *(len(cells[index]) for _, cells in rows)])
            for index, header in enumerate(headers[1:])
        ]
        room = max(0, width - _RULES[wide] - sum(fixed))
        longest = max([len("root"), *(len(root.root_run_id) for root, _ in rows)])
        root_width = min(longest, max(_ROOT_MIN_WIDTH, room // 2))
        table.add_column(headers[0], no_wrap=True, overflow="ellipsis", width=root_width)
        for header, column_width in zip(headers[1:], fixed, strict=True):
            table.add_column(header, no_wrap=True, overflow="ellipsis", width=column_width)
        table.add_column("now", overflow="fold", width=max(_NOW_MIN_WIDTH, room - root_width))
        if view is None:
            return table
        for root, (state, reason, active, blocks, flag) in rows:
            table.add_row(
                Text(root.root_run_id),
                Text(state, style=_STATE_STYLES.get(state, "")),
                Text(reason),
                Text(active),
                Text(blocks),
                Text(flag, style="bold red"),
                Text(describe_running(root)),
            )
        if not view.known:
            table.caption = Text(f"source {view.availability}: activity unknown (not idle)")
        elif view.roots and all(root.graph is None for root in view.roots):
            table.caption = Text(
                "now: empty, the publisher sends no graph "
                "(RunTracker(..., include_graph=True) sends it)",
                style="dim",
            )
        return table

    def _pane(self, lines: int) -> RenderableType:
        if self.hooks_off_why is not None:
            return Text(
                f"hook events: {self.hooks_off_why}", style="dim", no_wrap=True, overflow="ellipsis"
            )
        shown = list(self._events)[-(lines - 2) :] if lines > 2 else []
        body = Text("\n".join(shown) or "(no hook events yet)", no_wrap=True, overflow="ellipsis")
        return Panel(body, title="hook events", height=lines)


class RichOutput(Screen):
    """The screen, drawn live on the terminal; what ``demo`` and ``watch`` set on their output
    (``title``, ``url``, ``connection``) is the screen's own."""

    def __init__(self, *, pane_lines: int, events: deque[str]) -> None:
        super().__init__(events)
        self._pane_lines = pane_lines
        self._event_lines = events
        self.closed = trio.Event()  # a terminal does not go away; Ctrl-C ends the demo
        self._live = Live(self, refresh_per_second=10, transient=False)

    def __enter__(self) -> RichOutput:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.update(self, refresh=True)
        self._live.__exit__(None, None, None)

    def frame(self, frame: Frame, view: ActivityView) -> None:
        self.view = view
        self.updated_at = time.time()
        self._live.update(self)

    def refresh(self) -> None:
        """Redraw now: the connection state changed without a frame."""
        self._live.update(self)

    def hooks_off(self, why: str) -> None:
        """The server sends no hook events (``why``): a line says so where the pane was."""
        self.hooks_off_why = why
        self._live.update(self)

    def hook(self, event: WorkflowEvent) -> None:
        self._event_lines.append(describe_event(event, short_ids))
        self._live.update(self)

    def renderable(self) -> RenderableType:
        """The screen, for tests that render it on a console of their own."""
        return self
