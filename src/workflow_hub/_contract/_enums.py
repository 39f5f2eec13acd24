"""Enumerations of the contract: plain strings on the wire, ``StrEnum`` members in Python.

A member compares equal to its wire string (``Availability.READY == "ready"``), so user code may use
either; values built by this library always hold members.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "Attribution",
    "Availability",
    "ControlAction",
    "Delivery",
    "DiagnosticKind",
    "PromptKind",
    "PromptStatus",
    "Reason",
    "RunStatus",
    "StageStatus",
    "State",
    "ToolNodeStatus",
]


class State(StrEnum):
    """What a root is doing, in one word."""

    WORKING = "working"
    IDLE = "idle"
    BLOCKED = "blocked"


class Reason(StrEnum):
    """Why a root is in its state (see the state table in the scheduler guide)."""

    EXECUTING = "executing"
    AUTOMATIC_CONTINUATION = "automatic_continuation"
    RETRYING = "retrying"
    STOPPING = "stopping"
    AWAITING_INPUT = "awaiting_input"
    MANUAL_INTERVENTION = "manual_intervention"
    PAUSED = "paused"
    QUIESCENT = "quiescent"


class Availability(StrEnum):
    """Whether the hub knows the current activity. Only ``ready`` carries roots."""

    READY = "ready"
    RECOVERING = "recovering"
    UNAVAILABLE = "unavailable"


class RunStatus(StrEnum):
    """The status of a run, as the scheduler reports it (:class:`~workflow_hub.RunTarget`).

    Only runs that are pending, running, failed or blocked carry human waits (D2); a failed or
    blocked run whose executor has not ended is a manual wait (D3); a paused run is idle (D7).
    """

    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    BLOCKED = "blocked"
    FAILED = "failed"
    KILLED = "killed"


class StageStatus(StrEnum):
    """Status of a stage. There is deliberately no ``cancelled``."""

    PENDING = "pending"
    RUNNING = "running"
    AWAITING_INPUT = "awaiting_input"
    PAUSED = "paused"
    BLOCKED = "blocked"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"


class ToolNodeStatus(StrEnum):
    """The status of a tool (:class:`~workflow_hub.ToolNode`, :class:`~workflow_hub.ToolTarget`).

    ``cached`` is a tool whose earlier result was reused: the nodes after it take it as
    completed (D6).
    """

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CACHED = "cached"
    CANCELLED = "cancelled"


class ControlAction(StrEnum):
    """A control *request* on a run; it says nothing about the eventual outcome."""

    QUIT = "quit"
    KILL = "kill"
    PAUSE = "pause"
    RESUME = "resume"


class PromptKind(StrEnum):
    """What kind of answer a prompt asks for (:class:`~workflow_hub.NodePrompt`,
    :class:`~workflow_hub.RunPrompt`): data for whoever answers, not a discriminator."""

    INPUT = "input"
    CONFIRM = "confirm"
    SELECT = "select"
    EDITOR = "editor"
    CUSTOM = "custom"


class PromptStatus(StrEnum):
    """Where a prompt stands in a prompt event (:class:`~workflow_hub.PromptTarget`): ``opened``,
    then ``answered``, or ``cancelled`` when the question was withdrawn."""

    OPENED = "opened"
    ANSWERED = "answered"
    CANCELLED = "cancelled"


class Delivery(StrEnum):
    """``replay`` marks an explicit re-run; the hub never re-labels it."""

    LIVE = "live"
    REPLAY = "replay"


class Attribution(StrEnum):
    """Who brought a lifecycle event about, when the publisher knows (the optional
    ``attribution`` of :class:`~workflow_hub.LifecycleEvent`): a user, an agent, the scheduler
    itself, a recovery, or ``unknown``."""

    USER = "user"
    AGENT = "agent"
    SCHEDULER = "scheduler"
    RECOVERY = "recovery"
    UNKNOWN = "unknown"


class DiagnosticKind(StrEnum):
    """What a :class:`~workflow_hub.Diagnostic` records. Diagnostics are records, never raised."""

    OBSERVER_DISPOSED = "ObserverDisposed"
    SOURCE_RECOVERING = "SourceRecovering"
    SOURCE_UNAVAILABLE = "SourceUnavailable"
    OBSERVER_DELIVERY_FAILED = "ObserverDeliveryFailed"
    OBSERVER_OVERFLOW = "ObserverOverflow"
    PUBLISHER_FENCED = "PublisherFenced"
