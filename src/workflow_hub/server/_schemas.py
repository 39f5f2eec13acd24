"""JSON Schemas (2020-12) of the wire format, generated from the contract's classes.

Nothing here is written by hand per class: each attrs class of the contract becomes an object
schema whose properties are its fields' camelCase names, typed from the fields' types; absent
optionals are simply not required (the wire omits them, never ``null``), and the class-level
discriminator (``kind`` or ``type``) is a required constant. So a field added to the contract is
in the schemas at once; the tests validate the wire fixtures, a recorded demo stream and
hypothesis-drawn values of every class against them, which is what keeps the generator honest.

The rules the types cannot say are written out: a snapshot frame has ``roots`` exactly when
its availability is ``ready`` (SPEC §2); a text field's bounds come from its metadata; and a
root's ``labels`` (C3) is an object of bounded string values under keys of a fixed shape.
"""

from __future__ import annotations

import enum
from typing import Any, Final, get_args, get_origin

import attrs

from .._contract import (
    LABEL_KEY_MAX,
    LABEL_VALUE_MAX,
    LABELS_MAX,
    LONGEST,
    Cursor,
    Diagnostic,
    Frame,
    Labels,
    LifecycleInput,
    SnapshotFrame,
    WorkflowEvent,
    discriminator_of,
    union_members,
)

__all__ = ["JSON_SCHEMA_DIALECT", "events_schema", "wire_definitions"]

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

Schema = dict[str, Any]

_ROOTS: Final[tuple[object, ...]] = (Frame, WorkflowEvent, Cursor, Diagnostic, LifecycleInput)
"""What a client meets on the wire; everything these refer to is defined as well."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class _Builder:
    def __init__(self, ref_prefix: str) -> None:
        self.prefix = ref_prefix
        self.definitions: dict[str, Schema] = {}

    def ref(self, name: str) -> Schema:
        return {"$ref": f"{self.prefix}{name}"}

    def type_schema(self, tp: object) -> Schema:
        members = union_members(tp)
        if members is not None:
            present = [member for member in members if member is not type(None)]
            if len(present) == 1:
                return self.type_schema(present[0])
            if set(present) == {int, float}:
                return {"type": "number"}
            return {"oneOf": [self.type_schema(member) for member in present]}
        if get_origin(tp) is tuple:
            item, _ellipsis = get_args(tp)
            return {"type": "array", "items": self.type_schema(item)}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            # Every int of the contract is a count or a revision: >= 0 (SPEC §2).
            return {"type": "integer", "minimum": 0}
        if tp is float:
            return {"type": "number"}
        if tp is str:
            return {"type": "string"}
        if tp is Labels:
            return {
                "type": "object",
                "maxProperties": LABELS_MAX,
                "propertyNames": {"pattern": f"^[A-Za-z][A-Za-z0-9_./-]{{0,{LABEL_KEY_MAX - 1}}}$"},
                "additionalProperties": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": LABEL_VALUE_MAX,
                },
            }
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            name = tp.__name__
            if name not in self.definitions:
                self.definitions[name] = {
                    "type": "string",
                    "enum": [member.value for member in tp],
                }
            return self.ref(name)
        if isinstance(tp, type) and attrs.has(tp):
            self.define_class(tp)
            return self.ref(tp.__name__)
        raise TypeError(f"no JSON Schema for {tp!r}")

    def define_class(self, cls: type[Any]) -> None:
        name = cls.__name__
        if name in self.definitions:
            return
        self.definitions[name] = {}  # a placeholder: classes may refer to each other
        properties: dict[str, Schema] = {}
        required: list[str] = []
        discriminator = discriminator_of(cls)
        if discriminator is not None:
            key, value = discriminator
            properties[key] = {"const": value}
            required.append(key)
        for field in attrs.fields(cls):
            wire = _camel(field.name)
            properties[wire] = self.type_schema(field.type)
            longest = field.metadata.get(LONGEST)
            if longest is not None:
                properties[wire] = {**properties[wire], "minLength": 1, "maxLength": longest}
            if field.default is attrs.NOTHING:
                required.append(wire)
        schema: Schema = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        if cls.__doc__:
            schema["description"] = " ".join(cls.__doc__.split("\n\n")[0].split())
        if cls is SnapshotFrame:
            schema["if"] = {"properties": {"availability": {"const": "ready"}}}
            # A ready snapshot has roots and no detail (C3); the others no roots.
            schema["then"] = {"required": ["roots"], "not": {"required": ["detail"]}}
            schema["else"] = {"not": {"required": ["roots"]}}
        self.definitions[name] = schema

    def define_union(self, name: str, tp: object) -> None:
        self.definitions[name] = self.type_schema(tp)


def wire_definitions(ref_prefix: str) -> dict[str, Schema]:
    """A schema for every wire type, by class name, referring to each other as
    ``{ref_prefix}{name}`` (``#/$defs/`` in a JSON Schema, ``#/components/schemas/`` in an
    OpenAPI document). ``Frame`` and ``WorkflowEvent`` are the unions a stream carries."""
    builder = _Builder(ref_prefix)
    for root in _ROOTS:
        if isinstance(root, type):
            builder.define_class(root)
    builder.define_union("Frame", Frame)
    builder.define_union("WorkflowEvent", WorkflowEvent)
    return dict(sorted(builder.definitions.items()))


def stream_definitions(ref_prefix: str) -> dict[str, Schema]:
    """What the streams carry beyond the contract's values: the WebSocket message and the
    ``dropped`` notice of ``/v1/events``."""
    return {
        "WebSocketMessage": {
            "description": "One frame on /v1/ws: its cursor text and the frame.",
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "description": "The frame's cursor, '<epoch>:<revision>'.",
                },
                "frame": {"$ref": f"{ref_prefix}Frame"},
            },
            "required": ["id", "frame"],
            "additionalProperties": False,
        },
        "DroppedNotice": {
            "description": "The data of `event: dropped` on /v1/events: hook events this client missed.",
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 1}},
            "required": ["count"],
            "additionalProperties": False,
        },
    }


def events_schema(base: str = "") -> Schema:
    """The JSON Schema document of the stream payloads, served at ``/schemas/wire.json``.

    ``$defs`` holds every wire type; the top level accepts what one stream item's JSON is: a
    frame (the ``data`` of ``/v1/activity``), a hook event or a dropped notice (``/v1/events``),
    or a WebSocket message (``/v1/ws``).
    """
    prefix = "#/$defs/"
    definitions = {**wire_definitions(prefix), **stream_definitions(prefix)}
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": f"{base}/schemas/wire.json",
        "title": "workflow-hub stream payloads",
        "description": (
            "The JSON of one SSE event's data or one WebSocket message. See docs/network.md and "
            "docs/wire-format.md."
        ),
        "oneOf": [
            {"$ref": f"{prefix}Frame"},
            {"$ref": f"{prefix}WorkflowEvent"},
            {"$ref": f"{prefix}DroppedNotice"},
            {"$ref": f"{prefix}WebSocketMessage"},
        ],
        "$defs": definitions,
    }
