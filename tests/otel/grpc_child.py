"""The gRPC side of tests/otel/test_grpc.py, in child processes: grpcio never loads in a test
worker (its threads and fork handlers stay out of the processes that run the rest of the suite).

``python -m tests.otel.grpc_child receive MODE``
    A real grpcio OTLP ``TraceService`` on loopback (tests/otel/receiver.py, answering as
    ``MODE`` says): prints its endpoint on one line, then, once its stdin closes, what it
    received as one JSON document (``requests``, ``content_types``, ``spans``).
``python -m tests.otel.grpc_child trace SCENARIO``
    A hub traced with the exporter the ``OTEL_*`` variables configure, through ``SCENARIO``
    (``nightly``: a run with a stage that fails and a tool; ``ten``: ten runs that complete at
    once); prints the export statistics as JSON.
"""

from __future__ import annotations

import json
import sys

import attrs
import trio
import trio.testing

from tests.otel.receiver import running_receiver
from workflow_hub import FailureDetail, HookRunner, RunTracker, open_hub
from workflow_hub.otel import open_tracing


def receive(mode: str) -> None:
    with running_receiver(mode, transport="grpc") as receiver:
        print(receiver.endpoint, flush=True)
        sys.stdin.read()  # until the test closes it
        received = {
            "requests": receiver.requests,
            "content_types": receiver.content_types,
            "spans": [attrs.asdict(span) for span in receiver.spans],
        }
    print(json.dumps(received), flush=True)


def _nightly(tracker: RunTracker) -> None:
    tracker.add_run("nightly", status="running")
    tracker.add_stage("nightly", "load", "load")
    tracker.set_stage_status("nightly", "load", "running")
    tracker.add_tool("nightly", "copy", "copy")
    tracker.set_tool_status("nightly", "copy", "completed")
    tracker.set_stage_status("nightly", "load", "failed", error=FailureDetail(message="disk full"))
    tracker.set_run_status("nightly", "failed")


def _ten(tracker: RunTracker) -> None:
    for number in range(10):
        tracker.add_run(f"run-{number}", status="running")
        tracker.set_run_status(f"run-{number}", "completed")


async def trace(scenario: str) -> None:
    async with open_hub() as hub:
        runner = HookRunner(hub)
        async with open_tracing(runner) as tracing:
            runner.bind()
            tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
            tracker.start()
            with trio.fail_after(10):  # the hub never waits for the backend
                {"nightly": _nightly, "ten": _ten}[scenario](tracker)
                await trio.testing.wait_all_tasks_blocked()
    export = tracing.statistics().export
    assert export is not None
    print(json.dumps(attrs.asdict(export)), flush=True)


if __name__ == "__main__":
    command, argument = sys.argv[1:3]
    if command == "receive":
        receive(argument)
    else:
        trio.run(trace, argument)
