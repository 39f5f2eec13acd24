"""One status for a pane, a badge or a tray icon, boiled down from every root.

The decision table (first matching row wins; see ``docs/reporters.md``):

1. any root is working -> ``working``, with the most significant working reason;
2. any root is blocked -> ``blocked``: ``awaiting_input`` before ``manual_intervention``;
3. the source is not ready, no snapshot was seen, or the view is out of sync -> ``unknown``;
4. otherwise ``idle``: ``paused`` if any root is paused, else ``quiescent``.

Unknown is never idle: "idle" claims that nothing runs, and only a complete, trustworthy picture
can back that claim. Working and blocked claim that something *is* there, so a root in hand is
enough for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import final

import attrs

from .._contract import (
    BLOCKED_PRIORITY,
    WORKING_PRIORITY,
    Availability,
    ContractError,
    Reason,
    RootActivity,
    SnapshotFrame,
    State,
)
from .._status_line import SEPARATOR, decide, root_parts
from ._view import ActivityView

__all__ = ["AggregateState", "AggregateStatus", "aggregate", "combine"]


class AggregateState(StrEnum):
    """The one-word status of everything a view holds."""

    WORKING = "working"
    """Some root is working."""
    BLOCKED = "blocked"
    """Nothing works and some root waits for a human."""
    IDLE = "idle"
    """The source is ready, nothing works and nothing is blocked."""
    UNKNOWN = "unknown"
    """The activity is not known (source recovering or unavailable, no snapshot yet, or the view
    is out of sync). Never shown as idle."""


@final
@attrs.frozen(kw_only=True)
class AggregateStatus:
    """The result of :func:`aggregate`. ``str(status)`` is its :attr:`message`."""

    state: AggregateState
    """The one-word status."""
    reason: Reason | None
    """Why: the most significant reason among the roots that decided the state; ``None`` when the
    state is unknown."""
    attention: bool
    """True when some root needs attention or is blocked."""
    roots: int
    """Roots the view holds (0 while the source is not ready)."""
    working: int
    """Roots whose state is working."""
    blocked: int
    """Roots whose state is blocked."""
    awaiting_input: int
    """Blocked roots waiting for human input (``blocked`` / ``awaiting_input``)."""
    message: str
    """A short human-readable summary, such as ``"2 working · 1 waiting for input"``."""

    def __str__(self) -> str:
        return self.message


# The priorities are SPEC §5's, shared with the derivation of one root (``_rules.py``); the
# table and the message are ``_status_line``'s, shared with ``workflow-hub status``.
_WORKING_RANK: Mapping[str, int] = {reason: i for i, reason in enumerate(WORKING_PRIORITY)}
_BLOCKED_RANK: Mapping[str, int] = {reason: i for i, reason in enumerate(BLOCKED_PRIORITY)}


def aggregate(source: ActivityView | SnapshotFrame) -> AggregateStatus:
    """Boil a view (or one snapshot frame, e.g. ``hub.snapshot_frame()``) down to one status.

    See the module docstring for the decision table.
    """
    if not isinstance(source, ActivityView | SnapshotFrame):
        raise ContractError(
            "source",
            f"expected an ActivityView or a SnapshotFrame, got {type(source).__name__}",
        )
    # Both have the source's own reason for being unknown (C3's detail), if it gave one.
    said = source.detail
    if isinstance(source, SnapshotFrame):
        availability: Availability | None = source.availability
        roots: tuple[RootActivity, ...] = source.roots or ()
        in_sync = True
        superseded = False
    else:
        availability = source.availability
        roots = source.roots
        in_sync = source.in_sync
        superseded = source.superseded

    working = [root.reason for root in roots if root.state is State.WORKING]
    blocked = [root.reason for root in roots if root.state is State.BLOCKED]
    attention = any(root.needs_attention or root.state is State.BLOCKED for root in roots)
    # Attention that the blocked counts do not already tell (e.g. an ended failure).
    other_attention = sum(
        1 for root in roots if root.needs_attention and root.state is not State.BLOCKED
    )
    unknown = availability is not Availability.READY or not in_sync
    paused = sum(1 for root in roots if root.reason is Reason.PAUSED)
    state, reason = _decide(working, blocked, unknown=unknown, paused=paused > 0)
    if availability is None:
        detail = "no snapshot yet"
    elif availability is not Availability.READY:
        detail = said or f"source {availability}"
    elif superseded:
        detail = "source replaced"
    else:
        detail = "view out of sync"
    parts = root_parts(
        state,
        working=len(working),
        blocked=blocked,
        other_attention=other_attention,
        paused=paused,
        unknown_detail=detail,
    )
    return AggregateStatus(
        state=state,
        reason=reason,
        attention=attention,
        roots=len(roots),
        working=len(working),
        blocked=len(blocked),
        awaiting_input=blocked.count(Reason.AWAITING_INPUT),
        message=SEPARATOR.join(parts),
    )


def _decide(
    working: Iterable[Reason | None],
    blocked: Iterable[Reason | None],
    *,
    unknown: bool,
    paused: bool,
) -> tuple[AggregateState, Reason | None]:
    """``_status_line.decide`` with the contract's priorities, as this module's enums."""
    state, reason = decide(
        working,
        blocked,
        unknown=unknown,
        paused=paused,
        working_rank=_WORKING_RANK,
        blocked_rank=_BLOCKED_RANK,
    )
    return AggregateState(state), None if reason is None else Reason(reason)


def combine(statuses: Iterable[AggregateStatus]) -> AggregateStatus:
    """One status for several sources, each already boiled down (e.g. one per scheduler).

    The same table as :func:`aggregate`, a source standing where a root stands: working if any
    source works, else blocked if any is blocked, else unknown if any source is unknown (or
    there are none), else idle. Counts are summed; the message counts roots, and the unknown
    sources.
    """
    statuses = list(statuses)
    for index, status in enumerate(statuses):
        if not isinstance(status, AggregateStatus):
            raise ContractError(
                f"statuses[{index}]",
                f"expected an AggregateStatus, got {type(status).__name__}",
            )
    by_state: dict[AggregateState, list[AggregateStatus]] = {state: [] for state in AggregateState}
    for status in statuses:
        by_state[status.state].append(status)
    unknown = len(by_state[AggregateState.UNKNOWN])
    state, reason = _decide(
        (status.reason for status in by_state[AggregateState.WORKING]),
        (status.reason for status in by_state[AggregateState.BLOCKED]),
        unknown=unknown > 0 or not statuses,
        paused=any(status.reason is Reason.PAUSED for status in by_state[AggregateState.IDLE]),
    )
    working = sum(status.working for status in statuses)
    blocked = sum(status.blocked for status in statuses)
    awaiting = sum(status.awaiting_input for status in statuses)
    parts: list[str] = []
    if state is AggregateState.WORKING:
        parts.append(f"{working} working")
    elif state is AggregateState.IDLE:
        parts.append("idle")
    if awaiting:
        parts.append(f"{awaiting} waiting for input")
    if blocked > awaiting:
        parts.append(f"{blocked - awaiting} blocked")
    if unknown:
        parts.append(f"{unknown} unknown")
    return AggregateStatus(
        state=state,
        reason=reason,
        attention=any(status.attention for status in statuses),
        roots=sum(status.roots for status in statuses),
        working=working,
        blocked=blocked,
        awaiting_input=awaiting,
        message=SEPARATOR.join(parts),
    )
