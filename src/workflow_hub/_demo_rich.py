"""The demo's live terminal view, drawn with rich: a table of roots and a pane of hook events."""

from __future__ import annotations

from collections import deque

import trio
from rich.console import Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ._contract import Frame, WorkflowEvent
from ._demo import describe_event, describe_running
from ._serve_cli import dashboard_url
from .reporting import ActivityView, aggregate

__all__ = ["RichOutput"]

_CONNECTION_STYLES = {"live": "green", "reconnecting": "yellow", "resynced from a snapshot": "cyan"}
_STATE_STYLES = {"working": "green", "blocked": "bold red", "idle": "dim", "unknown": "yellow"}


class RichOutput:
    def __init__(self, *, pane_lines: int, events: deque[str]) -> None:
        self._pane_lines = pane_lines
        self._events = events
        self._view: ActivityView | None = None
        self.closed = trio.Event()  # a terminal does not go away; Ctrl-C ends the demo
        self.url: str | None = None
        self.title = "workflow-hub demo"
        self.connection: str | None = None  # for `watch`: live, reconnecting, resynced
        self._live = Live(self._render(), refresh_per_second=10, transient=False)

    def __enter__(self) -> RichOutput:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.update(self._render(), refresh=True)
        self._live.__exit__(None, None, None)

    def frame(self, frame: Frame, view: ActivityView) -> None:
        self._view = view
        self._live.update(self._render())

    def refresh(self) -> None:
        """Redraw now: the connection state changed without a frame."""
        self._live.update(self._render())

    def hook(self, event: WorkflowEvent) -> None:
        self._events.append(describe_event(event))
        self._live.update(self._render())

    def _render(self) -> Group:
        view = self._view
        if view is None:
            header = Text("waiting for the first snapshot…", style="yellow")
            table = Table()
        else:
            status = aggregate(view)
            cursor = view.cursor
            where = f"epoch {cursor.epoch} · revision {cursor.revision}" if cursor else ""
            header = Text.assemble(
                (f"{self.title}  ", "bold"),
                (f"{status.state}", _STATE_STYLES.get(status.state, "")),
                f"  {status.message}  ",
                ("(needs attention)  " if status.attention else "", "bold red"),
                (where, "dim"),
            )
            table = Table(expand=True)
            for column in ("root", "state", "reason", "active", "blocks", "attention", "now"):
                table.add_column(column, no_wrap=column != "now")
            for root in view.roots:
                table.add_row(
                    root.root_run_id,
                    Text(root.state, style=_STATE_STYLES.get(root.state, "")),
                    root.reason,
                    str(root.active_execution_count),
                    str(root.actionable_block_count),
                    Text("yes", style="bold red") if root.needs_attention else "",
                    describe_running(root),
                )
            if not view.known:
                table.caption = f"source {view.availability}: activity unknown (not idle)"
        if self.url is not None:
            header.append(f"\ndashboard at {dashboard_url(self.url)}", style="cyan")
        if self.connection is not None:
            header.append(
                f"\nconnection: {self.connection}",
                style=_CONNECTION_STYLES.get(self.connection, ""),
            )
        hooks = Panel(
            "\n".join(self._events) or "(no hook events yet)",
            title="hook events",
            height=self._pane_lines + 2,
        )
        return Group(header, table, hooks)
