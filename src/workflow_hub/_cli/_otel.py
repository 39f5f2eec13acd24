"""``workflow-hub otel URL``: a served hub's runs as OpenTelemetry traces, sent over OTLP.

The command parses its arguments and hands them to ``workflow_hub.otel.trace_source``, which
does the work; the exporter is configured by the standard ``OTEL_*`` variables (OTLP over HTTP
to localhost:4318 by default). Needs the ``otel`` and ``server`` extras, imported when it runs.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

import trio

from ._errors import CommandError, until_ctrl_c
from ._options import seconds
from ._urls import hub_url, names_fleet

if TYPE_CHECKING:
    from ..otel import HubTracing

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        help="a served hub's base URL (http://127.0.0.1:8765; http:// may be left out), served "
        "with a HookRunner (workflow-hub serve does)",
    )
    parser.add_argument("--token", default=None, help="the token the server wants")
    parser.add_argument(
        "--source",
        default=None,
        help="the workflow_hub.source attribute of every run's span (default: the URL)",
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


def _leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _leaf(first) if isinstance(first, BaseExceptionGroup) else first


def run(args: argparse.Namespace) -> int:
    if names_fleet(args.url):
        raise CommandError(
            f"{args.url}: a fleet cannot be traced yet; give one served hub's http:// URL"
        )
    url = hub_url(args.url, command="otel")
    try:
        import opentelemetry.exporter.otlp.proto.http
        import opentelemetry.sdk  # noqa: F401
    except ImportError as missing:
        raise CommandError(
            f"workflow-hub otel needs the otel extra: pip install 'workflow-hub[otel]' ({missing})"
        ) from None
    from ..otel import trace_source

    found: list[HubTracing] = []

    async def main() -> None:
        duration = args.duration if args.duration else math.inf
        with trio.move_on_after(duration):
            async with trio.open_nursery() as nursery:
                found.append(
                    await nursery.start(
                        lambda task_status: trace_source(
                            url,
                            token=args.token,
                            source=args.source,
                            sweep_interval=args.sweep_interval,
                            task_status=task_status,
                        )
                    )
                )

    from .._contract import ContractError

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
    if found:
        statistics = found[0].statistics()
        export = statistics.export
        sent = (
            ""
            if export is None
            else (f", {export.exported} exported, {export.failed} failed, {export.dropped} dropped")
        )
        print(f"otel: {statistics.spans_ended} spans{sent}", flush=True)
    return 0
