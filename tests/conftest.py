"""Shared pytest configuration: hypothesis profiles, and the fixtures most hub tests start from.

``dev`` keeps everyday runs quick; ``ci`` tries hypothesis' default of 100 examples and is the
default where the ``CI`` environment variable is set (as it is for ``.ci/run``); ``deep`` tries
1 000 (``make test-deep``, about ten times the property tests' time). ``HYPOTHESIS_PROFILE``
overrides them, e.g. ``HYPOTHESIS_PROFILE=ci make test``. None has a deadline: timings on a
loaded 2-core CI machine are noise, not a property of the code.

``hub`` is a running hub on the defaults, except that its epochs count (``epoch-0``, ``epoch-1``…)
so frames compare by value; a module or test that needs other options says so with
``@pytest.mark.hub_options(history_limit=8)`` (keywords of ``open_hub``). ``dispatcher`` is a
:class:`RecordingDispatcher` bound to ``hub``.

The real servers are started here once: ``redis_server`` (Debian's redis-server on a free
loopback port, one per test module) and ``browser`` (Debian's chromium under Playwright, one per
test module). Their helpers live in ``tests/support``; importing this file loads neither
coredis nor Playwright.

Every process a test starts is owned by it (``tests/support/processes.py``: its own process
group, terminated, waited for and killed on every path); :class:`LeakCheck` fails the run, naming
each, when one is still alive at the end (orphans of PID 1 included), and kills it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

from tests.support.builders import counting_epochs
from tests.support.consumers import RecordingDispatcher
from tests.support.processes import LeakCheck, OwnedProcesses
from tests.support.redis_server import RedisServer, running_redis_server

if TYPE_CHECKING:
    from tests.support.browser import Browser
from workflow_hub import WorkflowActivityHub, open_hub

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None)
settings.register_profile("deep", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


# The files that take longest, handed out first. xdist's ``--dist loadfile`` gives workers whole
# files in collection order (once its reordering is off, below), and the longest files sort late
# (tests/testing, tests/tracker): the last of them kept one worker busy for minutes while the
# other two had nothing left to do.
LONGEST_FIRST = (
    # Longest first by wall time measured in a whole run on 2026-12-02 (-n 3 --dist loadfile):
    # test_cli_fleet mostly waits (a one-minute serve), the conformance files use the CPU.
    # One real Airflow for the file (a minute of its processes' CPU): early, in the others' shade.
    "tests/airflow/test_dag_runs.py",
    "tests/redis/test_cli_fleet.py",
    "tests/testing/test_conformance_threads.py",
    "tests/package/test_leaked_processes.py",
    "tests/package/test_docs_commands.py",
    "tests/celery/test_liveness.py",
    "tests/package/test_api_reference.py",
    "tests/cli/test_mistakes.py",
    "tests/testing/test_conformance_js.py",
    "tests/dashboard/test_dashboard_screenshot.py",
    "tests/package/test_benchmarks_smoke.py",
    "tests/contract/test_wire.py",
    "tests/cli/test_signals.py",
    "tests/dashboard/test_dashboard_views.py",
    "tests/testing/test_conformance.py",
    "tests/cli/test_status_summary.py",
    "tests/celery/test_canvases.py",
    "tests/testing/test_conformance_profiles.py",
    "tests/redis/test_consumer_failures.py",
    "tests/redis/test_events.py",
    "tests/testing/test_conformance_cli.py",
    "tests/dashboard/test_fleet_browser.py",
    "tests/dashboard/test_fleet_oncall_browser.py",
    "tests/redis/test_fleet_reading.py",
    "tests/server/test_server_encoding.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run :data:`LONGEST_FIRST` first, in that order; every other file after, as collected
    (a stable sort: the tests of a file keep their order)."""
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


def pytest_configure(config: pytest.Config) -> None:
    # xdist's loadfile hands files out by their number of tests, most first, unless told to keep
    # the collection's order: the order LONGEST_FIRST sets (test_architecture's 1 062 quick
    # tests went first, the long conformance files wherever their counts put them).
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    # Every process a test starts is stopped by the test; this fails the run if one is not.
    config.pluginmanager.register(LeakCheck(config), "workflow-hub-leak-check")
    config.addinivalue_line(
        "markers", "hub_options(**options): keywords for open_hub() in the shared hub fixture"
    )


@pytest.fixture
async def hub(request: pytest.FixtureRequest) -> AsyncIterator[WorkflowActivityHub]:
    """A running hub (counting epochs, options from ``hub_options``), disposed when the test ends."""
    options: dict[str, Any] = {"epoch_factory": counting_epochs()}
    for marker in reversed(list(request.node.iter_markers("hub_options"))):
        options.update(marker.kwargs)
    async with open_hub(**options) as running:
        yield running


@pytest.fixture
def dispatcher(hub: WorkflowActivityHub) -> RecordingDispatcher:
    """A recording dispatcher bound to ``hub``: every hook event the test causes, in order."""
    recorder = RecordingDispatcher()
    hub.bind_dispatcher(recorder)
    return recorder


@pytest.fixture
def owned() -> Iterator[OwnedProcesses]:
    """Processes the test starts (``owned.start(args, ...)``, as ``subprocess.Popen``), each in
    its own process group, stopped when the test ends on every path."""
    processes = OwnedProcesses()
    try:
        yield processes
    finally:
        processes.close()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server on a free loopback port for the test module (fails under CI=true
    when redis-server is missing, skips otherwise)."""
    with running_redis_server() as server:
        yield server


@pytest.fixture
def own_redis_server() -> Iterator[RedisServer]:
    """A redis-server of the test's own: one it stops, restarts or reconfigures, or that no
    other test's process uses (a Celery broker no worker serves)."""
    with running_redis_server() as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium driven by Playwright, for the test module."""
    from tests.support.browser import open_browser

    opened = open_browser()
    yield opened
    opened.close()
