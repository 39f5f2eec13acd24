"""What the terminal says for the contract's values, in the dashboard's words, and why a root
needs a person: the one copy of those rules on the terminal's side.

The dashboard says them in ``server/static/views.js`` (``WORDS``, ``shownState``,
``attentionOf``, ``headline``); tests/cli/test_words.py runs that script under node and holds
this module to it, so that ``watch``, ``status`` and the page never read differently. It needs
nothing but the standard library: ``status`` imports it before anything else of the package, and
works on a snapshot's JSON as ``watch`` works on the contract's values (the caller says what a
root asks and what failed in it).
"""

from __future__ import annotations

TYPE_CHECKING = False  # ``typing`` is not imported: the status command pays for every import
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "REASON_WORDS",
    "attention_of",
    "group_of",
    "headline",
    "is_failure",
    "shown_state",
    "words",
]

REASON_WORDS = {
    "executing": "executing",
    "retrying": "retrying",
    "automatic_continuation": "continuing by itself",
    "stopping": "stopping",
    "awaiting_input": "waiting for input",
    "manual_intervention": "needs intervention",
    "paused": "paused",
    "quiescent": "nothing to do",
}
"""A root's reason (the contract's ``Reason``) as the dashboard writes it."""

HEADLINE_PARTS = 3
"""The headline names at most this many reasons, then counts the rest ("and 4 more")."""


def words(value: str) -> str:
    """A reason in words; a value without words (a newer hub's) reads with spaces for ``_ -``."""
    found = REASON_WORDS.get(value)
    return found if found is not None else value.replace("_", " ").replace("-", " ")


def group_of(state: str, needs_attention: bool) -> str:
    """``attention`` (blocked, or flagged), ``working`` or ``idle``: the order roots are shown in."""
    if state == "blocked" or needs_attention:
        return "attention"
    return "working" if state == "working" else "idle"


def shown_state(state: str, needs_attention: bool) -> str:
    """The state a person reads: an idle root that needs attention is a settled failure, and
    reads ``failed`` (never "idle · nothing to do" beside "needs attention")."""
    return "failed" if state == "idle" and needs_attention else state


def attention_of(
    state: str, reason: str, needs_attention: bool, *, asks: bool, failed_at: str | None
) -> str:
    """Why a root needs a person, or ``""``: a question first ("waiting for input"), then its
    first failed stage or tool ("failed at deploy"), "needs intervention", "failed" (a settled
    failure without a graph), a blocked reason in words, else "needs attention".

    ``asks``: the root waits for input or a prompt of its graph is pending; ``failed_at``: the
    name of its first failed stage or tool, if any.
    """
    if group_of(state, needs_attention) != "attention":
        return ""
    if asks or reason == "awaiting_input":
        return "waiting for input"
    if failed_at is not None:
        return f"failed at {failed_at}"
    if reason == "manual_intervention":
        return "needs intervention"
    if state == "idle":
        return "failed"
    if state == "blocked":
        return words(reason)
    return "needs attention"


def is_failure(why: str) -> bool:
    """Whether :func:`attention_of` said that a root failed."""
    return why == "failed" or why.startswith("failed at ")


def _rank(why: str) -> int:
    if why == "waiting for input":
        return 0
    if why == "needs intervention":
        return 1
    return 2 if is_failure(why) else 3


def headline(whys: Iterable[str]) -> str:
    """What needs a person, from each root's :func:`attention_of`: "2 need attention: 1 waiting
    for input, 1 failed at deploy" (``""`` when nothing does). Reasons are grouped, questions
    first, then interventions, then failures, then the rest, each rank most frequent first."""
    counts: dict[str, int] = {}
    for why in whys:
        if why:
            counts[why] = counts.get(why, 0) + 1
    if not counts:
        return ""
    order = {why: index for index, why in enumerate(counts)}
    parts = sorted(counts, key=lambda why: (_rank(why), -counts[why], order[why]))
    total = sum(counts.values())
    if list(counts) == ["needs attention"]:
        return _attention(total)  # no "1 needs attention: 1 needs attention"
    shown = ", ".join(f"{counts[why]} {why}" for why in parts[:HEADLINE_PARTS])
    rest = sum(counts[why] for why in parts[HEADLINE_PARTS:])
    more = f", and {rest} more" if rest else ""
    return f"{_attention(total)}: {shown}{more}"


def _attention(count: int) -> str:
    return f"{count} {'needs' if count == 1 else 'need'} attention"
