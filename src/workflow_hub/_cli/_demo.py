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
import math
import random
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial

import trio
import trio.testing

from .._contract import (
    Frame,
)
from .._core import HOOK_EVENT_TYPES, HookRunner, WorkflowActivityHub, open_hub
from ..metrics import HubMetrics
from ..reporting import ActivityView
from ..tracker import RunTracker
from ._demo_script import loop_scenario, run_scenario
from ._errors import CommandError, describe_os_error, os_errors_as
from ._options import address, port, seconds
from ._output import JsonOutput, Output, PlainOutput
from ._terminal import rich_output_or_plain

__all__ = ["add_arguments", "play_demo", "run"]

_DEFAULT_DURATION = 20.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--duration",
        type=seconds,
        default=_DEFAULT_DURATION,
        metavar="SECONDS",
        help=f"how long the demo runs; its story is scaled to fit (default {_DEFAULT_DURATION:g})",
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
        type=address,
        default=None,
        metavar="[HOST:]PORT",
        help="also serve the hub over HTTP (SSE, WebSocket; port 0 picks one) and print the URL",
    )
    parser.add_argument("--token", default=None, help="with --serve: the token clients must send")
    parser.add_argument(
        "--metrics-port",
        type=port,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics at http://127.0.0.1:PORT/metrics",
    )
    parser.add_argument(
        "--no-metrics",
        action="store_true",
        help="with --serve: no Prometheus metrics at /metrics on the served port",
    )


def run(args: argparse.Namespace) -> int:
    output: Output
    if args.json:
        output = JsonOutput(sys.stdout)
    elif sys.stdout.isatty():
        output = rich_output_or_plain()
    else:
        output = PlainOutput(sys.stdout)
    where = f"cannot serve at {args.serve}" if args.serve is not None else "the demo failed"
    with os_errors_as(where):
        trio.run(play_demo, args, output)
    return 0


async def play_demo(args: argparse.Namespace, output: Output) -> None:
    rng = random.Random(args.seed)
    metrics, stop_metrics = _start_metrics(args.metrics_port)
    if metrics is None and _serves_metrics(args):
        from prometheus_client import CollectorRegistry

        metrics = HubMetrics(CollectorRegistry())
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
                draw_changes = getattr(output, "draw_changes", None)
                if draw_changes is not None:  # the live view: redraws coalesced (``_rich``)
                    nursery.start_soon(draw_changes)
                with output:
                    await _play(hub, output, rng, args.duration, interrupted, args, metrics)
                nursery.cancel_scope.cancel()
    finally:
        stop_metrics()


async def _play(
    hub: WorkflowActivityHub,
    output: Output,
    rng: random.Random,
    duration: float | None,
    interrupted: trio.Event,
    args: argparse.Namespace | None = None,
    metrics: HubMetrics | None = None,
) -> None:
    async with trio.open_nursery() as serving:
        runner = HookRunner(hub)
        if args is not None and getattr(args, "serve", None) is not None:
            from ._served_hub import start_serving

            await start_serving(
                serving,
                hub,
                runner,
                output,
                args.serve,
                args.token,
                metrics=metrics if _serves_metrics(args) else None,
                options=getattr(args, "server_options", None),
            )
        loop = bool(getattr(args, "loop", False))
        await _play_scenario(hub, runner, output, rng, duration, interrupted, loop=loop)
        serving.cancel_scope.cancel()


async def _play_scenario(
    hub: WorkflowActivityHub,
    runner: HookRunner,
    output: Output,
    rng: random.Random,
    duration: float | None,
    interrupted: trio.Event,
    *,
    loop: bool = False,
) -> None:
    """The story once, scaled to ``duration``; or (``loop``) again and again at its natural pace
    until ``duration`` (``None``: until Ctrl-C)."""
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
    story: Callable[[], Awaitable[None]]
    if loop:
        story = partial(loop_scenario, tracker, seed=rng.randrange(2**32))
    else:
        assert duration is not None
        story = partial(run_scenario, tracker, duration=duration * 0.95, seed=rng.randrange(2**32))
    async with trio.open_nursery() as scheduler:
        await scheduler.start(tracker.run_heartbeats)
        scheduler.start_soon(story)
        # Until the time is up, Ctrl-C, or whoever reads the output went away (a closed pipe).
        with trio.move_on_after(duration if duration is not None else math.inf):
            async with trio.open_nursery() as waiting:
                for event in (interrupted, output.closed):
                    waiting.start_soon(_cancel_when_set, event, waiting.cancel_scope)
        scheduler.cancel_scope.cancel()
    # The scheduler shuts down: its source becomes unavailable, which every observer sees.
    tracker.publisher.dispose()
    await _drain(hub)


def _serves_metrics(args: argparse.Namespace) -> bool:
    """``--serve`` serves ``/metrics`` too, unless ``--no-metrics``."""
    return getattr(args, "serve", None) is not None and not getattr(args, "no_metrics", False)


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
    try:
        server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    except OSError as error:
        raise CommandError(f"--metrics-port {port}: {describe_os_error(error)}") from None
    print(f"metrics at http://127.0.0.1:{server.server_port}/metrics", file=sys.stderr)

    def stop() -> None:
        server.shutdown()
        thread.join(timeout=5)

    return HubMetrics(registry), stop
