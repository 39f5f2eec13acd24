"""The callback handler: LangGraph's callbacks of one invocation, as calls of its thread's mapper.

LangGraph runs every task of every (sub)graph under LangChain's callback system, with metadata
that names the task: ``langgraph_checkpoint_ns`` (``node:<task id>``, joined with ``|`` for
subgraphs), ``langgraph_node`` and ``langgraph_step``. Tracing products read the same callbacks,
which is why they stay stable across LangGraph versions. A chain that starts with a namespace its
parent chain does not have is a task; chains inside it (the node's own runnables, a subgraph's
graph chain) share its namespace and are ignored. A task that ends is a finished stage; one that
raises ``GraphInterrupt`` is interrupted; any other ``Exception`` is a failed attempt, retried or
not as the node's ``RetryPolicy`` says. Tools report their own start and end.

Every call goes through the invocation's gate, and nothing arrives once the invocation ended
(a sync task LangGraph abandoned may still finish in its thread afterwards). No callback raises:
what goes wrong in one is told to the handler's ``failed`` (logged and counted), so LangChain
never sees it and the graph runs on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphBubbleUp, GraphInterrupt

from .._contract import FailureDetail
from ._gates import Gate
from ._mapping import PromptSpec, ThreadMapper
from ._retry import RetryPolicies

__all__ = ["WatchHandler", "prompt_specs"]

Callback = TypeVar("Callback", bound=Callable[..., None])

_PROMPT_KINDS = frozenset({"input", "confirm", "select", "editor", "custom"})
_NS_KEY = "langgraph_checkpoint_ns"


def _text(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


def _prompt(index: int, task_ns: str, item: object) -> PromptSpec:
    value = getattr(item, "value", item)
    prompt_id = getattr(item, "id", None) or getattr(item, "interrupt_id", None)
    if not isinstance(prompt_id, str):
        prompt_id = f"{task_ns}#{index}"
    if isinstance(value, dict):
        message = value.get("message", value.get("question", value))
        raw = value.get("choices", value.get("options"))
        choices = (
            tuple(raw)
            if isinstance(raw, list | tuple) and all(isinstance(c, str) for c in raw)
            else None
        )
        kind = value.get("kind")
        if kind not in _PROMPT_KINDS:
            kind = "select" if choices else "input"
        return PromptSpec(prompt_id, kind, _text(message), choices)
    return PromptSpec(prompt_id, "input", _text(value))


def prompt_specs(task_ns: str, error: GraphInterrupt) -> list[PromptSpec]:
    """The prompts of an interrupt: one per ``Interrupt`` it carries.

    The message is the interrupt's value when it is a string; a dict value may give
    ``message`` (or ``question``), ``choices`` (or ``options``, strings) and ``kind``; anything
    else is shown by its ``repr``. The prompt id is the interrupt's id.
    """
    items = error.args[0] if error.args else ()
    if not isinstance(items, Sequence) or isinstance(items, str):
        items = (items,)
    return [_prompt(index, task_ns, item) for index, item in enumerate(items)]


def _contained(callback: Callback) -> Callback:
    """A callback that never raises: its failure is the handler's ``failed``."""

    @functools.wraps(callback)
    def contained(self: WatchHandler, *args: Any, **kwargs: Any) -> None:
        try:
            callback(self, *args, **kwargs)
        except Exception as error:
            self.failed(error)

    return cast("Callback", contained)


class WatchHandler(BaseCallbackHandler):
    """Reports the tasks, tools, retries and interrupts of one invocation to a mapper."""

    # Called inline by LangChain's async manager too: the gate decides where a call runs.
    run_inline = True
    # Only chains and tools are reported: LangChain need not call this handler for the rest
    # (a chat model's every streamed token among them).
    ignore_llm = True
    ignore_chat_model = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(
        self,
        mapper: ThreadMapper,
        gate: Gate,
        policies: RetryPolicies,
        failed: Callable[[BaseException], None],
    ) -> None:
        self.failed = failed
        self._mapper = mapper
        self._gate = gate
        self._policies = policies
        self._open = True
        # By the run id's int (a UUID hashes in Python, its int in C): every chain seen with a
        # namespace, while it runs; the task chains, (namespace, node).
        self._chain_ns: dict[int, str] = {}
        self._tasks: dict[int, tuple[str, str]] = {}
        self._failures: dict[str, int] = {}  # failed attempts per task namespace
        # A task was interrupted (or bubbled up): the invocation may have stopped at a
        # breakpoint inside it, which only the thread's state can tell.
        self.bubbled = False

    # --- the invocation ---------------------------------------------------------------------

    def close(self) -> None:
        """No call reaches the mapper after this (call it through the gate)."""
        self._open = False

    def _submit(self, call: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        def guarded() -> None:
            if self._open:
                call(*args, **kwargs)

        self._gate.submit(guarded)

    # --- chains -----------------------------------------------------------------------------

    # The two most frequent callbacks are contained as every callback is (``_contained``), and
    # queue their call as ``_submit`` does, written out: a wrapper's frame and its packed
    # arguments were a sixth of what a callback cost on the event loop's thread.

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            task_ns = metadata.get(_NS_KEY) if metadata else None
            if not isinstance(task_ns, str) or not task_ns:
                return
            key = run_id.int
            chains = self._chain_ns
            chains[key] = task_ns
            if parent_run_id is not None and chains.get(parent_run_id.int) == task_ns:
                return  # a chain inside a task
            assert metadata is not None
            node = metadata.get("langgraph_node")
            if not isinstance(node, str):
                node = task_ns.rpartition("|")[2].rpartition(":")[0]
            step = metadata.get("langgraph_step")
            if not isinstance(step, int) or isinstance(step, bool):
                step = None
            self._tasks[key] = (task_ns, node)
            mapper = self._mapper

            def started() -> None:
                if self._open:
                    mapper.task_started(task_ns, node, step)

            self._gate.submit(started)
        except Exception as error:
            self.failed(error)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            key = run_id.int
            self._chain_ns.pop(key, None)
            task = self._tasks.pop(key, None)
            if task is None:
                return
            task_ns = task[0]
            self._failures.pop(task_ns, None)
            mapper = self._mapper

            def finished() -> None:
                if self._open:
                    mapper.task_finished(task_ns)

            self._gate.submit(finished)
        except Exception as error:
            self.failed(error)

    @_contained
    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if isinstance(error, GraphBubbleUp):
            self.bubbled = True
        key = run_id.int
        self._chain_ns.pop(key, None)
        task = self._tasks.pop(key, None)
        if task is None:
            return
        task_ns, node = task
        if isinstance(error, GraphInterrupt):
            self._failures.pop(task_ns, None)
            self._submit(self._mapper.task_interrupted, task_ns, prompt_specs(task_ns, error))
        elif isinstance(error, GraphBubbleUp):
            # A Command for a parent graph: the task is done, its graph goes elsewhere.
            self._failures.pop(task_ns, None)
            self._submit(self._mapper.task_finished, task_ns)
        elif isinstance(error, Exception):
            failed = self._failures.get(task_ns, 0) + 1
            retrying = self._policies.will_retry(task_ns, node, error, failed)
            if retrying:
                self._failures[task_ns] = failed
            else:
                self._failures.pop(task_ns, None)
            detail = None if retrying else FailureDetail.of(error)
            self._submit(self._mapper.task_failed, task_ns, retrying=retrying, error=detail)
        # A cancellation (BaseException) is the caller's: the invocation's end reports it.

    # --- tools ------------------------------------------------------------------------------

    @_contained
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        task_ns = metadata.get(_NS_KEY) if metadata else None
        if not isinstance(task_ns, str) or not task_ns:
            return
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        self._submit(self._mapper.tool_started, task_ns, str(run_id), _text(name))

    @_contained
    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._submit(self._mapper.tool_ended, str(run_id), "completed")

    @_contained
    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        # An interrupt inside a tool cuts the call short; the tool runs again on resume.
        if isinstance(error, GraphBubbleUp):
            self._submit(self._mapper.tool_ended, str(run_id), "cancelled")
        else:
            self._submit(self._mapper.tool_ended, str(run_id), "failed", FailureDetail.of(error))
