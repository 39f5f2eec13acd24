"""Why it failed (C3): the tracker carries a failed stage's, tool's or run's ``error`` to its graph
node and its lifecycle event, clears it with the next status, and refuses it on any other status
before anything changes (C1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workflow_hub import (
    ContractError,
    FailureDetail,
    RunTarget,
    StageNode,
    StageTarget,
    ToolNode,
    ToolTarget,
    WorkflowActivityHub,
)
from workflow_hub.testing import strategies as ws

from .test_tracker import Scene


@pytest.fixture
async def scene(hub: WorkflowActivityHub) -> Scene:
    scene = Scene(hub, include_graph=True)
    scene.tracker.start()
    scene.tracker.add_run("root", status="running")
    scene.tracker.add_stage("root", "deploy", "Deploy")
    scene.tracker.add_tool("root", "psql", "psql", parent_ids=["deploy"])
    await scene.settle()
    scene.frames.clear()
    scene.hooks.events.clear()
    return scene


def node(scene: Scene, node_id: str) -> StageNode | ToolNode:
    graph = scene.tracker.activity("root").graph
    assert graph is not None
    (found,) = [n for n in graph.nodes if n.node_id == node_id]
    return found


async def test_a_failed_stage_carries_its_error_to_its_node_and_its_event(scene: Scene) -> None:
    """C3: an exception becomes a detail (its first line, its type) on the node and the event."""
    scene.tracker.set_stage_status(
        "root", "deploy", "failed", error=ConnectionRefusedError("db-1:5432 refused\ntraceback…")
    )
    await scene.settle()
    expected = FailureDetail(message="db-1:5432 refused", type="ConnectionRefusedError")
    assert node(scene, "deploy").error == expected
    (event,) = scene.hooks.lifecycle()
    assert isinstance(event.target, StageTarget)
    assert event.target.error == expected
    assert scene.frames[-1].root.graph.nodes[0].error == expected  # type: ignore[attr-defined]


async def test_the_next_status_clears_the_error(scene: Scene) -> None:
    """C3: only a failed status carries an error; a retry that runs again has none."""
    scene.tracker.set_stage_status("root", "deploy", "failed", error="timed out")
    scene.tracker.set_stage_status("root", "deploy", "running", retrying=True)
    await scene.settle()
    assert node(scene, "deploy").error is None
    assert [e.target.error for e in scene.hooks.lifecycle()] == [  # type: ignore[union-attr]
        FailureDetail(message="timed out"),
        None,
    ]


async def test_a_failed_stage_with_a_new_error_changes_its_node(scene: Scene) -> None:
    """C3: the same status with another error is a change of the root (its graph), no event."""
    scene.tracker.set_stage_status("root", "deploy", "failed", error="first")
    await scene.settle()
    before = len(scene.frames)
    scene.tracker.set_stage_status("root", "deploy", "failed", error="second")
    await scene.settle()
    assert len(scene.frames) == before + 1
    assert node(scene, "deploy").error == FailureDetail(message="second")
    assert len(scene.hooks.lifecycle()) == 1


async def test_a_failed_tool_and_run_carry_theirs(scene: Scene) -> None:
    """C3: tools and runs too; a run's error is on its event (a root has no error field)."""
    detail = FailureDetail(message="exit 2", type="CalledProcessError")
    scene.tracker.set_tool_status("root", "psql", "failed", error=detail)
    scene.tracker.set_run_status("root", "failed", executor_ended=True, error=detail)
    await scene.settle()
    assert node(scene, "psql").error == detail
    targets = [event.target for event in scene.hooks.lifecycle()]
    assert isinstance(targets[0], ToolTarget)
    assert isinstance(targets[1], RunTarget)
    assert targets[0].error == targets[1].error == detail


async def test_a_stage_restored_failed_keeps_its_error(scene: Scene) -> None:
    """C3: ``add_stage(status="failed", error=...)`` restores history with its reason."""
    scene.tracker.add_stage("root", "migrate", "Migrate", status="failed", error=KeyError("x"))
    scene.tracker.add_tool("root", "curl", "curl", status="failed", error="HTTP 503")
    await scene.settle()
    assert node(scene, "migrate").error == FailureDetail(message="'x'", type="KeyError")
    assert node(scene, "curl").error == FailureDetail(message="HTTP 503")


@pytest.mark.parametrize(
    ("call", "arguments"),
    [
        ("set_stage_status", ("root", "deploy", "completed")),
        ("set_tool_status", ("root", "psql", "running")),
        ("set_run_status", ("root", "completed")),
    ],
)
async def test_an_error_on_another_status_is_refused_and_changes_nothing(
    scene: Scene, call: str, arguments: tuple[str, ...]
) -> None:
    """C1, C3: refused before anything moves, naming ``error``."""
    before = scene.tracker.activity("root")
    with pytest.raises(ContractError) as refused:
        getattr(scene.tracker, call)(*arguments, error="boom")
    assert refused.value.path == "error"
    await scene.settle()
    assert scene.tracker.activity("root") == before
    assert scene.frames == []
    assert scene.hooks.lifecycle() == []


@pytest.mark.parametrize("error", [42, b"bytes", ["list"]])
async def test_an_error_of_another_type_is_refused(scene: Scene, error: object) -> None:
    """C1: an error is a FailureDetail, an exception or a message."""
    with pytest.raises(ContractError) as refused:
        scene.tracker.set_stage_status("root", "deploy", "failed", error=error)  # type: ignore[arg-type]
    assert refused.value.path == "error"
    assert node(scene, "deploy").status == "pending"


@given(
    text=st.text(st.characters(codec="utf-8") | st.sampled_from(["\n", "\ud800", " "])),
    kind=st.sampled_from([ValueError, TimeoutError, KeyError, RuntimeError]),
)
def test_any_exception_makes_a_valid_detail(text: str, kind: type[Exception]) -> None:
    """C3: whatever a scheduler's exception says (lone surrogates, blank lines, 10 000
    characters), ``FailureDetail.of`` makes a bounded, valid detail: one line, never a dump."""
    detail = FailureDetail.of(kind(text * 20))
    assert 1 <= len(detail.message) <= 500
    assert "\n" not in detail.message
    assert detail.type == kind.__qualname__
    detail.message.encode()  # has a UTF-8 form
    assert FailureDetail.of(text * 20).type is None


@given(detail=ws.failure_details())
def test_a_drawn_detail_is_kept_as_given(detail: FailureDetail) -> None:
    """C3: a detail given as one is carried as it is (no cutting, no collapsing)."""
    from workflow_hub._contract import check_error

    assert check_error(detail, "failed") is detail
