"""Which conditions hold right now, read off the folded view of every source.

Nothing here keeps time or state: these functions look at a source's
:class:`~workflow_hub.reporting.ActivityView` (the fold every reporter uses) and at one root and
say which conditions hold, with their labels and summary. The book (``_book.py``) asks them
again for whatever a frame changed (one root, or a whole source after a snapshot) and adds the
durations.

- A source that is not known (no snapshot yet, recovering, unavailable, out of sync, replaced,
  unreachable, crashed) is *unknown*: it holds ``WorkflowSourceUnknown`` and its roots' conditions
  are *held* as they were, neither fired nor resolved, because nobody knows whether they cleared.
  So 50 sources losing their Redis make 50 alerts, never one per root, and their roots' alerts do
  not flap.
- A root of a known source holds ``WorkflowNeedsAttention`` when it is blocked or needs attention,
  and ``WorkflowStuck`` when it is working (the book decides whether it has gone without change
  for long enough).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from typing import final
from urllib.parse import quote

import attrs

from .._contract import (
    Availability,
    RootActivity,
    RootGraph,
    StageNode,
    State,
)
from ..reporting import ActivityView
from ._values import AlertName

__all__ = [
    "Condition",
    "ConditionKey",
    "attention_reason",
    "dashboard_link",
    "root_conditions",
    "source_condition",
    "unknown_reason",
]

ConditionKey = tuple[AlertName, str, str, str]
"""``(alertname, source, root_run_id, reason)``: what makes two conditions the same alert
(``root_run_id`` is ``""`` for a source's alert)."""

# Labels a root may not override: they say what the alert is.
_OWN_LABELS = frozenset({"alertname", "source", "root_run_id", "reason"})
_LABEL_NAME = re.compile(r"[^a-zA-Z0-9_]")
_SUMMARY_MAX = 300


@final
@attrs.frozen(kw_only=True)
class Condition:
    """One condition that holds now."""

    key: ConditionKey
    labels: Mapping[str, str]
    summary: str
    cause: str
    """What makes this occurrence this one (the question, the failed stage): part of the id."""
    since: float | None = None
    """When it began, when the condition itself knows (a stuck root: its last change);
    ``None``: when it was first seen."""

    @property
    def name(self) -> AlertName:
        return self.key[0]

    @property
    def source(self) -> str:
        return self.key[1]

    def alert_id(self) -> str:
        """The deterministic id: the same labels and cause give the same id in any process."""
        digest = hashlib.sha256()
        for part in (*self.key, *sorted(f"{k}={v}" for k, v in self.labels.items()), self.cause):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()[:32]


def unknown_reason(view: ActivityView, unknown: str | None = None) -> str | None:
    """Why a source is unknown, in a word or two; ``None`` when its view is known and trusted.

    ``unknown`` is what the transport says (``"unreachable"``, ``"crashed"``): it wins over
    whatever the view holds.
    """
    if unknown is not None:
        return unknown
    if view.availability is None:
        return "no snapshot yet"
    if view.availability is not Availability.READY:
        return str(view.availability)
    if view.superseded:
        return "replaced"
    if not view.in_sync:
        return "out of sync"
    return None


def source_condition(source: str, reason: str) -> Condition:
    """``WorkflowSourceUnknown`` of ``source``, unknown for ``reason``."""
    key: ConditionKey = (AlertName.SOURCE_UNKNOWN, source, "", "unknown")
    return Condition(
        key=key,
        labels={"alertname": str(key[0]), "source": source, "reason": "unknown"},
        summary=f"source {source!r} is unknown ({reason}): its roots cannot be seen",
        cause="",
    )


def root_conditions(source: str, root: RootActivity, changed_at: float | None) -> list[Condition]:
    """The conditions one root of a known source holds; ``changed_at`` is when it last changed
    (a working root's ``WorkflowStuck`` began then)."""
    return list(_root_conditions(source, root, changed_at))


def attention_reason(root: RootActivity) -> str | None:
    """The ``reason`` label of a root that needs attention, ``None`` when it needs none.

    A blocked root's own reason (``awaiting_input``, ``manual_intervention``); ``failed`` for an
    idle root that needs attention (a failure whose executor ended: SPEC §5's settled failure);
    ``partly_blocked`` for a working root one of whose branches waits.
    """
    if root.state is State.BLOCKED:
        return str(root.reason)
    if not root.needs_attention:
        return None
    return "failed" if root.state is State.IDLE else "partly_blocked"


def _root_conditions(
    source: str, root: RootActivity, changed_at: float | None
) -> Iterator[Condition]:
    root_id = root.root_run_id
    reason = attention_reason(root)
    if reason is not None:
        detail, cause = _attention_detail(root)
        key: ConditionKey = (AlertName.NEEDS_ATTENTION, source, root_id, reason)
        words = {
            "awaiting_input": "waits for input",
            "manual_intervention": "needs manual intervention",
            "failed": "failed",
            "partly_blocked": "has a branch waiting",
        }.get(reason, reason)
        yield Condition(
            key=key,
            labels=_labels(key, root),
            summary=_summary(f"root {root_id!r} of {source!r} {words}", detail),
            cause=cause,
        )
    if root.state is State.WORKING:
        key = (AlertName.STUCK, source, root_id, str(root.reason))
        yield Condition(
            key=key,
            labels=_labels(key, root),
            summary=f"root {root_id!r} of {source!r} has been {root.reason} with no change",
            cause="",
            since=changed_at,
        )


def _labels(key: ConditionKey, root: RootActivity) -> dict[str, str]:
    labels = {"alertname": str(key[0]), "source": key[1], "root_run_id": key[2], "reason": key[3]}
    for name, value in (root.labels or {}).items():
        # Alertmanager's label names are [a-zA-Z_][a-zA-Z0-9_]*; a root's ("team.name") are wider.
        safe = _LABEL_NAME.sub("_", name)
        if safe not in _OWN_LABELS:
            labels.setdefault(safe, value)
    return labels


def _attention_detail(root: RootActivity) -> tuple[str, str]:
    """What the root waits on (its questions, its failures) as a phrase, and as a cause."""
    graph = root.graph
    if graph is None:
        return "", ""
    questions, failures, cause = _graph_detail(graph)
    parts = [f"asks {q!r}" for q in questions] + failures
    return "; ".join(parts), cause


def _graph_detail(graph: RootGraph) -> tuple[list[str], list[str], str]:
    questions: list[str] = []
    failures: list[str] = []
    causes: list[str] = []
    for prompt in graph.run_prompts or ():
        questions.append(prompt.message)
        causes.append(f"p:{prompt.run_id}:{prompt.id}:{prompt.created_at}")
    for node in graph.nodes:
        pending = node.pending_prompt if isinstance(node, StageNode) else None
        if pending is not None:
            questions.append(pending.message)
            causes.append(f"p:{node.id}:{pending.id}:{pending.created_at}")
        if node.status == "failed":
            error = node.error
            said = f": {error.message}" if error is not None else ""
            failures.append(f"{node.kind} {node.name!r} failed{said}")
            causes.append(f"f:{node.id}")
    return questions, failures, "|".join(causes)


def _summary(head: str, detail: str) -> str:
    text = f"{head}: {detail}" if detail else head
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 1] + "…"


def dashboard_link(dashboard_url: str | None, root_run_id: str | None) -> str | None:
    """The dashboard filtered on one root (its search, ``#q=``), or on nothing for a source."""
    if dashboard_url is None:
        return None
    base = dashboard_url.rstrip("/")
    if not root_run_id:
        return f"{base}/"
    return f"{base}/#q={quote(root_run_id, safe='')}"
