"""``workflow-hub watch URL``: a served hub (http://…) or a fleet (redis://…) from a terminal.

It draws the demo's live view of a hub served by ``workflow_hub.server`` (or, on a pipe, one line
per frame and per hook event), with the connection's state: connecting, live, reconnecting (with
the reason, and the picture marked stale), or resynced from a snapshot. Before it opens its
stream it fetches the snapshot once (``_fetch_hub``), so that a URL where no hub answers is one line
saying why, not a view that says "connecting" forever. Needs the ``server`` extra, imported only
when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from functools import partial
from typing import TYPE_CHECKING

import trio

from ._errors import CommandError, UsageError, leaves, until_ctrl_c
from ._fetch_hub import NotYet, fetch_snapshot, why_down
from ._options import seconds
from ._urls import check_fleet_url, hub_url, names_fleet
from ._watch_fleet import add_watch_arguments, run_watch

if TYPE_CHECKING:
    from ..remote import RemoteStream
    from ._output import Output

__all__ = ["add_arguments", "connection_state", "run"]

_REDRAW_EVERY = 0.25
LIVE_INTERVAL = 0.1
"""Seconds the live view lets a served hub gather frames between two writes (``?interval=``):
each root's latest arrives, at most a tenth of a second late, under views redrawn 4 times a
second."""
# How long the connection may be down before watch asks the server itself why.
_ASK_WHY_AFTER = 1.0
_ASK_WHY_EVERY = 2.0
# How often watch asks Alertmanager how many of the hub's alerts fire (--alertmanager).
_COUNT_ALERTS_EVERY = 5.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        help="a served hub's base URL (http://127.0.0.1:8765; http:// may be left out) or a "
        "fleet's Redis (redis://HOST:PORT/DB: one line per source)",
    )
    parser.add_argument("--token", default=None, help="http:// only: the token the server wants")
    parser.add_argument(
        "--duration",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="stop after this long (default: until Ctrl-C)",
    )
    parser.add_argument(
        "--alertmanager",
        metavar="URL",
        default=None,
        help="also show how many workflow alerts this Alertmanager has firing (for a served "
        "hub, those of its HOST:PORT; for redis://, the whole fleet's), asked every 5 s",
    )

    add_watch_arguments(parser)


def connection_state(stream: RemoteStream) -> str:
    """What a person watching needs to know about the connection, in three words at most."""
    if not stream.connected:
        return "reconnecting" if stream.cursor is not None else "connecting"
    if stream.resynced:
        return "resynced from a snapshot"
    return "live"


def run(args: argparse.Namespace) -> int:
    if args.alertmanager is not None and not args.alertmanager.startswith(("http://", "https://")):
        raise UsageError(f"--alertmanager {args.alertmanager}: expected an http:// URL")
    if names_fleet(args.url):
        check_fleet_url(args.url)
        return run_watch(args)
    args.url = hub_url(args.url, command="watch")
    return _watch_http(args)


def _watch_http(args: argparse.Namespace) -> int:
    from ._output import PlainOutput
    from ._terminal import rich_output_or_plain

    # Fails fast, in one line, when nothing (or not a hub) answers there, or the token is wrong;
    # a fleet's source that is not there yet is waited for (the view says so).
    started = time.monotonic()
    with contextlib.suppress(NotYet):
        fetch_snapshot(args.url, args.token)
    output: Output = rich_output_or_plain() if sys.stdout.isatty() else PlainOutput(sys.stdout)
    shown = -1  # stays so when Ctrl-C ends the watch (however deep trio raised it)
    with until_ctrl_c():
        shown = trio.run(_watch, args, output)
    if shown < 0:
        return 0
    if shown == 0:
        waited = time.monotonic() - started
        raise CommandError(
            f"{args.url}: nothing to show: no frame arrived in {waited:.2g} s"
            + (" (--duration ended the watch first)" if args.duration else "")
        )
    return 0


async def _watch(args: argparse.Namespace, output: Output) -> int:
    """Draw frames until the duration ends; the number of frames drawn."""
    from ..remote import RemoteHub
    from ..reporting import ActivityView

    if hasattr(output, "title"):
        output.title = "workflow-hub watch"
    view = ActivityView()
    shown = 0
    draw_changes = getattr(output, "draw_changes", None)
    # The live view shows each root's latest state, so it asks the server to conflate while it
    # lags (each root's latest frame, not every frame in between, nor an overflow's snapshot):
    # fewer frames to decode when the watch is behind; and to write at most every
    # LIVE_INTERVAL, so that a root changing a thousand times a second is decoded ten times,
    # not a thousand (issue 38: the watch cost more CPU than the bridge it watched). A server
    # that cannot (a hosted hub) says 400, and the watch takes the full stream. Lines on a pipe
    # keep every frame.
    conflate = draw_changes is not None
    with output, trio.move_on_after(args.duration if args.duration else float("inf")):
        while True:
            try:
                async with (
                    RemoteHub(args.url, token=args.token).subscribe(
                        conflate=conflate, interval=LIVE_INTERVAL if conflate else None
                    ) as stream,
                    trio.open_nursery() as nursery,
                ):
                    nursery.start_soon(
                        _show_connection, stream, output, args.url, args.token, args.alertmanager
                    )
                    nursery.start_soon(_show_hook_events, args.url, args.token, output)
                    nursery.start_soon(_end_when_closed, output, nursery.cancel_scope)
                    if draw_changes is not None:  # the live view: redraws coalesced (``_rich``)
                        nursery.start_soon(draw_changes)
                    async for frame in stream:
                        view.apply(frame)
                        output.frame(frame, view)
                        shown += 1
                    nursery.cancel_scope.cancel()
                break
            except BaseException as error:
                if not (conflate and _refused_conflation(error)):
                    raise
                conflate = False
    return shown


def _refused_conflation(error: BaseException) -> bool:
    """Whether the server refused the stream with a 400 (a hosted hub cannot conflate)."""
    from ..remote import RemoteError

    found = [leaf for leaf in leaves(error) if not isinstance(leaf, trio.Cancelled)]
    return bool(found) and all(
        isinstance(leaf, RemoteError) and leaf.status == 400 for leaf in found
    )


async def _end_when_closed(output: Output, scope: trio.CancelScope) -> None:
    """Whoever read the output went away (``watch URL | head``): the watch ends."""
    await output.closed.wait()
    scope.cancel()


async def _show_connection(
    stream: RemoteStream,
    output: Output,
    url: str,
    token: str | None,
    alertmanager: str | None = None,
) -> None:
    """Redraw when the connection's state changes, even when no frame arrives; while it is down,
    say why (the server's own answer to one snapshot request). With ``alertmanager``, the state
    also says how many of the hub's alerts fire there (asked every few seconds)."""
    shown: str | None = None
    down_since: float | None = None
    asked_at = -float("inf")
    why = ""
    alerts = ""
    counted_at = -float("inf")
    while True:
        state = connection_state(stream)
        now = trio.current_time()
        if stream.connected:
            down_since, why = None, ""
        else:
            down_since = now if down_since is None else down_since
            if now - down_since >= _ASK_WHY_AFTER and now - asked_at >= _ASK_WHY_EVERY:
                asked_at = now
                why = await trio.to_thread.run_sync(partial(why_down, url, token))
        if why:
            state = f"{state} ({why})"
        if alertmanager is not None:
            if now - counted_at >= _COUNT_ALERTS_EVERY:
                counted_at = now
                alerts = await trio.to_thread.run_sync(partial(_alerts_firing, alertmanager, url))
            state += alerts
        if state != shown:
            shown = state
            refresh = getattr(output, "refresh", None)
            if refresh is not None:
                output.connection = state  # type: ignore[attr-defined]
                refresh()
            else:
                print(f"connection {state}", flush=True)
        await trio.sleep(_REDRAW_EVERY)


def _alerts_firing(alertmanager: str, url: str) -> str:
    from ._alert_count import alert_suffix, firing_alerts

    return alert_suffix(firing_alerts(alertmanager, url, timeout=_COUNT_ALERTS_EVERY))


async def _show_hook_events(url: str, token: str | None, output: Output) -> None:
    """The hook pane: ``/v1/events`` when the server has a runner; nothing when it has none.

    Hook events are notifications without resume, so a dropped connection just reconnects.
    """
    import httpx
    from httpx_sse import EventSource, SSEError

    from .._contract import WorkflowEvent
    from ..wire import loads

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx.Timeout(10.0, read=45.0)
    async with httpx.AsyncClient(headers=headers, timeout=timeout) as client:
        while True:
            try:
                async with client.stream("GET", f"{url.rstrip('/')}/v1/events") as response:
                    if response.status_code != 200:
                        # No runner (404) or not allowed: the view goes on, and says why the
                        # pane stays empty rather than waiting for events that never come.
                        off = getattr(output, "hooks_off", None)
                        if off is not None:
                            off(
                                "off (the server was started without a HookRunner)"
                                if response.status_code == 404
                                else f"not shown (HTTP {response.status_code})"
                            )
                        return
                    async for event in EventSource(response).aiter_sse():
                        if event.event == "dropped":
                            continue
                        output.hook(loads(WorkflowEvent, event.data))
            except (httpx.TransportError, SSEError):
                pass
            await trio.sleep(1.0)
