"""One-line, human-readable renderings of contract values, for conformance scenarios and diffs.

Identifiers are shown with ``repr`` so that ``''``, ``' root '`` and control characters stay
visible. A rendering is a summary: two values may render alike and still differ (say, in a
graph), so a diff shows the full ``repr`` whenever the summaries agree.
"""

from __future__ import annotations

from .._contract import (
    ActivityChangedEvent,
    ChangedFrame,
    Cursor,
    Diagnostic,
    HeartbeatEvent,
    LifecycleEvent,
    LifecycleInput,
    LifecycleTarget,
    PromptTarget,
    RemovedFrame,
    RootActivity,
    RunTarget,
    SnapshotFrame,
    StageCompletedEvent,
    StageTarget,
    ToolTarget,
)

__all__ = ["render"]


def _cursor(cursor: Cursor) -> str:
    return f"{cursor.epoch}:{cursor.revision}"


def _root(root: RootActivity) -> str:
    text = f"root {root.root_run_id!r}: {root.state}/{root.reason}"
    extras = []
    if root.active_execution_count:
        extras.append(f"active {root.active_execution_count}")
    if root.actionable_block_count:
        extras.append(f"blocks {root.actionable_block_count}")
    if root.needs_attention:
        extras.append("needs attention")
    if root.graph is not None:
        extras.append(f"graph of {len(root.graph.nodes)}")
    return f"{text} ({', '.join(extras)})" if extras else text


def _target(target: LifecycleTarget) -> str:
    if isinstance(target, RunTarget):
        action = f" after {target.action}" if target.action is not None else ""
        return f"run {target.run_id!r} {target.status}{action}"
    if isinstance(target, StageTarget):
        return f"stage {target.stage_id!r} {target.status}"
    if isinstance(target, ToolTarget):
        return f"tool {target.tool_node_id!r} {target.status}"
    assert isinstance(target, PromptTarget)
    return f"prompt {target.prompt_id!r} {target.status}"


def _envelope(event: LifecycleInput | LifecycleEvent | StageCompletedEvent) -> str:
    text = f"event {event.event_id!r}: {_target(event.target)}"
    return f"{text}, {event.delivery}" if event.delivery != "live" else text


def render(value: object) -> str:
    """A one-line summary of a frame, root, event, lifecycle input, diagnostic or cursor."""
    match value:
        case Cursor():
            return _cursor(value)
        case RootActivity():
            return _root(value)
        case SnapshotFrame(cursor=cursor, availability=availability, roots=roots):
            ids = (
                "" if roots is None else " [" + ", ".join(repr(r.root_run_id) for r in roots) + "]"
            )
            return f"snapshot {_cursor(cursor)} {availability}{ids}"
        case ChangedFrame(cursor=cursor, root=root):
            return f"changed {_cursor(cursor)} {_root(root)}"
        case RemovedFrame(cursor=cursor, root_run_id=root_run_id):
            return f"removed {_cursor(cursor)} {root_run_id!r}"
        case Diagnostic(kind=kind, cursor=cursor):
            return f"{kind} at {_cursor(cursor)}"
        case LifecycleEvent() | StageCompletedEvent():
            return f"{value.type} {_cursor(value.cursor)} {_envelope(value)}"
        case LifecycleInput():
            return _envelope(value)
        case ActivityChangedEvent(cursor=cursor, root=root):
            return f"{value.type} {_cursor(cursor)} {_root(root)}"
        case HeartbeatEvent():
            return f"{value.type} run {value.run_id!r} at {value.scheduled_at!r}"
        case _:
            return repr(value)
