"""The OpenAPI 3.1 document of a hub's HTTP API, served at ``/openapi.json``.

It is built for the application that serves it (with or without a token, hook events, metrics
and the page), its schemas are the generated wire schemas (:mod:`._schemas`), and the tests
hold its paths to the application's routes and validate real responses against it, so it
cannot drift from what the server does. OpenAPI 3.1 has no way to type the items of an event
stream or the messages of a WebSocket: their media types carry ``x-events`` (SSE event name ->
schema of its ``data``) and ``x-websocket-message``, and the JSON Schema document
``/schemas/wire.json`` describes the same payloads for tools that read JSON Schema only.
"""

from __future__ import annotations

from typing import Any, Final

from ._schemas import JSON_SCHEMA_DIALECT, Schema, stream_definitions, wire_definitions

__all__ = [
    "CACHE_HEADER",
    "ETAG_HEADER",
    "LAST_EVENT_ID",
    "OPENAPI_PATH",
    "REF",
    "RESUMED_HEADER",
    "SCHEMA_PATH",
    "SIMPLE_SCHEMAS",
    "get_and_head",
    "header",
    "json_answer",
    "openapi_document",
    "operation",
    "probe",
    "problem_answer",
    "served_document",
    "stream_answer",
    "whole_document",
]

OPENAPI_PATH: Final = "/openapi.json"
SCHEMA_PATH: Final = "/schemas/wire.json"

REF: Final = "#/components/schemas/"

_PROBLEM: Final[Schema] = {
    "description": "An RFC 9457 problem: every error the server answers.",
    "type": "object",
    "properties": {
        "type": {"type": "string", "const": "about:blank"},
        "title": {"type": "string"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {"type": "string"},
        "field": {
            "type": "string",
            "description": "The request input that is wrong (since, Last-Event-ID, token ...).",
        },
        "error": {"type": "string", "description": "The same as detail (the first release's key)."},
        "availability": {"$ref": f"{REF}Availability"},
    },
    "required": ["type", "title", "status", "detail", "error"],
}

SIMPLE_SCHEMAS: Final[dict[str, Schema]] = {
    "Problem": _PROBLEM,
    "Live": {
        "type": "object",
        "properties": {"status": {"const": "ok"}},
        "required": ["status"],
        "additionalProperties": False,
    },
    "Ready": {
        "type": "object",
        "properties": {"status": {"const": "ready"}, "availability": {"const": "ready"}},
        "required": ["status", "availability"],
        "additionalProperties": False,
    },
    "Health": {
        "type": "object",
        "properties": {
            "status": {"const": "ok"},
            "cursor": {"type": "string", "description": "'<epoch>:<revision>'"},
            "availability": {"$ref": f"{REF}Availability"},
        },
        "required": ["status", "cursor", "availability"],
        "additionalProperties": False,
    },
}


def _answer(description: str, media_type: str, schema: str, headers: dict[str, Schema]) -> Schema:
    """An answer whose body is ``schema`` (a component) as ``media_type``, with ``headers``."""
    answer: Schema = {
        "description": description,
        "content": {media_type: {"schema": {"$ref": f"{REF}{schema}"}}},
    }
    if headers:
        answer["headers"] = headers
    return answer


def problem_answer(description: str, **headers: Schema) -> Schema:
    return _answer(description, "application/problem+json", "Problem", headers)


def json_answer(description: str, schema: str, **headers: Schema) -> Schema:
    return _answer(description, "application/json", schema, headers)


def header(description: str, **schema: Any) -> Schema:
    return {"description": description, "schema": {"type": "string", **schema}}


CACHE_HEADER: Final = header(
    "no-store, or no-cache (private, no-cache with a token) where an ETag is"
)
ETAG_HEADER: Final = header("The cursor, quoted; weak (W/) on a gzip body.")
RESUMED_HEADER: Final = header(
    "Whether the stream goes on from the client's position (no snapshot first).",
    enum=["true", "false"],
)

_SINCE: Final[Schema] = {
    "name": "since",
    "in": "query",
    "required": False,
    "description": "Resume after this cursor ('<epoch>:<revision>'; empty: from a snapshot). "
    "Wins over Last-Event-ID. A fleet server's event id ('<boot>-<position>') starts from a "
    "snapshot; anything else that is not a cursor is a 400 naming the field.",
    "schema": {"type": "string"},
}
_CONFLATE: Final[Schema] = {
    "name": "conflate",
    "in": "query",
    "required": False,
    "description": "1: when the client lags, send only each root's latest pending frame instead "
    "of every one (the folded state is the same). 0 or absent: the full stream. Anything else is "
    "a 400 naming the field; a hub hosted by workflow_hub.asyncio refuses 1.",
    "schema": {"type": "string", "enum": ["0", "1"]},
}
_INTERVAL: Final[Schema] = {
    "name": "interval",
    "in": "query",
    "required": False,
    "description": "With conflate=1: seconds (above 0, at most 10) to let frames gather between "
    "two writes, each write carrying each root's latest; sooner when half the queue is pending. "
    "Without conflate=1, or out of range, a 400 naming the field.",
    "schema": {"type": "string"},
}
LAST_EVENT_ID: Final[Schema] = {
    "name": "Last-Event-ID",
    "in": "header",
    "required": False,
    "description": "What EventSource sends on reconnecting: the last id it received.",
    "schema": {"type": "string"},
}


def _bad_position() -> Schema:
    return problem_answer("The resume position is not a cursor (field: since or Last-Event-ID).")


def stream_answer(description: str, events: dict[str, str], **headers: Schema) -> Schema:
    return {
        "description": description,
        "headers": {"Cache-Control": CACHE_HEADER, **headers},
        "content": {
            "text/event-stream": {
                "schema": {"type": "string"},
                "x-events": {name: {"$ref": f"{REF}{ref}"} for name, ref in events.items()},
            }
        },
    }


def operation(
    summary: str,
    responses: dict[str, Schema],
    *,
    open_path: bool = False,
    parameters: list[Schema] | None = None,
    description: str | None = None,
    tags: tuple[str, ...] = (),
) -> Schema:
    operation: Schema = {"summary": summary, "responses": responses}
    if description:
        operation["description"] = description
    if parameters:
        operation["parameters"] = parameters
    if open_path:
        operation["security"] = []
    if tags:
        operation["tags"] = list(tags)
    return operation


def get_and_head(operation: Schema, operation_id: str) -> Schema:
    """GET and HEAD (the same answer without its body)."""
    head = {**operation, "operationId": f"head_{operation_id}"}
    head["responses"] = {
        code: {key: value for key, value in answer.items() if key != "content"}
        for code, answer in operation["responses"].items()
    }
    return {"get": {**operation, "operationId": operation_id}, "head": head}


def served_document(summary: str, description: str, media_type: str, operation_id: str) -> Schema:
    """A document the server serves (``/openapi.json``, ``/schemas/wire.json``), open without
    a token."""
    answer = {"description": description, "content": {media_type: {"schema": {"type": "object"}}}}
    found = operation(summary, {"200": answer}, open_path=True, tags=("documents",))
    return get_and_head(found, operation_id)


def probe(
    operation_id: str,
    summary: str,
    responses: dict[str, Schema],
    *,
    description: str | None = None,
) -> Schema:
    """A probe (``/livez``, ``/readyz``, ``/healthz``): GET and HEAD, open without a token."""
    found = operation(summary, responses, open_path=True, description=description, tags=("probes",))
    return get_and_head(found, operation_id)


def openapi_document(
    *,
    version: str,
    token: bool,
    hooks: bool,
    metrics: bool,
    page: bool,
) -> Schema:
    """The document of one application: ``token`` says whether it requires one, ``hooks``,
    ``metrics`` and ``page`` whether those endpoints answer (they are listed either way: off,
    they answer 404)."""
    unauthorized = {
        "401": problem_answer(
            "A valid token is required.", **{"WWW-Authenticate": header("Bearer")}
        )
    }
    guarded = unauthorized if token else {}
    paths: dict[str, Schema] = {
        "/livez": probe(
            "livez",
            "Liveness: the process answers",
            {
                "200": json_answer(
                    "Always, while the server runs.", "Live", **{"Cache-Control": CACHE_HEADER}
                )
            },
            description="Never depends on the source: restarting the process cures nothing "
            "a source's state could say.",
        ),
        "/readyz": probe(
            "readyz",
            "Readiness: the source is ready",
            {
                "200": json_answer("The source is ready: its roots are known.", "Ready"),
                "503": problem_answer(
                    "The source is recovering or unavailable (or the hub was disposed); "
                    "`availability` says which."
                ),
            },
        ),
        "/healthz": probe(
            "healthz",
            "Liveness with the hub's cursor (kept from the first release)",
            {"200": json_answer("Always, while the server runs.", "Health")},
        ),
        "/metrics": get_and_head(
            operation(
                "Prometheus metrics",
                {
                    "200": {
                        "description": "OpenMetrics when the Accept header asks for it "
                        "(Prometheus does), the Prometheus text format otherwise.",
                        "content": {
                            "application/openmetrics-text": {"schema": {"type": "string"}},
                            "text/plain": {"schema": {"type": "string"}},
                        },
                    },
                    "404": problem_answer("Metrics are off."),
                    **guarded,
                },
                description=None if metrics else "Off on this server: answers 404.",
                tags=("operations",),
            ),
            "metrics",
        ),
        "/v1/snapshot": get_and_head(
            operation(
                "The current snapshot frame",
                {
                    "200": json_answer(
                        "The snapshot; gzip when the client accepts it.",
                        "SnapshotFrame",
                        ETag=ETAG_HEADER,
                        **{"Cache-Control": CACHE_HEADER},
                    ),
                    "304": {
                        "description": "If-None-Match matched the current cursor (weak "
                        "comparison, lists, *).",
                        "headers": {"ETag": ETAG_HEADER, "Cache-Control": CACHE_HEADER},
                    },
                    **guarded,
                },
                parameters=[
                    {
                        "name": "If-None-Match",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    }
                ],
                tags=("activity",),
            ),
            "snapshot",
        ),
        "/v1/activity": get_and_head(
            operation(
                "The frames, as Server-Sent Events",
                {
                    "200": stream_answer(
                        "One event per frame: id (the cursor), event (the kind), one data line "
                        "(the frame's wire JSON). The first event is a snapshot unless the "
                        "request resumed; the first block carries retry:. HEAD answers the "
                        "headers only.",
                        {
                            "snapshot": "SnapshotFrame",
                            "changed": "ChangedFrame",
                            "removed": "RemovedFrame",
                        },
                        **{"X-Workflow-Hub-Resumed": RESUMED_HEADER},
                    ),
                    "400": _bad_position(),
                    **guarded,
                },
                parameters=[_SINCE, _CONFLATE, _INTERVAL, LAST_EVENT_ID],
                tags=("activity",),
            ),
            "activity",
        ),
        "/v1/events": get_and_head(
            operation(
                "Hook events, as Server-Sent Events (no resume)",
                {
                    "200": stream_answer(
                        "event: the hook type; data: the event's wire JSON; event: dropped "
                        "with the count a slow client missed.",
                        {
                            "workflow_lifecycle": "LifecycleEvent",
                            "workflow_stage_completed": "StageCompletedEvent",
                            "workflow_activity_changed": "ActivityChangedEvent",
                            "workflow_heartbeat": "HeartbeatEvent",
                            "dropped": "DroppedNotice",
                        },
                    ),
                    "404": problem_answer("The server has no HookRunner."),
                    **guarded,
                },
                description=None if hooks else "Off on this server: answers 404.",
                tags=("events",),
            ),
            "events",
        ),
        "/v1/ws": {
            "get": {
                **operation(
                    "The frames over a WebSocket",
                    {
                        "101": {
                            "description": "Switching protocols: one text message per frame.",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": f"{REF}WebSocketMessage"},
                                    "x-websocket-message": {"$ref": f"{REF}WebSocketMessage"},
                                }
                            },
                        },
                        "400": _bad_position(),
                        "426": problem_answer(
                            "A plain GET without the upgrade handshake.",
                            Upgrade=header("websocket", const="websocket"),
                        ),
                        **guarded,
                    },
                    parameters=[_SINCE],
                    description="Messages from the client are ignored; one beyond 4 KiB closes "
                    "the connection with 1009. The server pings every keep-alive interval and "
                    "closes with 1001 when it shuts down.",
                    tags=("activity",),
                ),
                "operationId": "websocket",
            }
        },
        "/openapi.json": served_document(
            "This document", "OpenAPI 3.1", "application/json", "openapi"
        ),
        "/schemas/wire.json": served_document(
            "The JSON Schema (2020-12) of the stream payloads",
            "JSON Schema",
            "application/schema+json",
            "wire_schema",
        ),
    }
    if page:
        paths["/"] = get_and_head(
            operation(
                "The live dashboard",
                {
                    "200": {
                        "description": "HTML; Cache-Control: no-cache with an ETag.",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                    "304": {"description": "If-None-Match matched."},
                },
                open_path=True,
                tags=("page",),
            ),
            "page",
        )
        paths["/static/{path}"] = get_and_head(
            operation(
                "The dashboard's files",
                {
                    "200": {"description": "The file; Cache-Control: no-cache with an ETag."},
                    "304": {"description": "If-None-Match matched."},
                    "404": problem_answer("No such file."),
                },
                open_path=True,
                parameters=[
                    {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                tags=("page",),
            ),
            "static",
        )
    schemas = {
        **wire_definitions(REF),
        **stream_definitions(REF),
        **SIMPLE_SCHEMAS,
    }
    return whole_document(
        "workflow-hub",
        version,
        "A workflow hub's activity and hook events over HTTP.",
        "See docs/network.md. Every error is application/problem+json.",
        paths,
        schemas,
        token=token,
    )


def whole_document(
    title: str,
    version: str,
    summary: str,
    description: str,
    paths: dict[str, Schema],
    schemas: dict[str, Schema],
    *,
    token: bool,
) -> Schema:
    """An OpenAPI 3.1 document of ``paths``: the bearer token (or ``?token=`` for EventSource)
    is required everywhere when ``token``, but where an operation says it is open."""
    document: Schema = {
        "openapi": "3.1.0",
        "jsonSchemaDialect": JSON_SCHEMA_DIALECT,
        "info": {
            "title": title,
            "version": version,
            "summary": summary,
            "description": description,
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "tokenQuery": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "token",
                    "description": "For EventSource, which cannot set headers.",
                },
            },
        },
    }
    if token:
        document["security"] = [{"bearer": []}, {"tokenQuery": []}]
    return document
