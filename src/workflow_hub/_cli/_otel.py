"""``workflow-hub otel URL``: a served hub's (or a fleet's) runs as OpenTelemetry traces, sent
over OTLP.

The command parses its arguments and hands them to ``workflow_hub.otel.trace_source`` (``trace_fleet`` for a
``redis://`` fleet), which
does the work; the exporter is configured by the standard ``OTEL_*`` variables (OTLP over HTTP
to localhost:4318 by default). Needs the ``otel`` and ``server`` extras, imported when it runs.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from collections import Counter
from typing import TYPE_CHECKING

import trio

from ._errors import CommandError, until_ctrl_c
from ._fetch_hub import probe_followed_hub
from ._options import seconds
from ._urls import check_fleet_url, fleet_settings, hub_url, names_fleet, open_fleet

if TYPE_CHECKING:
    from ..otel import FleetTracing, HubTracing

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        help="a served hub's base URL (http://127.0.0.1:8765; http:// may be left out), served "
        "with a HookRunner (workflow-hub serve does), or a fleet (redis://HOST:PORT/DB) whose "
        "mirrors have a runner (workflow-hub serve --redis does)",
    )
    parser.add_argument("--token", default=None, help="the token the server wants")
    parser.add_argument(
        "--source",
        default=None,
        help="the workflow_hub.source attribute of every run's span (default: the URL; a "
        "fleet's spans carry each source's name)",
    )
    parser.add_argument(
        "--prefix",
        default=None,
        help="redis:// only: the fleet's key prefix (default workflow-hub)",
    )
    parser.add_argument(
        "--sweep-interval",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="how often roots that left the hub without an ending event are looked for "
        "(default: 30)",
    )
    parser.add_argument(
        "--duration",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="stop after this long (default: until Ctrl-C)",
    )


def _say(line: str) -> None:
    print(f"workflow-hub otel: {line}", file=sys.stderr, flush=True)


class _OncePerKind(logging.Handler):
    """The OTel SDK's exporter logs every failed attempt (a backend that is down: a line per
    retry, for ever). The first message of each kind is shown; the rest are counted."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.shown: Counter[tuple[str, object]] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        kind = (record.name, record.msg)
        self.shown[kind] += 1
        if self.shown[kind] == 1:
            _say(f"{record.getMessage()} (the OTel SDK; repeats are counted, not shown)")

    @property
    def hidden(self) -> int:
        return sum(count - 1 for count in self.shown.values())


def _endpoint() -> str:
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return f"{base.rstrip('/')}/v1/traces"


def _leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _leaf(first) if isinstance(first, BaseExceptionGroup) else first


def run(args: argparse.Namespace) -> int:
    fleet = names_fleet(args.url)
    if fleet:
        check_fleet_url(args.url)
        if args.token is not None or args.source is not None:
            raise CommandError(
                "--token and --source are for http:// URLs: a fleet's spans carry each source's "
                "name, and a Redis password goes in the URL (redis://:PASSWORD@HOST:PORT/DB)"
            )
        url = args.url
    else:
        if args.prefix is not None:
            raise CommandError("--prefix is for redis:// URLs")
        url = hub_url(args.url, command="otel")
        waiting = probe_followed_hub(url, args.token)
        if waiting is not None:
            _say(waiting)
    try:
        import opentelemetry.exporter.otlp.proto.http
        import opentelemetry.sdk  # noqa: F401
    except ImportError as missing:
        raise CommandError(
            f"workflow-hub otel needs the otel extra: pip install 'workflow-hub[otel]' ({missing})"
        ) from None
    from ..otel import trace_fleet, trace_source

    found: list[HubTracing | FleetTracing] = []

    async def follow(task_status: trio.TaskStatus[HubTracing]) -> None:
        await trace_source(
            url,
            token=args.token,
            source=args.source,
            sweep_interval=args.sweep_interval,
            task_status=task_status,
        )

    async def follow_fleet(task_status: trio.TaskStatus[FleetTracing]) -> None:
        async with open_fleet(url, connect_timeout=5.0, **fleet_settings(args)) as engine:
            await trace_fleet(engine, sweep_interval=args.sweep_interval, task_status=task_status)

    async def main() -> None:
        duration = args.duration if args.duration else math.inf
        with trio.move_on_after(duration):
            async with trio.open_nursery() as nursery:
                found.append(await nursery.start(follow_fleet if fleet else follow))

    from .._contract import ContractError

    sdk_log = logging.getLogger("opentelemetry")
    repeats = _OncePerKind()
    sdk_log.addHandler(repeats)
    sdk_log.propagate = False
    try:
        with until_ctrl_c():
            trio.run(main)
    except ContractError as refused:
        raise CommandError(str(refused)) from None
    except BaseExceptionGroup as group:
        refused_group, rest = group.split(ContractError)
        if refused_group is None or rest is not None:
            raise
        raise CommandError(str(_leaf(refused_group))) from None
    finally:
        sdk_log.removeHandler(repeats)
        sdk_log.propagate = True
    return _report(found[0] if found else None, repeats.hidden, url, fleet)


def _report(tracing: HubTracing | FleetTracing | None, hidden: int, url: str, fleet: bool) -> int:
    """The summary line on stdout; 1 (and why, on stderr) when spans did not reach the backend
    or the hub was never reached."""
    if tracing is None:
        return 0
    statistics = tracing.statistics()
    export = statistics.export
    ended = statistics.spans_ended
    if export is None:
        print(f"otel: {ended} spans", flush=True)
        return 0
    # Mid-export or still queued when the command stopped (the backend did not answer in time).
    unsent = max(0, ended - export.exported - export.failed - export.dropped)
    line = f"otel: {ended} spans, {export.exported} exported, {export.failed} failed"
    line += f", {export.dropped} dropped" + (f", {unsent} not sent" if unsent else "")
    print(line, flush=True)
    if hidden:
        _say(f"{hidden} more messages of the OTel SDK were not shown")
    code = 0
    if not fleet and not getattr(tracing, "reached", True):
        _say(f"never reached {url}: nothing was traced")
        code = 1
    lost = export.failed + export.dropped + unsent
    if lost:
        _say(
            f"{lost} of {ended} spans did not reach {_endpoint()} (failed: refused or timed out; "
            "dropped: the queue was full; not sent: not delivered before the command stopped)"
        )
        code = 1
    return code
