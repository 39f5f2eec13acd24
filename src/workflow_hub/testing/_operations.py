"""Operation sequences as data, the hypothesis strategies that draw them, and their rendering.

A scenario is a hub configuration plus a tuple of small frozen operations (register a publisher,
publish with publisher #0, attach an observer, stall observer #1, settle …). Operations refer to
publishers and observers by number, in the order they were registered or attached (see
:class:`~workflow_hub.testing.conformance.ConformanceAdapter`).

Strategies draw operations with arbitrary small numbers; :func:`playable` then makes a sequence
meaningful (numbers taken modulo the publishers and observers that exist at that point, a first
publisher registered on demand). Drawing lists and mapping them keeps shrinking effective:
hypothesis deletes and simplifies operations, and the mapped, shrunk sequence is what a failure
prints.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TypeAlias, final

import attrs
from hypothesis import strategies as st

from .._contract import HeartbeatEvent, LifecycleInput, RootActivity
from .._enums import Availability, StageStatus
from . import _defaults as defaults
from ._adapter import AdapterConfig, ObserverStyle
from ._render import render

__all__ = [
    "ROOT_IDS",
    "BindDispatcher",
    "DisposeHub",
    "DisposeObserver",
    "DisposePublisher",
    "Observe",
    "Operation",
    "PublishChanged",
    "PublishHeartbeat",
    "PublishLifecycle",
    "PublishRemoved",
    "PublishSnapshot",
    "RegisterPublisher",
    "ReleaseObserver",
    "Scenario",
    "Settle",
    "StallObserver",
    "operation_sequences",
    "operations",
    "playable",
    "scenarios",
]

ROOT_IDS: tuple[str, ...] = ("a", "b", "", " root ")
"""The small pool of root ids operations draw from, so that changes, duplicates and removals
collide; the empty and the padded id must survive byte-identical."""


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


@final
@attrs.frozen
class PublishSnapshot:
    """``publisher.publish_snapshot(availability, roots)`` (P3)."""

    publisher: int
    availability: Availability = attrs.field(converter=Availability)
    roots: tuple[RootActivity, ...] | None = attrs.field(default=None, validator=_check_roots)


@final
@attrs.frozen
class PublishChanged:
    """``publisher.publish_changed(root)`` (P4)."""

    publisher: int
    root: RootActivity


@final
@attrs.frozen
class PublishRemoved:
    """``publisher.publish_removed(root_run_id)`` (P5)."""

    publisher: int
    root_run_id: str


@final
@attrs.frozen
class PublishLifecycle:
    """``publisher.publish_lifecycle(event)`` (P6)."""

    publisher: int
    event: LifecycleInput


@final
@attrs.frozen
class PublishHeartbeat:
    """``publisher.publish_heartbeat(event)`` (P7)."""

    publisher: int
    event: HeartbeatEvent


@final
@attrs.frozen
class DisposePublisher:
    """``publisher.dispose()`` (P8)."""

    publisher: int


def _check_failing(instance: Observe, attribute: attrs.Attribute[bool], failing: bool) -> None:
    if failing and instance.style != "callback":
        raise ValueError("only callback observers fail (O5)")


@final
@attrs.frozen
class Observe:
    """Attach a recording consumer (O1, O9); the observer gets the next number."""

    style: ObserverStyle = "callback"
    failing: bool = attrs.field(default=False, validator=_check_failing)


@final
@attrs.frozen
class StallObserver:
    """The observer's consumer blocks inside every frame it starts, until released."""

    observer: int


@final
@attrs.frozen
class ReleaseObserver:
    """The observer's consumer finishes the frame in flight and stops stalling."""

    observer: int


@final
@attrs.frozen
class DisposeObserver:
    """``lease.dispose()`` (O6)."""

    observer: int


@final
@attrs.frozen
class BindDispatcher:
    """``hub.bind_dispatcher(recorder)`` (K1)."""


@final
@attrs.frozen
class DisposeHub:
    """``hub.dispose()`` (L2)."""


@final
@attrs.frozen
class Settle:
    """Let the hub deliver until quiescent, then compare everything with the model."""


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
)
"""One step of a scenario."""

_PublisherOperation: TypeAlias = (
    PublishSnapshot
    | PublishChanged
    | PublishRemoved
    | PublishLifecycle
    | PublishHeartbeat
    | DisposePublisher
)
_PUBLISHER_OPERATIONS = (
    PublishSnapshot,
    PublishChanged,
    PublishRemoved,
    PublishLifecycle,
    PublishHeartbeat,
    DisposePublisher,
)
_OBSERVER_OPERATIONS = (StallObserver, ReleaseObserver, DisposeObserver)


def playable(operations: Iterable[Operation]) -> tuple[Operation, ...]:
    """Make a drawn sequence meaningful; a sequence that already is one comes back unchanged.

    Publisher and observer numbers are taken modulo how many exist at that point; a publisher
    operation before any registration registers one first; observer operations before any
    observer, and stalls of a failing observer (it never blocks, it raises), are dropped.
    """
    result: list[Operation] = []
    publishers = 0
    failing: list[bool] = []
    for operation in operations:
        if isinstance(operation, _PUBLISHER_OPERATIONS):
            if publishers == 0:
                result.append(RegisterPublisher())
                publishers = 1
            operation = attrs.evolve(operation, publisher=operation.publisher % publishers)
        elif isinstance(operation, _OBSERVER_OPERATIONS):
            if not failing:
                continue
            observer = operation.observer % len(failing)
            if isinstance(operation, StallObserver) and failing[observer]:
                continue
            operation = attrs.evolve(operation, observer=observer)
        elif isinstance(operation, RegisterPublisher):
            publishers += 1
        elif isinstance(operation, Observe):
            failing.append(operation.failing)
        result.append(operation)
    return tuple(result)


def check_playable(operations: Sequence[Operation]) -> None:
    """Raise ``ValueError`` if an operation names a publisher or observer that does not exist."""
    publishers = observers = 0
    for step, operation in enumerate(operations, 1):
        if isinstance(operation, _PUBLISHER_OPERATIONS) and not (
            0 <= operation.publisher < publishers
        ):
            raise ValueError(f"step {step}: there is no publisher #{operation.publisher}")
        if isinstance(operation, _OBSERVER_OPERATIONS) and not 0 <= operation.observer < observers:
            raise ValueError(f"step {step}: there is no observer #{operation.observer}")
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
            f"diagnostics_limit={config.diagnostics_limit}):"
        ]
        publishers = observers = 0
        width = len(str(len(self.operations) + 1))
        for step, operation in enumerate(self.operations, 1):
            if isinstance(operation, RegisterPublisher):
                text = f"register_publisher() -> publisher#{publishers}"
                publishers += 1
            elif isinstance(operation, Observe):
                how = f"{operation.style}, failing" if operation.failing else operation.style
                text = f"observe({how}) -> observer#{observers}"
                observers += 1
            else:
                text = describe_operation(operation)
            lines.append(f"  {step:>{width}}. {text}")
        end = len(self.operations) + 1
        lines.append(f"  {end:>{width}}. (end) release every observer, settle()")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


def describe_operation(operation: Operation) -> str:
    """One operation as a line of a scenario, e.g. ``publisher#0.publish_removed('a')``."""
    match operation:
        case RegisterPublisher():
            return "register_publisher()"
        case PublishSnapshot(publisher=p, availability=availability, roots=roots):
            if roots is None:
                return f"publisher#{p}.publish_snapshot({availability})"
            listed = ", ".join(render(root) for root in roots)
            return f"publisher#{p}.publish_snapshot({availability}, [{listed}])"
        case PublishChanged(publisher=p, root=root):
            return f"publisher#{p}.publish_changed({render(root)})"
        case PublishRemoved(publisher=p, root_run_id=root_run_id):
            return f"publisher#{p}.publish_removed({root_run_id!r})"
        case PublishLifecycle(publisher=p, event=event):
            return f"publisher#{p}.publish_lifecycle({render(event)})"
        case PublishHeartbeat(publisher=p, event=event):
            return (
                f"publisher#{p}.publish_heartbeat(run {event.run_id!r} at {event.scheduled_at!r})"
            )
        case DisposePublisher(publisher=p):
            return f"publisher#{p}.dispose()"
        case Observe(style=style, failing=failing):
            return f"observe({style}, failing)" if failing else f"observe({style})"
        case StallObserver(observer=o):
            return f"observer#{o}.stall()"
        case ReleaseObserver(observer=o):
            return f"observer#{o}.release()"
        case DisposeObserver(observer=o):
            return f"observer#{o}.lease.dispose()"
        case BindDispatcher():
            return "hub.bind_dispatcher(recorder)"
        case DisposeHub():
            return "hub.dispose()"
        case Settle():
            return "settle()"
    raise TypeError(f"not an operation: {operation!r}")  # pragma: no cover


# --- strategies -------------------------------------------------------------------------------

_STYLES = defaults.STYLES
_NUMBERS = st.integers(min_value=0, max_value=7)


# The value strategies are imported where they are used, so that ``strategies`` may re-export
# the operation strategies without an import cycle.


def _default_roots() -> st.SearchStrategy[RootActivity]:
    from .strategies import root_activities, root_graphs

    return root_activities(
        root_run_ids=st.sampled_from(ROOT_IDS), graphs=st.none() | root_graphs(max_nodes=2)
    )


def operations(
    *,
    styles: Sequence[ObserverStyle] = _STYLES,
    roots: st.SearchStrategy[RootActivity] | None = None,
) -> st.SearchStrategy[Operation]:
    """Any single operation, with publisher and observer numbers in 0..7 (see :func:`playable`).

    ``styles`` are the observer styles to attach; ``roots`` overrides the roots drawn (by default
    every field varies, and root ids come from :data:`ROOT_IDS`). Publishing a change and
    settling are drawn more often than the rest, so scenarios do something and check it.
    """
    from .strategies import heartbeat_events, lifecycle_inputs, lifecycle_targets, stage_targets

    if not styles:
        raise ValueError("styles needs at least one observer style")
    root_strategy = roots if roots is not None else _default_roots()
    observes = st.sampled_from(list(styles)).map(Observe)
    if "callback" in styles:
        observes = observes | st.just(Observe("callback", failing=True))
    snapshots = st.sampled_from(Availability).flatmap(
        lambda availability: st.builds(
            PublishSnapshot,
            _NUMBERS,
            st.just(availability),
            st.lists(root_strategy, max_size=4).map(tuple)
            if availability is Availability.READY
            else st.none(),
        )
    )
    # Completed stages give the second hook event (P6); draw them often enough to matter.
    targets = stage_targets(statuses=st.just(StageStatus.COMPLETED)) | lifecycle_targets()
    # Weights, as repeated branches: changes and observers often, so queues fill and overflow;
    # disposing the hub rarely, since nothing much happens after it. (The first branch is the
    # simplest: hypothesis shrinks towards it.)
    weighted: list[tuple[int, st.SearchStrategy[Operation]]] = [
        (1, st.just(RegisterPublisher())),
        (2, snapshots),
        (5, st.builds(PublishChanged, _NUMBERS, root_strategy)),
        (2, st.builds(PublishRemoved, _NUMBERS, st.sampled_from(ROOT_IDS))),
        (2, st.builds(PublishLifecycle, _NUMBERS, lifecycle_inputs(targets=targets))),
        (1, st.builds(PublishHeartbeat, _NUMBERS, heartbeat_events())),
        (1, st.builds(DisposePublisher, _NUMBERS)),
        (3, observes),
        (2, st.builds(StallObserver, _NUMBERS)),
        (1, st.builds(ReleaseObserver, _NUMBERS)),
        (1, st.builds(DisposeObserver, _NUMBERS)),
        (2, st.just(BindDispatcher())),
        (3, st.just(Settle())),
        (1, st.just(DisposeHub()) | st.just(Settle()) | st.just(Settle())),
    ]
    return st.one_of([strategy for weight, strategy in weighted for _ in range(weight)])


def operation_sequences(
    *,
    max_size: int = 40,
    styles: Sequence[ObserverStyle] = _STYLES,
    roots: st.SearchStrategy[RootActivity] | None = None,
) -> st.SearchStrategy[tuple[Operation, ...]]:
    """Playable sequences of at most ``max_size`` operations (see :func:`playable`).

    A sequence is drawn as a few runs of operations joined together: a plain list strategy
    averages about five elements, too few to fill a queue or wrap the diagnostics ring, while
    runs average about twenty-five and still shrink by whole runs and single operations.
    """
    runs = st.lists(operations(styles=styles, roots=roots), max_size=max_size)
    return st.lists(runs, max_size=8).map(
        lambda drawn: playable(itertools.chain.from_iterable(drawn))[:max_size]
    )


def scenarios(
    *,
    max_steps: int = defaults.MAX_STEPS,
    queue_limits: Sequence[int] = defaults.QUEUE_LIMITS,
    diagnostics_limits: Sequence[int] = defaults.DIAGNOSTICS_LIMITS,
    styles: Sequence[ObserverStyle] = _STYLES,
    roots: st.SearchStrategy[RootActivity] | None = None,
) -> st.SearchStrategy[Scenario]:
    """Scenarios: a configuration drawn from the limits given, and a playable sequence.

    Small queue limits make overflow (O4) reachable in a few steps; a small diagnostics limit
    makes the ring (L3) wrap. The first limit of each is the one shrinking moves towards, so
    the defaults start with the contract's default, 256: a shrunk scenario shows a small limit
    only when the failure needs one.
    """
    configs = st.builds(
        AdapterConfig,
        queue_limit=st.sampled_from(list(queue_limits)),
        diagnostics_limit=st.sampled_from(list(diagnostics_limits)),
    )
    return st.builds(
        Scenario,
        config=configs,
        operations=operation_sequences(max_size=max_steps, styles=styles, roots=roots),
    )
