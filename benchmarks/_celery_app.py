"""The Celery side of bench_celery.py: the app its worker runs, a sender and a bare listener.

``python _celery_app.py send N [STEPS]`` sends N canvases of STEPS tasks each (20 by default:
chains, and groups and chords started from a task so that each canvas is one root); ``python _celery_app.py listen
TASKS`` is Celery's own event receiver doing nothing with the events: it counts them, notes
each ``task-succeeded``'s worker timestamp and arrival time, and prints its CPU time and those
notes as JSON once ``TASKS`` tasks have succeeded. The broker is ``BENCH_CELERY_BROKER``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from celery import Celery, chain, chord, group

BROKER = os.environ.get("BENCH_CELERY_BROKER", "redis://127.0.0.1:1/0")
STEPS = 20  # tasks per canvas, launcher included, unless told otherwise

# Named after the module, so that tasks keep their names when this file runs as __main__.
app = Celery("_celery_app", broker=BROKER, backend=BROKER)
app.conf.update(
    worker_send_task_events=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    result_expires=600,
)


@app.task
def noop(*args: Any) -> int:
    return 1


@app.task
def launch(kind: str, steps: int = STEPS) -> None:
    if kind == "group":
        group(noop.s() for _ in range(steps - 1)).apply_async()
    else:
        chord([noop.s() for _ in range(steps - 2)], noop.s()).apply_async()


def canvas(n: int, steps: int = STEPS) -> Any:
    """The n-th canvas: a chain, a group or a chord, each ``steps`` tasks."""
    if n % 3 == 0:
        return chain(noop.si() for _ in range(steps))
    return launch.si("group" if n % 3 == 1 else "chord", steps)


def send(count: int, steps: int = STEPS) -> None:
    for n in range(count):
        canvas(n, steps).apply_async()


def listen(tasks: int) -> None:
    events = 0
    succeeded: dict[str, tuple[float, float]] = {}

    def on_event(event: dict[str, Any]) -> None:
        nonlocal events
        events += 1
        if event["type"] == "task-succeeded":
            succeeded[event["uuid"]] = (event["timestamp"], event["local_received"])
            if len(succeeded) >= tasks:
                receiver.should_stop = True

    started = 0.0

    class Receiver(app.events.Receiver):  # type: ignore[misc,name-defined]
        def on_consume_ready(self, *args: Any, **kwargs: Any) -> None:
            nonlocal started
            super().on_consume_ready(*args, **kwargs)
            started = time.process_time()
            print("listening", flush=True)  # bound: the benchmark may start sending

    with app.connection_for_read() as connection:
        receiver = Receiver(connection, handlers={"*": on_event})
        receiver.capture(limit=None, timeout=None, wakeup=False)
    cpu = time.process_time() - started
    json.dump({"cpu": cpu, "events": events, "succeeded": succeeded}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else STEPS)
    else:
        listen(int(sys.argv[2]))
