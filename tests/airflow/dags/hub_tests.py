"""The DAGs of tests/airflow, parsed by the tests' own Airflow (never imported by pytest).

Each task does next to nothing: what the tests measure is what Airflow's scheduler does with
them, and every DAG is triggered at once at the start of the session so they run side by side.
"""

import os
import time
from datetime import timedelta
from pathlib import Path

from airflow.sdk import dag, task

# Long enough for the tests' recorder (it polls every 0.5 s) to see the wait on a loaded machine.
_FAST_RETRY = {"retries": 2, "retry_delay": timedelta(seconds=4)}
# The parallel DAG's branches hold until the test has seen them run side by side (it writes
# this file in AIRFLOW_HOME), so what it asserts never hangs on how fast the tasks were.
RELEASE_PARALLEL = "release-parallel"


@dag(schedule=None, tags=["hub-tests"])
def parallel():
    """Three tasks at once between a start and a join."""

    @task
    def start():
        return 1

    @task
    def branch(x):
        release = Path(os.environ["AIRFLOW_HOME"]) / RELEASE_PARALLEL
        deadline = time.monotonic() + 600
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return x

    @task
    def join(a, b, c):
        return a + b + c

    first = start()
    join(
        branch.override(task_id="left")(first),
        branch.override(task_id="middle")(first),
        branch.override(task_id="right")(first),
    )


@dag(schedule=None, tags=["hub-tests"])
def retries():
    """A task that fails on its first two tries and succeeds on the third."""

    @task(**_FAST_RETRY)
    def flaky(**context):
        if context["ti"].try_number < 3:
            raise RuntimeError(f"flaky on try {context['ti'].try_number}")
        return "ok"

    @task
    def after(value):
        return value

    after(flaky())


@dag(schedule=None, tags=["hub-tests"])
def failing():
    """A task that fails for good; its downstream task never runs (upstream_failed)."""

    @task
    def broken():
        raise ValueError("the data is bad")

    @task
    def never(value):
        return value

    never(broken())


@dag(schedule=None, tags=["hub-tests"])
def mapped():
    """A dynamically mapped task: one instance per item, then a task over all of them."""

    @task
    def items():
        return [1, 2, 3]

    @task
    def double(x):
        return 2 * x

    @task
    def total(values):
        return sum(values)

    total(double.expand(x=items()))


@dag(schedule=None, tags=["hub-tests"])
def paused():
    """Paused by the tests before its run is triggered: the run waits, paused."""

    @task
    def waits():
        return 1

    waits()


parallel()
retries()
failing()
mapped()
paused()


@dag(schedule=None, tags=["hub-tests"])
def approval():
    """A human-in-the-loop approval (Airflow 3.1+), answered by the tests through the API."""
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    @task
    def ship():
        return "shipped"

    ApprovalOperator(task_id="approve", subject="Ship it?", body="release 1.2") >> ship()


approval()


@dag(schedule=None, tags=["hub-tests", "sensors"])
def deferred():
    """A deferrable sensor: the task defers to the triggerer (no worker slot) until its moment,
    then the scheduler resumes it by itself."""
    from airflow.providers.standard.sensors.date_time import DateTimeSensorAsync

    @task
    def done():
        return "waited"

    # Fifteen seconds from the sensor's own start (the template is rendered then), so it defers
    # however long the loaded machine took to start it; DateTimeSensorAsync always defers.
    wait = DateTimeSensorAsync(
        task_id="wait", target_time="{{ macros.datetime.utcnow() + macros.timedelta(seconds=15) }}"
    )
    wait >> done()


deferred()


@dag(schedule=None, tags=["hub-tests"])
def marked():
    """A wait of ten minutes that the tests mark failed through the API, as a user would."""
    from airflow.providers.standard.sensors.time_delta import TimeDeltaSensor

    @task
    def after():
        return 1

    TimeDeltaSensor(task_id="wait", delta=timedelta(minutes=10), deferrable=True) >> after()


marked()
