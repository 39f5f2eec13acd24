"""A LangGraph graph run inside a span of the user's joins the user's trace (issue 41).

The graph is real, watched by ``workflow_hub.langgraph`` through a ``workflow_hub.sync`` host;
the user's own tracer provider and the hub's both send to the loopback receiver, which sees
one trace.
"""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import workflow_hub.sync
from tests.otel.receiver import Receiver
from workflow_hub import HookRunner, LifecycleEvent, RunTarget
from workflow_hub.langgraph import watch
from workflow_hub.otel import trace_hub


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("fetch", lambda state: {"log": ["fetch"]})
    builder.add_node("answer", lambda state: {"log": ["answer"]})
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", "answer")
    builder.add_edge("answer", END)
    return builder.compile()


def test_a_langgraph_run_inside_a_users_span_nests_under_it(otlp: Receiver) -> None:
    user_provider = TracerProvider()
    user_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=otlp.endpoint)))
    user_tracer = user_provider.get_tracer("the-users-app")
    turn_ended = threading.Event()

    def watch_turns(event: LifecycleEvent) -> None:
        target = event.target
        turn = isinstance(target, RunTarget) and event.run_id != event.root_run_id
        if turn and str(target.status) == "completed":
            turn_ended.set()

    with workflow_hub.sync.open_hub() as host:
        runner = host.call(HookRunner, host.trio_hub)
        tracing = host.call(trace_hub, runner)
        # Loaded after "otel": when it sees the turn end, the tracing has folded it in (K3).
        host.call(lambda: runner.extension("test").on("workflow_lifecycle", watch_turns))
        host.call(runner.bind)
        tracker = host.tracker(owner_session_id="s")
        tracker.start()
        watched = watch(_graph(), tracing.facts(tracker))
        with user_tracer.start_as_current_span("user request") as user_span:
            result = watched.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
        assert result == {"log": ["fetch", "answer"]}
        assert turn_ended.wait(30)
        host.call(tracing.close)
    tracing.shutdown()
    user_provider.shutdown()

    user = otlp.by_name("user request")
    context = user_span.get_span_context()
    assert user.span_id == format(context.span_id, "016x")
    hub_spans = [span for span in otlp.spans if span.scope == "workflow_hub.otel"]
    assert hub_spans
    assert {span.trace_id for span in hub_spans} == {user.trace_id}
    root = otlp.by_name("RUN t")
    assert root.parent_span_id == user.span_id
    names = {span.name for span in hub_spans}
    assert {"fetch", "answer"} <= names
    # Every hub span's parent chain leads to the user's span.
    by_id = {span.span_id: span for span in otlp.spans}
    for span in hub_spans:
        chain = span
        while chain.parent_span_id in by_id and chain.span_id != user.span_id:
            chain = by_id[chain.parent_span_id]
        assert chain.span_id == user.span_id, span.name
