"""The pytest plugin of the conformance kit (entry point ``workflow_hub_conformance``).

Define a fixture ``workflow_hub_adapter`` that returns an adapter factory, request the fixture
``workflow_hub_conformance`` in a test, and the whole suite runs against your adapter as that
test's call; a disagreement fails the test with the shrunk scenario::

    @pytest.fixture
    def workflow_hub_adapter():
        return MyHubAdapter  # called with an AdapterConfig for every scenario

    def test_my_hub_conforms(workflow_hub_conformance):
        assert workflow_hub_conformance.report.examples > 0

The number of scenarios comes from ``--conformance-examples N``, else from the environment
variable ``WORKFLOW_HUB_CONFORMANCE_EXAMPLES``, else 100; ``--conformance-seed S`` fixes the seed.
The marker ``@pytest.mark.workflow_hub_conformance(profiles=("source",), max_steps=60, ...)``
passes other options of ``check_conformance``. The profiles checked are what the adapter factory
declares (its ``profiles`` attribute; every profile when it has none), or the marker's
``profiles`` among them; each test's failure report, and the session's summary, say which. Nothing is imported (hypothesis included) until a
test asks for the fixture, so the plugin costs nothing to projects that do not use it.
"""

from __future__ import annotations

import os
import traceback
from typing import TYPE_CHECKING, Any

import pytest

from . import defaults

if TYPE_CHECKING:
    from ._adapter import AdapterFactory
    from ._harness import ConformanceSuite

__all__ = ["EXAMPLES_VARIABLE", "workflow_hub_conformance"]

EXAMPLES_VARIABLE = "WORKFLOW_HUB_CONFORMANCE_EXAMPLES"
DEFAULT_EXAMPLES = defaults.EXAMPLES
_FIXTURE = "workflow_hub_conformance"
_MARKER_OPTIONS = frozenset(
    {
        "max_steps",
        "queue_limits",
        "diagnostics_limits",
        "history_limits",
        "styles",
        "timeout",
        "profiles",
    }
)
# (test id, the profiles it checked), for the summary.
_CHECKED = pytest.StashKey[list[tuple[str, str]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("workflow-hub", "workflow-hub conformance suite")
    group.addoption(
        "--conformance-examples",
        type=int,
        default=None,
        metavar="N",
        help=f"scenarios per conformance run (default: ${EXAMPLES_VARIABLE}, else "
        f"{DEFAULT_EXAMPLES})",
    )
    group.addoption(
        "--conformance-seed",
        type=int,
        default=None,
        metavar="S",
        help="seed the conformance scenarios, to reproduce a run",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "workflow_hub_conformance(**options): options for the workflow_hub_conformance fixture "
        "(max_steps, queue_limits, diagnostics_limits, history_limits, styles, timeout, "
        "profiles)",
    )


def examples(config: pytest.Config) -> int:
    """The number of scenarios: the command line, else the environment, else the default."""
    value: int | None = config.getoption("conformance_examples")
    if value is None:
        text = os.environ.get(EXAMPLES_VARIABLE, "").strip()
        if text:
            try:
                value = int(text)
            except ValueError:
                raise pytest.UsageError(
                    f"{EXAMPLES_VARIABLE} must be an integer, got {text!r}"
                ) from None
    if value is not None and value < 1:
        raise pytest.UsageError(f"the number of conformance examples must be >= 1, got {value}")
    return DEFAULT_EXAMPLES if value is None else value


@pytest.fixture
def workflow_hub_conformance(
    request: pytest.FixtureRequest, workflow_hub_adapter: AdapterFactory
) -> ConformanceSuite:
    """The conformance suite against ``workflow_hub_adapter``; it runs as the test is called."""
    from ._harness import ConformanceSuite

    options: dict[str, Any] = {}
    marker = request.node.get_closest_marker(_FIXTURE)
    if marker is not None:
        unknown = set(marker.kwargs) - _MARKER_OPTIONS
        if marker.args or unknown:
            raise pytest.UsageError(
                f"@pytest.mark.{_FIXTURE} takes keyword options among "
                f"{sorted(_MARKER_OPTIONS)}; got {marker.args!r} {sorted(unknown)!r}"
            )
        options.update(marker.kwargs)
    return ConformanceSuite(
        adapter_factory=workflow_hub_adapter,
        max_examples=examples(request.config),
        seed=request.config.getoption("conformance_seed"),
        **options,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> None:
    # Run the suite as the test's call, before its body, so that a disagreement is a test
    # failure (an exception in a fixture would be reported as an error in setup). Returning None
    # lets pytest (or pytest-trio) call the body as usual.
    if _FIXTURE not in pyfuncitem.fixturenames:
        return
    from ._harness import ConformanceFailure, ConformanceSuite

    suite = pyfuncitem.funcargs.get(_FIXTURE)
    if not isinstance(suite, ConformanceSuite):
        return
    try:
        report = suite.run()
    except ConformanceFailure as error:
        failure = error
    else:
        _record(pyfuncitem, ", ".join(report.profiles))
        return
    _record(pyfuncitem, ", ".join(failure.profiles) + " (failed)")
    # The report is the message; the harness's frames would only bury it. What the
    # implementation itself raised, if anything, is worth its traceback. (Failing outside the
    # except block keeps pytest from printing the report twice, as the failure's context.)
    message = str(failure)
    if failure.__cause__ is not None:
        raised = "".join(traceback.format_exception(failure.__cause__))
        message += f"\n\nWhat the adapter raised:\n{raised}"
    pytest.fail(message, pytrace=False)


def _record(item: pytest.Function, profiles: str) -> None:
    item.config.stash.setdefault(_CHECKED, []).append((item.nodeid, profiles))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Say which profiles each conformance test checked: a pass means little without it."""
    checked = config.stash.get(_CHECKED, [])
    if checked:
        terminalreporter.section("workflow-hub conformance profiles")
        for nodeid, profiles in checked:
            terminalreporter.write_line(f"{nodeid}: checked {profiles}")
