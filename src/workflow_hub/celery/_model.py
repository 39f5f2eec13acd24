"""What the Celery bridge knows of each task and root: the records its rooms share.

The bridge (``_bridge.py``: events in) and its recovery (``_recovery.py``: inspections, result
backend, a restart's restored state) read and move the same records; they live here so that
neither reaches into the other.
"""

from __future__ import annotations

from typing import Final

import attrs

from .._contract import FailureDetail, Labels

__all__ = [
    "BLOCKED",
    "ENDED",
    "FAILED",
    "LOST",
    "PENDING",
    "REVOKED",
    "RUNNING",
    "STOPPED",
    "SUCCEEDED",
    "UNKNOWN_NAME",
    "UNSERVED",
    "Root",
    "Task",
]

# A task's life as the bridge knows it. "lost": in flight on a worker that stopped answering;
# "unserved": queued in the broker while no worker is alive to run it.
PENDING: Final = "pending"
RUNNING: Final = "running"
SUCCEEDED: Final = "succeeded"
FAILED: Final = "failed"
REVOKED: Final = "revoked"
LOST: Final = "lost"
UNSERVED: Final = "unserved"
ENDED: Final = frozenset({SUCCEEDED, FAILED, REVOKED})
STOPPED: Final = frozenset({FAILED, REVOKED})  # ends with no continuation to wait for
BLOCKED: Final = frozenset({LOST, UNSERVED})  # need attention: nothing will move them on its own

UNKNOWN_NAME: Final = "unknown task"
"""The stage name of a task first seen from an event without its name, until one is found
(docs/celery.md, "Order" and "Restarts")."""


@attrs.define(slots=True, eq=False)
class Task:
    task_id: str
    root_id: str
    state: str = PENDING
    retries: int = 0
    retried: int = 0  # task-retried events seen: the k-th ends attempt k - 1
    worker: str | None = None
    terminated: bool = False
    expired: bool = False
    reported: tuple[str, bool] = ("pending", False)  # the stage status and retrying flag
    # Order by meaning, not arrival: ``final`` once a task-succeeded/failed/revoked (or a
    # rejection without requeue) was applied, which no later event undoes; ``phase`` of the
    # current attempt (1 received, 2 started), which a late received does not take back.
    final: bool = False
    phase: int = 0
    provisional: bool = False  # first seen without a name: its root is a guess (its own id)
    name: str | None = None
    redelivery: bool = False  # its worker went with its message unacked: the broker resends it
    error: FailureDetail | None = None
    restored: bool = False  # known from a previous instance's state: no worker told of it yet


@attrs.define(slots=True, eq=False)
class Root:
    root_id: str
    tasks: dict[str, Task] = attrs.field(factory=dict)
    open: int = 0  # tasks not ended (lost ones included)
    stopped: int = 0  # tasks failed or revoked: they end the root without waiting to settle
    ended: bool = False
    quiet_since: float | None = None  # when the last open task ended
    ended_at: float = 0.0
    labels: Labels | None = None
