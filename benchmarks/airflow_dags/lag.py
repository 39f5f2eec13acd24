"""The DAG of benchmarks/bench_airflow_lag.py, parsed by the benchmark's own Airflow.

A chain of tasks that each take a few seconds, longer than the bridge's polling interval, so
that each task instance's end is a change of its own, seen by a poll: the benchmark measures
how late, from Airflow's own end time of it.
"""

import time

from airflow.sdk import dag, task

STEPS = 6
WORK = 3.0  # seconds a task takes: more than the polling interval (2 s)


@dag(schedule=None, tags=["hub-bench"])
def lag():
    """``STEPS`` tasks one after the other."""

    @task
    def step(previous=None):
        time.sleep(WORK)
        return 1

    last = None
    for n in range(STEPS):
        last = step.override(task_id=f"step_{n}")(last)


lag()
