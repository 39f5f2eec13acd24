"""OTLP over gRPC (``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``, the ``otel-grpc`` extra): the SDK's gRPC
exporter for real, to a real grpcio ``TraceService`` on loopback.

The same spans as over HTTP, the same counts when the backend refuses, and ``workflow-hub otel``
configured by nothing but the standard variables. The receiver and the exporter run in child
processes (tests/otel/grpc_child.py): grpcio never loads in a test worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.otel.commands import otel_against_served_demo
from tests.support.processes import owned_process

PYTHON = sys.executable
CHILD = [PYTHON, "-m", "tests.otel.grpc_child"]


class GrpcBackend:
    """A receiver child: its endpoint, and (once :meth:`finish` is called) what it received."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        assert process.stdout is not None
        self.endpoint = process.stdout.readline().strip()
        assert self.endpoint.startswith("http://127.0.0.1:"), self.endpoint
        self.received: dict[str, Any] = {}

    def finish(self) -> dict[str, Any]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.close()
        self.received = json.loads(self._process.stdout.readline())
        return self.received

    def spans(self, name: str) -> list[dict[str, Any]]:
        return [span for span in self.received["spans"] if span["name"] == name]


@contextmanager
def grpc_backend(mode: str) -> Iterator[GrpcBackend]:
    with owned_process(
        [*CHILD, "receive", mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        yield GrpcBackend(process)


def _env(endpoint: str, **more: str) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        **more,
    }
    for name in (
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_SEMCONV_STABILITY_OPT_IN",
    ):
        env.pop(name, None)
    return env


def _trace(scenario: str, endpoint: str) -> dict[str, Any]:
    done = subprocess.run(
        [*CHILD, "trace", scenario],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(endpoint, OTEL_SERVICE_NAME="hub-under-test"),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    statistics: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return statistics


def test_spans_reach_a_grpc_backend_with_their_tree_and_statuses() -> None:
    with grpc_backend("ok") as backend:
        export = _trace("nightly", backend.endpoint)
        received = backend.finish()
    assert (export["exported"], export["failed"], export["dropped"]) == (3, 0, 0)
    assert set(received["content_types"]) == {"application/grpc"}
    [run], [stage], [tool] = (
        backend.spans("RUN nightly"),
        backend.spans("load"),
        backend.spans("copy"),
    )
    assert stage["parent_span_id"] == run["span_id"]
    assert tool["parent_span_id"] == run["span_id"]  # a tool is its run's (docs/otel.md)
    assert {span["trace_id"] for span in (run, stage, tool)} == {run["trace_id"]}
    assert (run["status_code"], stage["status_code"], tool["status_code"]) == (2, 2, 0)
    assert "disk full" in stage["status_message"]
    assert run["resource"]["service.name"] == "hub-under-test"


def test_a_refusing_grpc_backend_counts_its_failed_spans() -> None:
    """INVALID_ARGUMENT is not retried (the OTLP specification): the spans are failed at once,
    counted, and the hub never waits for them (the child fails after 10 s if it did)."""
    with grpc_backend("refuse") as backend:
        export = _trace("ten", backend.endpoint)
        received = backend.finish()
    assert (export["exported"], export["failed"], export["dropped"], export["queued"]) == (
        0,
        10,
        0,
        0,
    )
    assert received["requests"] >= 1
    assert received["spans"] == []


def test_otel_command_exports_over_grpc_from_the_standard_variables() -> None:
    """`workflow-hub otel URL` with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, against a served demo."""
    with grpc_backend("ok") as backend:
        result = otel_against_served_demo(_env(backend.endpoint, OTEL_SERVICE_NAME="grpc-demo"))
        assert result.returncode == 0, result.stderr
        assert " 0 failed, 0 dropped" in result.stdout, result.stdout
        received = backend.finish()
    assert set(received["content_types"]) == {"application/grpc"}
    spans = received["spans"]
    assert {span["resource"]["service.name"] for span in spans} == {"grpc-demo"}
    assert any(span["attributes"]["workflow_hub.span.kind"] == "run" for span in spans)
