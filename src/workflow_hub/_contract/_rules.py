"""The reason priorities of SPEC §5, written once.

A root's summary (``_derive.py``, ``_rootstate.py``) and the one-word status of many roots
(``_aggregate.py``) both choose a reason by the same priorities; they read them from here, so the
two can never disagree again.
"""

from __future__ import annotations

from ._enums import Reason, State

__all__ = ["BLOCKED_PRIORITY", "WORKING_PRIORITY", "first_present", "state_and_reason"]

WORKING_PRIORITY: tuple[Reason, ...] = (
    Reason.RETRYING,
    Reason.EXECUTING,
    Reason.AUTOMATIC_CONTINUATION,
)
"""Among independent work: a retry says more than plain execution, which says more than a
continuation that has not started yet. ``stopping`` is outside the list on purpose: it is the
reason only when *all* the work is stopping (SPEC §5, D8)."""

BLOCKED_PRIORITY: tuple[Reason, ...] = (Reason.AWAITING_INPUT, Reason.MANUAL_INTERVENTION)
"""Any human wait makes a blocked root ``awaiting_input``; only manual waits make it
``manual_intervention`` (SPEC §5, D8)."""


def state_and_reason(
    *,
    executions: int,
    stopping_executions: int,
    retrying: bool,
    independent: bool,
    runnable: bool,
    human_waits: int,
    manual_waits: int,
    paused: bool,
) -> tuple[State, Reason]:
    """D8: the state and reason of one root from what D1-D7 found in it.

    ``independent`` is whether anything continues outside stopping runs (runnable work, or a
    retry in a run that is not stopping); ``runnable`` is D6's runnable work.
    """
    if executions > 0 or retrying or runnable:
        if executions > 0 and stopping_executions == executions and not independent:
            return State.WORKING, Reason.STOPPING
        present = {
            Reason.RETRYING: retrying,
            Reason.EXECUTING: executions > 0,
            Reason.AUTOMATIC_CONTINUATION: True,
        }
        return State.WORKING, first_present(present, WORKING_PRIORITY)
    if human_waits or manual_waits:
        waits = {Reason.AWAITING_INPUT: human_waits > 0, Reason.MANUAL_INTERVENTION: True}
        return State.BLOCKED, first_present(waits, BLOCKED_PRIORITY)
    return State.IDLE, Reason.PAUSED if paused else Reason.QUIESCENT


def first_present(present: dict[Reason, bool], priority: tuple[Reason, ...]) -> Reason:
    """The first reason of ``priority`` that ``present`` marks true."""
    return next(reason for reason in priority if present.get(reason, False))
