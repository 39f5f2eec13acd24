"""Bad inputs raise ContractError naming the argument, and change nothing (issue 12, item 10)."""

from __future__ import annotations

from typing import Any

import pytest

from workflow_hub import ChangedFrame, ContractError, Cursor, WorkflowActivityHub
from workflow_hub.reporting import ActivityView, aggregate

from .builders import root


@pytest.mark.parametrize("factory", [5, "epoch", object()])
def test_an_epoch_factory_that_is_not_callable_is_refused_by_the_constructor(
    factory: Any,
) -> None:
    with pytest.raises(ContractError) as caught:
        WorkflowActivityHub(epoch_factory=factory)
    assert caught.value.path == "epoch_factory"


@pytest.mark.parametrize(
    "source",
    [5, None, "view", ChangedFrame(cursor=Cursor(epoch="e", revision=1), root=root())],
    ids=["int", "None", "str", "ChangedFrame"],
)
def test_aggregate_refuses_what_is_not_a_view_or_a_snapshot(source: Any) -> None:
    with pytest.raises(ContractError, match="ActivityView or a SnapshotFrame") as caught:
        aggregate(source)
    assert caught.value.path == "source"


def test_aggregate_still_takes_a_view() -> None:
    assert aggregate(ActivityView()).state == "unknown"
