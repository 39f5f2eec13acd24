"""The cost of one refresh of ``workflow-hub status URL`` (issue 24): wall time and peak memory.

Usage: ``python benchmarks/bench_status.py [--repeats N]``, or as the ``status`` rows of
``benchmarks/run_all.py``. A served demo hub runs in a process
of its own; each refresh is a new process, as a tmux ``#()`` or a shell prompt runs it. Every
figure is printed next to references measured in the same run, in the same way:

- ``python -c pass``: the interpreter alone;
- ``import workflow_hub``: the floor of any command of the package (trio, attrs, cattrs);
- the script a user wrote before ``status`` existed: ``RemoteHub(url).snapshot()`` under
  ``trio.run`` and ``aggregate`` (httpx and its friends loaded).

The best of the repeats is kept (noise only makes a run slower). Peak memory is the child's
``ru_maxrss`` from ``wait4``. Goals (issue 24): <= 0.1 s wall, <= 30 MB. On a shared machine the wall time moves
with everyone else's load; its ratio to ``python -c pass`` in the same run is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _harness import HubFactory, Row, Scale

PYTHON = sys.executable
# The console script, as tmux or a prompt runs it (``python -m`` would add runpy's import).
_SCRIPT = os.path.join(os.path.dirname(PYTHON), "workflow-hub")
COMMAND = [_SCRIPT] if os.access(_SCRIPT, os.X_OK) else [PYTHON, "-m", "workflow_hub._cli"]
OLD_WAY = (
    "import sys, trio\n"
    "from workflow_hub.remote import RemoteHub\n"
    "from workflow_hub.reporting import aggregate\n"
    "snapshot = trio.run(RemoteHub(sys.argv[1]).snapshot)\n"
    "print(aggregate(snapshot).message)\n"
)


def once(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak MB of one run of ``command``."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def measure(cases: dict[str, list[str]], repeats: int) -> dict[str, tuple[float, float]]:
    """The best wall seconds and peak MB of each case; the cases' runs are interleaved."""
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, command in cases.items():
            runs[name].append(once(command))
    return {
        name: (min(wall for wall, _ in done), min(mb for _, mb in done))
        for name, done in runs.items()
    }


@contextmanager
def served_demo() -> Iterator[str]:
    """A demo hub served in a process of its own, for as long as the block runs: its URL."""
    server = subprocess.Popen(
        [PYTHON, "-m", "workflow_hub._cli", "serve", "--port", "0", "--seed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=30)


def cases(url: str) -> dict[str, list[str]]:
    return {
        "python -c pass": [PYTHON, "-c", "pass"],
        "import workflow_hub": [PYTHON, "-c", "import workflow_hub"],
        "old way (RemoteHub + aggregate)": [PYTHON, "-c", OLD_WAY, url],
        "workflow-hub status URL": [*COMMAND, "status", url],
    }


REPEATS = {"full": 10, "quick": 5, "smoke": 1}


def run(scale: Scale, *, hub_factory: HubFactory | None = None, label: str = "hub") -> list[Row]:
    """The rows of ``run_all.py``: one refresh's wall time against ``python -c pass`` (the goal
    of 0.1 s is on the time itself) and against ``import workflow_hub``, and its peak memory."""
    from _harness import Goal, Row

    if label != "hub":
        return []  # a separate process: the hub variants do not apply
    # Linux carries ru_maxrss across fork and exec: a child forked from this process (trio,
    # the benchmarks) would report at least its size. So a small process of the standard library
    # alone (this script's main) starts the children and reports the figures as JSON.
    repeats = REPEATS.get(scale.name, 10)
    launched = subprocess.run(
        [PYTHON, __file__, "--repeats", str(repeats), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    results = {name: (wall, mb) for name, (wall, mb) in json.loads(launched.stdout).items()}
    bare_wall, bare_mb = results["python -c pass"]
    floor_wall, _ = results["import workflow_hub"]
    wall, mb = results["workflow-hub status URL"]
    note = f"best of {repeats} new processes, one GET /v1/snapshot each"
    return [
        Row(
            benchmark="status",
            case="one refresh of `workflow-hub status URL`, wall",
            variant=label,
            value=wall * 1e9,
            unit="ns",
            reference="python -c pass",
            reference_value=bare_wall * 1e9,
            goal=Goal(op="<=", threshold=0.1e9, unit="ns"),
            note=note,
        ),
        Row(
            benchmark="status",
            case="one refresh of `workflow-hub status URL`, wall vs the package",
            variant=label,
            value=wall * 1e9,
            unit="ns",
            reference="import workflow_hub",
            reference_value=floor_wall * 1e9,
            note=note,
        ),
        Row(
            benchmark="status",
            case="one refresh of `workflow-hub status URL`, peak RSS",
            variant=label,
            value=mb * 1024 * 1024,
            unit="B",
            reference="python -c pass",
            reference_value=bare_mb * 1024 * 1024,
            goal=Goal(op="<=", threshold=30 * 1024 * 1024, unit="B"),
            note=note,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="the figures as JSON (for run_all)")
    options = parser.parse_args()
    with served_demo() as url:
        results = measure(cases(url), options.repeats)
    if options.json:
        print(json.dumps(results))
        return
    bare_wall, _ = results["python -c pass"]
    floor_wall, floor_mb = results["import workflow_hub"]
    status_wall, status_mb = results["workflow-hub status URL"]
    print(
        f"{'case':<34} {'wall s':>8} {'peak MB':>8} {'wall/pass':>10} {'wall/import':>12} "
        f"{'MB/import':>10}"
    )
    for name, (wall, mb) in results.items():
        print(
            f"{name:<34} {wall:>8.3f} {mb:>8.1f} {wall / bare_wall:>10.2f} "
            f"{wall / floor_wall:>12.2f} {mb / floor_mb:>10.2f}"
        )
    print(
        f"status: {status_wall:.3f} s (goal 0.1: {'met' if status_wall <= 0.1 else 'NOT met'}), "
        f"{status_mb:.1f} MB (goal 30: {'met' if status_mb <= 30 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
