"""``watch(graph, tracker)``: a compiled graph whose every invocation reports to a tracker.

The wrapper adds one callback handler to the invocation's config and otherwise calls LangGraph's
own ``invoke``/``ainvoke``/``stream``/``astream`` with the caller's arguments, so results, stream
chunks, interrupts and exceptions are exactly LangGraph's. Around the call it reports the
thread's run: ``running`` when the invocation starts; at its end ``completed``, ``paused`` (a
breakpoint: the thread has next tasks but no interrupt waits), ``failed`` with the executor ended
(the invocation raised), or a kill request and ``killed`` (the caller cancelled it: an asyncio
cancellation, a ``KeyboardInterrupt``, a stream closed before its end). A thread whose interrupt
waits for an answer stays ``running`` with its prompt open.

Nothing the integration does raises into the caller's invocation: a failure to report (a root
the tracker refuses, a hub that is gone, a bug) is logged and counted (``statistics()``), and
an invocation whose root could not be started runs unreported, with the caller's own config.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import aclosing, closing
from typing import Any, final

from langchain_core.callbacks import BaseCallbackManager
from langgraph.types import Command

from .._contract import FailureDetail
from ..tracker import RunTracker
from ..tracker import SchedulerFacts as FactSink
from ._gates import Gate, HubGate, LoopGate
from ._handler import WatchHandler
from ._mapping import Outcome, ThreadMapper
from ._retry import RetryPolicies
from ._shared import Shared, WatchStatistics, shared_state

__all__ = ["KEEP_TURNS", "WatchedGraph", "watch"]

KEEP_TURNS = 3
"""Turns of a thread its root shows by default (the current one and the two before it); the
earlier ones are folded into one summary stage, so a thread's root stays bounded."""


def _thread_id(config: dict[str, Any] | None) -> str | None:
    if not config:
        return None
    configurable = config.get("configurable") or {}
    thread = configurable.get("thread_id")
    return None if thread is None else str(thread)


def _with_handler(config: dict[str, Any] | None, handler: WatchHandler) -> dict[str, Any]:
    merged = dict(config or {})
    callbacks = merged.get("callbacks")
    if callbacks is None:
        merged["callbacks"] = [handler]
    elif isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=True)
        merged["callbacks"] = manager
    else:
        merged["callbacks"] = [*callbacks, handler]
    return merged


def _resumes(input: Any) -> bool:
    """An invocation continues its thread (a ``Command`` or ``None`` input) rather than
    bringing new input, which starts a turn."""
    return input is None or isinstance(input, Command)


def _begin_kept(mapper: ThreadMapper, resume: bool, forget: Callable[[], None] | None) -> None:
    """``mapper.begin``, where its tracker lives; then, for a thread about to be kept, the
    registry's ``forget`` of threads whose root was removed."""
    mapper.begin(resume=resume)
    if forget is not None:
        forget()


def _outcome(error: BaseException) -> Outcome:
    return "failed" if isinstance(error, Exception) else "killed"


@final
class _Invocation:
    """One call of the graph: its handler, its gate and its thread's mapper."""

    __slots__ = ("config", "gate", "handler", "mapper", "owner", "released", "unreported")

    def __init__(
        self, owner: WatchedGraph, mapper: ThreadMapper, gate: Gate, handler: WatchHandler
    ) -> None:
        self.owner = owner
        self.mapper = mapper
        self.gate = gate
        self.handler = handler
        self.config: dict[str, Any] = {}
        self.released = False
        self.unreported = False  # its queued start was refused: nothing more of it is told

    def start(self, resume: bool) -> None:
        """Where the tracker lives: the queued start of a thread reported before. If the
        tracker refuses it (a root of that id is someone else's now), the invocation runs
        unreported, as a refused first start does: nothing after it reaches the mapper, and it
        is counted; the refusal itself is raised to the gate, which logs it."""
        try:
            self.mapper.begin_again(resume=resume)
        except Exception:
            self.unreported = True
            self.handler.close()
            self.owner._shared.unreported()
            raise

    def release(self) -> None:
        """The invocation is done with its mapper (once; after its last fact was applied, so
        the registry never forgets a thread whose last facts are still on their way)."""
        shared = self.owner._shared
        with shared.lock:
            if self.released:
                return
            self.released = True
            self.mapper.users -= 1

    def end(
        self, outcome: Outcome, *, paused: bool = False, error: BaseException | None = None
    ) -> None:
        """Report how the invocation ended: everything it reported reaches the tracker before
        anything asked of the tracker afterwards.

        Never raises: what goes wrong is the shared state's ``failed``.
        """
        shared = self.owner._shared
        try:
            detail = None if outcome != "failed" or error is None else FailureDetail.of(error)

            def finish() -> None:
                try:
                    self.handler.close()
                    if self.unreported:
                        return
                    final = outcome
                    if outcome == "completed" and paused and not self.mapper.waiting:
                        final = "paused"
                    self.mapper.end(final, detail)
                finally:
                    self.release()

            self.gate.submit(finish)
            self.gate.close()
        except Exception as failure:
            shared.failed(failure)
            self.release()
        finally:
            with shared.lock:
                shared.active.discard(self.gate)


@final
class WatchedGraph:
    """A compiled LangGraph graph whose invocations report to a tracker as they run.

    Build it with :func:`watch`. ``invoke``, ``ainvoke``, ``stream`` and ``astream`` take and
    return what the graph's own methods do. Each thread (``config["configurable"]["thread_id"]``)
    is one root: resuming it, or giving it new input, continues the same root. An invocation
    without a thread id is a root of its own.

    LangGraph never waits for the tracker: callbacks queue their facts, which are applied in
    order moments later, and each invocation hands all of them to the tracker before it returns
    (see :meth:`flush`). With the thread host's tracker (``workflow_hub.sync``'s) they are
    applied in the hub's own thread, queued ahead of anything asked of the hub once the
    invocation returns. Otherwise the sync methods apply them in a reporter thread, so they
    need a tracker that accepts calls from any thread, and the async methods on the event
    loop's thread (``workflow_hub.asyncio``'s tracker is fine, and so is a thread-safe one).
    A thread's first invocation waits for its root to be taken; with the thread host's tracker,
    and for the async methods, the later ones start through the invocation's queue.
    """

    __slots__ = (
        "_breakpoints",
        "_graph",
        "_heartbeat",
        "_keep_turns",
        "_policies",
        "_prefix",
        "_shared",
        "_sink",
    )

    def __init__(
        self,
        graph: Any,
        tracker: FactSink,
        *,
        heartbeat_interval_minutes: float | None = None,
        root_prefix: str = "",
        keep_turns: int | None = KEEP_TURNS,
    ) -> None:
        if keep_turns is not None and (
            not isinstance(keep_turns, int) or isinstance(keep_turns, bool) or keep_turns < 1
        ):
            raise ValueError(f"keep_turns must be a positive int or None, got {keep_turns!r}")
        if not callable(getattr(graph, "invoke", None)) or not callable(
            getattr(graph, "stream", None)
        ):
            raise TypeError(f"expected a compiled LangGraph graph, got {type(graph).__name__}")
        if not isinstance(root_prefix, str):
            raise TypeError("root_prefix must be a str")
        self._graph = graph
        self._sink = tracker
        self._heartbeat = heartbeat_interval_minutes
        self._prefix = root_prefix
        self._keep_turns = keep_turns
        self._policies = RetryPolicies(graph)
        # Breakpoints compiled in (a graph that says nothing of them may have some).
        self._breakpoints = bool(
            getattr(graph, "interrupt_before_nodes", True)
            or getattr(graph, "interrupt_after_nodes", True)
        )
        self._shared: Shared = shared_state(tracker)

    @property
    def graph(self) -> Any:
        """The compiled graph being watched."""
        return self._graph

    def root_run_id(self, config: dict[str, Any] | None) -> str | None:
        """The root of the thread named by ``config`` (None without a thread id)."""
        thread = _thread_id(config)
        return None if thread is None else self._prefix + thread

    def __getattr__(self, name: str) -> Any:
        # get_state, update_state, get_graph ... are the graph's own.
        return getattr(self._graph, name)

    # --- invocations ------------------------------------------------------------------------

    def _start(self, mapper: ThreadMapper, resume: bool, *, new: bool = False) -> None:
        """Report ``mapper``'s invocation starting, and wait for it (raises what the tracker
        raised): in the hub's thread for a thread host's tracker, in this one otherwise. A
        ``new`` thread's start also lets the registry forget threads whose root was removed,
        where the tracker can be asked (its own thread)."""
        shared = self._shared
        hub = shared.hub
        tracker = self._sink if hub is None else hub.thread.tracker
        forget = None
        if new and isinstance(tracker, RunTracker):
            forget = functools.partial(shared.forget_removed, tracker)
        if hub is not None:
            hub.thread.call(_begin_kept, mapper, resume, forget)
        else:
            _begin_kept(mapper, resume, forget)

    def _started_mapper(self, input: Any, config: dict[str, Any] | None) -> ThreadMapper:
        """The thread's mapper, in use (see :meth:`Shared.take`), its root reported ``running``
        (raises what the tracker raised)."""
        resume = _resumes(input)
        root = self.root_run_id(config)
        shared = self._shared
        sink = self._sink if shared.hub is None else shared.hub.thread.tracker
        if root is None:
            mapper = ThreadMapper(
                sink,
                f"{self._prefix}langgraph-{uuid.uuid4()}",
                heartbeat_interval_minutes=self._heartbeat,
                keep_turns=self._keep_turns,
            )
            mapper.users = 1
            self._start(mapper, resume)
            return mapper
        # Every wrapper over this tracker reports the thread through the same mapper.
        known = shared.take(root)
        if known is not None:
            try:
                self._start(known, resume)
                return known
            except Exception as error:
                # The root may be gone (``remove_run``): start the thread over, once.
                shared.release(known)
                shared.failed(error)
        mapper = ThreadMapper(
            sink, root, heartbeat_interval_minutes=self._heartbeat, keep_turns=self._keep_turns
        )
        mapper.users = 1
        self._start(mapper, resume, new=True)
        shared.keep(root, mapper)  # only once the tracker took the root
        return mapper

    def _begin(
        self, input: Any, config: dict[str, Any] | None, *, asynchronous: bool
    ) -> _Invocation | None:
        """The invocation, reported; None (logged, counted) when it cannot be."""
        shared = self._shared
        hub = shared.hub
        # A thread reported before starts through its gate, with its steps: in the hub's thread
        # for a thread host's tracker (the caller makes no round trip before LangGraph runs),
        # on the event loop for an async invocation (a short invocation is then one batch); a
        # root removed since starts the thread over there. Any other invocation starts here and
        # now, so that a refused root leaves it unreported rather than reported in part.
        root = self.root_run_id(config)
        gated = hub is not None or asynchronous
        queued = shared.take(root) if gated and root is not None else None
        try:
            mapper = queued if queued is not None else self._started_mapper(input, config)
        except Exception as error:
            shared.failed(error)
            shared.unreported()
            return None
        gate: Gate | None = None
        try:
            if hub is not None:
                gate = hub.gate(mapper.outer_batch, shared.failed)
            elif asynchronous:
                gate = LoopGate(asyncio.get_running_loop(), mapper.outer_batch, shared.failed)
            else:
                gate = shared.reporter.gate(mapper.outer_batch, shared.failed)
            with shared.lock:
                shared.active.add(gate)
            handler = WatchHandler(mapper, gate, self._policies, shared.failed)
            invocation = _Invocation(self, mapper, gate, handler)
            invocation.config = _with_handler(config, handler)
            if queued is not None:
                gate.submit(functools.partial(invocation.start, _resumes(input)))
        except Exception as error:
            shared.failed(error)
            shared.unreported()
            if gate is not None:
                with shared.lock:
                    shared.active.discard(gate)
                gate.close()
            shared.release(mapper)
            return None
        return invocation

    def statistics(self) -> WatchStatistics:
        """What went wrong while reporting, and how many threads are kept, for every wrapper
        over this wrapper's tracker (they share it)."""
        return self._shared.statistics()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until what every running invocation queued so far, and everything the ones that
        returned reported, has reached the tracker (a refused fact is then counted in
        :meth:`statistics`).

        Reporting never makes LangGraph wait: callbacks queue their facts, applied in order
        moments later. Every wrapper over the same tracker waits for the same invocations.
        Anything asked of the tracker after an invocation returned sees what it
        reported; call this to look at the hub from inside a running graph (from an async node
        with an asyncio host's tracker it applies the queue at once).
        """
        with self._shared.lock:
            active = list(self._shared.active)
        hub = self._shared.hub
        if hub is not None:
            hub.flush([gate for gate in active if isinstance(gate, HubGate)], timeout)
            return
        for gate in active:
            gate.flush(timeout)

    def _may_pause(self, invocation: _Invocation, kwargs: dict[str, Any]) -> bool:
        """Whether the invocation may have stopped at a breakpoint: the graph has some, the call
        set some, or a task was interrupted (a subgraph's breakpoint stops its parent's task so).
        Otherwise the thread's state need not be read: that read is LangGraph's checkpointer
        loading the thread's latest checkpoint (for ``InMemorySaver``, a search through all of
        them), on the caller's time, once per invocation."""
        return (
            self._breakpoints
            or invocation.handler.bubbled
            or bool(kwargs.get("interrupt_before") or kwargs.get("interrupt_after"))
        )

    def _paused(self, config: dict[str, Any] | None) -> bool:
        if _thread_id(config) is None:
            return False
        try:
            return bool(self._graph.get_state(config).next)
        except Exception:  # no checkpointer: nothing to pause at
            return False

    async def _apaused(self, config: dict[str, Any] | None) -> bool:
        if _thread_id(config) is None:
            return False
        try:
            return bool((await self._graph.aget_state(config)).next)
        except Exception:
            return False

    def invoke(self, input: Any, config: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        """``graph.invoke(input, config, **kwargs)``, reported as it runs."""
        invocation = self._begin(input, config, asynchronous=False)
        if invocation is None:
            return self._graph.invoke(input, config, **kwargs)
        try:
            result = self._graph.invoke(input, invocation.config, **kwargs)
        except BaseException as error:
            invocation.end(_outcome(error), error=error)
            raise
        invocation.end(
            "completed",
            paused=self._may_pause(invocation, kwargs) and self._paused(config),
        )
        return result

    async def ainvoke(self, input: Any, config: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        """``await graph.ainvoke(input, config, **kwargs)``, reported as it runs."""
        invocation = self._begin(input, config, asynchronous=True)
        call: Callable[..., Awaitable[Any]] = self._graph.ainvoke
        if invocation is None:
            return await call(input, config, **kwargs)
        try:
            result = await call(input, invocation.config, **kwargs)
        except BaseException as error:
            invocation.end(_outcome(error), error=error)
            raise
        invocation.end(
            "completed",
            paused=self._may_pause(invocation, kwargs) and await self._apaused(config),
        )
        return result

    def stream(
        self, input: Any, config: dict[str, Any] | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """``graph.stream(input, config, **kwargs)``, reported as it runs.

        Closing the iterator before its end (``break``, ``close()``) is a cancellation by the
        caller: the thread's run gets a kill request and ends ``killed``.
        """
        invocation = self._begin(input, config, asynchronous=False)
        if invocation is None:
            with closing(self._graph.stream(input, config, **kwargs)) as unreported:
                yield from unreported
            return
        try:
            with closing(self._graph.stream(input, invocation.config, **kwargs)) as chunks:
                yield from chunks
        except BaseException as error:
            invocation.end(_outcome(error), error=error)
            raise
        invocation.end(
            "completed",
            paused=self._may_pause(invocation, kwargs) and self._paused(config),
        )

    async def astream(
        self, input: Any, config: dict[str, Any] | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """``graph.astream(input, config, **kwargs)``, reported as it runs.

        Closing the iterator before its end (``aclose()``) or cancelling the task that iterates
        it is a cancellation by the caller, reported as for :meth:`stream`.
        """
        invocation = self._begin(input, config, asynchronous=True)
        if invocation is None:
            async with aclosing(self._graph.astream(input, config, **kwargs)) as unreported:
                async for chunk in unreported:
                    yield chunk
            return
        try:
            async with aclosing(self._graph.astream(input, invocation.config, **kwargs)) as chunks:
                async for chunk in chunks:
                    yield chunk
        except BaseException as error:
            invocation.end(_outcome(error), error=error)
            raise
        invocation.end(
            "completed",
            paused=self._may_pause(invocation, kwargs) and await self._apaused(config),
        )


def watch(
    graph: Any,
    tracker: FactSink,
    *,
    heartbeat_interval_minutes: float | None = None,
    root_prefix: str = "",
    keep_turns: int | None = KEEP_TURNS,
) -> WatchedGraph:
    """Watch a compiled LangGraph graph: every invocation reports to ``tracker`` as it runs.

    ``tracker`` is anything with RunTracker's fact methods (a :class:`workflow_hub.RunTracker`,
    or the tracker of ``workflow_hub.asyncio`` or ``workflow_hub.sync``). A thread's root is
    ``root_prefix + thread_id``; ``heartbeat_interval_minutes`` makes each root beat while its
    thread runs (or waits for an answer). Each new input on a thread is a turn, a run nested
    in its root; the root keeps the last ``keep_turns`` turns (None: all of them) and folds the
    earlier ones into one summary stage. See docs/langgraph.md for what is reported.
    """
    return WatchedGraph(
        graph,
        tracker,
        heartbeat_interval_minutes=heartbeat_interval_minutes,
        root_prefix=root_prefix,
        keep_turns=keep_turns,
    )
