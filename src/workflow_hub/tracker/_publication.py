"""The publishing of a tracker: what it has published, when it publishes, its lifecycle events.

:class:`Publication` holds the tracker's side of its publisher: the framing (not started yet,
hydrating, inside a batch), the summary last published for each root, the roots a batch changed,
and the lifecycle events a fact emits. The tracker (``_tracker.py``) asks it for an event's id
before a fact changes anything and hands it the event once the fact is folded in
(``_rootstate.py``); then the root's summary is published when it really changed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import final

from .._contract import (
    Attribution,
    Availability,
    ControlAction,
    Delivery,
    FailureDetail,
    HeartbeatEvent,
    LifecycleInput,
    LifecycleTarget,
    RootActivity,
    RunStatus,
    RunTarget,
    StageStatus,
    StageTarget,
    ToolNodeStatus,
    ToolTarget,
    check_str,
    slot_stores,
    unchecked_builder,
)
from .._core import WorkflowActivityPublisher
from ._records import NodeRecord, RunRecord, StageRecord
from ._rootstate import RootState

__all__ = ["NOT_STARTED", "Publication", "uuid4"]

NOT_STARTED = (
    "the tracker has not published its first snapshot: call tracker.start(), "
    "or restore state inside `with tracker.hydrating():`, before reporting changes"
)

# The hex digit at a uuid4's variant position, from the random digit it replaces: its top two
# bits become 10 (RFC 4122), its low two stay random.
_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def uuid4() -> str:
    """``str(uuid.uuid4())``, written out: the same 122 random bits from ``os.urandom`` and the
    same text, without building a ``UUID`` (a third of the cost; every lifecycle event pays it).
    Held to ``uuid.UUID``'s text, version and variant by
    ``test_the_default_event_ids_are_uuid4_text`` (tests/tracker/test_tracker.py)."""
    digits = os.urandom(16).hex()
    return (
        f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-"
        f"{_VARIANT_DIGIT[digits[16]]}{digits[17:20]}-{digits[20:]}"
    )


_new = object.__new__
_build_LifecycleInput = unchecked_builder(LifecycleInput)
(
    _stage_run_id,
    _stage_stage_id,
    _stage_stage_name,
    _stage_previous_status,
    _stage_status,
    _stage_error,
) = slot_stores(StageTarget)
(
    _tool_run_id,
    _tool_tool_node_id,
    _tool_tool_name,
    _tool_previous_status,
    _tool_status,
    _tool_error,
) = slot_stores(ToolTarget)
(
    _run_run_id,
    _run_previous_status,
    _run_status,
    _run_action,
    _run_error,
) = slot_stores(RunTarget)
_LIVE = Delivery.LIVE
_REPLAY = Delivery.REPLAY


@final
class Publication:
    """A tracker's publishing: its publisher, its framing, what it published, its events.

    ``started`` once a ready snapshot was published; ``hydrating`` inside ``hydrating()``;
    ``publishing`` while both say that changes are published one at a time (started, not
    hydrating); ``batch_depth`` counts the ``batch()`` blocks the tracker is in. ``published``
    holds the summary last published for each root, ``dirty`` the roots a batch changed.
    """

    __slots__ = (
        "batch_depth",
        "detail",
        "dirty",
        "event_id_factory",
        "hydrating",
        "owner_session_id",
        "published",
        "publisher",
        "publishing",
        "started",
    )

    def __init__(
        self,
        publisher: WorkflowActivityPublisher,
        *,
        owner_session_id: str,
        event_id_factory: Callable[[], str],
    ) -> None:
        self.publisher = publisher
        self.owner_session_id = owner_session_id
        self.event_id_factory = event_id_factory
        self.started = False
        self.hydrating = False
        self.detail: str | None = None
        """Why the source is unknown while hydrating, if the scheduler said (C3)."""
        self.publishing = False
        self.batch_depth = 0
        self.published: dict[str, RootActivity] = {}
        self.dirty: dict[str, RootState] = {}

    # --- framing ------------------------------------------------------------------------------

    def require_started(self) -> None:
        """Facts are taken once a ready snapshot was published, or while hydrating, and in the
        hub's thread only (checked before anything is folded)."""
        # <copy-source Publication.require_started>
        if not self.started and not self.hydrating:
            raise RuntimeError(NOT_STARTED)
        self.publisher._require_hub_thread("a tracker fact")
        # </copy-source>

    def ready(self, states: Iterable[RootState]) -> None:
        """Publish a full ``ready`` snapshot of ``states``' roots (in order) and start
        publishing changes one at a time."""
        activities = {state.root_run_id: state.activity() for state in states}
        self.started = True
        self.detail = None
        self.publishing = not self.hydrating
        self.dirty.clear()
        self.published = activities
        self.publisher.publish_snapshot(Availability.READY, list(activities.values()))

    def begin_hydrating(self, detail: str | None = None) -> None:
        """Publish ``recovering`` (with why, if ``detail``: C3); nothing is published one change
        at a time until :meth:`ready`."""
        self.hydrating = True
        self.detail = detail
        self.publishing = False
        self.dirty.clear()
        self.publisher.publish_snapshot(Availability.RECOVERING, None, detail)

    def say_detail(self, detail: str | None) -> None:
        """While hydrating, a new reason why the source is unknown: the ``recovering`` snapshot
        is published again with it (nothing when it is the same)."""
        if not self.hydrating:
            raise RuntimeError("recovering_because() outside hydrating(): the source is known")
        self.publisher._require_hub_thread("a tracker fact")
        if detail == self.detail:
            return
        self.detail = detail
        self.publisher.publish_snapshot(Availability.RECOVERING, None, detail)

    def hydrating_failed(self) -> None:
        """The restore raised: the source's activity is not known (``unavailable``)."""
        self.hydrating = False
        self.started = False
        self.publishing = False
        self.published.clear()
        self.detail = None
        self.publisher.publish_snapshot(Availability.UNAVAILABLE)

    def replace_publisher(self, publisher: WorkflowActivityPublisher) -> bool:
        """Publish through ``publisher`` from now on; True when the caller must publish a ready
        snapshot through it (``recovering`` is published here while hydrating)."""
        self.publisher = publisher
        if self.hydrating:
            publisher.publish_snapshot(Availability.RECOVERING, None, self.detail)
            return False
        return self.started

    # --- roots --------------------------------------------------------------------------------

    def changed(self, state: RootState) -> None:
        """A fact changed ``state``'s root: publish it now, or at the end of the batch."""
        if not self.publishing:
            return
        if self.batch_depth:
            self.dirty[state.root_run_id] = state
        else:
            self.publish_root(state)

    def publish_root(self, state: RootState) -> None:
        """Publish the root's summary (``changed``) if it is not the one last published."""
        # <copy-source Publication.publish_root>
        activity = state.summary  # the summary, unless a fact changed it since it was derived
        if activity is None:
            activity = state.activity()
        root_run_id = state.root_run_id
        published = self.published.get(root_run_id)
        if published is activity:
            return  # the state caches its summary: the same object means nothing changed
        # Two summaries the state keeps are equal only if they are the same object; otherwise
        # compare (an equal graph shares its nodes, so that is cheap too).
        kept = state.kept
        if (
            published is None
            or (id(published) in kept and id(activity) in kept)
            or published != activity
        ):
            self.published[root_run_id] = activity
            self.publisher.publish_changed(activity)
        # </copy-source>

    @contextmanager
    def batch(self) -> Iterator[None]:
        """A tracker's ``batch()`` block: the outermost one publishes the roots it changed."""
        self.batch_depth += 1
        try:
            yield
        finally:
            self.batch_depth -= 1
            if self.batch_depth == 0:
                self.flush()

    def flush(self) -> None:
        """The outermost batch ended: publish each root it changed, once."""
        dirty, self.dirty = self.dirty, {}
        if self.publishing:
            for state in dirty.values():
                self.publish_root(state)

    def removed(self, root_run_id: str) -> None:
        """The root is gone: ``removed``, if its summary was published."""
        self.dirty.pop(root_run_id, None)
        if self.publishing and self.published.pop(root_run_id, None) is not None:
            self.publisher.publish_removed(root_run_id)

    # --- events -------------------------------------------------------------------------------

    def event_id(self, run: RunRecord) -> str | None:
        """The id of the lifecycle event a fact on ``run`` emits, or None when it emits none.

        Lifecycle events describe what a live executor does; recovery and history are silent.
        Asked for *before* the fact changes anything: a bad id from ``event_id_factory`` raises
        ContractError with the tracker unchanged (C1)."""
        if not run.live or not self.publishing:
            return None
        # <copy-source Publication.event_id>
        event_id = self.event_id_factory()
        # Not plain text: the full check.
        if type(event_id) is not str or not event_id.isascii():
            event_id = check_str(event_id, "event_id")
        # </copy-source>
        return event_id

    def lifecycle(
        self,
        event_id: str | None,
        run: RunRecord,
        target: LifecycleTarget,
        now: float,
        *,
        attribution: Attribution | None = None,
    ) -> None:
        """Publish the lifecycle event of id ``event_id`` (None: none) once its fact is folded in.

        Every field is a checked value (the id by :meth:`event_id`, the time by the tracker's
        clock check, the target when it was built), so the event is built without validating
        again (issue 29)."""
        if event_id is not None:
            event = _build_LifecycleInput(
                event_id=event_id,
                run_id=run.run_id,
                root_run_id=run.root_run_id,
                owner_session_id=self.owner_session_id,
                occurred_at=now,
                observed_at=now,
                delivery=_LIVE,
                target=target,
                attribution=attribution,
            )
            self.publisher.publish_lifecycle(event)

    def run_moved(
        self,
        event_id: str,
        run: RunRecord,
        previous: RunStatus | None,
        status: RunStatus,
        now: float,
        *,
        action: ControlAction | None = None,
        error: FailureDetail | None = None,
        attribution: Attribution | None = None,
    ) -> None:
        """Publish a run's event: it moved from ``previous`` to ``status`` (``action``: the
        control request behind it; ``error``: why it failed, C3, checked against ``status`` by
        the tracker).

        As :meth:`node_moved`: the target is built from checked values with slot stores and
        goes to the publisher without a ``LifecycleInput`` (the constructor's validators and
        that input were about 30 % of a run fact, and a LangGraph invocation reports four run
        events); held to the constructor's targets by
        ``test_run_events_equal_the_constructors_targets`` (tests/tracker/test_tracker.py)."""
        target = _new(RunTarget)
        _run_run_id(target, run.run_id)
        _run_previous_status(target, previous)
        _run_status(target, status)
        _run_action(target, action)
        _run_error(target, error)
        self.publisher._publish_checked_lifecycle(
            event_id,
            run.run_id,
            run.root_run_id,
            self.owner_session_id,
            now,
            now,
            _LIVE,
            target,
            attribution,
        )

    def node_moved(
        self,
        event_id: str,
        run: RunRecord,
        node: NodeRecord,
        previous: StageStatus | ToolNodeStatus | None,
        status: StageStatus | ToolNodeStatus,
        now: float,
        replay: bool,
        attribution: Attribution | None = None,
    ) -> None:
        """Publish a stage's or tool's event: it moved from ``previous`` to ``status``.

        Its target is built from the node's canonical id and checked values only, with the
        builder's slot stores written out (as the hub's publish paths are): nothing can raise.
        The builder's call would cost 1.4 % of a fact (valgrind); the stores are ``slot_stores``,
        unpacked one name per field (a field more fails at import), and the targets equal the
        constructor's (``test_stage_events_carry_the_nested_stage_id_and_completion_hook``,
        ``test_tool_events_carry_the_nested_tool_id``, tests/tracker/test_tracker.py).
        The most frequent event: it goes to the publisher without a ``LifecycleInput``.
        A target is built per event, not kept per node and move: a workflow that runs each
        stage once makes every move once, and a kept target (a dict per node) costs memory a
        fact reads (issue 29, fifth pass)."""
        target: StageTarget | ToolTarget
        if type(node) is StageRecord:
            target = _new(StageTarget)
            _stage_run_id(target, run.run_id)
            _stage_stage_id(target, node.nested)
            _stage_stage_name(target, node.name)
            _stage_previous_status(target, previous)
            _stage_status(target, status)
            _stage_error(target, node.error)
        else:
            target = _new(ToolTarget)
            _tool_run_id(target, run.run_id)
            _tool_tool_node_id(target, node.nested)
            _tool_tool_name(target, node.name)
            _tool_previous_status(target, previous)
            _tool_status(target, status)
            _tool_error(target, node.error)
        # publish_lifecycle of the event's LifecycleInput, without building that value: every
        # field is a checked value (docs/decisions.md, "A private entry for the tracker's
        # lifecycle events").
        self.publisher._publish_checked_lifecycle(
            event_id,
            run.run_id,
            run.root_run_id,
            self.owner_session_id,
            now,
            now,
            _REPLAY if replay else _LIVE,
            target,
            attribution,
        )

    def heartbeat(self, event: HeartbeatEvent) -> None:
        self.publisher.publish_heartbeat(event)
