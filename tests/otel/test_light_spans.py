"""The book's spans made after the fact (``_light``) are the spans the SDK's own live spans would
have been: same names, parents, kinds, attributes, events, statuses, times, resource and scope,
over random tracker facts (issue 41's cost work must not change what is exported).

Both books read the same recorded lifecycle events; ids are random, so spans are compared by
their position in end order and parents by the position of the parent.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased

from tests.otel.test_span_properties import _play
from workflow_hub import LifecycleEvent
from workflow_hub.otel import _attributes
from workflow_hub.otel._light import LightTracer, light_tracer
from workflow_hub.otel._spans import SpanBook


def _replay(
    events: list[LifecycleEvent], *, light: bool, sampler: Any = None
) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    options: dict[str, Any] = {"resource": Resource.create({"service.name": "same"})}
    if sampler is not None:
        options["sampler"] = sampler
    provider = TracerProvider(**options)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("workflow_hub.otel", schema_url=_attributes.SCHEMA_URL)
    book = SpanBook(LightTracer(tracer) if light else tracer, source="src")  # type: ignore[arg-type]
    for event in events:
        book.lifecycle(event)
    book.close(10_000_000.0)
    return list(exporter.get_finished_spans())


def _shape(spans: list[ReadableSpan]) -> list[tuple[Any, ...]]:
    position = {span.context.span_id: index for index, span in enumerate(spans)}
    traces = {span.context.trace_id: index for index, span in reversed(list(enumerate(spans)))}
    return [
        (
            span.name,
            span.kind,
            None if span.parent is None else position.get(span.parent.span_id, "outside"),
            traces[span.context.trace_id],
            span.context.trace_flags,
            dict(span.attributes or {}),
            [(e.name, dict(e.attributes or {}), e.timestamp) for e in span.events],
            (span.status.status_code, span.status.description),
            span.start_time,
            span.end_time,
            span.resource.attributes,
            span.instrumentation_scope,
        )
        for span in spans
    ]


@settings(deadline=None, max_examples=50)
@given(data=st.data(), steps=st.integers(1, 50))
def test_spans_made_after_the_fact_are_the_sdk_spans(data: st.DataObject, steps: int) -> None:
    _, events, _, _ = _play(data, steps)
    sdk = _replay(events, light=False)
    light = _replay(events, light=True)
    assert _shape(light) == _shape(sdk)
    # A sampler other than the SDK's default instance is asked, as the SDK asks it.
    asked = _replay(events, light=True, sampler=ParentBased(ALWAYS_ON))
    assert _shape(asked) == _shape(sdk)
    # The provider's sampler still decides.
    assert _replay(events, light=True, sampler=ALWAYS_OFF) == []


def test_only_an_sdk_tracer_is_made_light() -> None:
    from opentelemetry import trace

    assert isinstance(light_tracer(TracerProvider().get_tracer("x", "1.0")), LightTracer)
    api = trace.NoOpTracerProvider().get_tracer("x")
    assert light_tracer(api) is api
