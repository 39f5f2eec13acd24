"""A pure, synchronous reference model of the hub contract (§3, and the hook queue of §4).

The model is written from the contract (``docs/contract.md``) alone, independently of the hub's
code, so that the two check each other: drive both with the same operations, settle, and compare
what every observer received, the snapshot, the diagnostics and the hook events.

Time is not modelled; *settling* is. Between two ``settle()`` calls nothing is delivered (publishing
never delivers synchronously, O2). ``settle()`` then plays what a real hub does once every task is
blocked: each observer takes frames from its queue in order until its queue is empty or its
consumer is stalled inside a frame; the hook queue is drained in publication order, dropping
events whose publisher is no longer current at their turn (K2).

An observer's consumer is modelled as a test consumer would be written: it records a frame when
it *starts* processing it, and, while stalled, stays inside that frame. The frame in flight does
not count against ``queue_limit`` (O4).

Resuming (R1-R3) is modelled from its definition rather than from a data structure: the model
keeps every frame ever broadcast, and an observer attached ``since`` a cursor
resumes when the frames it needs (those after the cursor, from the latest snapshot among them
on) are no more than the ``history_limit`` last ones broadcast.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import final

import attrs

from .._contract import (
    ActivityChangedEvent,
    Availability,
    ChangedFrame,
    Cursor,
    Diagnostic,
    DiagnosticKind,
    Frame,
    HeartbeatEvent,
    LifecycleEvent,
    LifecycleInput,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    StageCompletedEvent,
    StageStatus,
    StageTarget,
    WorkflowEvent,
)

__all__ = ["HubModel", "ModelObserver"]


@final
@attrs.define
class ModelObserver:
    """What the model knows of one observer."""

    received: list[Frame] = attrs.field(factory=list)
    """Frames whose processing started, in order."""
    pending: list[Frame] = attrs.field(factory=list)
    """Frames queued and not yet started."""
    failing: bool = False
    """Its consumer raises as it starts every frame (O5): ObserverDeliveryFailed, never stalled."""
    stalled: bool = False
    """Its consumer blocks inside each frame it starts, until released."""
    in_flight: bool = False
    """It is blocked inside the last received frame."""
    disposed: bool = False
    attached_at: Cursor | None = None
    """The hub's cursor when it attached."""
    attached_after: int = 0
    """How many frames the hub had broadcast when it attached (an index into ``broadcast``)."""
    since: Cursor | None = None
    """The cursor it attached from, if any (R2)."""
    resumed: bool = False
    """It attached with ``since`` and got the frames it missed instead of a snapshot (R2)."""
    overflowed: bool = False
    """Its queue overflowed at least once (O4, R3): continuity was replaced by a snapshot."""


@final
@attrs.define
class _ModelPublisher:
    epoch: str | None
    disposed: bool = False


@final
class HubModel:
    """The reference model. Epochs come from ``epochs`` (the same sequence given to the hub)."""

    def __init__(
        self,
        epochs: Iterable[str],
        *,
        queue_limit: int = 256,
        diagnostics_limit: int = 256,
        hook_buffer_limit: int = 10_000,
        history_limit: int = 1024,
    ) -> None:
        self._epochs = iter(epochs)
        self.queue_limit = queue_limit
        self.diagnostics_limit = diagnostics_limit
        self.hook_buffer_limit = hook_buffer_limit
        self.history_limit = history_limit
        self.broadcast: list[Frame] = []
        """Every frame broadcast to all observers, of every epoch, oldest first (never the
        per-observer overflow snapshots)."""
        self.epoch = next(self._epochs)
        self.revision = 0
        self.availability = Availability.UNAVAILABLE
        self.detail: str | None = None
        self.roots: dict[str, RootActivity] = {}
        self.disposed = False
        self.observers: list[ModelObserver] = []
        self.publishers: list[_ModelPublisher] = []
        self.diagnostics: list[Diagnostic] = []
        self.hook_queue: list[tuple[WorkflowEvent, _ModelPublisher]] = []
        self.hook_events: list[WorkflowEvent] = []
        """Events handed to the dispatcher, in order."""
        self.bound = False

    # --- state ------------------------------------------------------------------------------

    @property
    def cursor(self) -> Cursor:
        return Cursor(epoch=self.epoch, revision=self.revision)

    def snapshot(self) -> SnapshotFrame:
        ready = self.availability == Availability.READY
        return SnapshotFrame(
            cursor=self.cursor,
            availability=self.availability,
            roots=tuple(self.roots.values()) if ready else None,
            detail=self.detail,
        )

    def _record(self, kind: DiagnosticKind) -> None:
        self.diagnostics.append(Diagnostic(kind=kind, cursor=self.cursor))
        del self.diagnostics[: -self.diagnostics_limit]

    def _send(self, frame: Frame) -> None:
        self.broadcast.append(frame)
        for observer in self.observers:
            if observer.disposed:
                continue
            if len(observer.pending) >= self.queue_limit:
                observer.overflowed = True
                observer.pending = [self.snapshot()]
                self._record(DiagnosticKind.OBSERVER_OVERFLOW)
            else:
                observer.pending.append(frame)

    def _is_current(self, publisher: _ModelPublisher) -> bool:
        return (not publisher.disposed) and (not self.disposed) and publisher.epoch == self.epoch

    def _emit(self, event: WorkflowEvent, publisher: _ModelPublisher) -> None:
        self.hook_queue.append((event, publisher))
        del self.hook_queue[: -self.hook_buffer_limit]

    def _fenced(self, index: int) -> _ModelPublisher | None:
        publisher = self.publishers[index]
        if self._is_current(publisher):
            return publisher
        self._record(DiagnosticKind.PUBLISHER_FENCED)
        return None

    def _advance(self) -> Cursor:
        self.revision += 1
        return self.cursor

    # --- operations -------------------------------------------------------------------------

    def register(self) -> int:
        """Register a publisher; returns its index."""
        if self.disposed:
            self.publishers.append(_ModelPublisher(epoch=None))
            return len(self.publishers) - 1
        self.epoch = next(self._epochs)
        self.revision = 0
        self.availability = Availability.UNAVAILABLE
        self.detail = None
        self.roots = {}
        self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
        self._send(self.snapshot())
        self.publishers.append(_ModelPublisher(epoch=self.epoch))
        return len(self.publishers) - 1

    def publish_snapshot(
        self,
        index: int,
        availability: Availability,
        roots: Iterable[RootActivity] | None,
        detail: str | None = None,
    ) -> Cursor | None:
        if self._fenced(index) is None:
            return None
        if availability == Availability.RECOVERING:
            self._record(DiagnosticKind.SOURCE_RECOVERING)
        elif availability == Availability.UNAVAILABLE:
            self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
        cursor = self._advance()
        self.availability = availability
        self.detail = detail
        self.roots = {}
        for root in roots or ():
            self.roots[root.root_run_id] = root
        self._send(self.snapshot())
        return cursor

    def publish_changed(self, index: int, root: RootActivity) -> Cursor | None:
        publisher = self._fenced(index)
        if publisher is None:
            return None
        cursor = self._advance()
        self.roots[root.root_run_id] = root
        self._send(ChangedFrame(cursor=cursor, root=root))
        self._emit(ActivityChangedEvent(cursor=cursor, root=root), publisher)
        return cursor

    def publish_removed(self, index: int, root_run_id: str) -> Cursor | None:
        if self._fenced(index) is None:
            return None
        cursor = self._advance()
        self.roots.pop(root_run_id, None)
        self._send(RemovedFrame(cursor=cursor, root_run_id=root_run_id))
        return cursor

    def publish_lifecycle(self, index: int, event: LifecycleInput) -> Cursor | None:
        publisher = self._fenced(index)
        if publisher is None:
            return None
        cursor = self._advance()
        fields = {a.name: getattr(event, a.name) for a in attrs.fields(LifecycleInput)}
        self._emit(LifecycleEvent(cursor=cursor, **fields), publisher)
        target = event.target
        if isinstance(target, StageTarget) and target.status == StageStatus.COMPLETED:
            self._emit(StageCompletedEvent(cursor=cursor, **fields), publisher)
        return cursor

    def publish_heartbeat(self, index: int, event: HeartbeatEvent) -> None:
        publisher = self._fenced(index)
        if publisher is not None:
            self._emit(event, publisher)

    def dispose_publisher(self, index: int) -> None:
        publisher = self.publishers[index]
        if publisher.disposed:
            return
        current = self._is_current(publisher)
        publisher.disposed = True
        if not current:
            self._record(DiagnosticKind.PUBLISHER_FENCED)
            return
        self._advance()
        self.availability = Availability.UNAVAILABLE
        self.detail = None
        self.roots = {}
        self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
        self._send(self.snapshot())

    def observe(self, *, failing: bool = False, since: Cursor | None = None) -> int:
        """Attach an observer (callback or stream alike); returns its index.

        With ``since``, it starts with the frames broadcast after that cursor when they can be
        replayed (R2), else with a snapshot; more of them than ``queue_limit`` is an overflow (R3).
        """
        observer = ModelObserver(
            failing=failing,
            attached_at=self.cursor,
            attached_after=len(self.broadcast),
            since=since,
        )
        self.observers.append(observer)
        if self.disposed:
            observer.disposed = True
            self._record(DiagnosticKind.OBSERVER_DISPOSED)
        else:
            if self.availability == Availability.RECOVERING:
                self._record(DiagnosticKind.SOURCE_RECOVERING)
            elif self.availability == Availability.UNAVAILABLE:
                self._record(DiagnosticKind.SOURCE_UNAVAILABLE)
            missed = None if since is None else self.replay(since)
            if missed is not None and len(missed) > self.queue_limit:
                self._record(DiagnosticKind.OBSERVER_OVERFLOW)
                observer.overflowed = True
                missed = None
            if missed is None:
                observer.pending.append(self.snapshot())
            else:
                observer.pending.extend(missed)
                observer.resumed = True
        return len(self.observers) - 1

    def replay(self, since: Cursor) -> list[Frame] | None:
        """The frames a resume from ``since`` replays, or None when it must start over (R1, R2).

        Only a cursor of the current epoch that is not in the future can resume. The frames
        needed are those broadcast after it, from the latest snapshot among them (a snapshot
        replaces everything before it); the history retains the ``history_limit`` last frames
        broadcast, so the resume works when that many cover what is needed.
        """
        if self.history_limit == 0 or since.epoch != self.epoch or since.revision > self.revision:
            return None
        needed = [
            frame
            for frame in self.broadcast
            if frame.cursor.epoch == self.epoch and frame.cursor.revision > since.revision
        ]
        snapshots = [i for i, frame in enumerate(needed) if isinstance(frame, SnapshotFrame)]
        if snapshots:
            needed = needed[snapshots[-1] :]
        return needed if len(needed) <= self.history_limit else None

    def stall(self, index: int) -> None:
        self.observers[index].stalled = True

    def release(self, index: int) -> None:
        observer = self.observers[index]
        observer.stalled = False
        observer.in_flight = False

    def dispose_observer(self, index: int) -> None:
        observer = self.observers[index]
        if observer.disposed:
            return
        observer.disposed = True
        observer.pending = []
        self._record(DiagnosticKind.OBSERVER_DISPOSED)

    def bind(self) -> None:
        if not self.disposed:
            self.bound = True

    def dispose(self) -> None:
        if self.disposed:
            return
        self.disposed = True
        for index in range(len(self.observers)):
            self.dispose_observer(index)
        self.hook_queue = []
        self.bound = False

    def settle(self) -> None:
        """Play everything a hub delivers before all its tasks block again."""
        for observer in self.observers:
            while observer.pending and not observer.in_flight and not observer.disposed:
                frame = observer.pending.pop(0)
                observer.received.append(frame)
                if observer.failing:
                    # A failing consumer raises as soon as it starts: it never stalls.
                    self._record(DiagnosticKind.OBSERVER_DELIVERY_FAILED)
                elif observer.stalled:
                    observer.in_flight = True
        if self.bound:
            for event, publisher in self.hook_queue:
                if self._is_current(publisher):
                    self.hook_events.append(event)
            self.hook_queue = []
