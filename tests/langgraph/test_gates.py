"""The event-loop gate (``LoopGate``): where an async invocation's facts are applied, and when.

Its promise (docs/langgraph.md, "Reporting never makes LangGraph wait": the integration's side
of P9, a callback only queues): the tracker is called on the loop's thread only, in the order
the calls were queued; calls queued on the loop gather for ``LINGER`` seconds into one batch
(one published change); a call queued from another thread (a sync node or tool in an executor
thread) reaches the loop before anything that thread asks of the loop afterwards; ``flush`` on
the loop's thread applies the queue at once. The loop's clock is frozen here, so "not yet" and
"now" are exact. The last test is the thread gate's end: the handoff of its last calls.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, nullcontext

from workflow_hub.langgraph._gates import LINGER, Handoff, LoopGate, Reporter


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


def test_a_closed_thread_gate_hands_over_and_a_thread_waits_only_for_its_own_last_calls() -> None:
    """Issue 38: closing a thread gate returns once its last calls were applied through the
    handoff's queued batch; the reporter then waits for them alone. A thread's next start waits
    for its own thread's verdict (``settled(key)``), not for another thread's."""
    reporter = Reporter()
    applied: list[str] = []
    settling, release = threading.Event(), threading.Event()

    def settle() -> None:
        settling.set()
        release.wait(10)

    failures: list[BaseException] = []
    gate = reporter.gate(nullcontext, failures.append, Handoff(nullcontext, settle, "a"))
    gate.submit(lambda: applied.append("last"))
    try:
        gate.close()
        assert applied == ["last"]
        assert settling.wait(10)
        assert reporter.settled("b", timeout=0)  # another thread does not wait
        assert not reporter.settled("a", timeout=0)
        assert not reporter.settled(timeout=0)
    finally:
        release.set()
    assert reporter.settled("a", timeout=10)
    assert reporter.settled(timeout=10)
    assert failures == []
