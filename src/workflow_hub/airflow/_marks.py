"""A person's hand on a DAG run, read from Airflow's audit log: mark success, mark failed, clear.

Airflow says who changed a task instance or a DAG run by hand only in its audit log
(``GET /api/v2/eventLogs``), never on the record itself. Each entry is named after the endpoint
that was called (the UI calls the same ones) and carries the user as ``owner``:

* ``patch_task_instance`` / ``patch_dag_run``: "mark success", "mark failed" (and "mark
  skipped" for a task instance; "queued" for a run, which runs it again);
* ``post_clear_task_instances`` / ``clear_dag_run``: a clear, which runs the cleared task
  instances again (with their downstream tasks, when asked).

:func:`read_marks` turns a poll's entries into what each change is expected to show, per root
and task, so that the bridge can say who made a change it sees in the same poll.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

import attrs

__all__ = ["AGAIN", "ALL_TASKS", "MARK_EVENTS", "RUN", "Mark", "read_marks"]

MARK_EVENTS: Final = (
    "patch_task_instance",
    "patch_dag_run",
    "post_clear_task_instances",
    "clear_dag_run",
)
"""The audit log's events of a change by hand (the endpoints' names)."""

RUN: Final = ""
"""The task part of a mark of the DAG run itself."""
ALL_TASKS: Final = "*"
"""The task part of a clear: every task instance of the run that goes back to run again
(a clear also clears the downstream tasks it was asked to; the log lists only the named ones)."""
AGAIN: Final = "again"
"""A mark's result for a clear (or a run set back to ``queued``): what had ended runs again."""

_MARKED: Final[dict[str, str]] = {
    "success": "completed",
    "failed": "failed",
    "skipped": "skipped",
    "queued": AGAIN,
}


@final
@attrs.frozen
class Mark:
    """What a person did: ``owner`` (the user's name) made the task instance or run become
    ``result`` (a stage or run status), or run again (:data:`AGAIN`)."""

    owner: str
    result: str


def read_marks(logs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Mark]:
    """``{(dag_id/dag_run_id, task_id | RUN | ALL_TASKS): Mark}`` from audit-log entries
    (:meth:`AirflowApi.marks`); entries without a DAG run (a clear over a date range), or of
    another kind, are left out. A later entry for the same key wins."""
    marks: dict[tuple[str, str], Mark] = {}
    for log in logs:
        event, dag_id, run_id = log.get("event"), log.get("dag_id"), log.get("run_id")
        if event not in MARK_EVENTS or not dag_id or not run_id:
            continue
        root_id = f"{dag_id}/{run_id}"
        owner = str(log.get("owner") or "someone")
        if event in ("post_clear_task_instances", "clear_dag_run"):
            if not _dry_run(log):
                # What had ended runs again: the cleared task instances, and the run they
                # put back to running (only a clear, or a run set back to queued, does that).
                marks[(root_id, ALL_TASKS)] = Mark(owner, AGAIN)
                marks[(root_id, RUN)] = Mark(owner, AGAIN)
            continue
        extra = _extra(log)
        result = _MARKED.get(str(extra.get("new_state") or extra.get("state") or ""))
        if result is None:
            continue  # a note, or a state this does not know
        if event == "patch_dag_run":
            marks[(root_id, RUN)] = Mark(owner, result)
        elif log.get("task_id") and result != AGAIN:
            marks[(root_id, str(log["task_id"]))] = Mark(owner, result)
    return marks


def _extra(log: Mapping[str, Any]) -> dict[str, Any]:
    try:
        extra = json.loads(str(log.get("extra") or "{}"))
    except ValueError:
        return {}
    return extra if isinstance(extra, dict) else {}


def _dry_run(log: Mapping[str, Any]) -> bool:
    # Airflow logs no dry run of these two, but an older or newer one might.
    return _extra(log).get("dry_run") is True
