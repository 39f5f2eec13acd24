"""The OpenAPI 3.1 document of the fleet server (``serve_fleet``), served at ``/openapi.json``.

Built from the same pieces as the single hub's (:mod:`._openapi`), with the fleet's own
schemas: ``/v1/sources``' list, the events of ``/v1/fleet`` and the probes' answers. The tests
hold its paths to :class:`~workflow_hub.server.FleetApp`'s routes and validate real answers
against it; ``tools/api_documents.py`` keeps a copy in ``docs/api/fleet-openapi.json``.
"""

from __future__ import annotations

from typing import Final

from ._openapi import (
    CACHE_HEADER,
    ETAG_HEADER,
    LAST_EVENT_ID,
    REF,
    RESUMED_HEADER,
    SIMPLE_SCHEMAS,
    get_and_head,
    header,
    json_answer,
    operation,
    probe,
    problem_answer,
    served_document,
    stream_answer,
    whole_document,
)
from ._schemas import Schema, wire_definitions

__all__ = ["fleet_openapi_document"]

_NAME: Final[Schema] = {"type": "string", "minLength": 1}

_SUMMARY_PROPERTIES: Final[dict[str, Schema]] = {
    "source": _NAME,
    "availability": {
        "oneOf": [{"$ref": f"{REF}Availability"}, {"type": "null"}],
        "description": "Null before the source's first frame.",
    },
    "state": {"enum": ["working", "blocked", "idle", "unknown"]},
    "detail": {
        "type": ["string", "null"],
        "description": "Why the source is unknown, when its last snapshot (or the fleet's "
        "follower) said (C3), e.g. 'broker unreachable: ConnectionError: …'; else null.",
    },
    "roots": {"type": "integer", "minimum": 0},
    "working": {"type": "integer", "minimum": 0},
    "blocked": {"type": "integer", "minimum": 0},
    "attention": {"type": "boolean", "description": "Some root needs a human."},
    "last_seen": {
        "type": ["number", "null"],
        "description": "When its mirror last refreshed (Redis server time, seconds since the "
        "epoch).",
    },
    "stale": {
        "type": "boolean",
        "description": "Its mirror stopped refreshing for stale_after: it crashed, was "
        "partitioned away, or shut down (see declared).",
    },
    "declared": {
        "type": "boolean",
        "description": "Its own last frame says it is unavailable: its scheduler declared it "
        "(a clean shutdown). Stale and not declared: it stopped without a word (crashed?).",
    },
    "path": {"type": "string", "description": "Its endpoints, relative to the server's URL."},
}


def _object(properties: dict[str, Schema], description: str) -> Schema:
    return {
        "description": description,
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _sourced(frame: str) -> Schema:
    return _object(
        {"source": _NAME, "frame": {"$ref": f"{REF}{frame}"}},
        f"A {frame} of the source it names.",
    )


_FLEET_SCHEMAS: Final[dict[str, Schema]] = {
    "SourceSummary": _object(
        _SUMMARY_PROPERTIES,
        "A source as /v1/fleet describes it (sent again when anything but last_seen changed).",
    ),
    "SourceEntry": _object(
        {
            **_SUMMARY_PROPERTIES,
            "cursor": {"type": ["string", "null"], "description": "'<epoch>:<revision>'"},
        },
        "A source as /v1/sources lists it.",
    ),
    "Sources": _object(
        {
            "prefix": _NAME,
            "readable": {"type": "boolean"},
            "sources": {"type": "array", "items": {"$ref": f"{REF}SourceEntry"}},
        },
        "Every source of the fleet, in name order.",
    ),
    "FleetPicture": _object(
        {
            "prefix": _NAME,
            "readable": {"type": "boolean"},
            "sources": {"type": "array", "items": {"$ref": f"{REF}SourceSummary"}},
        },
        "The whole table: first on a stream, and whenever it starts over.",
    ),
    "SourceRetired": _object({"source": _NAME}, "The source left the fleet."),
    "FleetReadable": _object(
        {"readable": {"type": "boolean"}}, "Redis stopped (false) or started (true) answering."
    ),
    "SourceSnapshot": _sourced("SnapshotFrame"),
    "SourceChanged": _sourced("ChangedFrame"),
    "SourceRemoved": _sourced("RemovedFrame"),
    "FleetLive": SIMPLE_SCHEMAS["Live"],
    "FleetReady": _object(
        {"status": {"const": "ready"}, "sources": {"type": "integer", "minimum": 0}},
        "The fleet is read.",
    ),
    "FleetHealth": _object(
        {
            "status": {"const": "ok"},
            "sources": {"type": "integer", "minimum": 0},
            "readable": {"type": "boolean"},
        },
        "Always 200 (kept from the first release), with readable.",
    ),
    "Problem": SIMPLE_SCHEMAS["Problem"],
    "FleetHookEvent": _object(
        {
            "source": _NAME,
            "id": {"type": "string", "description": "The event's Redis stream entry id."},
            "event": {
                "oneOf": [
                    {"$ref": f"{REF}{name}"}
                    for name in (
                        "LifecycleEvent",
                        "StageCompletedEvent",
                        "ActivityChangedEvent",
                        "HeartbeatEvent",
                    )
                ]
            },
        },
        "A hook event of the source it names (on /v1/events).",
    ),
    "EventsDropped": {
        "description": "Hook events may be missing here (a fleet's `event: dropped`): the "
        "source (absent when it concerns the whole stream), why, and how many when known.",
        "type": "object",
        "properties": {
            "source": _NAME,
            "count": {"type": ["integer", "null"], "minimum": 1},
            "reason": {
                "enum": [
                    "trimmed",
                    "dropped",
                    "new_instance",
                    "unreachable",
                    "unreadable",
                    "retired",
                    "resume",
                    "behind",
                ]
            },
            "detail": {"type": "string"},
        },
        "required": ["count", "reason", "detail"],
        "additionalProperties": False,
    },
}

_HOOK_TYPES: Final = (
    "workflow_lifecycle",
    "workflow_stage_completed",
    "workflow_activity_changed",
    "workflow_heartbeat",
)
_HOOK_SCHEMAS: Final = (
    "LifecycleEvent",
    "StageCompletedEvent",
    "ActivityChangedEvent",
    "HeartbeatEvent",
)

_SOURCE: Final[Schema] = {
    "name": "source",
    "in": "path",
    "required": True,
    "description": "A source's name.",
    "schema": _NAME,
}

_POSITION: Final[Schema] = {
    "name": "since",
    "in": "query",
    "required": False,
    "description": "Resume after this event id ('<boot>-<position>', as the stream sent it). "
    "Wins over Last-Event-ID. An id the server does not hold (another run, trimmed) and a hub's "
    "cursor ('<epoch>:<revision>', what clients that resume by cursor send) get a fresh start; "
    "text that is neither is a 400 naming the field.",
    "schema": {"type": "string"},
}


_NOT_YET: Final[Schema] = problem_answer(
    "No such source in this fleet (yet): not now, maybe soon (starting, or not discovered yet "
    "by a server that just started). Retry-After says when to ask again; a client that "
    "follows the source (RemoteHub) does, a one-shot request reads the 404.",
    **{"Retry-After": header("Seconds before asking again (the fleet looks every second).")},
)


def _query(name: str, description: str, schema: Schema, *, repeated: bool = False) -> Schema:
    parameter: Schema = {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": {"type": "array", "items": schema} if repeated else schema,
    }
    if repeated:
        parameter["style"] = "form"
        parameter["explode"] = True
    return parameter


def _page(summary: str, operation_id: str, *parameters: Schema) -> Schema:
    return get_and_head(
        operation(
            summary,
            {
                "200": {
                    "description": "HTML or the file.",
                    "content": {"text/html": {"schema": {"type": "string"}}},
                },
                "404": problem_answer("No such file, or no web page installed."),
            },
            open_path=True,
            parameters=list(parameters) or None,
            tags=("page",),
        ),
        operation_id,
    )


def _source_stream(
    summary: str, description: str, events: dict[str, str], operation_id: str, guarded: Schema
) -> Schema:
    """A source's event stream (``/sources/{source}/v1/…``): resumable by position, 404 for a
    source the fleet does not have."""
    return get_and_head(
        operation(
            summary,
            {
                "200": stream_answer(
                    description, events, **{"X-Workflow-Hub-Resumed": RESUMED_HEADER}
                ),
                "400": problem_answer("The resume position is not an event id."),
                "404": _NOT_YET,
                **guarded,
            },
            parameters=[_SOURCE, _POSITION, LAST_EVENT_ID],
            tags=("source",),
        ),
        operation_id,
    )


def fleet_openapi_document(*, version: str, token: bool, page: bool) -> Schema:
    """The document of one fleet server: ``token`` says whether it requires one, ``page``
    whether it serves the pages."""
    guarded = (
        {
            "401": problem_answer(
                "A valid token is required.", **{"WWW-Authenticate": header("Bearer")}
            )
        }
        if token
        else {}
    )
    paths: dict[str, Schema] = {
        "/livez": probe(
            "livez",
            "Liveness: the process answers (never depends on Redis)",
            {"200": json_answer("Always, while the server runs.", "FleetLive")},
        ),
        "/readyz": probe(
            "readyz",
            "Readiness: the fleet is read",
            {
                "200": json_answer(
                    "A read from Redis completed within read_timeout.", "FleetReady"
                ),
                "503": problem_answer(
                    "No read from Redis within read_timeout: every source is shown unknown "
                    "(`readable: false`)."
                ),
            },
        ),
        "/healthz": probe(
            "healthz",
            "Liveness as the first release answered it, with readable",
            {"200": json_answer("Always, while the server runs.", "FleetHealth")},
        ),
        "/v1/sources": get_and_head(
            operation(
                "Every source of the fleet",
                {
                    "200": json_answer(
                        "In name order; gzip when the client accepts it (from 1 KiB).",
                        "Sources",
                        **{"Cache-Control": CACHE_HEADER},
                    ),
                    **guarded,
                },
                tags=("fleet",),
            ),
            "sources",
        ),
        "/v1/fleet": get_and_head(
            operation(
                "The whole fleet as one stream of Server-Sent Events",
                {
                    "200": stream_answer(
                        "Every event has an id ('<boot>-<position>'). A fresh start (or one the "
                        "server cannot resume) begins with event fleet, then a snapshot of each "
                        "selected source; then source (a description changed), retired, "
                        "readable, and the selected sources' frames (snapshot, changed, "
                        "removed: {source, frame}). A client that falls behind the server's "
                        "log gets a fresh picture, never a gap.",
                        {
                            "fleet": "FleetPicture",
                            "source": "SourceSummary",
                            "retired": "SourceRetired",
                            "readable": "FleetReadable",
                            "snapshot": "SourceSnapshot",
                            "changed": "SourceChanged",
                            "removed": "SourceRemoved",
                        },
                        **{"X-Workflow-Hub-Resumed": RESUMED_HEADER},
                    ),
                    "400": problem_answer(
                        "A bad parameter (field: since, Last-Event-ID, source, frames or snapshot)."
                    ),
                    **guarded,
                },
                parameters=[
                    _query(
                        "source",
                        "Send this source's frames (repeat for more).",
                        _NAME,
                        repeated=True,
                    ),
                    _query("frames", "all: send every source's frames.", {"enum": ["all"]}),
                    _query(
                        "snapshot",
                        "A selected source that gets a snapshot even when the stream resumes "
                        "(one the client has just selected).",
                        _NAME,
                        repeated=True,
                    ),
                    _POSITION,
                    LAST_EVENT_ID,
                ],
                tags=("fleet",),
            ),
            "fleet_stream",
        ),
        "/sources/{source}/v1/snapshot": get_and_head(
            operation(
                "A source's current snapshot frame",
                {
                    "200": json_answer(
                        "The snapshot; gzip when the client accepts it.",
                        "SnapshotFrame",
                        ETag=ETAG_HEADER,
                        **{"Cache-Control": CACHE_HEADER},
                    ),
                    "304": {"description": "If-None-Match matched the current cursor."},
                    "404": _NOT_YET,
                    "503": problem_answer(
                        "No snapshot of this source yet.",
                        **{"Retry-After": header("Seconds before asking again.")},
                    ),
                    **guarded,
                },
                parameters=[_SOURCE],
                tags=("source",),
            ),
            "source_snapshot",
        ),
        "/sources/{source}/v1/activity": _source_stream(
            "A source's frames, as Server-Sent Events",
            "As a single hub's /v1/activity; ids are '<relay>-<position>'.",
            {"snapshot": "SnapshotFrame", "changed": "ChangedFrame", "removed": "RemovedFrame"},
            "source_activity",
            guarded,
        ),
        "/sources/{source}/v1/events": _source_stream(
            "A source's hook events, as Server-Sent Events",
            "As a single hub's /v1/events (mirrors started with a runner), with "
            "ids '<boot>-<position>'; event: dropped wherever events may be missing.",
            {**dict(zip(_HOOK_TYPES, _HOOK_SCHEMAS, strict=True)), "dropped": "EventsDropped"},
            "source_events",
            guarded,
        ),
        "/v1/events": get_and_head(
            operation(
                "Every source's hook events, as Server-Sent Events",
                {
                    "200": stream_answer(
                        "event: the hook type; data: the source, the stream id and the wire "
                        "event; event: dropped wherever events may be missing. Ids "
                        "'<boot>-<position>' resume while the server holds what came after.",
                        {
                            **dict.fromkeys(_HOOK_TYPES, "FleetHookEvent"),
                            "dropped": "EventsDropped",
                        },
                        **{"X-Workflow-Hub-Resumed": RESUMED_HEADER},
                    ),
                    "400": problem_answer("The resume position is not an event id."),
                    **guarded,
                },
                parameters=[_POSITION, LAST_EVENT_ID],
                tags=("fleet",),
            ),
            "fleet_events",
        ),
        "/openapi.json": served_document(
            "This document", "OpenAPI 3.1", "application/json", "openapi"
        ),
    }
    if page:
        file = {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}
        paths["/"] = _page("The fleet's page", "fleet_page")
        paths["/sources/{source}/"] = _page("A source's page", "source_page", _SOURCE)
        paths["/sources/{source}/static/{path}"] = _page(
            "The source page's files", "source_static", _SOURCE, file
        )
        paths["/static/{path}"] = _page("The pages' files", "static", file)
    return whole_document(
        "workflow-hub fleet",
        version,
        "Every source of a Redis fleet over HTTP, and one stream for all of them.",
        "See docs/fleet.md. Every error is application/problem+json.",
        paths,
        {**wire_definitions(REF), **_FLEET_SCHEMAS},
        token=token,
    )
