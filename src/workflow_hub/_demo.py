"""``workflow-hub demo``: a simulated scheduler, a live status view and a hook pane, on one hub.

Three outputs, chosen by where the demo runs:

- a terminal: a live table of every root (state, reason, counts, attention, what runs) with the
  aggregate status and the hub's cursor, and a pane of the latest hook events (needs ``rich``,
  installed by the ``demo`` extra; without it the plain output is used);
- ``--json``: every frame and every hook event as one wire-format JSON line on stdout;
- anything else (a pipe, a file): one plain line per frame and per hook event.

The demo ends by itself after ``--duration`` seconds, or on Ctrl-C, and exits 0 either way.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import IO, Protocol, Self

import trio
import trio.testing

from ._contract import (
    ActivityChangedEvent,
    ChangedFrame,
    Frame,
    HeartbeatEvent,
    LifecycleEvent,
    RemovedFrame,
    RootActivity,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageNode,
    ToolNode,
    WorkflowEvent,
)
from ._demo_scenario import run_scenario
from ._hooks import HOOK_EVENT_TYPES, HookRunner
from ._hub import WorkflowActivityHub, open_hub
from ._metrics import HubMetrics
from ._tracker import RunTracker
from .reporting import ActivityView, aggregate
from .wire import dumps

__all__ = ["add_arguments", "run"]

_DEFAULT_DURATION = 20.0
_HOOK_PANE_LINES = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--duration",
        type=float,
        default=_DEFAULT_DURATION,
        metavar="SECONDS",
        help=f"how long the demo runs (default {_DEFAULT_DURATION:g})",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="no terminal UI: every frame and hook event as one wire-format JSON line on stdout",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="make ids, epochs and timing reproducible"
    )
    parser.add_argument(
        "--serve",
        default=None,
        metavar="[HOST:]PORT",
        help="also serve the hub over HTTP (SSE, WebSocket; port 0 picks one) and print the URL",
    )
    parser.add_argument("--token", default=None, help="with --serve: the token clients must send")
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics at http://127.0.0.1:PORT/metrics",
    )


def run(args: argparse.Namespace) -> int:
    if args.duration <= 0:
        print("workflow-hub demo: --duration must be > 0", file=sys.stderr)
        return 2
    output: Output
    if args.json:
        output = JsonOutput(sys.stdout)
    elif sys.stdout.isatty():
        output = _rich_output_or_plain()
    else:
        output = PlainOutput(sys.stdout)
    trio.run(_main, args, output)
    return 0


class Output(Protocol):
    """Where the demo shows what its observer and its hook handler receive."""

    closed: trio.Event
    """Set when the output can take no more (its reader went away): the demo then ends."""
    url: str | None
    """Where the hub is served (``--serve``), shown beside the view."""

    def frame(self, frame: Frame, view: ActivityView) -> None: ...
    def hook(self, event: WorkflowEvent) -> None: ...
    def __enter__(self) -> Output: ...
    def __exit__(self, *exc: object) -> None: ...


async def _main(args: argparse.Namespace, output: Output) -> None:
    rng = random.Random(args.seed)
    metrics, stop_metrics = _start_metrics(args.metrics_port)
    epochs = lambda: f"{rng.getrandbits(48):012x}"  # noqa: E731
    try:
        # Listening before anything else runs: a Ctrl-C at any moment ends the demo cleanly.
        with trio.open_signal_receiver(signal.SIGINT) as interrupts:
            async with (
                open_hub(epoch_factory=epochs, metrics=metrics) as hub,
                trio.open_nursery() as nursery,
            ):
                interrupted = trio.Event()
                nursery.start_soon(_stop_on_ctrl_c, interrupts, interrupted, nursery.cancel_scope)
                with output:
                    await _play(hub, output, rng, args.duration, interrupted, args)
                nursery.cancel_scope.cancel()
    finally:
        stop_metrics()


async def _play(
    hub: WorkflowActivityHub,
    output: Output,
    rng: random.Random,
    duration: float,
    interrupted: trio.Event,
    args: argparse.Namespace | None = None,
) -> None:
    async with trio.open_nursery() as serving:
        runner = HookRunner(hub)
        if args is not None and getattr(args, "serve", None) is not None:
            from ._serve_cli import start_serving

            await start_serving(serving, hub, runner, output, args.serve, args.token)
        await _play_scenario(hub, runner, output, rng, duration, interrupted)
        serving.cancel_scope.cancel()


async def _play_scenario(
    hub: WorkflowActivityHub,
    runner: HookRunner,
    output: Output,
    rng: random.Random,
    duration: float,
    interrupted: trio.Event,
) -> None:
    view = ActivityView()

    def on_frame(frame: Frame) -> None:
        view.apply(frame)
        output.frame(frame, view)

    pane = runner.extension("demo-pane")
    for event_type in HOOK_EVENT_TYPES:
        pane.on(event_type, output.hook)
    runner.bind()
    hub.observe(on_frame)

    wall_start = time.time() * 1000
    trio_start = trio.current_time()
    tracker = RunTracker(
        hub.register_publisher(),
        owner_session_id="demo-session",
        # Wall-clock milliseconds that advance exactly with trio's clock, so heartbeats land on
        # their boundaries.
        clock=lambda: round(wall_start + (trio.current_time() - trio_start) * 1000, 1),
        event_id_factory=lambda: f"evt-{rng.getrandbits(40):010x}",
        include_graph=True,
    )
    async with trio.open_nursery() as scheduler:
        await scheduler.start(tracker.run_heartbeats)
        scheduler.start_soon(
            partial(run_scenario, tracker, duration=duration * 0.95, seed=rng.randrange(2**32))
        )
        # Until the time is up, Ctrl-C, or whoever reads the output went away (a closed pipe).
        with trio.move_on_after(duration):
            async with trio.open_nursery() as waiting:
                for event in (interrupted, output.closed):
                    waiting.start_soon(_cancel_when_set, event, waiting.cancel_scope)
        scheduler.cancel_scope.cancel()
    # The scheduler shuts down: its source becomes unavailable, which every observer sees.
    tracker.publisher.dispose()
    await _drain(hub)


async def _drain(hub: WorkflowActivityHub) -> None:
    """Give observers and hooks a moment to take what is queued before the hub goes away."""
    # Quiescence is exactly "everything queued was taken": every task of the hub is waiting.
    with trio.move_on_after(1.0):
        await trio.testing.wait_all_tasks_blocked(cushion=0.02)


async def _stop_on_ctrl_c(
    interrupts: AsyncIterator[int], interrupted: trio.Event, everything: trio.CancelScope
) -> None:
    """The first Ctrl-C ends the demo as its time running out would; a second one at once."""
    async for _ in interrupts:
        if interrupted.is_set():
            everything.cancel()
            return
        interrupted.set()


async def _cancel_when_set(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _start_metrics(port: int | None) -> tuple[HubMetrics | None, Callable[[], None]]:
    if port is None:
        return None, lambda: None
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    print(f"metrics at http://127.0.0.1:{server.server_port}/metrics", file=sys.stderr)

    def stop() -> None:
        server.shutdown()
        thread.join(timeout=5)

    return HubMetrics(registry), stop


# --- describing things in one line -------------------------------------------------------------


def describe_root(root: RootActivity) -> str:
    attention = " !attention" if root.needs_attention else ""
    return (
        f"{root.root_run_id} {root.state}/{root.reason} active={root.active_execution_count}"
        f" blocks={root.actionable_block_count}{attention}"
    )


def describe_running(root: RootActivity) -> str:
    """What runs or waits in a root, from its graph: 'compile, lint' or 'awaiting: Apply…?'."""
    if root.graph is None:
        return ""
    running: list[str] = []
    waiting: list[str] = []
    for node in root.graph.nodes:
        if isinstance(node, StageNode) and node.pending_prompt is not None:
            waiting.append(node.pending_prompt.message)
        elif isinstance(node, StageNode | ToolNode) and node.status == "running":
            running.append(node.name)
    if waiting:
        return "awaiting: " + "; ".join(waiting)
    return ", ".join(running)


def describe_event(event: WorkflowEvent) -> str:
    match event:
        case StageCompletedEvent():
            return f"stage completed  {event.target.stage_id} ({event.delivery})"
        case LifecycleEvent():
            target = event.target
            before = getattr(target, "previous_status", None)
            previous = f"{before} → " if before else ""
            action = (
                f" [{target.action} requested]"
                if isinstance(target, RunTarget) and target.action
                else ""
            )
            name = getattr(target, "stage_id", None) or getattr(target, "tool_node_id", None)
            name = name or getattr(target, "prompt_id", None) or target.run_id
            replay = " (replay)" if event.delivery == "replay" else ""
            return f"{target.kind:<6} {name}: {previous}{target.status}{action}{replay}"
        case ActivityChangedEvent():
            return f"activity changed {event.root.root_run_id} → {event.root.state}/{event.root.reason}"
        case HeartbeatEvent():
            at = time.strftime("%H:%M:%S", time.localtime(event.scheduled_at / 1000))
            return f"heartbeat        {event.run_id} at {at}"
    return repr(event)  # pragma: no cover


# --- outputs -----------------------------------------------------------------------------------


class _LineOutput:
    """Writes lines to a stream; a reader that goes away ends the demo quietly."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.closed = trio.Event()
        self.url: str | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._write_safely(self._stream.flush)

    def _write(self, line: str) -> None:
        if not self.closed.is_set():
            self._write_safely(partial(self._stream.write, line + "\n"))
            self._write_safely(self._stream.flush)

    def _write_safely(self, write: Callable[[], object]) -> None:
        try:
            write()
        except BrokenPipeError:
            self.closed.set()
            # Python would complain again when it flushes stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())


class JsonOutput(_LineOutput):
    """Every frame and hook event as one wire-format JSON line."""

    def frame(self, frame: Frame, view: ActivityView) -> None:
        self._write(dumps(frame))

    def hook(self, event: WorkflowEvent) -> None:
        self._write(dumps(event))


class PlainOutput(_LineOutput):
    """One line per frame and per hook event, for pipes and logs."""

    def frame(self, frame: Frame, view: ActivityView) -> None:
        cursor = f"{frame.cursor.epoch}:{frame.cursor.revision}"
        match frame:
            case SnapshotFrame():
                detail = f"{frame.availability} roots={len(view.roots)}"
            case ChangedFrame():
                detail = describe_root(frame.root)
            case RemovedFrame():
                detail = frame.root_run_id
        status = aggregate(view)
        self._write(f"frame {frame.kind:<8} {cursor:<16} {detail}   [{status.message}]")

    def hook(self, event: WorkflowEvent) -> None:
        self._write(f"hook  {describe_event(event)}")


def _rich_output_or_plain() -> Output:
    try:
        from ._demo_rich import RichOutput
    except ImportError:
        print(
            "workflow-hub demo: install the 'demo' extra (rich) for the live view; "
            "showing plain lines",
            file=sys.stderr,
        )
        return PlainOutput(sys.stdout)
    return RichOutput(pane_lines=_HOOK_PANE_LINES, events=deque(maxlen=_HOOK_PANE_LINES))
