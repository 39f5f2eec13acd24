"""A root's labels (C3): set by the scheduler when it adds the root or later, on every summary of
the root, checked before anything changes (C1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workflow_hub import ChangedFrame, ContractError, Labels, WorkflowActivityHub
from workflow_hub.testing import strategies as ws

from .test_tracker import Scene


@pytest.fixture
async def scene(hub: WorkflowActivityHub) -> Scene:
    scene = Scene(hub)
    scene.tracker.start()
    await scene.settle()
    scene.frames.clear()
    return scene


async def test_labels_given_with_the_root_are_on_its_summary(scene: Scene) -> None:
    """C3: ``add_run(labels=...)`` labels the root from its first frame."""
    scene.tracker.add_run("root", status="running", labels={"team": "infra", "env": "prod"})
    await scene.settle()
    (frame,) = scene.frames
    assert isinstance(frame, ChangedFrame)
    assert frame.root.labels == {"team": "infra", "env": "prod"}
    assert isinstance(frame.root.labels, Labels)


async def test_set_labels_replaces_them_and_publishes_the_root(scene: Scene) -> None:
    """C3: new labels are a change of the root; the same labels again are none; empty removes."""
    tracker = scene.tracker
    tracker.add_run("root", status="running", labels={"team": "infra"})
    tracker.add_stage("root", "build", "Build")
    await scene.settle()
    scene.frames.clear()
    tracker.set_labels("root", {"team": "web", "queue": "deploys"})
    tracker.set_labels("root", Labels({"queue": "deploys", "team": "web"}))  # the same
    await scene.settle()
    assert [f.root.labels for f in scene.frames] == [  # type: ignore[attr-defined]
        {"team": "web", "queue": "deploys"}
    ]
    # The kept summaries (a root moves between a few) must not bring the old labels back.
    tracker.set_stage_status("root", "build", "running")
    tracker.set_stage_status("root", "build", "completed")
    tracker.set_labels("root", {})
    tracker.set_stage_status("root", "build", "running")
    await scene.settle()
    assert tracker.activity("root").labels is None
    assert [f.root.labels for f in scene.frames][-1] is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "labels",
    [
        {"Team Name": "x"},
        {"team": ""},
        {"team": "a\nb"},
        {"team": 5},
        {f"k{i}": "v" for i in range(17)},
        {"t" * 64: "v"},
        {"team": "v" * 257},
        ["team", "x"],
    ],
)
async def test_bad_labels_are_refused_and_change_nothing(scene: Scene, labels: object) -> None:
    """C1, C3: refused on ``labels`` before anything changes, the message naming the key."""
    scene.tracker.add_run("root", status="running", labels={"team": "infra"})
    await scene.settle()
    before = scene.tracker.activity("root")
    with pytest.raises(ContractError) as refused:
        scene.tracker.set_labels("root", labels)  # type: ignore[arg-type]
    assert refused.value.path == "labels"
    if isinstance(labels, dict) and len(labels) == 1:
        assert repr(next(iter(labels))) in refused.value.problem
    with pytest.raises(ContractError):
        scene.tracker.add_run("other", labels=labels)  # type: ignore[arg-type]
    assert "other" not in scene.tracker
    assert scene.tracker.activity("root") is before


async def test_a_nested_run_has_no_labels(scene: Scene) -> None:
    """C3: labels are a root's."""
    scene.tracker.add_run("root", status="running")
    with pytest.raises(ContractError) as refused:
        scene.tracker.add_run("child", parent_run_id="root", labels={"team": "x"})
    assert refused.value.path == "labels"
    scene.tracker.add_run("child", parent_run_id="root")
    with pytest.raises(ContractError) as refused:
        scene.tracker.set_labels("child", {"team": "x"})
    assert refused.value.path == "root_run_id"


@given(labels=ws.labels(), other=st.dictionaries(st.sampled_from("ab"), st.sampled_from("xy")))
def test_labels_are_a_hashable_mapping_equal_by_items(
    labels: Labels, other: dict[str, str]
) -> None:
    """C3: Labels compare with any mapping by items, hash by items, and copy as a dict."""
    assert labels == dict(labels)
    assert Labels(dict(labels)) == labels
    assert hash(Labels(dict(labels))) == hash(labels)
    assert (Labels(other) == labels) == (other == dict(labels))
