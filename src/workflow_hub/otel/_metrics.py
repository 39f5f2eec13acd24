"""OTel metrics from what the tracing sees: runs active and ended, task durations and failures
by stage name, human waits (from the lifecycle events), and roots by state and reason (from the
hub's folded view, its frames).

Attributes are low-cardinality on purpose: run ids name spans, never metric series (a series per
run would grow without bound); stage and tool names do, as the CI/CD conventions' task names.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from opentelemetry.metrics import Meter, MeterProvider

from .._contract import Availability, ChangedFrame, Frame, RemovedFrame, SnapshotFrame
from . import _attributes as A

__all__ = ["RootGauge", "SpanMetrics"]

_METER: Final = "workflow_hub.otel"

RUN_ACTIVE: Final = "cicd.pipeline.run.active"
RUN_DURATION: Final = "cicd.pipeline.run.duration"
RUN_ERRORS: Final = "cicd.pipeline.run.errors"
TASK_DURATION: Final = "workflow_hub.task.duration"
TASK_FAILURES: Final = "workflow_hub.task.failures"
WAIT_DURATION: Final = "workflow_hub.human_wait.duration"
ROOTS_ACTIVE: Final = "workflow_hub.root.active"

Attributes = dict[str, str]


def _meter(provider: MeterProvider) -> Meter:
    return provider.get_meter(_METER, schema_url=A.SCHEMA_URL)


class SpanMetrics:
    """The instruments the span book reports to, as spans start and end."""

    def __init__(self, provider: MeterProvider, source: str | None) -> None:
        meter = _meter(provider)
        self._base: Attributes = {} if source is None else {A.SOURCE: source}
        self._active = meter.create_up_down_counter(
            RUN_ACTIVE, unit="{run}", description="Runs whose span is open, by run state."
        )
        self._run_duration = meter.create_histogram(
            RUN_DURATION, unit="s", description="Duration of ended runs, by result."
        )
        self._run_errors = meter.create_counter(
            RUN_ERRORS, unit="{error}", description="Runs that failed, by error type."
        )
        self._task_duration = meter.create_histogram(
            TASK_DURATION, unit="s", description="Duration of stages and tools, by name and result."
        )
        self._task_failures = meter.create_counter(
            TASK_FAILURES,
            unit="{failure}",
            description="Failures of stages and tools (each failed attempt), by name.",
        )
        self._wait_duration = meter.create_histogram(
            WAIT_DURATION, unit="s", description="How long humans took to answer a prompt."
        )

    def _with(self, extra: Attributes) -> Attributes:
        return {**self._base, **extra}

    def run_state(self, old: str | None, new: str | None) -> None:
        """A run's span moved from ``old`` to ``new`` state (None: not open)."""
        if old == new:
            return
        if old is not None:
            self._active.add(-1, self._with({A.PIPELINE_RUN_STATE: old}))
        if new is not None:
            self._active.add(1, self._with({A.PIPELINE_RUN_STATE: new}))

    def run_ended(self, seconds: float, result: str, error_type: str | None) -> None:
        self._run_duration.record(max(seconds, 0.0), self._with({A.PIPELINE_RESULT: result}))
        if error_type is not None:
            self._run_errors.add(1, self._with({A.ERROR_TYPE: error_type}))

    def task_ended(self, kind: str, name: str, seconds: float, result: str) -> None:
        attributes = self._with({A.KIND: kind, A.TASK_NAME: name, A.TASK_RUN_RESULT: result})
        self._task_duration.record(max(seconds, 0.0), attributes)

    def task_failed(self, kind: str, name: str, error_type: str) -> None:
        attributes = self._with({A.KIND: kind, A.TASK_NAME: name, A.ERROR_TYPE: error_type})
        self._task_failures.add(1, attributes)

    def wait_ended(self, seconds: float, result: str) -> None:
        self._wait_duration.record(max(seconds, 0.0), self._with({A.PROMPT_RESULT: result}))


class RootGauge:
    """Roots by state and reason, from the hub's frames (an observer callback): the folded view
    the dashboard shows, as an UpDownCounter. A non-ready source counts no roots (unknown is not
    idle, N4)."""

    def __init__(self, provider: MeterProvider, source: str | None) -> None:
        self._base: Attributes = {} if source is None else {A.SOURCE: source}
        self._counter = _meter(provider).create_up_down_counter(
            ROOTS_ACTIVE, unit="{root}", description="Roots of the hub, by state and reason."
        )
        self._roots: dict[str, tuple[str, str]] = {}

    def __call__(self, frame: Frame) -> None:
        if isinstance(frame, ChangedFrame):
            root = frame.root
            self._move(self._roots.get(root.root_run_id), (str(root.state), str(root.reason)))
            self._roots[root.root_run_id] = (str(root.state), str(root.reason))
        elif isinstance(frame, RemovedFrame):
            self._move(self._roots.pop(frame.root_run_id, None), None)
        elif isinstance(frame, SnapshotFrame):
            roots: dict[str, tuple[str, str]] = {}
            if frame.availability is Availability.READY and frame.roots is not None:
                for root in frame.roots:
                    roots[root.root_run_id] = (str(root.state), str(root.reason))
            self._replace(roots)

    def close(self) -> None:
        """Count every root out (the tracing stops: its series go back to zero)."""
        self._replace({})

    def _replace(self, roots: dict[str, tuple[str, str]]) -> None:
        before = Counter(self._roots.values())
        after = Counter(roots.values())
        self._roots = roots
        for key in before.keys() | after.keys():
            if after[key] != before[key]:
                self._add(after[key] - before[key], key)

    def _move(self, old: tuple[str, str] | None, new: tuple[str, str] | None) -> None:
        if old == new:
            return
        if old is not None:
            self._add(-1, old)
        if new is not None:
            self._add(1, new)

    def _add(self, delta: int, key: tuple[str, str]) -> None:
        state, reason = key
        attributes = {**self._base, "workflow_hub.state": state, "workflow_hub.reason": reason}
        self._counter.add(delta, attributes)
