"""The graph values of a root's records: what a :class:`RootGraph` shows of a node or a prompt.

One mapping from the records of ``_records.py`` to the contract's graph values, shared by the
readable definition (``_derive.py``, which builds a root's graph afresh from its facts) and the
incremental one (``_rootstate.py``, which rebuilds only the nodes a fact changed and reuses the
ids it built before). Every value comes from a checked fact, so each is built without validating
again (issue 29).
"""

from __future__ import annotations

from typing import Any

from .._contract import NodePrompt, RunPrompt, StageNode, ToolNode, unchecked_builder
from ._records import NodeRecord, PromptRecord, RunRecord, StageRecord

__all__ = ["graph_node", "node_prompt", "run_prompts"]

_build_NodePrompt = unchecked_builder(NodePrompt)
_build_StageNode = unchecked_builder(StageNode)
_build_ToolNode = unchecked_builder(ToolNode)
_build_RunPrompt = unchecked_builder(RunPrompt)


def _prompt_fields(prompt: PromptRecord) -> dict[str, Any]:
    # What a stage's prompt and a run's prompt show alike.
    return {
        "id": prompt.prompt_id,
        "kind": prompt.kind,
        "message": prompt.message,
        "choices": prompt.choices,
        "created_at": prompt.created_at,
    }


def node_prompt(prompt: PromptRecord) -> NodePrompt:
    """The open prompt of a stage, as its graph node shows it."""
    return _build_NodePrompt(**_prompt_fields(prompt))


def graph_node(
    run: RunRecord, node: NodeRecord, node_id: str, parent_ids: tuple[str, ...]
) -> StageNode | ToolNode:
    """The node's graph node, given its canonical id and its parents' (``nested_id`` of each):
    the caller builds them once, or reuses what it built before."""
    if isinstance(node, StageRecord):
        return _build_StageNode(
            id=node_id,
            run_id=run.run_id,
            node_id=node.node_id,
            name=node.name,
            parent_ids=parent_ids,
            execution_order=node.execution_order,
            depth=run.depth,
            status=node.status,
            pending_prompt=None if node.prompt is None else node_prompt(node.prompt),
            error=node.error,
        )
    return _build_ToolNode(
        id=node_id,
        run_id=run.run_id,
        node_id=node.node_id,
        name=node.name,
        parent_ids=parent_ids,
        execution_order=node.execution_order,
        depth=run.depth,
        status=node.status,
        ordinal=node.ordinal,
        error=node.error,
    )


def run_prompts(run: RunRecord) -> tuple[RunPrompt, ...]:
    """The prompts open on the run itself (not on one of its stages), in the order opened."""
    return tuple(
        _build_RunPrompt(**_prompt_fields(prompt), run_id=run.run_id)
        for prompt in run.prompts.values()
        if prompt.stage_id is None
    )
