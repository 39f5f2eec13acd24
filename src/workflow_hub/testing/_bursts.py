"""Bursts of publishes from real OS threads: the ``threads`` profile of the kit (H1).

A burst names one publisher and a few threads, each with its own short list of calls on that
publisher's thread-safe handle (:class:`~workflow_hub.testing.conformance.ThreadSafePublisher`).
Every thread works on a root id of its own (``thread-0``, ``thread-1`` …), so whatever order the
threads' calls interleave in, each call can be told apart in what observers receive.

Playing a burst: settle (so observer #0, the *witness*, has nothing pending), ask the adapter
for the handle and to hold, start the threads at once (a barrier), join them without yielding
to trio, flush, settle. What each call raised in its thread is checked (nothing, or a
``ContractError`` naming the field). Then the order the implementation applied the calls in is
read from the witness's new frames (a change or removal names its thread's root; the
``unavailable`` snapshot is the thread that disposed); calls the witness did not see (fenced,
or lost) follow in thread order. The model plays the calls in that order and everything is
compared as at every settle: a thread's calls out of its order, a call lost or one applied
after its publisher was disposed all show as a difference.

The witness never overflows in a burst: thread scenarios attach it first, never stall, fail or
dispose it, and a burst has at most :data:`MAX_BURST` calls, no more than the queue limits the
thread scenarios use.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from typing import Final, Literal, Protocol, TypeAlias, cast, final

import attrs

from .._contract import (
    Availability,
    ChangedFrame,
    ContractError,
    Frame,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
)
from ._adapter import ConformanceAdapter, ThreadsAdapter, ThreadSafePublisher, offers_threads
from ._render import render
from .model import HubModel


class BurstPlayer(Protocol):
    """What a burst is played on: the part of ``_operations.Player`` it needs."""

    @property
    def model(self) -> HubModel: ...

    @property
    def adapter(self) -> ConformanceAdapter: ...

    def check_value(self, what: str, expected: object, actual: object) -> None: ...

    async def compare(self) -> None: ...


__all__ = [
    "MAX_BURST",
    "THREAD_TIMEOUT",
    "BurstPlayer",
    "ThreadBadInput",
    "ThreadCall",
    "ThreadChanged",
    "ThreadDispose",
    "ThreadRemoved",
    "play_burst",
    "thread_root_id",
]

MAX_BURST: Final = 8
"""Calls in one burst, over all its threads, at most."""

THREAD_TIMEOUT: Final = 10.0
"""Seconds the threads of one burst may take to start and finish."""


_SWITCH_INTERVAL: Final = 1e-6
"""``sys.setswitchinterval`` while a burst's threads run."""


def thread_root_id(thread: int) -> str:
    """The root id thread ``thread`` of a burst publishes about."""
    return f"thread-{thread}"


@final
@attrs.frozen
class ThreadChanged:
    """``handle.publish_changed(root)`` from the thread."""

    root: RootActivity

    def describe(self) -> str:
        return f"publish_changed({render(self.root)})"

    def call(self, handle: ThreadSafePublisher) -> None:
        handle.publish_changed(self.root)


@final
@attrs.frozen
class ThreadRemoved:
    """``handle.publish_removed(root_run_id)`` from the thread."""

    root_run_id: str

    def describe(self) -> str:
        return f"publish_removed({self.root_run_id!r})"

    def call(self, handle: ThreadSafePublisher) -> None:
        handle.publish_removed(self.root_run_id)


@final
@attrs.frozen
class ThreadBadInput:
    """A publish with a bad argument: it must raise ``ContractError`` naming ``field`` in the
    calling thread, and change nothing."""

    field: Literal["root", "root_run_id"]

    def describe(self) -> str:
        if self.field == "root":
            return "publish_changed('not a root')  (bad input)"
        return "publish_removed(7)  (bad input)"

    def call(self, handle: ThreadSafePublisher) -> None:
        bad: object
        if self.field == "root":
            bad = "not a root"
            handle.publish_changed(bad)  # type: ignore[arg-type]  # wrong on purpose
        else:
            bad = 7
            handle.publish_removed(bad)  # type: ignore[arg-type]  # wrong on purpose


@final
@attrs.frozen
class ThreadDispose:
    """``handle.dispose()`` from the thread (only ever a thread's last call)."""

    def describe(self) -> str:
        return "dispose()"

    def call(self, handle: ThreadSafePublisher) -> None:
        handle.dispose()


ThreadCall: TypeAlias = ThreadChanged | ThreadRemoved | ThreadBadInput | ThreadDispose
"""One call a thread of a burst makes."""


def _expected_outcome(call: ThreadCall) -> str:
    if isinstance(call, ThreadBadInput):
        return f"ContractError naming {call.field!r}"
    return "returned"


def _outcome(error: BaseException | None) -> str:
    if error is None:
        return "returned"
    if isinstance(error, ContractError):
        return f"ContractError naming {error.path!r}"
    return f"{type(error).__name__}: {error}"


def _run_threads(
    handle: ThreadSafePublisher, threads: Sequence[Sequence[ThreadCall]]
) -> list[list[BaseException | None]] | None:
    """Run each thread's calls in a real OS thread, all started at once; None on a timeout."""
    outcomes: list[list[BaseException | None]] = [[] for _ in threads]
    barrier = threading.Barrier(len(threads))

    def run(index: int) -> None:
        try:
            barrier.wait(THREAD_TIMEOUT)
        except threading.BrokenBarrierError:
            return
        for call in threads[index]:
            time.sleep(0)  # let the other threads in between two calls: they interleave
            try:
                call.call(handle)
            except BaseException as error:  # reported in the harness's thread, as a mismatch
                outcomes[index].append(error)
            else:
                outcomes[index].append(None)

    workers = [
        threading.Thread(target=run, args=(index,), name=f"conformance-thread-{index}")
        for index in range(len(threads))
    ]
    # Switch threads as often as the interpreter can, so their calls interleave one by one
    # rather than a whole thread's at a time; restored as soon as the threads have ended.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(_SWITCH_INTERVAL)
    try:
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + THREAD_TIMEOUT
        for worker in workers:
            # Blocking on purpose: the harness's trio loop must not run while the threads publish.
            worker.join(max(0.0, deadline - time.monotonic()))
    finally:
        sys.setswitchinterval(interval)
    if any(worker.is_alive() for worker in workers):
        barrier.abort()
        return None
    return outcomes


def _thread_of(frame: Frame, roots: dict[str, int], disposing: int | None) -> int | None:
    if isinstance(frame, ChangedFrame):
        return roots.get(frame.root.root_run_id)
    if isinstance(frame, RemovedFrame):
        return roots.get(frame.root_run_id)
    if isinstance(frame, SnapshotFrame) and frame.availability is Availability.UNAVAILABLE:
        return disposing
    return None


def _applied_order(
    threads: Sequence[Sequence[ThreadCall]], witnessed: Sequence[Frame]
) -> list[ThreadCall]:
    """The calls in the order the witness saw them applied, then those it did not see."""
    effective = [[c for c in calls if not isinstance(c, ThreadBadInput)] for calls in threads]
    roots: dict[str, int] = {}
    disposing: int | None = None
    for index, calls in enumerate(effective):
        for call in calls:
            if isinstance(call, ThreadChanged):
                roots[call.root.root_run_id] = index
            elif isinstance(call, ThreadRemoved):
                roots[call.root_run_id] = index
            elif isinstance(call, ThreadDispose):
                disposing = index
    taken = [0] * len(effective)
    order: list[ThreadCall] = []
    for frame in witnessed:
        thread = _thread_of(frame, roots, disposing)
        if thread is None or taken[thread] >= len(effective[thread]):
            continue
        order.append(effective[thread][taken[thread]])
        taken[thread] += 1
    for index, calls in enumerate(effective):
        order.extend(calls[taken[index] :])
    return order


async def play_burst(
    player: BurstPlayer, publisher: int, threads: Sequence[Sequence[ThreadCall]]
) -> None:
    """Play a burst on the adapter and the model (see the module's text)."""
    adapter = cast(ThreadsAdapter, player.adapter)
    if not offers_threads(adapter):
        raise TypeError(
            "the threads profile needs the adapter's thread_publisher(), hold_threads() and "
            "flush_threads() (see ThreadsAdapter); declare profiles without 'threads' otherwise"
        )
    await player.compare()
    model = player.model
    witness_before = len(model.observers[0].received) if model.observers else 0
    handle = await adapter.thread_publisher(publisher)
    await adapter.hold_threads()
    outcomes = _run_threads(handle, threads)
    await adapter.flush_threads()
    if outcomes is None:
        raise TimeoutError(
            f"the threads of the burst did not finish within {THREAD_TIMEOUT} s "
            "(does a thread-safe publish wait for the hub?)"
        )
    for index, calls in enumerate(threads):
        for number, call in enumerate(calls):
            player.check_value(
                f"what thread#{index}'s call {number + 1} ({call.describe()}) did in its "
                "thread (H1)",
                _expected_outcome(call),
                _outcome(outcomes[index][number]),
            )
    await adapter.settle()
    witnessed: Sequence[Frame] = ()
    if model.observers:
        witnessed = list(await adapter.frames(0))[witness_before:]
    for call in _applied_order(threads, witnessed):
        if isinstance(call, ThreadChanged):
            model.publish_changed(publisher, call.root)
        elif isinstance(call, ThreadRemoved):
            model.publish_removed(publisher, call.root_run_id)
        elif isinstance(call, ThreadDispose):
            model.dispose_publisher(publisher)
    await player.compare()
