"""The gates: where an invocation's facts are applied, and when.

Their promise (docs/langgraph.md, "Reporting never makes LangGraph wait": the integration's side
of P9, a callback only queues). The event-loop gate (``LoopGate``) calls the tracker on the
loop's thread only, in the order the calls were queued; calls queued on the loop gather for
``LINGER`` seconds into one batch (one published change); a call queued from another thread (a
sync node or tool in an executor thread) reaches the loop before anything that thread asks of
the loop afterwards; ``flush`` on the loop's thread applies the queue at once. The loop's clock
is frozen here, so "not yet" and "now" are exact.

The hub gate (``HubGate``, a thread host's tracker) applies the calls in the hub's own thread,
in one batch at a task's next tick there (every ``HUB_TICK`` seconds); closing it queues its
last calls there, ahead of whatever is asked of the hub next, without waiting. Its tests hold
the hub's thread with a call of their own, so "not yet" is exact there too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import pytest

import workflow_hub.sync
from workflow_hub.langgraph import _gates
from workflow_hub.langgraph._gates import LINGER, HubReporter, LoopGate


class FrozenLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock moves only when the test moves it."""

    now = 1000.0

    def time(self) -> float:
        return self.now


class Applied:
    """The batches a gate opened, each with the calls applied inside it, and its failures."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.failures: list[BaseException] = []
        self.threads: set[int] = set()

    @contextmanager
    def batch(self) -> Iterator[None]:
        self.batches.append([])
        yield

    def call(self, name: str) -> Callable[[], None]:
        def apply() -> None:
            self.threads.add(threading.get_ident())
            self.batches[-1].append(name)

        return apply


def run_frozen(main: Callable[[FrozenLoop, LoopGate, Applied], Awaitable[None]]) -> Applied:
    loop = FrozenLoop()
    applied = Applied()
    try:
        gate = LoopGate(loop, applied.batch, applied.failures.append)
        loop.run_until_complete(main(loop, gate, applied))
    finally:
        loop.close()
    assert applied.failures == []
    return applied


async def turns(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_calls_queued_on_the_loop_gather_for_the_linger_into_one_batch() -> None:
    async def main(loop: FrozenLoop, gate: LoopGate, applied: Applied) -> None:
        gate.submit(applied.call("a"))
        await turns()
        gate.submit(applied.call("b"))
        await turns()
        assert applied.batches == []  # the loop turned, the clock did not: still gathering
        loop.now += LINGER
        await turns()
        assert applied.batches == [["a", "b"]]
        assert applied.threads == {threading.get_ident()}

    run_frozen(main)


def test_a_call_from_another_thread_reaches_the_loop_before_what_that_thread_asks_next() -> None:
    """A sync tool looks at the hub from its executor thread: what it queued (and what the loop
    queued before it, still lingering) is applied first, in order, on the loop's thread."""

    async def main(loop: FrozenLoop, gate: LoopGate, applied: Applied) -> None:
        gate.submit(applied.call("on the loop"))
        asked = asyncio.Event()
        seen: list[list[str]] = []

        def look() -> None:
            seen.extend(list(batch) for batch in applied.batches)
            asked.set()

        def tool() -> None:
            gate.submit(applied.call("from the thread"))
            loop.call_soon_threadsafe(look)

        worker = threading.Thread(target=tool)
        worker.start()
        await asked.wait()  # the clock never moved: no linger ran out
        worker.join()
        assert seen == [["on the loop", "from the thread"]]
        assert applied.threads == {threading.get_ident()}

    run_frozen(main)


def test_calls_from_the_loop_and_a_thread_at_once_are_all_applied_in_each_ones_order() -> None:
    """While a drain is due, the loop's own calls are appended without the lock (issue 38):
    a thread queuing at the same time loses nothing, and each keeps its order."""

    async def main(loop: FrozenLoop, gate: LoopGate, applied: Applied) -> None:
        gate.submit(applied.call("loop-0"))  # the linger starts: the next ones take no lock
        started = threading.Event()

        def worker() -> None:
            started.set()
            for index in range(300):
                gate.submit(applied.call(f"thread-{index}"))

        thread = threading.Thread(target=worker)
        thread.start()
        started.wait()
        for index in range(1, 300):
            gate.submit(applied.call(f"loop-{index}"))
        thread.join()
        loop.now += LINGER
        await turns()
        gate.flush()
        done = [name for batch in applied.batches for name in batch]
        assert [n for n in done if n.startswith("loop")] == [f"loop-{i}" for i in range(300)]
        assert [n for n in done if n.startswith("thread")] == [f"thread-{i}" for i in range(300)]
        assert applied.threads == {threading.get_ident()}

    run_frozen(main)


def test_flush_on_the_loop_applies_at_once_and_close_ends_the_gate() -> None:
    async def main(loop: FrozenLoop, gate: LoopGate, applied: Applied) -> None:
        gate.submit(applied.call("a"))
        gate.flush()
        assert applied.batches == [["a"]]
        loop.now += LINGER
        await turns()
        assert applied.batches == [["a"]]  # its linger was cancelled: no empty batch
        gate.submit(applied.call("b"))
        gate.close()
        gate.submit(applied.call("after the end"))
        loop.now += LINGER
        await turns()
        assert applied.batches == [["a"], ["b"]]

    run_frozen(main)


def test_a_failing_call_is_told_and_the_calls_after_it_still_apply() -> None:
    failures: list[BaseException] = []
    batches: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        @contextmanager
        def batch() -> Iterator[None]:
            yield

        def boom() -> None:
            raise ValueError("refused")

        gate = LoopGate(loop, batch, failures.append)
        gate.submit(boom)
        gate.submit(lambda: batches.append("after"))
        gate.close()

    asyncio.run(main())
    assert [str(error) for error in failures] == ["refused"]
    assert batches == ["after"]


@contextmanager
def hub_reporter() -> Iterator[tuple[workflow_hub.sync.Hub, HubReporter]]:
    with workflow_hub.sync.open_hub() as hub:
        yield hub, HubReporter(hub.tracker(owner_session_id="s").hub_thread())


@contextmanager
def held(hub: workflow_hub.sync.Hub) -> Iterator[threading.Thread]:
    """The hub's thread busy with a call of this test's until the block ends."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(10)

    holder = threading.Thread(target=hub.call, args=(hold,))
    holder.start()
    try:
        assert holding.wait(10)
        yield holder
    finally:
        release.set()
        holder.join(10)


def test_a_hub_gate_gathers_its_calls_into_one_batch_in_the_hubs_thread() -> None:
    """Issue 38: calls queued from any thread are applied in the hub's thread, in order, in one
    batch at the reporter's next tick (the hub's thread was held while they were queued, so the
    ticking started after the last of them)."""
    applied = Applied()
    done = threading.Event()
    with hub_reporter() as (hub, reporter):
        gate = reporter.gate(applied.batch, applied.failures.append)
        with held(hub):
            gate.submit(applied.call("a"))
            other = threading.Thread(target=gate.submit, args=(applied.call("b"),))
            other.start()
            other.join(10)
            gate.submit(applied.call("c"))
            gate.submit(done.set)
        assert done.wait(10)
        hub_thread = hub.call(threading.get_ident)
    assert applied.batches == [["a", "b", "c"]]
    assert applied.threads == {hub_thread}
    assert applied.failures == []


def test_closing_a_hub_gate_queues_its_last_calls_ahead_of_the_next_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 38, P9: ``close()`` returns while the hub's thread is busy; what the gate held is
    applied before anything asked of the hub afterwards, and nothing queued after it is."""
    monkeypatch.setattr(_gates, "HUB_TICK", 60.0)
    applied = Applied()
    with hub_reporter() as (hub, reporter):
        gate = reporter.gate(applied.batch, applied.failures.append)
        with held(hub) as holder:
            gate.submit(applied.call("a"))
            gate.submit(applied.call("b"))
            gate.close()
            assert holder.is_alive()  # close() did not wait for the hub's thread
            gate.submit(applied.call("late"))
        assert hub.call(lambda: [list(batch) for batch in applied.batches]) == [["a", "b"]]
    assert applied.failures == []


def test_flushing_a_hub_gate_waits_for_it_and_gives_up_at_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_gates, "HUB_TICK", 60.0)
    applied = Applied()
    with hub_reporter() as (hub, reporter):
        gate = reporter.gate(applied.batch, applied.failures.append)
        gate.submit(applied.call("a"))
        with held(hub):
            assert not reporter.flush([gate], timeout=0.01)
            assert applied.batches == []
        assert reporter.flush([gate], timeout=10)
        assert applied.batches == [["a"]]
        gate.submit(applied.call("b"))
        gate.flush(10)
        assert applied.batches == [["a"], ["b"]]


def test_a_hub_gate_tells_a_failing_call_and_never_raises_into_the_hubs_run() -> None:
    """One bad call loses nothing after it; a ``failed`` that raises itself is logged, and the
    host goes on (the gate runs inside the hub's trio run, which must never end for it)."""
    applied = Applied()

    def boom() -> None:
        raise ValueError("refused")

    def broken_failed(error: BaseException) -> None:
        raise RuntimeError("the failure handler broke")

    with hub_reporter() as (hub, reporter):
        gate = reporter.gate(applied.batch, applied.failures.append)
        gate.submit(boom)
        gate.submit(applied.call("after"))
        gate.close()
        hub.call(lambda: None)
        broken = reporter.gate(applied.batch, broken_failed)
        broken.submit(boom)
        broken.close()
        assert hub.call(lambda: "still serving") == "still serving"
    assert [str(error) for error in applied.failures] == ["refused"]
    assert applied.batches == [["after"], []]
