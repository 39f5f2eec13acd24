"""The OTel SDK configured the OTel way, with its drops counted.

``tracer_provider_from_env`` builds what the Python SIG's auto-configuration would: a
``TracerProvider`` whose resource reads ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, a
``BatchSpanProcessor`` (its ``OTEL_BSP_*`` settings), and an OTLP exporter chosen by
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf`` by
default) that reads its endpoint, headers and timeout from the ``OTEL_EXPORTER_OTLP_*``
variables itself.

The hub's side of the processor is a deque append: a backend that is down or slow costs the
exporter's worker thread time, never the hub. The batch processor drops the oldest span when its
queue is full and only logs it; :class:`ExportCounts` counts those drops (and what the exporter
sent and failed to send) so that ``statistics()`` can show them.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

import attrs
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from .._contract import ContractError

__all__ = ["DEFAULT_SERVICE_NAME", "ExportCounts", "ExportStatistics", "tracer_provider_from_env"]

DEFAULT_SERVICE_NAME: Final = "workflow-hub"
"""``service.name`` when neither ``OTEL_SERVICE_NAME`` nor ``OTEL_RESOURCE_ATTRIBUTES`` sets it."""
_DEFAULT_QUEUE: Final = 2048


@attrs.frozen
class ExportStatistics:
    """What left the hub's spans' queue, and how."""

    queued: int
    """Spans handed to the batch processor and not yet taken by the exporter (nor dropped)."""
    exported: int
    """Spans the backend accepted."""
    failed: int
    """Spans the exporter sent and the backend refused, or that timed out (after its retries)."""
    dropped: int
    """Spans the batch processor dropped because its queue was full (the backend too slow)."""
    queue_limit: int
    """The processor's queue bound (``OTEL_BSP_MAX_QUEUE_SIZE``)."""


class ExportCounts:
    """Counts shared by the counting processor (hub side) and exporter (worker side)."""

    def __init__(self, queue_limit: int) -> None:
        self._lock = threading.Lock()
        self.queue_limit = queue_limit
        self._handed = 0
        self._taken = 0
        self._exported = 0
        self._failed = 0
        self._dropped = 0

    def handed(self) -> None:
        with self._lock:
            # The processor's deque is full: appending drops its oldest span.
            if self._handed - self._taken - self._dropped >= self.queue_limit:
                self._dropped += 1
            self._handed += 1

    def taken(self, count: int) -> None:
        with self._lock:
            self._taken += count

    def sent(self, count: int, ok: bool) -> None:
        with self._lock:
            if ok:
                self._exported += count
            else:
                self._failed += count

    def statistics(self) -> ExportStatistics:
        with self._lock:
            return ExportStatistics(
                queued=self._handed - self._taken - self._dropped,
                exported=self._exported,
                failed=self._failed,
                dropped=self._dropped,
                queue_limit=self.queue_limit,
            )


class _CountingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, counts: ExportCounts) -> None:
        self._inner = inner
        self._counts = counts

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._counts.taken(len(spans))
        try:
            result = self._inner.export(spans)
        except Exception:
            self._counts.sent(len(spans), False)
            raise
        self._counts.sent(len(spans), result is SpanExportResult.SUCCESS)
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class _CountingProcessor(SpanProcessor):
    """The batch processor, with every span it is handed counted first."""

    def __init__(self, inner: BatchSpanProcessor, counts: ExportCounts) -> None:
        self._inner = inner
        self._counts = counts

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None and span.context.trace_flags.sampled:
            self._counts.handed()
        self._inner.on_end(span)

    def shutdown(self) -> None:
        self._inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ContractError(name, f"expected an integer, got {text!r}") from None
    if value <= 0:
        raise ContractError(name, f"expected a positive integer, got {value}")
    return value


def _env_seconds(name: str) -> None:
    text = os.environ.get(name, "").strip()
    if not text:
        return
    try:
        value = float(text)
    except ValueError:
        raise ContractError(name, f"expected a number of seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise ContractError(name, f"expected a positive number of seconds, got {text!r}")


def _env_endpoint(name: str, protocol: str) -> None:
    text = os.environ.get(name, "").strip()
    if not text:
        return
    # gRPC's endpoint may leave out the scheme (host:port); HTTP's is a URL.
    url = text if "://" in text or protocol != "grpc" else f"http://{text}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ContractError(name, f"{text!r} is not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise ContractError(name, f"expected an http:// or https:// URL, got {text!r}")
    if not parts.hostname or any(c.isspace() for c in parts.netloc):
        raise ContractError(name, f"expected http://HOST:PORT, got {text!r}")
    del port  # read for its check: a port that is not 0 to 65535 raises


def _check_exporter_settings(protocol: str) -> None:
    """What the OTLP exporter reads itself and, given a bad value, logs and replaces with its
    default (or fails on at every batch): checked first, so a typo stops the program before
    anything starts."""
    for name in ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"):
        _env_seconds(name)
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        _env_endpoint(name, protocol)


def _protocol() -> str:
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = os.environ.get(name, "").strip()
        if value:
            if value not in ("http/protobuf", "grpc"):
                raise ContractError(name, f"expected 'http/protobuf' or 'grpc', got {value!r}")
            return value
    return "http/protobuf"


def _exporter(protocol: str) -> SpanExporter:
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError:
            raise ContractError(
                "OTEL_EXPORTER_OTLP_PROTOCOL",
                "grpc needs opentelemetry-exporter-otlp-proto-grpc installed "
                "(pip install opentelemetry-exporter-otlp-proto-grpc)",
            ) from None
        exporter: SpanExporter = GrpcExporter()
        return exporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def tracer_provider_from_env(
    *,
    exporter: SpanExporter | None = None,
    resource_attributes: Mapping[str, str] | None = None,
) -> tuple[TracerProvider, ExportCounts]:
    """A tracer provider configured from the standard ``OTEL_*`` variables, and its counts.

    ``exporter`` replaces the OTLP exporter (a console exporter, a test's); the batch processor
    and the counting stay. ``OTEL_SERVICE_NAME`` names the service, ``workflow-hub`` when unset.
    A bad setting is a ``ContractError`` naming the variable, raised before anything starts.
    """
    queue_limit = _env_int("OTEL_BSP_MAX_QUEUE_SIZE", _DEFAULT_QUEUE)
    # Read by the batch processor itself, which logs a bad one and takes its default.
    _env_int("OTEL_BSP_SCHEDULE_DELAY", 0)
    _env_int("OTEL_BSP_EXPORT_TIMEOUT", 0)
    if exporter is None:
        protocol = _protocol()
        _check_exporter_settings(protocol)
        chosen = _exporter(protocol)
    else:
        chosen = exporter
    attributes: dict[str, str] = dict(resource_attributes or {})
    if not os.environ.get("OTEL_SERVICE_NAME") and "service.name" not in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    ):
        attributes.setdefault(SERVICE_NAME, DEFAULT_SERVICE_NAME)
    counts = ExportCounts(queue_limit)
    provider = TracerProvider(resource=Resource.create(attributes))
    batch_size = min(_env_int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), queue_limit)
    batch = BatchSpanProcessor(
        _CountingExporter(chosen, counts),
        max_queue_size=queue_limit,
        max_export_batch_size=batch_size,
    )
    provider.add_span_processor(_CountingProcessor(batch, counts))
    return provider, counts
