"""Plot fan-out throughput against the number of observers from ``benchmarks/results.json``.

Usage: ``python benchmarks/plot.py [results.json] [output.png]`` (default output:
``docs/fanout.png``). Needs matplotlib, from the ``bench`` extra
(``pip install -e '.[bench]'``); it is imported only here, so the benchmarks themselves do not
need it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _harness import BENCH_DIR, RESULTS_PATH

DEFAULT_OUTPUT = BENCH_DIR.parent / "docs" / "fanout.png"

SERIES = ("hub callback", "hub stream", "chan/drain", "chan/receive", "floor")
HUB_SERIES = ("hub callback", "hub stream")
STYLES: dict[str, dict[str, Any]] = {
    "hub callback": {"marker": "o", "linewidth": 2.5},
    "hub stream": {"marker": "s", "linewidth": 2.5},
    "chan/drain": {"marker": "^", "linestyle": "--"},
    "chan/receive": {"marker": "v", "linestyle": "--"},
    "floor": {"marker": "x", "linestyle": ":", "color": "grey"},
}


def fanout_series(results: dict[str, Any], variant: str = "hub") -> dict[str, dict[int, float]]:
    """Deliveries per second by series and N, read back from one variant's fan-out rows."""
    series: dict[str, dict[int, float]] = {name: {} for name in SERIES}
    for row in results["rows"]:
        if row["benchmark"] != "fan-out" or row["variant"] != variant:
            continue
        count_text, kind = row["case"].split(" ", 1)
        observers = int(count_text.removeprefix("N="))
        series[f"hub {kind}"][observers] = row["value"]
        series[row["reference"]][observers] = row["reference_value"]
    return series


def _variants(results: dict[str, Any]) -> list[str]:
    seen = dict.fromkeys(row["variant"] for row in results["rows"] if row["benchmark"] == "fan-out")
    return list(seen)


def plot(results_path: Path = RESULTS_PATH, output: Path = DEFAULT_OUTPUT) -> Path:
    """Hub consumers and every baseline, by N; other hub variants as thin lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = json.loads(results_path.read_text(encoding="utf-8"))
    figure, axes = plt.subplots(figsize=(9, 4.8), dpi=120)
    for variant in _variants(results):
        series = fanout_series(results, variant)
        for name in SERIES if variant == "hub" else HUB_SERIES:
            points = sorted(series[name].items())
            if not points:
                continue
            style = dict(STYLES[name])
            label = name
            if variant != "hub":
                style.update(linewidth=1, linestyle="-.", alpha=0.7)
                label = f"{name} [{variant}]"
            axes.plot(
                [n for n, _ in points], [rate / 1e6 for _, rate in points], label=label, **style
            )
    axes.set_xscale("log")
    axes.set_xlabel("observers (N)")
    axes.set_ylabel("deliveries per CPU second (millions)")
    axes.set_ylim(bottom=0)
    info = results["machine"]
    axes.set_title(
        f"Fan-out throughput, no-op async callback\n{info['cpu']}, {info['cores']} cores, "
        f"{info['python']}",
        fontsize=10,
    )
    axes.grid(True, which="both", alpha=0.3)
    # Outside the axes: inside, "best" still lands on a line (the floor crosses the top).
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output)
    plt.close(figure)
    return output


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    results_path = Path(args[0]) if args else RESULTS_PATH
    output = Path(args[1]) if len(args) > 1 else DEFAULT_OUTPUT
    print(f"wrote {plot(results_path, output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
