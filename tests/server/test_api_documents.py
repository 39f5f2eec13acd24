"""The API documents: OpenAPI 3.1 at ``/openapi.json``, JSON Schema at ``/schemas/wire.json``
(issue 23; C2, N2).

Validated with real validators (openapi-spec-validator, jsonschema), held to the application's
routes, and checked against what the server actually sends: the wire fixtures, values of every
contract class drawn by hypothesis, and a recorded demo stream (SSE, WebSocket, hook events).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from starlette.routing import Mount, Route, WebSocketRoute

from tests.support.netutil import hooks_for, served, websocket
from workflow_hub import open_hub
from workflow_hub.metrics import HubMetrics
from workflow_hub.server import create_app
from workflow_hub.testing import strategies
from workflow_hub.wire import to_wire

WAIT = 10
FIXTURES = Path(__file__).parent.parent / "fixtures"
SCHEMA_URI = "urn:workflow-hub:wire"
OPENAPI_URI = "urn:workflow-hub:openapi"


def wire_schema() -> dict[str, Any]:
    from workflow_hub.server._schemas import events_schema

    return events_schema()


def validator_for(definition: str) -> Draft202012Validator:
    """A validator of one ``$defs`` entry of the wire schema."""
    registry: Registry[Any] = Registry().with_resource(
        SCHEMA_URI, Resource.from_contents(wire_schema(), default_specification=DRAFT202012)
    )
    return Draft202012Validator({"$ref": f"{SCHEMA_URI}#/$defs/{definition}"}, registry=registry)


def openapi_validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` (a response's schema) with the document's components."""
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(OPENAPI_URI, resource)
    ref = schema["$ref"].replace("#", f"{OPENAPI_URI}#", 1)
    return Draft202012Validator({"$ref": ref}, registry=registry)


# --- the documents are valid ---------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "s3cret"])
@pytest.mark.parametrize("extras", [False, True])
async def test_the_openapi_document_is_valid_openapi_3_1(token: str | None, extras: bool) -> None:
    from prometheus_client import CollectorRegistry

    async with open_hub() as hub:
        app = create_app(
            hub,
            token=token,
            runner=hooks_for(hub) if extras else None,
            metrics=HubMetrics(CollectorRegistry()) if extras else None,
        )
        document = app.api_document()
    validate_openapi(document)  # raises on anything that is not OpenAPI 3.1
    assert document["openapi"] == "3.1.0"
    assert ("security" in document) == (token is not None)


def test_the_wire_schema_is_a_valid_json_schema() -> None:
    Draft202012Validator.check_schema(wire_schema())


async def test_the_documented_paths_are_the_routes_of_the_application() -> None:
    """The document cannot drift from the routes: every route is documented, and nothing else."""
    async with open_hub() as hub:
        app = create_app(hub)
        documented = set(app.api_document()["paths"])
        routed = set()
        for route in app._router.routes:
            if isinstance(route, Mount):
                routed.add(f"{route.path}/{{path}}")
            else:
                assert isinstance(route, Route | WebSocketRoute)
                routed.add(route.path)
    assert routed == documented


async def test_the_documents_are_served_without_a_token() -> None:
    async with open_hub() as hub, served(hub, token="s3cret") as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            openapi = await client.get(f"{url}/openapi.json")
            schema = await client.get(f"{url}/schemas/wire.json")
            again = await client.get(
                f"{url}/openapi.json", headers={"If-None-Match": openapi.headers["etag"]}
            )
    assert openapi.status_code == schema.status_code == 200
    assert openapi.headers["content-type"] == "application/json"
    assert schema.headers["content-type"] == "application/schema+json"
    assert openapi.json()["security"] == [{"bearer": []}, {"tokenQuery": []}]
    assert schema.json() == json.loads(json.dumps(wire_schema()))
    assert again.status_code == 304


# --- the schemas hold what the server sends ------------------------------------------------

FIXTURE_TYPES = {
    "changed.json": "ChangedFrame",
    "removed.json": "RemovedFrame",
    "snapshot_ready.json": "SnapshotFrame",
    "snapshot_ready_empty.json": "SnapshotFrame",
    "snapshot_recovering.json": "SnapshotFrame",
    "diagnostic.json": "Diagnostic",
    "event_activity_changed.json": "ActivityChangedEvent",
    "event_heartbeat.json": "HeartbeatEvent",
    "event_lifecycle.json": "LifecycleEvent",
    "event_stage_completed.json": "StageCompletedEvent",
    "lifecycle_input.json": "LifecycleInput",
    "root_with_graph.json": "RootActivity",
    "target_prompt.json": "PromptTarget",
    "target_run.json": "RunTarget",
    "target_stage.json": "StageTarget",
    "target_tool.json": "ToolTarget",
}


def test_every_wire_fixture_is_listed() -> None:
    assert set(FIXTURE_TYPES) == {path.name for path in FIXTURES.glob("*.json")}


@pytest.mark.parametrize(("name", "definition"), sorted(FIXTURE_TYPES.items()))
def test_the_wire_fixtures_validate_against_the_schemas(name: str, definition: str) -> None:
    data = json.loads((FIXTURES / name).read_text())
    validator_for(definition).validate(data)


@pytest.mark.parametrize(
    ("definition", "data"),
    [
        ("SnapshotFrame", {"kind": "snapshot", "cursor": {"epoch": "e", "revision": 1}, "availability": "ready"}),
        ("SnapshotFrame", {"kind": "snapshot", "cursor": {"epoch": "e", "revision": 1}, "availability": "recovering", "roots": []}),
        ("ChangedFrame", {"kind": "changed", "cursor": {"epoch": "e", "revision": -1}, "root": {}}),
        ("RemovedFrame", {"kind": "removed", "cursor": {"epoch": "e", "revision": 1}, "rootRunId": "a", "extra": 1}),
        ("RemovedFrame", {"kind": "changed", "cursor": {"epoch": "e", "revision": 1}, "rootRunId": "a"}),
        ("Cursor", {"epoch": "e", "revision": None}),
        ("Diagnostic", {"kind": "Nonsense", "cursor": {"epoch": "e", "revision": 1}}),
    ],
)  # fmt: skip
def test_the_schemas_refuse_what_the_wire_never_carries(
    definition: str, data: dict[str, Any]
) -> None:
    assert not validator_for(definition).is_valid(data)


VALUE_STRATEGIES = {
    "SnapshotFrame": strategies.snapshot_frames(),
    "ChangedFrame": strategies.changed_frames(),
    "RemovedFrame": strategies.removed_frames(),
    "Frame": strategies.frames(),
    "WorkflowEvent": strategies.workflow_events(),
    "LifecycleInput": strategies.lifecycle_inputs(),
    "Diagnostic": strategies.diagnostics(),
    "RunPrompt": strategies.run_prompts(),
    "RootActivity": strategies.root_activities(),
}


@pytest.mark.parametrize("definition", sorted(VALUE_STRATEGIES))
def test_every_value_the_wire_module_writes_validates(definition: str) -> None:
    """C2: whatever to_wire emits for a contract value, the generated schema accepts."""
    validator = validator_for(definition)

    @given(value=VALUE_STRATEGIES[definition])
    def check(value: Any) -> None:
        validator.validate(to_wire(value))

    check()


def test_the_stream_schema_accepts_each_kind_of_stream_item() -> None:
    validator = Draft202012Validator(wire_schema())
    frame = json.loads((FIXTURES / "changed.json").read_text())
    event = json.loads((FIXTURES / "event_heartbeat.json").read_text())
    for item in (frame, event, {"count": 3}, {"id": "e:1", "frame": frame}):
        validator.validate(item)
    assert not validator.is_valid({"id": "e:1"})


# --- a recorded demo stream ----------------------------------------------------------------


async def _record(url: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
    """The demo's /v1/activity and /v1/events events and /v1/ws messages, until each has the
    kinds the test checks (a safety net of a minute for a loaded machine, not a guess)."""
    activity: list[tuple[str, str]] = []
    hooks: list[tuple[str, str]] = []
    messages: list[str] = []
    recording = trio.CancelScope()

    def enough() -> None:
        if (
            {name for name, _ in activity} >= {"snapshot", "changed"}
            and {name for name, _ in hooks} >= {"workflow_lifecycle", "workflow_activity_changed"}
            and messages
        ):
            recording.cancel()

    async def read_sse(path: str, into: list[tuple[str, str]]) -> None:
        async with httpx.AsyncClient(timeout=WAIT) as client, client.stream("GET", url + path) as r:
            name = "message"
            async for line in r.aiter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    into.append((name, line[6:]))
                    enough()

    async def read_ws() -> None:
        async with websocket(url, "/v1/ws") as ws:
            while True:
                messages.append(await ws.get_message())
                enough()

    with recording, trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_sse, "/v1/activity", activity)
            nursery.start_soon(read_sse, "/v1/events", hooks)
            nursery.start_soon(read_ws)
    return activity, hooks, messages


async def test_a_recorded_demo_stream_validates_against_the_documents() -> None:
    """Every SSE event's data validates against the schema the OpenAPI document names for its
    event (``x-events``), every WebSocket message against ``x-websocket-message``."""
    command = [sys.executable, "-m", "workflow_hub._cli", "serve", "--port", "0"]
    command += ["--seed", "7"]  # until terminated below
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = await trio.lowlevel.open_process(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert server.stdout is not None
        with trio.fail_after(60):  # a Python process starting on a loaded machine
            first = b""
            while not first.endswith(b"\n"):
                first += await server.stdout.receive_some(1)
        url = first.decode().strip()
        async with httpx.AsyncClient(timeout=WAIT) as client:
            document = (await client.get(f"{url}/openapi.json")).json()
        activity, hooks, messages = await _record(url)
    finally:
        server.terminate()
        with trio.CancelScope(shield=True), trio.fail_after(WAIT):  # a cancelled test too
            await server.wait()
        await server.stdout.aclose()
    paths = document["paths"]

    def events_of(path: str) -> dict[str, Any]:
        media = paths[path]["get"]["responses"]["200"]["content"]["text/event-stream"]
        return dict(media["x-events"])

    for recorded, path in ((activity, "/v1/activity"), (hooks, "/v1/events")):
        schemas = events_of(path)
        assert recorded, path
        for name, data in recorded:
            openapi_validator(document, schemas[name]).validate(json.loads(data))
    assert {name for name, _ in activity} >= {"snapshot", "changed"}
    assert {name for name, _ in hooks} >= {"workflow_lifecycle", "workflow_activity_changed"}
    ws_schema = paths["/v1/ws"]["get"]["responses"]["101"]["content"]["application/json"][
        "x-websocket-message"
    ]
    assert messages
    for message in messages:
        openapi_validator(document, ws_schema).validate(json.loads(message))


# --- real responses validate against the document ------------------------------------------


async def test_responses_validate_against_the_documented_schemas() -> None:
    async with open_hub() as hub, httpx.AsyncClient() as client:
        app = create_app(hub)
        document = app.api_document()
        paths = document["paths"]
        async with served(hub) as url:

            def schema(path: str, status: str) -> dict[str, Any]:
                content = paths[path]["get"]["responses"][status]["content"]
                (media,) = content.values()
                return dict(media["schema"])

            with trio.fail_after(WAIT):
                checks = [
                    ("/readyz", "503", await client.get(f"{url}/readyz")),
                    ("/livez", "200", await client.get(f"{url}/livez")),
                    ("/healthz", "200", await client.get(f"{url}/healthz")),
                    ("/v1/activity", "400", await client.get(f"{url}/v1/activity?since=x")),
                    ("/v1/events", "404", await client.get(f"{url}/v1/events")),
                ]
                hub.register_publisher().publish_snapshot("ready", [])
                checks.append(("/readyz", "200", await client.get(f"{url}/readyz")))
                checks.append(("/v1/snapshot", "200", await client.get(f"{url}/v1/snapshot")))
    for path, status, response in checks:
        assert str(response.status_code) == status, path
        openapi_validator(document, schema(path, status)).validate(response.json())


@given(st.sampled_from(["/v1/activity", "/v1/events", "/v1/snapshot", "/readyz"]))
def test_every_operation_documents_its_errors_as_problems(path: str) -> None:
    from workflow_hub.server._openapi import openapi_document

    document = openapi_document(version="0", token=True, hooks=True, metrics=True, page=True)
    responses = document["paths"][path]["get"]["responses"]
    for status, answer in responses.items():
        if status.startswith(("4", "5")):
            assert list(answer["content"]) == ["application/problem+json"], (path, status)


def test_the_copies_in_docs_are_up_to_date() -> None:
    """docs/api/ holds what the server generates (``python tools/api_documents.py`` rewrites)."""
    tool = Path(__file__).parents[2] / "tools" / "api_documents.py"
    result = subprocess.run(
        [sys.executable, str(tool), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    copy = json.loads((Path(__file__).parents[2] / "docs" / "api" / "openapi.json").read_text())
    validate_openapi(copy)
