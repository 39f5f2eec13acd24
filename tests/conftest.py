"""Shared pytest configuration: hypothesis profiles, and the fixtures most hub tests start from.

``dev`` keeps everyday runs quick; ``ci`` tries more examples and is the default where the ``CI``
environment variable is set (as it is for ``.ci/run``). ``HYPOTHESIS_PROFILE`` overrides both, e.g.
``HYPOTHESIS_PROFILE=ci make test``. Neither has a
deadline: timings on a loaded 2-core CI machine are noise, not a property of the code.

``hub`` is a running hub on the defaults; ``dispatcher`` a :class:`RecordingDispatcher` bound to
it. A test that needs other options opens its own hub, or a local fixture named for what differs.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from hypothesis import settings

from workflow_hub import WorkflowActivityHub, open_hub

from .consumers import RecordingDispatcher

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
async def hub() -> AsyncIterator[WorkflowActivityHub]:
    """A running hub on the defaults, disposed when the test ends."""
    async with open_hub() as running:
        yield running


@pytest.fixture
def dispatcher(hub: WorkflowActivityHub) -> RecordingDispatcher:
    """A recording dispatcher bound to ``hub``: every hook event the test causes, in order."""
    recorder = RecordingDispatcher()
    hub.bind_dispatcher(recorder)
    return recorder
