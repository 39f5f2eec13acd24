"""The live view's redraws are coalesced (issue 38: a ``watch`` of a busy hub spent 2.6x the CPU
of the bridge it watched, redrawing for every frame and ten times a second when nothing changed).

A frame, a hook line or a connection change marks the screen changed; ``draw_changes`` draws it
at most once per interval and never while nothing changes. Time is trio's ``MockClock``: the
test moves it, nothing sleeps. benchmarks/bench_watch_cpu.py measures what this saves.
"""

from __future__ import annotations

import io
from collections import deque

import trio
import trio.testing
from rich.console import Console

from tests.cli.test_watch_production import production_roots, task_root
from workflow_hub import ChangedFrame, SnapshotFrame
from workflow_hub._cli._rich import REDRAW_EVERY, RichOutput
from workflow_hub._contract import Cursor
from workflow_hub.reporting import ActivityView

EVERY = REDRAW_EVERY


def _output() -> tuple[RichOutput, io.StringIO]:
    screen = io.StringIO()
    console = Console(
        file=screen, width=80, height=24, force_terminal=True, color_system=None, record=False
    )
    return RichOutput(pane_lines=12, events=deque(maxlen=200), console=console), screen


def test_many_frames_in_one_interval_are_drawn_once_and_a_quiet_hub_costs_no_draw() -> None:
    """C3: what is drawn is the latest state; a burst of frames costs one draw per interval."""
    clock = trio.testing.MockClock()
    output, screen = _output()
    view = ActivityView()
    roots = production_roots()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            with output:
                drawn_on_entry = output.draws
                nursery.start_soon(output.draw_changes)
                await trio.testing.wait_all_tasks_blocked()
                assert output.draws == drawn_on_entry  # nothing changed: nothing drawn

                snapshot = SnapshotFrame(
                    cursor=Cursor(epoch="e", revision=1), availability="ready", roots=roots
                )
                view.apply(snapshot)
                output.frame(snapshot, view)
                # A burst: 200 changes of one root within the same instant.
                working = task_root("billing.settle_invoices", "working", "executing")
                for revision in range(2, 202):
                    changed = ChangedFrame(
                        cursor=Cursor(epoch="e", revision=revision), root=working
                    )
                    view.apply(changed)
                    output.frame(changed, view)
                await trio.testing.wait_all_tasks_blocked()
                assert output.draws == drawn_on_entry + 1  # the whole burst: one draw

                # More frames within the interval wait for its end, and are drawn once then.
                for revision in range(202, 302):
                    changed = ChangedFrame(
                        cursor=Cursor(epoch="e", revision=revision), root=working
                    )
                    view.apply(changed)
                    output.frame(changed, view)
                clock.jump(EVERY / 2)
                await trio.testing.wait_all_tasks_blocked()
                assert output.draws == drawn_on_entry + 1
                clock.jump(EVERY / 2)
                await trio.testing.wait_all_tasks_blocked()
                assert output.draws == drawn_on_entry + 2
                assert "billing.settle" in screen.getvalue()

                # Nothing changes for a hundred intervals: nothing is drawn.
                for _ in range(100):
                    clock.jump(EVERY)
                    await trio.testing.wait_all_tasks_blocked()
                assert output.draws == drawn_on_entry + 2
                nursery.cancel_scope.cancel()

    trio.run(main, clock=clock)


def test_a_connection_change_or_a_hook_line_is_drawn_without_a_frame() -> None:
    clock = trio.testing.MockClock()
    output, screen = _output()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            with output:
                before = output.draws
                nursery.start_soon(output.draw_changes)
                output.connection = "reconnecting"
                output.refresh()
                await trio.testing.wait_all_tasks_blocked()
                assert output.draws == before + 1
                assert "connection: reconnecting" in screen.getvalue()
                clock.jump(EVERY)
                output.hooks_off("off (the server was started without a HookRunner)")
                await trio.testing.wait_all_tasks_blocked()
                assert output.draws == before + 2
                assert "hook events: off" in screen.getvalue()
                nursery.cancel_scope.cancel()

    trio.run(main, clock=clock)
