"""The counts a fact looks up are the counts ``node_counts`` computes (D2, D4-D7; issue 29).

A stage or tool fact looks its node's counts up by status when they depend on the status alone:
a stage with no open prompt, no hosted run and no retry, or a tool, in any status but pending
(``_counts.PLAIN_STAGE_COUNTS``, ``TOOL_COUNTS``); a pending dependent's, by whether its
parents are all done, when it is a tool or a stage with no open prompt and no retry
(``PLAIN_PENDING_STAGE_COUNTS``, ``PENDING_TOOL_COUNTS``). These properties hold the tables to
``node_counts`` for every other field of such a node; the oracle property test
(``test_tracker_oracle.py``) holds every summary the tracker publishes to ``derive_root``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from workflow_hub import StageStatus, ToolNodeStatus
from workflow_hub.tracker._counts import (
    _LANE,
    _TOTAL_FIELDS,
    PENDING_TOOL_COUNTS,
    PLAIN_PENDING_STAGE_COUNTS,
    PLAIN_STAGE_COUNTS,
    TOOL_COUNTS,
    node_counts,
    totals,
    unpack,
)
from workflow_hub.tracker._derive import Totals
from workflow_hub.tracker._records import StageRecord, ToolRecord

_counts = st.integers(min_value=0, max_value=5)
_orders = st.none() | st.integers(min_value=0, max_value=100)


@given(
    status=st.sampled_from([s for s in StageStatus if s is not StageStatus.PENDING]),
    unmet_parents=_counts,
    execution_order=_orders,
)
def test_a_plain_stage_s_counts_depend_on_its_status_alone(
    status: StageStatus, unmet_parents: int, execution_order: int | None
) -> None:
    """D6: a stage that is not pending counts the same whatever its parents; without a prompt,
    a hosted run or a retry, its status is all the rest."""
    stage = StageRecord(
        node_id="s",
        name="s",
        parent_ids=("p",),
        status=status,
        execution_order=execution_order,
        unmet_parents=unmet_parents,
    )
    assert node_counts(stage) == PLAIN_STAGE_COUNTS[status]


@given(
    status=st.sampled_from([s for s in ToolNodeStatus if s is not ToolNodeStatus.PENDING]),
    unmet_parents=_counts,
    ordinal=_counts,
    execution_order=_orders,
)
def test_a_tool_s_counts_depend_on_its_status_alone(
    status: ToolNodeStatus, unmet_parents: int, ordinal: int, execution_order: int | None
) -> None:
    """D6: a tool that is not pending counts by its status alone."""
    tool = ToolRecord(
        node_id="t",
        name="t",
        parent_ids=("p",),
        status=status,
        ordinal=ordinal,
        execution_order=execution_order,
        unmet_parents=unmet_parents,
    )
    assert node_counts(tool) == TOOL_COUNTS[status]


def test_the_tables_leave_pending_to_node_counts() -> None:
    """A pending node's counts also depend on its parents (D6: ready), so no table holds it."""
    assert StageStatus.PENDING not in PLAIN_STAGE_COUNTS
    assert ToolNodeStatus.PENDING not in TOOL_COUNTS
    assert set(PLAIN_STAGE_COUNTS) == set(StageStatus) - {StageStatus.PENDING}
    assert set(TOOL_COUNTS) == set(ToolNodeStatus) - {ToolNodeStatus.PENDING}


@given(unmet_parents=_counts, execution_order=_orders, hosted=_counts)
def test_a_plain_pending_stage_s_counts_depend_on_its_parents_alone(
    unmet_parents: int, execution_order: int | None, hosted: int
) -> None:
    """D6: a pending stage with no open prompt and no retry is ready exactly when every parent
    is done; nothing else of it counts (a hosted run counts only while it runs)."""
    stage = StageRecord(
        node_id="s",
        name="s",
        parent_ids=("p",),
        status=StageStatus.PENDING,
        execution_order=execution_order,
        unmet_parents=unmet_parents,
        hosted=hosted,
    )
    assert node_counts(stage) == PLAIN_PENDING_STAGE_COUNTS[unmet_parents == 0]


@given(unmet_parents=_counts, ordinal=_counts, execution_order=_orders)
def test_a_pending_tool_s_counts_depend_on_its_parents_alone(
    unmet_parents: int, ordinal: int, execution_order: int | None
) -> None:
    """D6: a pending tool is ready exactly when every parent is done."""
    tool = ToolRecord(
        node_id="t",
        name="t",
        parent_ids=("p",),
        status=ToolNodeStatus.PENDING,
        ordinal=ordinal,
        execution_order=execution_order,
        unmet_parents=unmet_parents,
    )
    assert node_counts(tool) == PENDING_TOOL_COUNTS[unmet_parents == 0]


def test_the_pending_tables_tell_ready_from_waiting() -> None:
    """D6: ready (all parents done) and waiting pending nodes count differently."""
    assert PLAIN_PENDING_STAGE_COUNTS[True] != PLAIN_PENDING_STAGE_COUNTS[False]
    assert PENDING_TOOL_COUNTS[True] != PENDING_TOOL_COUNTS[False]


@given(st.lists(st.integers(min_value=0, max_value=2**20), min_size=10, max_size=10))
def test_a_roots_totals_are_its_lanes_unpacked(lanes: list[int]) -> None:
    """``totals`` (written out) reads each lane as ``unpack`` does, in field order."""
    packed = sum(value << (_LANE * lane) for lane, value in enumerate(lanes))
    assert totals(packed) == Totals(**dict(zip(_TOTAL_FIELDS, lanes, strict=True)))
    assert tuple(lanes) == unpack(packed, len(_TOTAL_FIELDS))
