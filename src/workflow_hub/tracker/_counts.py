"""What each record adds to its run and its root: small vectors of counts, packed into ints.

Every node has a small vector of counts (is it an execution, a retry, a human wait, unsettled, a
running host, ready to run, paused): :func:`node_counts`. Each run keeps the sums of its nodes'
vectors, and from those sums and its own flags a vector of what it adds to its root, the fields
of :class:`~._derive.Totals`: :func:`run_counts`. A root keeps the sums of its runs' vectors
(``_rootstate.py``), and :func:`totals` unpacks them. Both functions mirror ``_derive``'s rules
one for one; the oracle property test holds every summary to ``derive_root``.
"""

from __future__ import annotations

from .._contract import RunStatus, StageStatus, ToolNodeStatus
from ._derive import Totals
from ._records import (
    ATTENTION_BEARING,
    FAILURES,
    SETTLED_STAGE,
    SETTLED_TOOL,
    NodeRecord,
    RunRecord,
    StageRecord,
    ToolRecord,
)

__all__ = [
    "PENDING_TOOL_COUNTS",
    "PLAIN_PENDING_STAGE_COUNTS",
    "PLAIN_STAGE_COUNTS",
    "TOOL_COUNTS",
    "node_counts",
    "run_counts",
    "totals",
    "unpack",
]

# Counts are packed into one int, a lane of _LANE bits per count, so that folding a record's
# change into its run and root is one integer addition instead of a loop over a vector: lanes
# never borrow from each other in a sum, since every count is the non-negative sum of non-negative
# parts and stays below 2**_LANE (a count of nodes or runs).
_LANE = 32
_MASK = (1 << _LANE) - 1
# A node's counts, lane by lane. run_counts relies on the order of the top three: paused, then
# ready, then unsettled below them, so that it can tell whether they are zero by comparisons.
_EXECUTION, _RETRY, _HUMAN_WAIT, _RUNNING_HOST, _UNSETTLED, _READY, _PAUSED = (
    1 << (_LANE * lane) for lane in range(7)
)
_RETRY_SHIFT = _LANE
_HUMAN_WAIT_SHIFT = 2 * _LANE
# Lanes only tested for zero are tested through a mask: one operation instead of two.
_RUNNING_HOST_LANE = _MASK << (3 * _LANE)
_UNSETTLED_LANE = _MASK << (4 * _LANE)
_READY_LANE = _MASK << (5 * _LANE)
_RETRY_HUMAN_WAIT_LANES = (_MASK << _RETRY_SHIFT) | (_MASK << _HUMAN_WAIT_SHIFT)
# A run's counts: the fields of Totals, one lane each, in this order (a lane's unit each).
_TOTAL_FIELDS = tuple(field.name for field in Totals.__attrs_attrs__)
(
    _T_EXECUTIONS,
    _T_STOPPING_EXECUTIONS,
    _T_RETRIES,
    _T_INDEPENDENT_RETRIES,
    _T_HUMAN_WAITS,
    _T_MANUAL_WAITS,
    _T_SETTLED_FAILURES,
    _T_RUNNABLE,
    _T_RUNNABLE_THROUGH_HOST,
    _T_PAUSED,
) = (1 << (_LANE * lane) for lane in range(len(_TOTAL_FIELDS)))
_T_EXECUTIONS_STOPPING = _T_EXECUTIONS + _T_STOPPING_EXECUTIONS
# totals() writes the lanes out in this order.
assert _TOTAL_FIELDS == (
    "executions",
    "stopping_executions",
    "retries",
    "independent_retries",
    "human_waits",
    "manual_waits",
    "settled_failures",
    "runnable",
    "runnable_through_host",
    "paused",
), _TOTAL_FIELDS
_T_RETRIES_INDEPENDENT = _T_RETRIES + _T_INDEPENDENT_RETRIES


def unpack(counts: int, lanes: int) -> tuple[int, ...]:
    """The counts packed in ``counts``, lane by lane (for reading and for tests)."""
    return tuple((counts >> (_LANE * lane)) & _MASK for lane in range(lanes))


def node_counts(node: NodeRecord) -> int:
    """What one node adds to its run's counts (D2, D4, D5, D6, D7 at the node's level), packed."""
    status = node.status
    if type(node) is StageRecord:
        waits = node.prompt is not None or status is StageStatus.AWAITING_INPUT
        counts = 0
        if status is StageStatus.RUNNING:
            if node.hosted > 0:
                counts = _RUNNING_HOST  # settled for its run while the nested run works
            else:
                counts = _UNSETTLED if waits else _UNSETTLED + _EXECUTION
        elif status not in SETTLED_STAGE:
            counts = _UNSETTLED
        if waits:
            if status is not StageStatus.PAUSED:
                counts += _HUMAN_WAIT
        else:
            if node.retrying:
                counts += _RETRY
            # D6: a pending stage with an open prompt is a wait, never runnable work.
            if status is StageStatus.PENDING and node.unmet_parents == 0:
                counts += _READY
        if status is StageStatus.PAUSED:
            counts += _PAUSED
        return counts
    counts = 0 if status in SETTLED_TOOL else _UNSETTLED
    if status is ToolNodeStatus.RUNNING:
        counts += _EXECUTION
    elif status is ToolNodeStatus.PENDING and node.unmet_parents == 0:
        counts += _READY
    return counts


def _counts_by_status() -> tuple[dict[str, int], dict[str, int]]:
    stage = StageRecord(node_id="", name="", parent_ids=(), status=StageStatus.PENDING)
    tool = ToolRecord(node_id="", name="", parent_ids=(), status=ToolNodeStatus.PENDING)
    stages: dict[str, int] = {}
    for stage.status in StageStatus:
        if stage.status is not StageStatus.PENDING:
            stages[stage.status] = node_counts(stage)
    tools: dict[str, int] = {}
    for tool.status in ToolNodeStatus:
        if tool.status is not ToolNodeStatus.PENDING:
            tools[tool.status] = node_counts(tool)
    return stages, tools


PLAIN_STAGE_COUNTS, TOOL_COUNTS = _counts_by_status()
"""What :func:`node_counts` returns, by status, for a stage with no open prompt, no hosted run and
no retry, and for a tool, in any status but ``pending``: such a node's counts depend on its status
alone (its parents not done count only while it is pending), so a fact can look them up. Computed
by ``node_counts`` itself, once."""


def _pending_counts() -> tuple[tuple[int, int], tuple[int, int]]:
    stage = StageRecord(node_id="", name="", parent_ids=(), status=StageStatus.PENDING)
    tool = ToolRecord(node_id="", name="", parent_ids=(), status=ToolNodeStatus.PENDING)
    stages = []
    tools = []
    for unmet_parents in (1, 0):
        stage.unmet_parents = tool.unmet_parents = unmet_parents
        stages.append(node_counts(stage))
        tools.append(node_counts(tool))
    return (stages[0], stages[1]), (tools[0], tools[1])


PLAIN_PENDING_STAGE_COUNTS, PENDING_TOOL_COUNTS = _pending_counts()
"""What :func:`node_counts` returns for a pending stage with no open prompt and no retry, and for
a pending tool, indexed by whether all its parents are done (``unmet_parents == 0``, D6: ready):
the counts of the usual dependent of a node that becomes done, or stops being done. Computed by
``node_counts`` itself, once."""


def run_counts(run: RunRecord) -> int:
    """What one run adds to its root: the fields of :class:`Totals`, packed, from its nodes'
    sums and its own flags. Mirrors ``_derive``'s rules one for one."""
    nodes = run.node_counts
    live = run.live
    status = run.status
    counts = 0
    # Each operation on the packed int allocates a new one (several hundred instructions), so
    # the lanes of retries and human waits, zero in most runs, are tested once, through a mask,
    # and read only when one is not zero (issue 29, fifth pass).
    waiting = nodes & _RETRY_HUMAN_WAIT_LANES
    if live:
        executions = nodes & _MASK
        if waiting:
            retries = (nodes >> _RETRY_SHIFT) & _MASK
            if run.stopping:
                counts = executions * _T_EXECUTIONS_STOPPING + retries * _T_RETRIES
            else:
                counts = executions + retries * _T_RETRIES_INDEPENDENT
        elif run.stopping:
            counts = executions * _T_EXECUTIONS_STOPPING
        else:
            counts = executions
    if status in ATTENTION_BEARING:
        human = run.open_run_prompts
        if waiting:
            human += (nodes >> _HUMAN_WAIT_SHIFT) & _MASK
        if human:
            counts += human * _T_HUMAN_WAITS
        if not run.acknowledged and (status in FAILURES or run.interventions):
            # D3: live or not, a failure is a manual wait until its executor has ended.
            if not run.executor_ended or run.budget_stop:
                counts += _T_MANUAL_WAITS
            else:
                counts += _T_SETTLED_FAILURES
    if status is RunStatus.RUNNING:
        # Paused, ready and unsettled are the top three lanes, in this order, so comparisons
        # (which allocate nothing) tell whether they are zero: the paused lane is not zero
        # exactly when the packed int reaches its unit; that lane being zero, so is the ready
        # lane; those two being zero, so is the unsettled one.
        paused = nodes >= _PAUSED
        if live and not run.stopping:
            if nodes & _READY_LANE if paused else nodes >= _READY:
                counts += _T_RUNNABLE
            elif (
                not run.prompts
                and not run.interventions
                and not (nodes & _UNSETTLED_LANE if paused else nodes >= _UNSETTLED)
            ):
                if nodes & _RUNNING_HOST_LANE:
                    counts += _T_RUNNABLE_THROUGH_HOST
                else:
                    counts += _T_RUNNABLE
        if paused:
            counts += _T_PAUSED
    elif status is RunStatus.PAUSED:
        counts += _T_PAUSED
    return counts


def totals(counts: int) -> Totals:
    """A root's totals, unpacked (lane by lane, written out: with a graph, every fact unpacks
    them). A copy of a one-line rule, :func:`unpack` into :class:`Totals`, held equal to it by
    ``test_a_roots_totals_are_its_lanes_unpacked`` (tests/tracker/test_tracker_counts.py)."""
    return Totals(
        executions=counts & _MASK,
        stopping_executions=(counts >> _LANE) & _MASK,
        retries=(counts >> 2 * _LANE) & _MASK,
        independent_retries=(counts >> 3 * _LANE) & _MASK,
        human_waits=(counts >> 4 * _LANE) & _MASK,
        manual_waits=(counts >> 5 * _LANE) & _MASK,
        settled_failures=(counts >> 6 * _LANE) & _MASK,
        runnable=(counts >> 7 * _LANE) & _MASK,
        runnable_through_host=(counts >> 8 * _LANE) & _MASK,
        paused=(counts >> 9 * _LANE) & _MASK,
    )
