"""What the commands show: one-line descriptions, and the outputs a view is drawn to.

Shared by ``demo``, ``serve`` and ``watch`` (the live terminal view is ``_rich``, which builds on
these); it imports no command, so every command can import it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import IO, Protocol, Self

import trio

from .._contract import (
    ActivityChangedEvent,
    ChangedFrame,
    FailureDetail,
    Frame,
    HeartbeatEvent,
    LifecycleEvent,
    RemovedFrame,
    RootActivity,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageNode,
    StageTarget,
    ToolNode,
    ToolTarget,
    WorkflowEvent,
)
from ..reporting import ActivityView, aggregate
from ..wire import dumps
from ._words import attention_of

__all__ = [
    "EVENT_ERROR_MAX",
    "JsonOutput",
    "LineOutput",
    "Output",
    "PlainOutput",
    "describe_error",
    "describe_event",
    "describe_failure",
    "describe_root",
    "describe_running",
    "event_error",
    "first_failure",
    "fit_root_name",
    "root_attention",
    "root_name",
    "root_name_room",
    "short_ids",
]


class Output(Protocol):
    """Where the demo shows what its observer and its hook handler receive."""

    closed: trio.Event
    """Set when the output can take no more (its reader went away): the demo then ends."""
    url: str | None
    """Where the hub is served (``--serve``), shown beside the view."""

    def frame(self, frame: Frame, view: ActivityView) -> None: ...
    def hook(self, event: WorkflowEvent) -> None: ...
    def __enter__(self) -> Output: ...
    def __exit__(self, *exc: object) -> None: ...


# --- describing things in one line -------------------------------------------------------------


def describe_root(root: RootActivity) -> str:
    """A root on one line: its whole id (a log is searched for it), then, when the id is a
    generated one, its name in brackets (``3f2a…-… (proj.export)``), its state and counts."""
    attention = " !attention" if root.needs_attention else ""
    name = _generated_root_name(root)
    named = f" ({name})" if name is not None else ""
    return (
        f"{root.root_run_id}{named} {root.state}/{root.reason} active={root.active_execution_count}"
        f" blocks={root.actionable_block_count}{attention}"
    )


def root_name(root: RootActivity, ids: Callable[[str], str] = str) -> str:
    """A root as people know it, as :func:`name_node` names a node: a written id alone and whole
    (``nightly-build``); a generated one (its last part longer than 16 characters, a Celery
    task's UUID) through ``ids``, after the name of its first task when its graph has one
    (``proj.export 3f2a9c1e…``)."""
    root_id = root.root_run_id
    if not _generated(root_id):
        return root_id
    name = _generated_root_name(root)
    return ids(root_id) if name is None else f"{name} {ids(root_id)}"


# How much of a generated id a root column keeps, longest first: the id gives way before the
# task's name does (issue 38: at 80 columns "proj.tasks.resi…" named no task and no root).
_ID_KEPT = (8, 4)


def fit_root_name(root: RootActivity, width: int) -> str:
    """:func:`root_name` in at most ``width`` characters, for a column.

    A written id, or a generated one without a name, is whole if it fits, else cut by the
    column. A generated id with its task's name gives way first: its first 8 characters,
    then 4; then the name keeps its tail, whole dotted parts first (``…resize_image 3f2a``),
    since a task's last part says what it does and its first parts are the project's."""
    whole = root_name(root)
    name = _generated_root_name(root)
    if len(whole) <= width:
        return whole
    if name is None:
        return short_ids(whole) if _generated(root.root_run_id) else whole
    ident = root.root_run_id.rpartition(":")[2]
    for kept in _ID_KEPT:
        named = f"{name} {ident[:kept]}"
        if len(named) <= width:
            return named
    short = ident[: _ID_KEPT[-1]]
    return f"{_name_tail(name, width - len(short) - 1)} {short}"


def root_name_room(root: RootActivity) -> int:
    """The width :func:`fit_root_name` needs to keep a generated root's task name readable:
    its last dotted part after "…", and the id's first 4 characters (all of it when shorter);
    0 for a root without such a name (a written id, or a generated one without a graph)."""
    whole = root_name(root)
    name = _generated_root_name(root)
    if name is None:
        return 0
    last = _last_part(name)
    readable = len(name) if last == name else len(last) + 1
    return min(len(whole), readable + 1 + _ID_KEPT[-1])


def _last_part(name: str) -> str:
    return name[max(name.rfind(mark) for mark in ".:/") + 1 :]


def _name_tail(name: str, room: int) -> str:
    """The end of ``name`` in ``room`` characters, after "…": whole dotted parts when the last
    one fits, else its last characters."""
    if len(name) <= room:
        return name
    if room <= 1:
        return "…"[:room]
    start = len(name) - (room - 1)
    tail = name[start:]
    if name[start - 1] not in ".:/":
        cut = [index for index, char in enumerate(tail) if char in ".:/"]
        if cut and cut[0] + 1 < len(tail):
            tail = tail[cut[0] + 1 :]
    return f"…{tail}"


def _generated(node_id: str) -> bool:
    return len(node_id.rpartition(":")[2]) > 16


def _generated_root_name(root: RootActivity) -> str | None:
    """The name a root with a generated id goes by: the node of the root's own run whose id is
    the root's (the task that started a Celery root), else that run's first top-level node;
    ``None`` for a written id or a root without a graph."""
    root_id = root.root_run_id
    if not _generated(root_id) or root.graph is None:
        return None
    first: str | None = None
    for node in root.graph.nodes:
        if node.run_id != root_id or node.depth != 0:
            continue
        if node.node_id == root_id:
            return node.name
        first = first if first is not None else node.name
    return first


def describe_running(root: RootActivity) -> str:
    """What runs or waits in a root, from its graph: 'compile, lint x2' or 'awaiting: Apply…?'."""
    if root.graph is None:
        return ""
    running: list[str] = []
    waiting = [prompt.message for prompt in root.graph.run_prompts or ()]
    for node in root.graph.nodes:
        if isinstance(node, StageNode) and node.pending_prompt is not None:
            waiting.append(node.pending_prompt.message)
        elif isinstance(node, StageNode | ToolNode) and node.status == "running":
            running.append(node.name)
    if waiting:
        return "awaiting: " + "; ".join(waiting)
    # Tasks of one name run side by side in a Celery group or a LangGraph fan-out: one entry
    # each, with a count, in the order they first appear.
    counts = Counter(running)
    return ", ".join(name if count == 1 else f"{name} x{count}" for name, count in counts.items())


def first_failure(root: RootActivity) -> StageNode | ToolNode | None:
    """The first failed stage or tool of a root's graph (in the graph's order), if any."""
    if root.graph is None:
        return None
    for node in root.graph.nodes:
        if node.status == "failed":
            return node
    return None


def _asks(root: RootActivity) -> bool:
    graph = root.graph
    if graph is None:
        return False
    return bool(graph.run_prompts) or any(
        isinstance(node, StageNode) and node.pending_prompt is not None for node in graph.nodes
    )


def root_attention(root: RootActivity) -> str:
    """Why ``root`` needs a person, in the dashboard's words, or ``""`` (``_words.attention_of``)."""
    failed = first_failure(root)
    return attention_of(
        root.state,
        root.reason,
        root.needs_attention,
        asks=_asks(root),
        failed_at=failed.name if failed is not None else None,
    )


def describe_failure(node: StageNode | ToolNode) -> str:
    """'failed at probe: TimeoutError: no answer in 5 s', or without its error when none came."""
    if node.error is None:
        return f"failed at {node.name}"
    return f"failed at {node.name}: {describe_error(node.error)}"


def describe_error(error: FailureDetail) -> str:
    """'TimeoutError: no answer in 5 s', or the message alone when no type came with it."""
    return f"{error.type}: {error.message}" if error.type else error.message


EVENT_ERROR_MAX = 160
"""Characters (code points) of a failure's error on a hook event's line: its type and the start
of its message, enough to act on; fold.js's ``EVENT_ERROR_MAX`` is the same number."""


def event_error(error: FailureDetail) -> str:
    """A failure's error on one line: :func:`describe_error` with every run of whitespace (line
    breaks included) one space, cut to :data:`EVENT_ERROR_MAX` characters with "…"."""
    text = " ".join(describe_error(error).split())
    return text if len(text) <= EVENT_ERROR_MAX else text[: EVENT_ERROR_MAX - 1] + "…"


def short_ids(text: str) -> str:
    """``text`` with each ``:``-separated part longer than 16 characters cut to its first 8.

    Generated ids (Celery's task UUIDs, nested ``root:task`` ids of 73 characters) would fill
    a terminal's line before the line says what happened; their first 8 characters are
    enough to tell them apart on a screen.
    """
    if len(text) <= 16:
        return text
    return ":".join(part if len(part) <= 16 else f"{part[:8]}…" for part in text.split(":"))


def name_node(node_id: str, name: str, ids: Callable[[str], str] = str) -> str:
    """A stage or tool as people know it: a written id says what ran (the demo's
    ``nightly-build:lint``) and stands alone; a generated one (its last part longer than 16
    characters, a Celery task's UUID) follows the node's name (``proj.step d18f8889…``)."""
    shown = ids(node_id)
    return f"{name} {shown}" if _generated(node_id) else shown


def describe_event(event: WorkflowEvent, ids: Callable[[str], str] = str) -> str:
    """One line for a hook event; ``ids`` may shorten the ids in it (a terminal's pane does).

    A failed run, stage or tool says its error last (C3: ``run r1: running → failed:
    TimeoutError: deadline passed``, :func:`event_error`). The dashboard's feed (``fold.js``'s
    ``describeEvent``) says the same words; tests/dashboard hold them equal.
    """
    match event:
        case StageCompletedEvent():
            stage = name_node(event.target.stage_id, event.target.stage_name, ids)
            return f"stage completed  {stage} ({event.delivery})"
        case LifecycleEvent():
            target = event.target
            before = getattr(target, "previous_status", None)
            previous = f"{before} → " if before else ""
            action = (
                f" [{target.action} requested]"
                if isinstance(target, RunTarget) and target.action
                else ""
            )
            if isinstance(target, StageTarget):
                name = name_node(target.stage_id, target.stage_name, ids)
            elif isinstance(target, ToolTarget):
                name = name_node(target.tool_node_id, target.tool_name, ids)
            else:
                name = ids(getattr(target, "prompt_id", None) or target.run_id)
            replay = " (replay)" if event.delivery == "replay" else ""
            detail = getattr(target, "error", None)  # a prompt target has none
            error = event_error(detail) if isinstance(detail, FailureDetail) else ""
            failure = f": {error}" if error else ""
            return f"{target.kind:<6} {name}: {previous}{target.status}{action}{replay}{failure}"
        case ActivityChangedEvent():
            root = event.root
            return f"activity changed {ids(root.root_run_id)} → {root.state}/{root.reason}"
        case HeartbeatEvent():
            at = time.strftime("%H:%M:%S", time.localtime(event.scheduled_at / 1000))
            return f"heartbeat        {ids(event.run_id)} at {at}"
    return repr(event)  # pragma: no cover


# --- outputs -----------------------------------------------------------------------------------


class LineOutput:
    """Writes lines to a stream; a reader that goes away ends the demo quietly."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.closed = trio.Event()
        self.url: str | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._write_safely(self._stream.flush)

    def _write(self, line: str) -> None:
        if not self.closed.is_set():
            self._write_safely(partial(self._stream.write, line + "\n"))
            self._write_safely(self._stream.flush)

    def _write_safely(self, write: Callable[[], object]) -> None:
        try:
            write()
        except BrokenPipeError:
            self.closed.set()
            # Python would complain again when it flushes stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())


class JsonOutput(LineOutput):
    """Every frame and hook event as one wire-format JSON line."""

    def frame(self, frame: Frame, view: ActivityView) -> None:
        self._write(dumps(frame))

    def hook(self, event: WorkflowEvent) -> None:
        self._write(dumps(event))


class PlainOutput(LineOutput):
    """One line per frame and per hook event, for pipes and logs."""

    def frame(self, frame: Frame, view: ActivityView) -> None:
        cursor = f"{frame.cursor.epoch}:{frame.cursor.revision}"
        match frame:
            case SnapshotFrame():
                detail = f"{frame.availability} roots={len(view.roots)}"
            case ChangedFrame():
                detail = describe_root(frame.root)
            case RemovedFrame():
                detail = frame.root_run_id
        status = aggregate(view)
        self._write(f"frame {frame.kind:<8} {cursor:<16} {detail}   [{status.message}]")

    def hook(self, event: WorkflowEvent) -> None:
        self._write(f"hook  {describe_event(event)}")
