"""Operation sequences as data, and their rendering (``_operation_strategies`` draws them).

A scenario is a hub configuration plus a tuple of small frozen operations (register a publisher,
publish with publisher #0, attach an observer, stall observer #1, settle …). Operations refer to
publishers and observers by number, in the order they were registered or attached (see
:class:`~workflow_hub.testing.conformance.ConformanceAdapter`).

This module is the one vocabulary of operations: each operation describes itself and plays
itself on a :class:`Player` (the reference model and an adapter, in step), so the conformance
harness, the JSON-lines protocol and the project's own property tests all speak it. Adding an
operation means a class here (with its line in :func:`operations`), its model method, and its
adapter method (``ConformanceAdapter``, ``HubAdapter`` and a row of the JSON-lines table).

Strategies draw operations with arbitrary small numbers; :func:`playable` then makes a sequence
meaningful (numbers taken modulo the publishers and observers that exist at that point, a first
publisher registered on demand). Drawing lists and mapping them keeps shrinking effective:
hypothesis deletes and simplifies operations, and the mapped, shrunk sequence is what a failure
prints.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol, TypeAlias, cast, final

import attrs

from .._contract import (
    Availability,
    Cursor,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
)
from ._adapter import AdapterConfig, ConformanceAdapter, ObserverStyle
from ._bursts import MAX_BURST, ThreadCall, ThreadDispose, play_burst
from ._render import render
from .model import HubModel

# No __all__: every public name here is listed once, by workflow_hub.testing.conformance's __all__.

ROOT_IDS: tuple[str, ...] = ("a", "b", "", " root ")
"""The small pool of root ids operations draw from, so that changes, duplicates and removals
collide; the empty and the padded id must survive byte-identical."""


class Player(Protocol):
    """What an operation is played on: the reference model and the adapter, in step.

    The harness implements it. Operations call the model and the adapter themselves and hand
    what each returned to the ``check_*`` methods, so that adding an operation means writing it
    here (and its model and adapter methods), not teaching the harness about it.
    """

    @property
    def model(self) -> HubModel: ...

    @property
    def adapter(self) -> ConformanceAdapter: ...

    def check_cursor(self, expected: Cursor | None, actual: Cursor | None) -> None:
        """Fail unless a publish returned the cursor the model assigned (P9)."""
        ...

    def check_value(self, what: str, expected: object, actual: object) -> None:
        """Fail unless the implementation answered what the model says."""
        ...

    def implementation_cursor(self, cursor: Cursor) -> Cursor:
        """A cursor in the model's epoch names (``epoch-1``), in the implementation's strings."""
        ...

    async def learn_epoch(self, *, fresh: bool) -> None:
        """Read the implementation's epoch after a registration (new) or anything else (same)."""
        ...

    async def compare(self) -> None:
        """Settle both and compare everything observable."""
        ...


def _check_roots(
    instance: PublishSnapshot,
    attribute: attrs.Attribute[tuple[RootActivity, ...] | None],
    roots: tuple[RootActivity, ...] | None,
) -> None:
    ready = instance.availability is Availability.READY
    if ready != (roots is not None):
        raise ValueError("a snapshot operation has roots exactly when availability is ready")


@final
@attrs.frozen
class RegisterPublisher:
    """``hub.register_publisher()`` (P1); the publisher gets the next number."""

    def describe(self) -> str:
        return "register_publisher()"

    async def play(self, player: Player) -> None:
        model = player.model
        before = model.epoch
        model.register()
        await player.adapter.register_publisher()
        await player.learn_epoch(fresh=model.epoch != before)


@final
@attrs.frozen
class PublishSnapshot:
    """``publisher.publish_snapshot(availability, roots)`` (P3)."""

    publisher: int
    availability: Availability = attrs.field(converter=Availability)
    roots: tuple[RootActivity, ...] | None = attrs.field(default=None, validator=_check_roots)
    detail: str | None = None
    """Why a non-ready source is unknown (C3); passed to the adapter only when not None, so an
    adapter written before C3's ``detail`` plays every other snapshot."""

    def describe(self) -> str:
        p, availability, roots = self.publisher, self.availability, self.roots
        if roots is None:
            said = "" if self.detail is None else f", detail={self.detail!r}"
            return f"publisher#{p}.publish_snapshot({availability}{said})"
        listed = ", ".join(render(root) for root in roots)
        return f"publisher#{p}.publish_snapshot({availability}, [{listed}])"

    async def play(self, player: Player) -> None:
        model = player.model.publish_snapshot(
            self.publisher, self.availability, self.roots, self.detail
        )
        adapter = player.adapter
        if self.detail is None:
            cursor = await adapter.publish_snapshot(self.publisher, self.availability, self.roots)
        else:
            # Drawn only for adapters that take it (_adapter.takes_details).
            publish: Callable[..., Awaitable[Cursor | None]] = adapter.publish_snapshot
            cursor = await publish(
                self.publisher, self.availability, self.roots, detail=self.detail
            )
        player.check_cursor(model, cursor)


@final
@attrs.frozen
class PublishChanged:
    """``publisher.publish_changed(root)`` (P4)."""

    publisher: int
    root: RootActivity

    def describe(self) -> str:
        return f"publisher#{self.publisher}.publish_changed({render(self.root)})"

    async def play(self, player: Player) -> None:
        player.check_cursor(
            player.model.publish_changed(self.publisher, self.root),
            await player.adapter.publish_changed(self.publisher, self.root),
        )


@final
@attrs.frozen
class PublishRemoved:
    """``publisher.publish_removed(root_run_id)`` (P5)."""

    publisher: int
    root_run_id: str

    def describe(self) -> str:
        return f"publisher#{self.publisher}.publish_removed({self.root_run_id!r})"

    async def play(self, player: Player) -> None:
        player.check_cursor(
            player.model.publish_removed(self.publisher, self.root_run_id),
            await player.adapter.publish_removed(self.publisher, self.root_run_id),
        )


@final
@attrs.frozen
class PublishLifecycle:
    """``publisher.publish_lifecycle(event)`` (P6)."""

    publisher: int
    event: LifecycleInput

    def describe(self) -> str:
        return f"publisher#{self.publisher}.publish_lifecycle({render(self.event)})"

    async def play(self, player: Player) -> None:
        player.check_cursor(
            player.model.publish_lifecycle(self.publisher, self.event),
            await player.adapter.publish_lifecycle(self.publisher, self.event),
        )


@final
@attrs.frozen
class PublishHeartbeat:
    """``publisher.publish_heartbeat(event)`` (P7)."""

    publisher: int
    event: HeartbeatEvent

    def describe(self) -> str:
        event = self.event
        return (
            f"publisher#{self.publisher}.publish_heartbeat"
            f"(run {event.run_id!r} at {event.scheduled_at!r})"
        )

    async def play(self, player: Player) -> None:
        player.model.publish_heartbeat(self.publisher, self.event)
        await player.adapter.publish_heartbeat(self.publisher, self.event)


@final
@attrs.frozen
class DisposePublisher:
    """``publisher.dispose()`` (P8)."""

    publisher: int

    def describe(self) -> str:
        return f"publisher#{self.publisher}.dispose()"

    async def play(self, player: Player) -> None:
        player.model.dispose_publisher(self.publisher)
        await player.adapter.dispose_publisher(self.publisher)


def _thread_tuple(threads: Iterable[Iterable[ThreadCall]]) -> tuple[tuple[ThreadCall, ...], ...]:
    return tuple(tuple(calls) for calls in threads)


def _check_threads(
    instance: ThreadBurst,
    attribute: attrs.Attribute[tuple[tuple[ThreadCall, ...], ...]],
    threads: tuple[tuple[ThreadCall, ...], ...],
) -> None:
    if not threads:
        raise ValueError("a burst needs at least one thread")
    if sum(len(calls) for calls in threads) > MAX_BURST:
        raise ValueError(f"a burst makes at most {MAX_BURST} calls")
    owners: dict[str, int] = {}
    for index, calls in enumerate(threads):
        for number, call in enumerate(calls):
            if isinstance(call, ThreadDispose) and number != len(calls) - 1:
                raise ValueError("dispose() can only be a thread's last call")
            root_run_id = getattr(call, "root_run_id", None)
            root = getattr(call, "root", None)
            if root is not None:
                root_run_id = root.root_run_id
            if root_run_id is not None and owners.setdefault(root_run_id, index) != index:
                raise ValueError(f"root {root_run_id!r} is published by two threads")
    if sum(isinstance(calls[-1], ThreadDispose) for calls in threads if calls) > 1:
        raise ValueError("at most one thread of a burst disposes")


@final
@attrs.frozen
class ThreadBurst:
    """Real OS threads publish at once through publisher #n's thread-safe handle (H1).

    Each thread makes its calls in order, on a root id no other thread uses; see ``_bursts``
    for how the harness plays and checks it. Only thread scenarios (the ``threads`` profile)
    draw bursts; observer #0 is then the witness the order is read from."""

    publisher: int
    threads: tuple[tuple[ThreadCall, ...], ...] = attrs.field(
        converter=_thread_tuple, validator=_check_threads
    )

    def describe(self) -> str:
        parts = [
            f"thread#{index}: " + (", ".join(call.describe() for call in calls) or "nothing")
            for index, calls in enumerate(self.threads)
        ]
        return f"publisher#{self.publisher} from {len(self.threads)} threads at once: " + "; ".join(
            parts
        )

    async def play(self, player: Player) -> None:
        await play_burst(player, self.publisher, self.threads)


@final
@attrs.frozen
class SeenBy:
    """Resume from the cursor of the last frame observer #n received: what a client that lost
    its connection holds (R2). An observer that received nothing yet offers the cursor the hub
    had when it attached."""

    observer: int

    def describe(self) -> str:
        return f"observer#{self.observer}'s last cursor"

    def resolve(self, model: HubModel) -> Cursor:
        observer = model.observers[self.observer]
        if observer.received:
            return observer.received[-1].cursor
        assert observer.attached_at is not None
        return observer.attached_at


@final
@attrs.frozen
class At:
    """Resume from a given cursor, in the model's epoch names (``epoch-0``, ``epoch-1`` …); a
    name the scenario has not started yet stands for an epoch the implementation never had."""

    cursor: Cursor

    def describe(self) -> str:
        return f"{self.cursor.epoch}:{self.cursor.revision}"

    def resolve(self, model: HubModel) -> Cursor:
        return self.cursor


@final
@attrs.frozen
class Behind:
    """Resume from the hub's current cursor less ``revisions``: a client that missed that many
    revisions (frames or lifecycle events) of the current epoch, at 0 one that missed nothing."""

    revisions: int

    def describe(self) -> str:
        return f"the hub's cursor - {self.revisions}"

    def resolve(self, model: HubModel) -> Cursor:
        return Cursor(epoch=model.epoch, revision=max(0, model.revision - self.revisions))


Since: TypeAlias = SeenBy | At | Behind
"""Where an :class:`Observe` resumes from."""


def _check_failing(instance: Observe, attribute: attrs.Attribute[bool], failing: bool) -> None:
    if failing and instance.style != "callback":
        raise ValueError("only callback observers fail (O5)")


@final
@attrs.frozen
class Observe:
    """Attach a recording consumer (O1, O9), from ``since`` when given (R2); it gets the next
    number. The implementation's ``lease.resumed`` is checked against the model."""

    style: ObserverStyle = "callback"
    failing: bool = attrs.field(default=False, validator=_check_failing)
    since: Since | None = None

    def describe(self) -> str:
        how = f"{self.style}, failing" if self.failing else self.style
        if self.since is not None:
            how += f", since={self.since.describe()}"
        return f"observe({how})"

    async def play(self, player: Player) -> None:
        model = player.model
        since = None if self.since is None else self.since.resolve(model)
        index = model.observe(failing=self.failing, since=since)
        resumed = await player.adapter.observe(
            self.style,
            self.failing,
            None if since is None else player.implementation_cursor(since),
        )
        player.check_value(
            f"lease.resumed of observer#{index} (R2)", model.observers[index].resumed, resumed
        )


@final
@attrs.frozen
class StallObserver:
    """The observer's consumer blocks inside every frame it starts, until released."""

    observer: int

    def describe(self) -> str:
        return f"observer#{self.observer}.stall()"

    async def play(self, player: Player) -> None:
        player.model.stall(self.observer)
        await player.adapter.stall(self.observer)


@final
@attrs.frozen
class ReleaseObserver:
    """The observer's consumer finishes the frame in flight and stops stalling."""

    observer: int

    def describe(self) -> str:
        return f"observer#{self.observer}.release()"

    async def play(self, player: Player) -> None:
        player.model.release(self.observer)
        await player.adapter.release(self.observer)


@final
@attrs.frozen
class DisposeObserver:
    """``lease.dispose()`` (O6)."""

    observer: int

    def describe(self) -> str:
        return f"observer#{self.observer}.lease.dispose()"

    async def play(self, player: Player) -> None:
        player.model.dispose_observer(self.observer)
        await player.adapter.dispose_observer(self.observer)


@final
@attrs.frozen
class BindDispatcher:
    """``hub.bind_dispatcher(recorder)`` (K1)."""

    def describe(self) -> str:
        return "hub.bind_dispatcher(recorder)"

    async def play(self, player: Player) -> None:
        player.model.bind()
        await player.adapter.bind_dispatcher()


@final
@attrs.frozen
class DisposeHub:
    """``hub.dispose()`` (L2)."""

    def describe(self) -> str:
        return "hub.dispose()"

    async def play(self, player: Player) -> None:
        player.model.dispose()
        await player.adapter.dispose_hub()


@final
@attrs.frozen
class Settle:
    """Let the hub deliver until quiescent, then compare everything with the model."""

    def describe(self) -> str:
        return "settle()"

    async def play(self, player: Player) -> None:
        await player.compare()


Operation: TypeAlias = (
    RegisterPublisher
    | PublishSnapshot
    | PublishChanged
    | PublishRemoved
    | PublishLifecycle
    | PublishHeartbeat
    | DisposePublisher
    | Observe
    | StallObserver
    | ReleaseObserver
    | DisposeObserver
    | BindDispatcher
    | DisposeHub
    | Settle
    | ThreadBurst
)
"""One step of a scenario: a frozen value that describes itself and plays itself on a
:class:`Player` (the model and the adapter)."""


def _names_publisher(operation: Operation) -> bool:
    return hasattr(operation, "publisher")


def _names_observer(operation: Operation) -> bool:
    return hasattr(operation, "observer")


def playable(operations: Iterable[Operation]) -> tuple[Operation, ...]:
    """Make a drawn sequence meaningful; a sequence that already is one comes back unchanged.

    Publisher and observer numbers are taken modulo how many exist at that point; a publisher
    operation before any registration registers one first; observer operations before any
    observer, and stalls of a failing observer (it never blocks, it raises), are dropped; a
    resume from an observer's cursor before any observer attaches without ``since``.
    """
    result: list[Operation] = []
    publishers = 0
    failing: list[bool] = []
    for operation in operations:
        if _names_publisher(operation):
            if publishers == 0:
                result.append(RegisterPublisher())
                publishers = 1
            publisher: int = getattr(operation, "publisher")  # noqa: B009 (any publisher op)
            operation = attrs.evolve(cast(Any, operation), publisher=publisher % publishers)
        elif _names_observer(operation):
            if not failing:
                continue
            observer = getattr(operation, "observer") % len(failing)  # noqa: B009
            if isinstance(operation, StallObserver) and failing[observer]:
                continue
            operation = attrs.evolve(cast(Any, operation), observer=observer)
        elif isinstance(operation, RegisterPublisher):
            publishers += 1
        elif isinstance(operation, Observe):
            if isinstance(operation.since, SeenBy):
                since = SeenBy(operation.since.observer % len(failing)) if failing else None
                operation = attrs.evolve(operation, since=since)
            failing.append(operation.failing)
        result.append(operation)
    return tuple(result)


def check_playable(operations: Sequence[Operation]) -> None:
    """Raise ``ValueError`` if an operation names a publisher or observer that does not exist."""
    publishers = observers = 0
    for step, operation in enumerate(operations, 1):
        named: list[tuple[str, int, int]] = []
        if _names_publisher(operation):
            named.append(("publisher", getattr(operation, "publisher"), publishers))  # noqa: B009
        if _names_observer(operation):
            named.append(("observer", getattr(operation, "observer"), observers))  # noqa: B009
        if isinstance(operation, Observe) and isinstance(operation.since, SeenBy):
            named.append(("observer", operation.since.observer, observers))
        for kind, number, existing in named:
            if not 0 <= number < existing:
                raise ValueError(f"step {step}: there is no {kind} #{number}")
        if isinstance(operation, RegisterPublisher):
            publishers += 1
        elif isinstance(operation, Observe):
            observers += 1


def _operation_tuple(operations: Iterable[Operation]) -> tuple[Operation, ...]:
    # A named, typed converter: type checkers then accept any iterable of operations.
    return tuple(operations)


@final
@attrs.frozen(kw_only=True)
class Scenario:
    """A hub configuration and the operations to play on it. Its ``str`` is the readable script."""

    config: AdapterConfig = attrs.field(factory=AdapterConfig)
    operations: tuple[Operation, ...] = attrs.field(converter=_operation_tuple)

    def describe(self) -> str:
        """One numbered line per operation, the implicit final settle included."""
        config = self.config
        count = len(self.operations)
        lines = [
            f"Scenario ({count} step{'' if count == 1 else 's'}; queue_limit={config.queue_limit}, "
            f"diagnostics_limit={config.diagnostics_limit}, "
            f"history_limit={config.history_limit}):"
        ]
        publishers = observers = 0
        width = len(str(len(self.operations) + 1))
        for step, operation in enumerate(self.operations, 1):
            text = operation.describe()
            if isinstance(operation, RegisterPublisher):
                text += f" -> publisher#{publishers}"
                publishers += 1
            elif isinstance(operation, Observe):
                text += f" -> observer#{observers}"
                observers += 1
            lines.append(f"  {step:>{width}}. {text}")
        end = len(self.operations) + 1
        lines.append(f"  {end:>{width}}. (end) release every observer, settle()")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()
