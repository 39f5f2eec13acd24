"""The hypothesis strategies that draw operations, operation sequences and scenarios."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, cast

import attrs
from hypothesis import strategies as st

from .._contract import (
    Availability,
    Cursor,
    RootActivity,
    StageStatus,
)
from . import defaults
from ._adapter import AdapterConfig, ObserverStyle
from ._bursts import (
    MAX_BURST,
    ThreadBadInput,
    ThreadCall,
    ThreadChanged,
    ThreadDispose,
    ThreadRemoved,
    thread_root_id,
)
from ._operations import (
    ROOT_IDS,
    At,
    Behind,
    BindDispatcher,
    DisposeHub,
    DisposeObserver,
    DisposePublisher,
    Observe,
    Operation,
    PublishChanged,
    PublishHeartbeat,
    PublishLifecycle,
    PublishRemoved,
    PublishSnapshot,
    RegisterPublisher,
    ReleaseObserver,
    Scenario,
    SeenBy,
    Settle,
    Since,
    StallObserver,
    ThreadBurst,
    playable,
)
from ._value_strategies import (
    heartbeat_events,
    lifecycle_inputs,
    lifecycle_targets,
    root_activities,
    root_graphs,
    stage_targets,
    unknown_details,
)

__all__ = [
    "THREAD_QUEUE_LIMITS",
    "operation_sequences",
    "operations",
    "scenarios",
    "thread_bursts",
    "thread_scenarios",
]

# --- strategies -------------------------------------------------------------------------------

_STYLES = defaults.STYLES
_NUMBERS = st.integers(min_value=0, max_value=7)


def _default_roots() -> st.SearchStrategy[RootActivity]:
    return root_activities(
        root_run_ids=st.sampled_from(ROOT_IDS), graphs=st.none() | root_graphs(max_nodes=2)
    )


def operations(
    *,
    styles: Sequence[ObserverStyle] = _STYLES,
    roots: st.SearchStrategy[RootActivity] | None = None,
    resume: bool = True,
    details: bool = True,
) -> st.SearchStrategy[Operation]:
    """Any single operation, with publisher and observer numbers in 0..7 (see :func:`playable`).

    ``styles`` are the observer styles to attach; ``roots`` overrides the roots drawn (by default
    every field varies, and root ids come from :data:`ROOT_IDS`); without ``resume`` no observer
    is attached with ``since`` (the resume profile, R2, is not checked); without ``details`` no
    non-ready snapshot carries C3's ``detail`` (for adapters that do not take it, see
    :func:`~workflow_hub.testing.conformance.check_conformance`). Publishing a change and
    settling are drawn more often than the rest, so scenarios do something and check it.
    """
    if not styles:
        raise ValueError("styles needs at least one observer style")
    root_strategy = roots if roots is not None else _default_roots()
    # Resumes (R2): mostly from a cursor an observer received, as a reconnecting client does;
    # sometimes from any cursor, of an epoch seen or not, behind, at or ahead of the hub's.
    since: st.SearchStrategy[Since | None] = st.one_of(
        st.none(),
        st.builds(SeenBy, _NUMBERS),
        st.builds(SeenBy, _NUMBERS),
        st.builds(Behind, _NUMBERS),
        st.builds(Behind, _NUMBERS),
        st.builds(
            At,
            st.builds(
                Cursor,
                epoch=st.sampled_from(["epoch-1", "epoch-1", "epoch-0", "epoch-2", "elsewhere"]),
                revision=st.integers(min_value=0, max_value=12),
            ),
        ),
    )
    observes = st.builds(Observe, st.sampled_from(list(styles)))
    resumes = st.builds(Observe, st.sampled_from(list(styles)), st.just(False), since)
    if "callback" in styles:
        observes = observes | st.just(Observe("callback", failing=True))
        resumes = resumes | st.builds(Observe, st.just("callback"), st.just(True), since)
    if not resume:
        resumes = observes
    said = st.none() | unknown_details() if details else st.none()
    snapshots = st.sampled_from(Availability).flatmap(
        lambda availability: st.builds(
            PublishSnapshot,
            _NUMBERS,
            st.just(availability),
            st.lists(root_strategy, max_size=4).map(tuple)
            if availability is Availability.READY
            else st.none(),
            st.none() if availability is Availability.READY else said,
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
        (3, resumes),
        (2, st.builds(StallObserver, _NUMBERS)),
        (1, st.builds(ReleaseObserver, _NUMBERS)),
        (2, st.builds(DisposeObserver, _NUMBERS)),
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
    resume: bool = True,
    details: bool = True,
) -> st.SearchStrategy[tuple[Operation, ...]]:
    """Playable sequences of at most ``max_size`` operations (see :func:`playable`).

    A sequence is drawn as a few runs of operations joined together: a plain list strategy
    averages about five elements, too few to fill a queue or wrap the diagnostics ring, while
    runs average about twenty-five and still shrink by whole runs and single operations.
    """
    runs = st.lists(
        operations(styles=styles, roots=roots, resume=resume, details=details), max_size=max_size
    )
    return st.lists(runs, max_size=8).map(
        lambda drawn: playable(itertools.chain.from_iterable(drawn))[:max_size]
    )


def scenarios(
    *,
    max_steps: int = defaults.MAX_STEPS,
    queue_limits: Sequence[int] = defaults.QUEUE_LIMITS,
    diagnostics_limits: Sequence[int] = defaults.DIAGNOSTICS_LIMITS,
    history_limits: Sequence[int] = defaults.HISTORY_LIMITS,
    styles: Sequence[ObserverStyle] = _STYLES,
    roots: st.SearchStrategy[RootActivity] | None = None,
    resume: bool = True,
    details: bool = True,
) -> st.SearchStrategy[Scenario]:
    """Scenarios: a configuration drawn from the limits given, and a playable sequence.

    Small queue limits make overflow (O4) reachable in a few steps; a small diagnostics limit
    makes the ring (L3) wrap; small history limits put resumes (R1, R2) on both sides of the
    history's edge (without ``resume``, no observer resumes: see :func:`operations`). The first limit of each is the one shrinking moves towards, so
    the defaults start with the contract's default, 256: a shrunk scenario shows a small limit
    only when the failure needs one.
    """
    configs = st.builds(
        AdapterConfig,
        queue_limit=st.sampled_from(list(queue_limits)),
        diagnostics_limit=st.sampled_from(list(diagnostics_limits)),
        history_limit=st.sampled_from(list(history_limits)),
    )
    return st.builds(
        Scenario,
        config=configs,
        operations=operation_sequences(
            max_size=max_steps, styles=styles, roots=roots, resume=resume, details=details
        ),
    )


# --- the threads profile (H1) ------------------------------------------------------------------

THREAD_QUEUE_LIMITS: tuple[int, ...] = (256, MAX_BURST)
"""Queue limits of thread scenarios: the default, and the smallest that still holds a whole burst
for the witness (stalled observers overflow over a few bursts)."""

_CALLS: st.SearchStrategy[ThreadCall] = st.one_of(
    st.builds(ThreadChanged, _default_roots()),
    st.builds(ThreadChanged, _default_roots()),
    st.builds(ThreadChanged, _default_roots()),
    st.builds(ThreadRemoved, st.just("")),
    st.builds(ThreadBadInput, st.sampled_from(["root", "root_run_id"])),
)


def _own_roots(index: int, calls: list[ThreadCall]) -> tuple[ThreadCall, ...]:
    root_run_id = thread_root_id(index)
    owned: list[ThreadCall] = []
    for call in calls:
        if isinstance(call, ThreadChanged):
            call = ThreadChanged(attrs.evolve(cast(Any, call.root), root_run_id=root_run_id))
        elif isinstance(call, ThreadRemoved):
            call = ThreadRemoved(root_run_id)
        owned.append(call)
    return tuple(owned)


def _burst(publisher: int, drawn: list[list[ThreadCall]], disposes: int | None) -> ThreadBurst:
    threads: list[tuple[ThreadCall, ...]] = []
    budget = MAX_BURST - (disposes is not None)
    for index, calls in enumerate(drawn):
        owned = _own_roots(index, calls[: max(0, budget)])
        budget -= len(owned)
        threads.append(owned)
    if disposes is not None:
        which = disposes % len(threads)
        threads[which] = (*threads[which], ThreadDispose())
    return ThreadBurst(publisher, tuple(threads))


def thread_bursts() -> st.SearchStrategy[ThreadBurst]:
    """Bursts of two or three threads publishing at once (at most ``MAX_BURST`` calls), now and
    then one of them disposing the publisher as its last call."""
    return st.builds(
        _burst,
        _NUMBERS,
        st.lists(st.lists(_CALLS, min_size=1, max_size=4), min_size=2, max_size=3),
        st.none() | st.none() | st.none() | st.integers(min_value=0, max_value=2),
    )


def _keep_the_witness(operations: tuple[Operation, ...]) -> tuple[Operation, ...]:
    # Observer #0 is the witness bursts read the order from: nothing stalls or disposes it.
    return tuple(operation for operation in operations if getattr(operation, "observer", None) != 0)


def thread_scenarios(
    *,
    max_steps: int = defaults.MAX_STEPS,
    diagnostics_limits: Sequence[int] = defaults.DIAGNOSTICS_LIMITS,
    history_limits: Sequence[int] = defaults.HISTORY_LIMITS,
    styles: Sequence[ObserverStyle] = _STYLES,
    resume: bool = True,
    details: bool = True,
) -> st.SearchStrategy[Scenario]:
    """Scenarios of the threads profile: a callback witness first (observer #0), then the usual
    operations mixed with :func:`thread_bursts` (about one operation in two is a burst)."""
    ordinary = operations(styles=styles, resume=resume, details=details)
    mixed = st.one_of(ordinary, thread_bursts())
    sequences = st.lists(
        st.lists(mixed, min_size=1, max_size=max_steps), min_size=1, max_size=4
    ).map(
        lambda drawn: _keep_the_witness(
            playable((Observe("callback"), *itertools.chain.from_iterable(drawn)))
        )[:max_steps]
    )
    configs = st.builds(
        AdapterConfig,
        queue_limit=st.sampled_from(list(THREAD_QUEUE_LIMITS)),
        diagnostics_limit=st.sampled_from(list(diagnostics_limits)),
        history_limit=st.sampled_from(list(history_limits)),
    )
    return st.builds(Scenario, config=configs, operations=sequences)
