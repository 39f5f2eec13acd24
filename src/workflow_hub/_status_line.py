"""The aggregate status of a source's roots, as plain strings: the one copy of that rule.

``reporting.aggregate`` boils contract values down with it, and ``workflow-hub status`` boils a
snapshot's JSON down with it without loading the contract's classes (``_cli/_summary.py``), so
the two cannot drift apart. It needs nothing but the standard library: the status command
imports it before anything else of the package. States and reasons are compared as strings,
which the contract's ``StrEnum`` members are.
"""

from __future__ import annotations

TYPE_CHECKING = False  # ``typing`` is not imported: the status command pays for every import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = ["SEPARATOR", "decide", "first_by_rank", "root_parts", "verb"]

SEPARATOR = " · "


def verb(count: int, singular: str, plural: str) -> str:
    return f"{count} {singular if count == 1 else plural}"


def first_by_rank(reasons: Iterable[str], rank: Mapping[str, int]) -> str | None:
    """The most significant reason: a reason outside ``rank`` ranks last, ties keep the order.

    The reason is reported as published, never invented (the object given is returned)."""
    return min(reasons, key=lambda reason: rank.get(reason, len(rank)), default=None)


def decide(
    working: Iterable[str | None],
    blocked: Iterable[str | None],
    *,
    unknown: bool,
    paused: bool,
    working_rank: Mapping[str, int],
    blocked_rank: Mapping[str, int],
) -> tuple[str, str | None]:
    """The decision table of ``reporting.aggregate`` (first matching row wins), for roots and
    whole sources alike: the state and its reason.

    ``working`` and ``blocked`` are the reasons of the parts in those states (a part whose
    reason is unknown counts, and decides nothing about the reason); ``unknown`` says that some
    part is unknown; ``paused`` that some idle part is paused. ``stopping`` is the reason only
    when every working part is stopping: independent work keeps its own reason.
    """
    working = list(working)
    blocked = list(blocked)
    if working:
        independent = [r for r in working if r is not None and r != "stopping"]
        return "working", first_by_rank(independent, working_rank) or "stopping"
    if blocked:
        known = [reason for reason in blocked if reason is not None]
        return "blocked", first_by_rank(known, blocked_rank)
    if unknown:
        return "unknown", None
    return "idle", "paused" if paused else "quiescent"


def root_parts(
    state: str,
    *,
    working: int,
    blocked: Sequence[str],
    other_attention: int,
    paused: int,
    unknown_detail: str,
) -> list[str]:
    """The parts of the message of one source's status (joined with :data:`SEPARATOR`).

    ``blocked`` holds the reasons of the blocked roots, ``other_attention`` counts the roots
    that need attention and are not blocked (the blocked counts already tell of those), and
    ``unknown_detail`` says why the activity is unknown (``source recovering`` …).
    """
    awaiting = blocked.count("awaiting_input")
    manual = blocked.count("manual_intervention")
    blocked_parts: list[str] = []
    if awaiting:
        blocked_parts.append(f"{awaiting} waiting for input")
    if manual:
        blocked_parts.append(verb(manual, "needs intervention", "need intervention"))
    if len(blocked) > awaiting + manual:
        blocked_parts.append(f"{len(blocked) - awaiting - manual} blocked")
    attention_parts: list[str] = []
    if other_attention:
        attention_parts.append(verb(other_attention, "needs attention", "need attention"))
    if state == "working":
        return [f"{working} working", *blocked_parts, *attention_parts]
    if state == "blocked":
        return [*blocked_parts, *attention_parts]
    if state == "unknown":
        return [f"activity unknown: {unknown_detail}", *attention_parts]
    return [f"{paused} paused" if paused else "idle", *attention_parts]
