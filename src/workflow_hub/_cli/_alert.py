"""``workflow-hub alert SOURCE``: a hub's or a fleet's alerts, sent to Alertmanager and webhooks.

SOURCE is what ``watch`` takes: a served hub's URL (``http://…``) or a fleet's Redis
(``redis://…``). This module parses the arguments and opens the source; the library's
:func:`workflow_hub.alerts.serve_alerts` does the rest. Each alert that fires or resolves is also
one line on stdout. Needs the ``alerts`` extra (httpx; a hub URL needs the ``server`` extra, a
fleet the ``redis`` extra), imported when it runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING, Any

from ._errors import UsageError, until_ctrl_c
from ._fetch_hub import probe_followed_hub
from ._options import address, parse_address, seconds
from ._urls import check_fleet_url, fleet_settings, hub_url, names_fleet, open_fleet
from ._watch_fleet import add_watch_arguments

if TYPE_CHECKING:
    from ..alerts import AlertNotification

__all__ = ["add_arguments", "notification_line", "run"]

_DRAIN = 5.0
"""Seconds a stopping command gives its sinks to deliver what they hold."""


def duration(text: str) -> float:
    """Seconds >= 0 (0: at once)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..alerts import DEFAULT_NEEDS_ATTENTION_FOR, DEFAULT_STUCK_AFTER, DEFAULT_UNKNOWN_AFTER

    parser.add_argument(
        "url",
        metavar="SOURCE",
        help="a served hub's base URL (http://127.0.0.1:8765) or a fleet's Redis (redis://HOST:PORT/DB)",
    )
    parser.add_argument("--token", default=None, help="http:// only: the token the server wants")
    parser.add_argument(
        "--alertmanager",
        metavar="URL",
        default=None,
        help="an Alertmanager to send the alerts to (http://127.0.0.1:9093)",
    )
    parser.add_argument(
        "--webhook",
        metavar="URL",
        action="append",
        default=[],
        help="a URL to POST each alert to as a CloudEvent, signed with the secret in "
        "WORKFLOW_HUB_WEBHOOK_SECRET (or the file WORKFLOW_HUB_WEBHOOK_SECRET_FILE names); "
        "repeatable",
    )
    parser.add_argument(
        "--needs-attention-for",
        type=duration,
        default=DEFAULT_NEEDS_ATTENTION_FOR,
        metavar="SECONDS",
        help=f"how long a root needs attention before it alerts (default {DEFAULT_NEEDS_ATTENTION_FOR:g})",
    )
    parser.add_argument(
        "--stuck-after",
        type=duration,
        default=DEFAULT_STUCK_AFTER,
        metavar="SECONDS",
        help=f"how long a working root may go without a change (default {DEFAULT_STUCK_AFTER:g})",
    )
    parser.add_argument(
        "--unknown-after",
        type=duration,
        default=DEFAULT_UNKNOWN_AFTER,
        metavar="SECONDS",
        help=f"how long a source may be unknown (default {DEFAULT_UNKNOWN_AFTER:g})",
    )
    parser.add_argument(
        "--resend-interval",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="how often firing alerts are sent to Alertmanager again (default 60)",
    )
    parser.add_argument(
        "--dashboard",
        metavar="URL",
        default=None,
        help="the dashboard the alerts link to (default: the served hub's own; none for redis://)",
    )
    parser.add_argument(
        "--name",
        default=None,
        help="http:// only: the alerts' 'source' label (default: the URL's HOST:PORT, or NAME "
        "for a served fleet's URL/sources/NAME)",
    )
    parser.add_argument(
        "--metrics",
        type=address,
        metavar="[HOST:]PORT",
        default=None,
        help="serve /metrics (Prometheus) there: alerts firing, notifications sent, failed, dropped",
    )
    parser.add_argument(
        "--duration",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="stop after this long (default: until Ctrl-C or SIGTERM)",
    )
    add_watch_arguments(parser)


def notification_line(notification: AlertNotification) -> str:
    """One line per alert that fires or resolves."""
    alert = notification.alert
    where = alert.source if alert.root_run_id is None else f"{alert.source} {alert.root_run_id}"
    return f"{notification.kind} {alert.name} {where}: {alert.summary}"


def run(args: argparse.Namespace) -> int:
    if not args.alertmanager and not args.webhook:
        raise UsageError("nowhere to send alerts: give --alertmanager URL and/or --webhook URL")
    for option, url in [("--alertmanager", args.alertmanager)] + [
        ("--webhook", url) for url in args.webhook
    ]:
        if url is not None and not url.startswith(("http://", "https://")):
            raise UsageError(f"{option} {url}: expected an http:// or https:// URL")
    fleet = names_fleet(args.url)
    if fleet:
        check_fleet_url(args.url)
        if args.token is not None:
            raise UsageError("--token is for http:// URLs; a Redis password goes in the URL")
    else:
        args.url = hub_url(args.url, command="alert")
        waiting = probe_followed_hub(args.url, args.token)
        if waiting is not None:
            # The rules say it too, once it has lasted: the source is unknown.
            print(f"workflow-hub alert: {waiting}", file=sys.stderr, flush=True)
    try:
        import httpx  # noqa: F401 - the HTTP sinks' client, checked before anything starts
    except ImportError:
        raise UsageError(
            "needs the 'alerts' extra (httpx): pip install 'workflow-hub[alerts]'"
        ) from None
    from .._contract import ContractError
    from ..alerts import SECRET_FILE_VARIABLE, SECRET_VARIABLE, webhook_secret

    try:
        secret = webhook_secret()
    except ContractError as error:
        raise UsageError(str(error)) from None
    if args.webhook and secret is None:
        print(
            f"workflow-hub alert: webhooks are not signed: set {SECRET_VARIABLE} or "
            f"{SECRET_FILE_VARIABLE}",
            file=sys.stderr,
        )
    import trio

    with until_ctrl_c():
        trio.run(_alert, args, fleet)
    return 0


async def _alert(args: argparse.Namespace, fleet: bool) -> None:
    from ..alerts import AlertRules, serve_alerts
    from ._signals import ended_by_signals

    rules = AlertRules(
        needs_attention_for=args.needs_attention_for,
        stuck_after=args.stuck_after,
        unknown_after=args.unknown_after,
        dashboard_url=args.dashboard or (None if fleet else args.url),
    )
    options: dict[str, Any] = {
        "alertmanager": args.alertmanager,
        "webhooks": args.webhook,
        "rules": rules,
        "resend_interval": args.resend_interval,
        "metrics_address": None if args.metrics is None else parse_address(args.metrics),
        "on_notification": lambda n: print(notification_line(n), flush=True),
    }
    async with ended_by_signals() as work:
        if fleet:
            async with open_fleet(args.url, **fleet_settings(args)) as engine:
                await _serve(work, args, serve_alerts, engine, options)
        else:
            from ..remote import RemoteHub
            from ._alert_count import source_label

            name = args.name or source_label(args.url)
            await _serve(
                work,
                args,
                serve_alerts,
                RemoteHub(args.url, token=args.token),
                {**options, "name": name},
            )


async def _serve(
    work: Any, args: argparse.Namespace, serve: Any, source: Any, options: dict[str, Any]
) -> None:
    import functools

    import trio

    async with trio.open_nursery() as nursery:
        alerter = await nursery.start(functools.partial(serve, source, **options))
        if alerter.metrics_address is not None:
            host, port = alerter.metrics_address
            print(f"metrics on http://{host}:{port}/metrics", file=sys.stderr, flush=True)
        with work, trio.move_on_after(args.duration if args.duration else math.inf):
            await trio.sleep_forever()
        # Stopping: what the sinks hold is delivered first, for a few seconds at most.
        with trio.move_on_after(_DRAIN):
            await alerter.wait_delivered()
        nursery.cancel_scope.cancel()
