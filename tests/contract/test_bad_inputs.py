"""Bad inputs raise ContractError naming the argument, and change nothing (issue 12, item 10)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from tests.support.builders import root
from workflow_hub import ChangedFrame, ContractError, Cursor, WorkflowActivityHub
from workflow_hub.reporting import ActivityView, aggregate


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


SNAPSHOT_MISTAKES: list[tuple[Any, Any]] = [
    ("ready", None),
    ("recovering", []),
    ("unavailable", [root()]),
    ("sunny", None),
    (None, None),
    ("ready", [root(), "root-2"]),
    ("ready", "root-1"),
]


@pytest.mark.parametrize(("availability", "roots"), SNAPSHOT_MISTAKES)
async def test_the_publisher_and_the_thread_portal_refuse_a_snapshot_alike(
    availability: Any, roots: Any
) -> None:
    """Issue 13: one copy of the snapshot-argument rule, so both fronts say the same thing."""
    from workflow_hub import ThreadPublisher

    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    portal = ThreadPublisher(publisher)
    with pytest.raises(ContractError) as direct:
        publisher.publish_snapshot(availability, roots)
    with pytest.raises(ContractError) as threaded:
        portal.publish_snapshot(availability, roots)
    assert (threaded.value.path, threaded.value.problem) == (
        direct.value.path,
        direct.value.problem,
    )
    assert hub.cursor.revision == 0


def test_the_conformance_defaults_are_one_copy() -> None:
    """Issue 13: the Python API, the suite object, the strategies, the CLI and the pytest plugin
    take their defaults from one module (the internal ``workflow_hub.testing.defaults``, which
    this test is about, with the CLI's and the plugin's internal modules)."""
    import argparse
    import inspect

    from workflow_hub._cli import _conformance as _conformance_cli
    from workflow_hub.testing import _pytest_plugin, defaults
    from workflow_hub.testing.conformance import ConformanceSuite, check_conformance
    from workflow_hub.testing.strategies import scenarios

    expected = {
        "max_examples": defaults.EXAMPLES,
        "max_steps": defaults.MAX_STEPS,
        "queue_limits": defaults.QUEUE_LIMITS,
        "diagnostics_limits": defaults.DIAGNOSTICS_LIMITS,
        "styles": defaults.STYLES,
        "timeout": defaults.TIMEOUT,
    }
    api = inspect.signature(check_conformance).parameters
    suite = {field.name: field.default for field in attrs.fields(ConformanceSuite)}
    drawn = inspect.signature(scenarios).parameters
    for name, value in expected.items():
        assert api[name].default == value, name
        assert suite[name] == value, name
        if name in drawn:
            assert drawn[name].default == value, name
    parser = argparse.ArgumentParser()
    _conformance_cli.add_arguments(parser)
    args = parser.parse_args(["--adapter", "x"])
    assert (args.examples, args.max_steps) == (defaults.EXAMPLES, defaults.MAX_STEPS)
    # No --styles: the adapter's declared profiles decide (issue 22), from the same defaults.
    assert args.styles is None
    assert _pytest_plugin.DEFAULT_EXAMPLES == defaults.EXAMPLES
