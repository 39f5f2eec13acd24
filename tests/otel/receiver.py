"""A loopback OTLP receiver: what a collector sees of the hub's spans, decoded with the
official ``opentelemetry-proto`` messages (no OpenTelemetry Collector or Jaeger installs from
the registries this project uses).

Over ``http`` it serves ``POST /v1/traces`` on 127.0.0.1, port 0, in a thread (the SDK's
exporter is synchronous and runs in the batch processor's thread); over ``grpc`` it is a real
grpcio server of the OTLP ``TraceService`` (the servicer ``opentelemetry-proto`` generates), on
127.0.0.1 too. ``mode`` says how it answers: ``ok`` (the ``ExportTraceServiceResponse``),
``refuse`` (HTTP 400, gRPC ``INVALID_ARGUMENT``: the exporter does not retry either), or
``hang`` (the request is read and never answered until the receiver stops).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    return getattr(value, kind) if kind is not None else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


@attrs.frozen
class ReceivedSpan:
    """One span as the backend stores it (ids as hex, times in nanoseconds)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start: int
    end: int
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    attributes: dict[str, Any]
    events: tuple[tuple[str, int, dict[str, Any]], ...]
    resource: dict[str, Any]
    scope: str
    schema_url: str

    @property
    def event_names(self) -> list[str]:
        return [name for name, _, _ in self.events]


class Receiver:
    def __init__(self, mode: str = "ok", transport: str = "http") -> None:
        self.mode = mode
        self.transport = transport
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.content_types: list[str] = []
        self._changed = threading.Condition()
        self._release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.received(self.path, self.headers.get("Content-Type", ""), body)
                if receiver.mode == "hang":
                    receiver._release.wait()
                    return
                if receiver.mode == "refuse":
                    self.send_response(400)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http: ThreadingHTTPServer | None = None
        self._grpc: Any = None  # a grpc.Server
        if transport == "grpc":
            self._grpc = self._grpc_server()
            port = self._grpc.add_insecure_port("127.0.0.1:0")
            # The gRPC exporter takes no path, and an http:// endpoint means no TLS.
            self.endpoint = f"http://127.0.0.1:{port}"
        else:
            self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            self._http.daemon_threads = True
            self._serving = threading.Thread(target=self._http.serve_forever, daemon=True)
            self.endpoint = f"http://127.0.0.1:{self._http.server_port}/v1/traces"

    def _grpc_server(self) -> Any:
        # grpcio is imported here only: it runs in the child processes of tests/otel/test_grpc.py
        # (grpc_child.py), never in a test worker, whose later forks and threads it could upset.
        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        receiver = self

        class Servicer(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(
                self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
            ) -> ExportTraceServiceResponse:
                receiver.decoded(request, "application/grpc")
                if receiver.mode == "hang":
                    receiver._release.wait()
                if receiver.mode == "refuse":
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, "refused by the test")
                return ExportTraceServiceResponse()

        server = grpc.server(ThreadPoolExecutor(max_workers=4))
        add_servicer = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
        add_servicer(Servicer(), server)  # type: ignore[no-untyped-call]
        return server

    def received(self, path: str, content_type: str, body: bytes) -> None:
        assert path == "/v1/traces", path
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.decoded(request, content_type)

    def decoded(self, request: ExportTraceServiceRequest, content_type: str) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            start=span.start_time_unix_nano,
                            end=span.end_time_unix_nano,
                            status_code=span.status.code,
                            status_message=span.status.message,
                            attributes=_attributes(span.attributes),
                            events=tuple(
                                (e.name, e.time_unix_nano, _attributes(e.attributes))
                                for e in span.events
                            ),
                            resource=resource,
                            scope=scope_spans.scope.name,
                            schema_url=scope_spans.schema_url,
                        )
                    )
        with self._changed:
            self.requests += 1
            self.content_types.append(content_type)
            if self.mode == "ok":
                self.spans.extend(spans)
            self._changed.notify_all()

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.requests >= count, timeout), self.requests

    def by_name(self, name: str) -> ReceivedSpan:
        found = [span for span in self.spans if span.name == name]
        assert len(found) == 1, (name, [span.name for span in self.spans])
        return found[0]

    def children(self, parent: ReceivedSpan) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.parent_span_id == parent.span_id]

    def start(self) -> None:
        if self._grpc is not None:
            self._grpc.start()
        else:
            self._serving.start()

    def stop(self) -> None:
        self._release.set()
        if self._grpc is not None:
            self._grpc.stop(grace=None).wait(10)
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._serving.join(10)


@contextmanager
def running_receiver(mode: str = "ok", transport: str = "http") -> Iterator[Receiver]:
    receiver = Receiver(mode, transport)
    receiver.start()
    try:
        yield receiver
    finally:
        receiver.stop()
