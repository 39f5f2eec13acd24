"""``workflow_hub.sync.Publisher``: the checks of every publishing front, and waiting for disposal.

The thread-safe publisher checks its arguments in the calling thread with the contract's own
checks (``snapshot_arguments`` and the instance checks the trio publisher uses), so a bad argument
is refused there exactly as the trio publisher refuses it (C1), and nothing is queued.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from tests.support.builders import root
from workflow_hub import ContractError, SnapshotFrame, WorkflowActivityHub
from workflow_hub.sync import open_hub

TIMEOUT = 60.0

BAD_SNAPSHOTS: list[tuple[object, object]] = [
    ("ready", None),  # ready needs roots
    ("unavailable", []),  # the other states take none
    ("sideways", None),  # not an availability
    ("ready", "not roots"),  # a string is not a sequence of roots
    ("ready", [root("r-1"), "not a root"]),  # the bad element is named
    ("ready", 7),  # not iterable
]


def _refusal(call: object, *args: object) -> tuple[str, str]:
    with pytest.raises(ContractError) as refused:
        call(*args)  # type: ignore[operator]
    return refused.value.path, str(refused.value)


@pytest.mark.parametrize(("availability", "roots"), BAD_SNAPSHOTS)
def test_a_bad_snapshot_is_refused_as_the_trio_publisher_refuses_it(
    availability: object, roots: Iterable[object] | None
) -> None:
    """C1, P3: the same error (path and message) in the calling thread, blocking or not."""
    expected = _refusal(
        WorkflowActivityHub().register_publisher().publish_snapshot, availability, roots
    )
    with open_hub() as hub:
        publisher = hub.register_publisher()
        assert _refusal(publisher.publish_snapshot, availability, roots) == expected
        assert _refusal(publisher.publish_snapshot_blocking, availability, roots) == expected
        assert publisher.publish_snapshot_blocking("ready", []) is not None
        assert hub.trio_hub.cursor.revision == 1  # nothing of the refused calls was queued


def test_a_bad_single_argument_is_refused_as_the_trio_publisher_refuses_it() -> None:
    """C1: changed, removed, lifecycle and heartbeat refuse what the trio publisher refuses."""
    trio_publisher = WorkflowActivityHub().register_publisher()
    with open_hub() as hub:
        publisher = hub.register_publisher()
        for name in ("publish_changed", "publish_removed", "publish_lifecycle"):
            expected = _refusal(getattr(trio_publisher, name), 7)
            assert _refusal(getattr(publisher, name), 7) == expected
            assert _refusal(getattr(publisher, f"{name}_blocking"), 7) == expected
        assert _refusal(publisher.publish_heartbeat, 7) == _refusal(
            trio_publisher.publish_heartbeat, 7
        )


def test_dispose_blocking_returns_once_the_source_is_unavailable() -> None:
    """P8: ``dispose_blocking()`` waits until the hub has disposed the publisher: the source is
    unavailable and the publisher no longer current when it returns; a second call changes
    nothing (idempotent)."""
    with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot_blocking("ready", [root("r-1")])
        publisher.dispose_blocking()
        assert not publisher.current
        frame = hub.snapshot_frame()
        assert isinstance(frame, SnapshotFrame)
        assert frame.availability == "unavailable"
        revision = frame.cursor.revision
        publisher.dispose_blocking()
        assert hub.trio_hub.cursor.revision == revision
