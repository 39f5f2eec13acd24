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
    INPUT = "input"
    CONFIRM = "confirm"
    SELECT = "select"
    EDITOR = "editor"
    CUSTOM = "custom"


class PromptStatus(StrEnum):
    OPENED = "opened"
    ANSWERED = "answered"
    CANCELLED = "cancelled"


class Delivery(StrEnum):
    """``replay`` marks an explicit re-run; the hub never re-labels it."""

    LIVE = "live"
    REPLAY = "replay"


class Attribution(StrEnum):
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
