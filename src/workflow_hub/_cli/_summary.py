"""One ``status`` refresh without the contract's classes: a snapshot's JSON read and summed up.

``workflow-hub status URL`` prints :func:`~workflow_hub.reporting.aggregate` of the snapshot a
served hub answers. Decoding that snapshot into the contract's values costs attrs and the
classes themselves (some 50 ms of a refresh of about 100 ms), and the line needs none of them:
it is counts and reasons. So :func:`summarize` checks the decoded JSON against the wire format's
rules for a snapshot (the same keys, types and values ``wire.loads(SnapshotFrame, body)``
accepts) and computes the same status with the standard library alone.

It is a fast path, never a second judge: whenever it is not sure (anything the decoder would
refuse, and anything it does not know how to check, such as a string with a lone surrogate), it
returns ``None`` and the command takes the ordinary path, which decides and explains as before.
tests/cli/test_status_summary.py holds it to the ordinary path on every snapshot the public
strategies draw and on broken ones. The enumerations' values and the reason priorities below are
the contract's (``_contract/_enums.py``, ``_contract/_rules.py``); the same test holds them to it.
"""

from __future__ import annotations

import json
import math
import re  # json imports it already: no cost
from types import SimpleNamespace

from .._exceptions import WorkflowHubError
from .._status_line import SEPARATOR, decide, root_parts
from ._words import attention_of, is_failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Summary", "summarize"]

STATES = frozenset({"working", "blocked", "idle"})
REASONS = frozenset(
    {
        "executing",
        "retrying",
        "automatic_continuation",
        "stopping",
        "awaiting_input",
        "manual_intervention",
        "paused",
        "quiescent",
    }
)
AVAILABILITIES = frozenset({"recovering", "ready", "unavailable"})
STAGE_STATUSES = frozenset(
    {"awaiting_input", "blocked", "completed", "failed", "paused", "pending", "running", "skipped"}
)
TOOL_STATUSES = frozenset({"cached", "cancelled", "completed", "failed", "pending", "running"})
PROMPT_KINDS = frozenset({"confirm", "custom", "editor", "input", "select"})
# C3's bounds (``_contract/_validate.py``; the same test holds them to it).
FAILURE_MESSAGE_MAX = 500
FAILURE_TYPE_MAX = 200
LABELS_MAX = 16
LABEL_KEY_MAX = 63
LABEL_VALUE_MAX = 256
DETAIL_MAX = 200
_LABEL_KEY = r"[A-Za-z][A-Za-z0-9_./-]*"  # re caches it, compiled on the first label only
WORKING_PRIORITY = ("retrying", "executing", "automatic_continuation")
BLOCKED_PRIORITY = ("awaiting_input", "manual_intervention")


class _Refused(WorkflowHubError):
    """Not sure: the ordinary path decides."""


class Summary(SimpleNamespace):
    """What ``status`` shows of a snapshot: the attributes of an ``AggregateStatus``, with the
    state and the reason as their wire strings (what ``str()`` of the enum members gives)."""

    state: str
    reason: str | None
    attention: bool
    roots: int
    working: int
    blocked: int
    awaiting_input: int
    message: str
    failed: int
    """How many roots need a person because something failed in them (``_words.is_failure``)."""
    labels: tuple[str, ...]
    """The roots' labels, each ``key:value`` once, sorted."""
    attention_labels: tuple[str, ...]
    """The labels of the roots that need attention: whose problem it is."""

    def __str__(self) -> str:
        return self.message


def summarize(body: bytes) -> Summary | None:
    """The status of a snapshot's JSON text, or ``None`` when the ordinary path must decide."""
    try:
        document = json.loads(body, parse_constant=_refuse_constant)
        roots = _snapshot(document)
    except (_Refused, ValueError, RecursionError):
        return None
    return _aggregate(document["availability"], roots, document.get("detail"))


# --- the wire format's rules for a snapshot (_contract/_values.py, _contract/_wire.py) ---------


def _refuse_constant(text: str) -> object:
    raise _Refused(text)


def _object(value: object) -> dict[str, object]:
    if type(value) is not dict:
        raise _Refused
    return value


def _str(value: object) -> None:
    if type(value) is not str:
        raise _Refused
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            raise _Refused from None


def _count(value: object) -> None:
    if type(value) is not int or value < 0:
        raise _Refused


def _number(value: object) -> None:
    if type(value) is float:
        if not math.isfinite(value):
            raise _Refused
    elif type(value) is not int:
        raise _Refused


def _member(values: frozenset[str]) -> Callable[[object], None]:
    def check(value: object) -> None:
        if type(value) is not str or value not in values:
            raise _Refused

    return check


def _strs(value: object) -> None:
    if type(value) is not list:
        raise _Refused
    for item in value:
        _str(item)


def _fields(
    document: dict[str, object],
    required: tuple[tuple[str, Callable[[object], None]], ...],
    optional: tuple[tuple[str, Callable[[object], None]], ...] = (),
) -> None:
    """Each required key present and valid, each optional one absent or valid (never null)."""
    for key, check in required:
        if key not in document:
            raise _Refused
        check(document[key])
    for key, check in optional:
        if key in document:
            check(document[key])


def _discriminated(document: dict[str, object], key: str, tag: str) -> None:
    if document.get(key) != tag:
        raise _Refused


def _prompt_fields(prompt: dict[str, object]) -> None:
    _fields(
        prompt,
        (("id", _str), ("kind", _member(PROMPT_KINDS)), ("message", _str), ("createdAt", _number)),
        (("choices", _strs),),
    )


def _text(longest: int) -> Callable[[object], None]:
    def check(value: object) -> None:
        _str(value)
        if not value or len(value) > longest:  # type: ignore[arg-type]
            raise _Refused

    return check


def _error(value: object) -> None:
    _fields(
        _object(value),
        (("message", _text(FAILURE_MESSAGE_MAX)),),
        (("type", _text(FAILURE_TYPE_MAX)),),
    )


def _labels(value: object) -> None:
    labels = _object(value)
    if len(labels) > LABELS_MAX:
        raise _Refused
    for key, item in labels.items():
        if len(key) > LABEL_KEY_MAX or not re.fullmatch(_LABEL_KEY, key):
            raise _Refused
        _str(item)
        if not item or len(item) > LABEL_VALUE_MAX or not item.isprintable():  # type: ignore[attr-defined, arg-type]
            raise _Refused


def _detail(value: object) -> None:
    """Why a non-ready source is unknown (C3): one printable line."""
    _text(DETAIL_MAX)(value)
    if not value.isprintable():  # type: ignore[attr-defined]
        raise _Refused


def _node_prompt(value: object) -> None:
    _prompt_fields(_object(value))


def _run_prompts(value: object) -> None:
    if type(value) is not list:
        raise _Refused
    for item in value:
        prompt = _object(item)
        _prompt_fields(prompt)
        _fields(prompt, (("runId", _str),))


_NODE_FIELDS = (
    ("id", _str),
    ("runId", _str),
    ("nodeId", _str),
    ("name", _str),
    ("parentIds", _strs),
    ("depth", _count),
)
_STAGE_FIELDS = (*_NODE_FIELDS, ("status", _member(STAGE_STATUSES)))
_STAGE_OPTIONAL = (
    ("executionOrder", _count),
    ("pendingPrompt", _node_prompt),
    ("error", _error),
)
_TOOL_FIELDS = (*_NODE_FIELDS, ("status", _member(TOOL_STATUSES)), ("ordinal", _count))
_TOOL_OPTIONAL = (("executionOrder", _count), ("error", _error))


def _nodes(value: object) -> None:
    if type(value) is not list:
        raise _Refused
    for item in value:
        node = _object(item)
        kind = node.get("kind")
        if kind == "stage":
            _fields(node, _STAGE_FIELDS, _STAGE_OPTIONAL)
        elif kind == "tool":
            _fields(node, _TOOL_FIELDS, _TOOL_OPTIONAL)
        else:
            raise _Refused
        if "error" in node and node["status"] != "failed":
            raise _Refused  # an error only on a failed node (C3)


def _graph(value: object) -> None:
    _fields(_object(value), (("nodes", _nodes),), (("runPrompts", _run_prompts),))


_ROOT_FIELDS = (
    ("rootRunId", _str),
    ("ownerSessionId", _str),
    ("state", _member(STATES)),
    ("reason", _member(REASONS)),
    ("activeExecutionCount", _count),
    ("actionableBlockCount", _count),
    ("needsAttention", lambda value: None if type(value) is bool else _refuse()),
)
_ROOT_OPTIONAL = (("graph", _graph), ("labels", _labels))


def _refuse() -> None:
    raise _Refused


def _cursor(value: object) -> None:
    _fields(_object(value), (("epoch", _str), ("revision", _count)))


def _snapshot(data: object) -> list[dict[str, object]]:
    """The roots of a valid snapshot document (none unless it is ready); refused otherwise."""
    document = _object(data)
    _discriminated(document, "kind", "snapshot")
    _fields(
        document,
        (("cursor", _cursor), ("availability", _member(AVAILABILITIES))),
        (("detail", _detail),),
    )
    ready = document["availability"] == "ready"
    if ready != ("roots" in document) or (ready and "detail" in document):
        # Ready exactly when it carries roots, and never with a detail (SnapshotFrame's check).
        raise _Refused
    if "roots" not in document:
        return []
    roots = document["roots"]
    if type(roots) is not list:
        raise _Refused
    for root in roots:
        _fields(_object(root), _ROOT_FIELDS, _ROOT_OPTIONAL)
    return roots


# --- reporting.aggregate() of a snapshot, on wire strings ---------------------------------------


_WORKING_RANK = {reason: index for index, reason in enumerate(WORKING_PRIORITY)}
_BLOCKED_RANK = {reason: index for index, reason in enumerate(BLOCKED_PRIORITY)}


def _aggregate(availability: str, roots: list[dict[str, object]], detail: object = None) -> Summary:
    # What reporting.aggregate computes from contract values, from checked JSON: the same
    # rule (``_status_line``), fed strings.
    states = [
        (str(root["state"]), str(root["reason"]), root["needsAttention"] is True) for root in roots
    ]
    working = [reason for state, reason, _ in states if state == "working"]
    blocked = [reason for state, reason, _ in states if state == "blocked"]
    paused = sum(1 for _, reason, _ in states if reason == "paused")
    state, reason = decide(
        working,
        blocked,
        unknown=availability != "ready",
        paused=paused > 0,
        working_rank=_WORKING_RANK,
        blocked_rank=_BLOCKED_RANK,
    )
    parts = root_parts(
        state,
        working=len(working),
        blocked=blocked,
        other_attention=sum(1 for state, _, needs in states if needs and state != "blocked"),
        paused=paused,
        unknown_detail=str(detail) if detail else f"source {availability}",
    )
    failed = 0
    labels: set[str] = set()
    attention_labels: set[str] = set()
    for root in roots:
        own = [f"{key}:{value}" for key, value in _object(root.get("labels", {})).items()]
        labels.update(own)
        why = _why(root)
        if why:
            attention_labels.update(own)
            failed += is_failure(why)
    return Summary(
        state=state,
        reason=reason,
        attention=any(needs or state == "blocked" for state, _, needs in states),
        roots=len(roots),
        working=len(working),
        blocked=len(blocked),
        awaiting_input=blocked.count("awaiting_input"),
        message=SEPARATOR.join(parts),
        failed=failed,
        labels=tuple(sorted(labels)),
        attention_labels=tuple(sorted(attention_labels)),
    )


def _why(root: dict[str, object]) -> str:
    """``_words.attention_of`` of a checked root's JSON (as ``_output.root_attention``)."""
    graph = root.get("graph")
    asks = False
    failed_at: str | None = None
    if type(graph) is dict:
        asks = bool(graph.get("runPrompts"))
        for node in graph["nodes"]:
            asks = asks or (node["kind"] == "stage" and "pendingPrompt" in node)
            if failed_at is None and node["status"] == "failed":
                failed_at = node["name"]
    return attention_of(
        str(root["state"]),
        str(root["reason"]),
        root["needsAttention"] is True,
        asks=asks,
        failed_at=failed_at,
    )
