"""Spans made after the fact: the book's spans as plain records, handed to the SDK's processors
as finished ``ReadableSpan`` objects.

Every span the book makes has its start and end time from events it already holds, so the SDK's
live-span machinery (a lock per span, attribute validation on every set, context tokens, span
processors called at start) is work for nothing: it was most of tracing's cost in the hook task
(docs/otel.md, Cost). A :class:`LightTracer` keeps what an SDK ``Tracer`` decides at start (its
sampler's decision, its id generator's ids, its resource and instrumentation scope) and, at
``end``, builds the ``ReadableSpan`` the SDK's span would have built and gives it to the tracer's
span processor (the batch processor, and whatever else the provider has). Processors' ``on_start``
is not called: there is no live span to give them.

Any other tracer (the API's no-op or proxy tracer, a vendor's) is used as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from time import time_ns

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace.sampling import DEFAULT_ON, Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
)
from opentelemetry.util.types import Attributes, AttributeValue

__all__ = ["LightTracer", "light_tracer"]

_UNSET = Status(StatusCode.UNSET)


class LightTracer:
    """``start_span`` as the book calls it, for an SDK tracer, without the SDK's live span."""

    def __init__(self, tracer: SdkTracer) -> None:
        self._tracer = tracer
        self._sampler = tracer.sampler
        self._ids = tracer.id_generator
        self._processor = tracer.span_processor
        self._resource = tracer.resource
        info = tracer.instrumentation_info  # the scope its spans carry, from its public half
        self._scope = InstrumentationScope(info.name, info.version, info.schema_url)
        limits = getattr(tracer, "_span_limits", None)
        self._limits = limits if isinstance(limits, SpanLimits) else SpanLimits()
        self._random_ids = self._ids.is_trace_id_random()
        self._default_sampler = self._sampler is DEFAULT_ON

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, AttributeValue] | None = None,
        start_time: int | None = None,
    ) -> Span:
        """``Tracer.start_span``'s arguments (those the book uses)."""
        return self.start_child(
            name, trace.get_current_span(context), attributes, start_time, kind=kind
        )

    def start_child(
        self,
        name: str,
        parent_span: Span | None,
        attributes: Mapping[str, AttributeValue] | None,
        start_time: int | None,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        """A span under ``parent_span`` (a root one without), with no ``Context`` made or read
        unless a sampler other than the default must be given one."""
        parent = (
            trace.INVALID_SPAN_CONTEXT if parent_span is None else parent_span.get_span_context()
        )
        if parent.is_valid:
            trace_id = parent.trace_id
            random_id = parent.trace_flags.random_trace_id
            parent_context: SpanContext | None = parent
        else:
            trace_id = self._ids.generate_trace_id()
            random_id = self._random_ids
            parent_context = None
        if self._default_sampler:
            # The SDK's default, ParentBased(ALWAYS_ON), decided without its calls: a root is
            # sampled, a child as its parent was, with its parent's trace state.
            recording = parent_context is None or parent.trace_flags.sampled
            sample = recording
            trace_state = None if parent_context is None else parent.trace_state
            values = dict(attributes or {})
        else:
            context = Context() if parent_span is None else trace.set_span_in_context(parent_span)
            result = self._sampler.should_sample(context, trace_id, name, kind, attributes)
            recording = result.decision is not Decision.DROP
            sample = result.decision is Decision.RECORD_AND_SAMPLE
            trace_state = result.trace_state
            values = dict(result.attributes or {})  # the SDK's span keeps the sampler's set
        flags = TraceFlags.SAMPLED if sample else TraceFlags.DEFAULT
        if random_id:
            flags |= TraceFlags.RANDOM_TRACE_ID
        span_context = SpanContext(
            trace_id,
            self._ids.generate_span_id(),
            is_remote=False,
            trace_flags=TraceFlags(flags),
            trace_state=trace_state,
        )
        if not recording:
            return NonRecordingSpan(span_context)
        return _LightSpan(self, name, span_context, parent_context, kind, values, start_time)

    def finish(self, span: _LightSpan, end_time: int | None) -> None:
        limits = self._limits
        attributes = span.attributes
        if limits.max_span_attributes is not None and len(attributes) > limits.max_span_attributes:
            attributes = dict(list(attributes.items())[: limits.max_span_attributes])
        events: Sequence[Event] = span.events
        if limits.max_events is not None and len(events) > limits.max_events:
            events = events[-limits.max_events :]  # the SDK keeps the newest
        self._processor.on_end(
            ReadableSpan(
                name=span.name,
                context=span.context,
                parent=span.parent,
                resource=self._resource,
                attributes=attributes,
                events=events,
                kind=span.kind,
                status=span.status,
                start_time=span.start_time,
                end_time=time_ns() if end_time is None else end_time,
                instrumentation_scope=self._scope,
            )
        )


class _LightSpan(Span):
    """A span's data until it ends; ``end`` hands it, finished, to the processors."""

    __slots__ = (
        "_ended",
        "_owner",
        "attributes",
        "context",
        "events",
        "kind",
        "name",
        "parent",
        "start_time",
        "status",
    )

    def __init__(
        self,
        owner: LightTracer,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: dict[str, AttributeValue],
        start_time: int | None,
    ) -> None:
        self._owner = owner
        self.name = name
        self.context = context
        self.parent = parent
        self.kind = kind
        self.attributes = attributes
        self.events: list[Event] = []
        self.start_time = time_ns() if start_time is None else start_time
        self.status = _UNSET
        self._ended = False

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return not self._ended

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if not self._ended:
            self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        if not self._ended:
            self.attributes.update(attributes)

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        if not self._ended:
            self.events.append(Event(name, dict(attributes or {}), timestamp))

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        del context, attributes  # the book links nothing

    def update_name(self, name: str) -> None:
        if not self._ended:
            self.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if self._ended:
            return
        self.status = status if isinstance(status, Status) else Status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        del exception, attributes, timestamp, escaped  # the book records errors as attributes

    def end(self, end_time: int | None = None) -> None:
        if not self._ended:
            self._ended = True
            self._owner.finish(self, end_time)


def light_tracer(tracer: Tracer) -> Tracer | LightTracer:
    """A :class:`LightTracer` for an SDK tracer; any other tracer as it is. (A tracer that the
    SDK's experimental, underscored ``_tracer_configurator`` disables is not told apart: only
    its private state says so.)"""
    if isinstance(tracer, SdkTracer):
        return LightTracer(tracer)
    return tracer
