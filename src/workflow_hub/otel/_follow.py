"""``trace_source``: a served hub's lifecycle events as traces, from anywhere.

What ``workflow-hub otel URL`` runs. The events come from the server's ``/v1/events`` stream (its
``HookRunner``'s events; notifications without resume: after a reconnection, runs that changed
meanwhile are first seen mid-flight, and marked so); the roots present come from its resuming
frame stream (``workflow_hub.remote``), which feeds the sweep and the roots' gauge. Needs the
``server`` extra besides ``otel`` (httpx), imported when it runs.
"""

from __future__ import annotations

from collections.abc import Callable

import trio
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider as ApiTracerProvider

from .._contract import (
    ActivityChangedEvent,
    Availability,
    ChangedFrame,
    ContractError,
    LifecycleEvent,
    RemovedFrame,
    SnapshotFrame,
    WorkflowEvent,
)
from ._metrics import RootGauge
from ._tracing import (
    DEFAULT_SWEEP_INTERVAL,
    HubTracing,
    build_tracing,
    check_interval,
    shut_down,
    sweep_loop,
    wall_ms,
)

__all__ = ["trace_source"]

_RECONNECT_AFTER = 1.0


class _Roots:
    """The roots a source holds now, from its frames; None while it is not ready (N4)."""

    def __init__(self, gauge: RootGauge | None) -> None:
        self.present: set[str] | None = None
        self._gauge = gauge

    def frame(self, frame: object) -> None:
        if isinstance(frame, SnapshotFrame):
            ready = frame.availability is Availability.READY and frame.roots is not None
            self.present = {root.root_run_id for root in frame.roots or ()} if ready else None
        elif isinstance(frame, ChangedFrame) and self.present is not None:
            self.present.add(frame.root.root_run_id)
        elif isinstance(frame, RemovedFrame) and self.present is not None:
            self.present.discard(frame.root_run_id)
        if self._gauge is not None:
            self._gauge(frame)  # type: ignore[arg-type]

    def now(self) -> set[str] | None:
        return None if self.present is None else set(self.present)


async def trace_source(
    url: str,
    *,
    token: str | None = None,
    tracer_provider: ApiTracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    source: str | None = None,
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
    clock: Callable[[], float] = wall_ms,
    task_status: trio.TaskStatus[HubTracing] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Trace the hub served at ``url`` (``workflow_hub.server``, started with a ``HookRunner``)
    until cancelled: ``tracing = await nursery.start(trace_source, url)``.

    The spans are :func:`open_tracing`'s; ``source`` (the URL by default) is on every run's span.
    The tracer provider is built from the ``OTEL_*`` variables unless given, and shut down at the
    end (at most 5 seconds); every span still open then ends, marked ``exporter_closed``.
    """
    if not isinstance(url, str) or not url:
        raise ContractError("url", "expected a served hub's base URL")
    if token is not None and not isinstance(token, str):
        raise ContractError("token", f"expected a string, got {type(token).__name__}")
    check_interval(sweep_interval)
    tracing = build_tracing(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        source=url if source is None else source,
    )
    gauge = None if meter_provider is None else RootGauge(meter_provider, tracing.source)
    if gauge is not None:
        tracing.count_roots(gauge, None)
    roots = _Roots(gauge)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_follow_frames, url, token, roots)
            nursery.start_soon(_follow_events, url, token, tracing)
            nursery.start_soon(sweep_loop, roots.now, tracing, sweep_interval, clock)
            task_status.started(tracing)
    except BaseExceptionGroup as group:
        refused, rest = group.split(ContractError)
        if refused is None or rest is not None:
            raise
        raise _first(refused) from None
    finally:
        tracing.close(clock())
        await shut_down(tracing)


def _first(group: BaseExceptionGroup[ContractError]) -> ContractError:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


async def _follow_frames(url: str, token: str | None, roots: _Roots) -> None:
    from ..remote import open_remote

    async with open_remote(url, token=token) as stream:
        async for frame in stream:
            roots.frame(frame)


async def _follow_events(url: str, token: str | None, tracing: HubTracing) -> None:
    import httpx
    from httpx_sse import EventSource, SSEError

    from ..wire import loads

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx.Timeout(10.0, read=45.0)
    async with httpx.AsyncClient(headers=headers, timeout=timeout) as client:
        while True:
            try:
                async with client.stream("GET", f"{url.rstrip('/')}/v1/events") as response:
                    if response.status_code == 404:
                        raise ContractError(
                            "url", f"{url} serves no hook events (started without a HookRunner)"
                        )
                    if response.status_code in (401, 403):
                        raise ContractError(
                            "token", f"{url} refused it (HTTP {response.status_code})"
                        )
                    if response.status_code == 200:
                        tracing.reached = True
                        async for message in EventSource(response).aiter_sse():
                            if message.event == "dropped":
                                continue
                            event = loads(WorkflowEvent, message.data)
                            if isinstance(event, LifecycleEvent):
                                tracing.lifecycle(event)
                            elif isinstance(event, ActivityChangedEvent):
                                tracing.activity(event)
            except (httpx.TransportError, SSEError):
                pass
            await trio.sleep(_RECONNECT_AFTER)
