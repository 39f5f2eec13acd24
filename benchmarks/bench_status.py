"""The cost of one refresh of ``workflow-hub status URL`` (issue 24): wall time and peak memory.

Usage: ``python benchmarks/bench_status.py [--repeats N]``. A served demo hub runs in a process
of its own; each refresh is a new process, as a tmux ``#()`` or a shell prompt runs it. Every
figure is printed next to references measured in the same run, in the same way:

- ``python -c pass``: the interpreter alone;
- ``import workflow_hub``: the floor of any command of the package (trio, attrs, cattrs);
- the script a user wrote before ``status`` existed: ``RemoteHub(url).snapshot()`` under
  ``trio.run`` and ``aggregate`` (httpx and its friends loaded).

The best of the repeats is kept (noise only makes a run slower). Peak memory is the child's
``ru_maxrss`` from ``wait4``. Goals (issue 24): <= 0.1 s wall, <= 30 MB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

PYTHON = sys.executable
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    options = parser.parse_args()
    server = subprocess.Popen(
        [PYTHON, "-m", "workflow_hub._cli", "serve", "--port", "0", "--seed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        cases = {
            "python -c pass": [PYTHON, "-c", "pass"],
            "import workflow_hub": [PYTHON, "-c", "import workflow_hub"],
            "old way (RemoteHub + aggregate)": [PYTHON, "-c", OLD_WAY, url],
            "workflow-hub status URL": [PYTHON, "-m", "workflow_hub._cli", "status", url],
        }
        results = measure(cases, options.repeats)
    finally:
        server.terminate()
        server.wait(timeout=30)
    floor_wall, floor_mb = results["import workflow_hub"]
    status_wall, status_mb = results["workflow-hub status URL"]
    print(f"{'case':<34} {'wall s':>8} {'peak MB':>8} {'wall/import':>12} {'MB/import':>10}")
    for name, (wall, mb) in results.items():
        print(
            f"{name:<34} {wall:>8.3f} {mb:>8.1f} {wall / floor_wall:>12.2f} {mb / floor_mb:>10.2f}"
        )
    print(
        f"status: {status_wall:.3f} s (goal 0.1: {'met' if status_wall <= 0.1 else 'NOT met'}), "
        f"{status_mb:.1f} MB (goal 30: {'met' if status_mb <= 30 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
