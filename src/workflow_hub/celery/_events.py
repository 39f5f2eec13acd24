"""What the bridge reads out of one Celery event before it changes anything: whether the event is
fit to apply at all, why a task failed, and which labels its root takes.

Functions of plain values, and the log of refused events:
:class:`~workflow_hub.celery.CeleryBridge` calls them per event (docs/celery.md, "Bad events",
"Failures" and "Labels").
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

from .._contract import FAILURE_TYPE_MAX, ContractError, FailureDetail, Labels
from .._failure_log import FailureLog

__all__ = [
    "LABEL_SOURCES",
    "RefusalLog",
    "check_label_options",
    "check_new_task",
    "check_text",
    "failure_of",
    "labelled",
]

logger = logging.getLogger("workflow_hub.celery")

# The fields of an event that adds a task (or moves one first seen without them) and become
# contract text: the task's and the root's ids, the stage's name.
_TASK_TEXT: Final = ("uuid", "root_id", "name")


def check_new_task(event: Mapping[str, Any]) -> None:
    """Refuse (``ContractError`` on the field) an event that would add a task whose id, root
    id or name has no UTF-8 form (a lone surrogate): checked before the event changes
    anything, so it is refused whole and alone. Events of a known task are not checked again:
    nothing of theirs becomes contract text (a label that is not valid is left out)."""
    for field in _TASK_TEXT:
        value = event.get(field)
        if type(value) is str and not value.isascii():
            check_text(value, field)


def check_text(value: str, field: str) -> None:
    """``ContractError`` on ``field`` unless ``value`` has a UTF-8 form."""
    try:
        value.encode()
    except UnicodeEncodeError as error:
        raise ContractError(
            field,
            f"lone surrogate {value[error.start]!r} at index {error.start} has no UTF-8 form",
        ) from None


@final
class RefusalLog:
    """One warning line (no traceback) for the first refused event of each reason, then a line
    with the count at the 10th, 100th … refusal: a stream of bad events cannot flood the log,
    and ``count`` is exact."""

    __slots__ = ("_bugs", "_next_report", "_reasons", "count")

    def __init__(self) -> None:
        self.count = 0
        self._reasons: set[str] = set()
        self._next_report = 10
        self._bugs = FailureLog(logger, "applying a celery event")

    def broke(self, error: BaseException) -> None:
        """Count an event whose handling raised something other than a refusal (a bug): the
        first of each exception type is logged with its traceback, the rest counted."""
        self.count += 1
        self._bugs.failed(error)

    def refused(self, event: Mapping[str, Any], field: str, reason: str) -> None:
        """Count one refused event; log it if it is the first refused for ``field``."""
        self.count += 1
        kind = event.get("type")
        if field not in self._reasons and len(self._reasons) < 100:
            self._reasons.add(field)
            logger.warning(
                "refused a celery event (%s of task %s): %s; the rest of its batch is applied",
                _one_line(kind),
                _one_line(event.get("uuid")),
                reason if reason.isascii() and "\n" not in reason else _one_line(reason),
            )
        elif self.count == self._next_report:
            self._next_report *= 10
            logger.warning(
                "refused %d celery events so far (the first of each field logged)", self.count
            )


def _one_line(value: object) -> str:
    text = ascii(value) if not isinstance(value, str) or not value.isascii() else repr(value)
    return text if len(text) <= 200 else text[:199] + "…"


# ``exception`` of task-failed and task-retried is the exception's repr, made by the worker
# (``safe_repr``, possibly cut short): ``ValueError('boom')``, ``app.errors.Bad(1, 'x')``.
_REPR: Final = re.compile(r"([A-Za-z_][\w.]*)\((.*)\)", re.DOTALL)
_REPR_LONGEST: Final = 4000  # longer reprs are read as plain text (no parse of a huge string)


def failure_of(exception: object) -> FailureDetail | None:
    """The :class:`FailureDetail` of a ``task-failed`` event's ``exception`` (a repr string):
    the message is the exception's message (its single argument, or its arguments), the type
    the class name. Never the traceback (the event's ``traceback`` field is not read). A repr
    that does not parse gives its first line as the message and no type; no ``exception``
    gives ``None``."""
    if not isinstance(exception, str) or not exception.strip():
        return None
    text = exception.strip()
    match = _REPR.fullmatch(text) if len(text) <= _REPR_LONGEST else None
    if match is None:
        return FailureDetail.of(text)
    name, inner = match.groups()
    kind = name.rpartition(".")[2][:FAILURE_TYPE_MAX]
    message = _message(inner)
    if not message.strip():
        return FailureDetail(message=kind, type=kind)
    detail = FailureDetail.of(message)
    return FailureDetail(message=detail.message, type=kind)


def _message(inner: str) -> str:
    """An exception's message from the arguments in its repr, as ``str(exception)`` gives it."""
    if not inner.strip():
        return ""
    try:
        args = ast.literal_eval(f"({inner},)")
    except Exception:  # not literals (an object's repr), or cut short by safe_repr
        return inner
    if isinstance(args, tuple) and len(args) == 1:
        return str(args[0])
    return str(args)


LABEL_SOURCES: Final = frozenset({"queue", "worker"})
"""What a root can be labelled with from its tasks' events (``labels_from``)."""


def check_label_options(
    labels: Mapping[str, str] | None, labels_from: Iterable[str]
) -> tuple[Labels | None, tuple[str, ...]]:
    """The bridge's label options, checked: fixed ``labels`` (a :class:`Labels`, a bad one is
    a ``ContractError`` naming the key) and ``labels_from``, a subset of ``queue`` and
    ``worker`` that no fixed label already names."""
    fixed = Labels(labels) if labels else None
    if isinstance(labels_from, str):
        raise TypeError("labels_from: expected names, such as ('queue', 'worker'), not a string")
    chosen = tuple(dict.fromkeys(labels_from))
    unknown = [name for name in chosen if name not in LABEL_SOURCES]
    if unknown:
        raise ValueError(f"labels_from: unknown {unknown[0]!r} (expected 'queue' or 'worker')")
    both = [name for name in chosen if fixed is not None and name in fixed]
    if both:
        raise ValueError(f"labels_from: {both[0]!r} is also a fixed label")
    return fixed, chosen


def labelled(
    labels: Labels | None, sources: tuple[str, ...], event: Mapping[str, Any], kind: str
) -> Labels | None:
    """The root's new labels when ``event`` tells one of ``sources`` it has no label for yet
    (``queue`` from task-sent, ``worker``: the hostname of a worker's event), else ``None``. A
    value that is no valid label (not text, empty, too long) is left out: the event applies."""
    new = None
    for key in sources:
        current: Mapping[str, str] = new or labels or {}
        if key in current:
            continue
        if key == "queue":
            value = event.get("queue")
        else:  # task-sent comes from the client that sent the task, not a worker
            value = None if kind == "task-sent" else event.get("hostname")
        if isinstance(value, str):
            try:
                new = Labels({**current, key: value})
            except ContractError:
                continue
    return new
