"""The benchmark scripts run, in their tiniest shapes, and report what they claim to report.

They are not timed here: a benchmark only has to keep working (and keep refusing to report a
figure for a run that dropped frames) so that ``make bench`` never rots.
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from workflow_hub import WorkflowActivityHub

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    # The scripts import each other as top-level modules, the way `python benchmarks/x.py` runs.
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCHMARKS))
        return importlib.import_module(name)


@pytest.fixture(scope="module")
def harness() -> ModuleType:
    return _load("_harness")


@pytest.fixture(scope="module")
def run_all() -> ModuleType:
    return _load("run_all")


# Not smoke-run here: it starts an Airflow of its own (a minute or two before it measures);
# tests/airflow start one for the session and check what it reads. It runs in `make bench`.
LIVE = ("airflow_lag",)


@pytest.fixture(scope="module")
def smoke_rows(run_all: ModuleType, harness: ModuleType) -> list[object]:
    names = [name for name in run_all.BENCHMARKS if name not in LIVE]
    rows: list[object] = run_all.run_benchmarks(harness.SCALES["smoke"], names)
    return rows


@pytest.mark.parametrize(
    "benchmark",
    [
        "fan-out",
        "publish",
        "memory",
        "snapshot",
        "hooks",
        "metrics",
        "network",
        "redis",
        "resume",
        "dashboard",
        "langgraph",
        "langgraph_hosts",
        "langgraph_turns",
        "hosts",
        "celery",
        "watch_cpu",
        "conflation",
        "otel",
        "airflow",
    ],
)
def test_each_benchmark_reports_figures_next_to_a_reference(
    smoke_rows: list[object], harness: ModuleType, benchmark: str
) -> None:
    """Every figure comes with a reference measured in the same run, and their ratio."""
    rows = [row for row in smoke_rows if row.benchmark == benchmark]  # type: ignore[attr-defined]
    assert rows
    for row in rows:
        assert row.variant in harness.HUB_VARIANTS
        assert math.isfinite(row.value)
        assert row.reference
        assert math.isfinite(row.reference_value)
        if row.reference_value:  # a slope can be 0 in a run this small
            assert row.ratio == pytest.approx(row.value / row.reference_value)


def test_fanout_compares_both_hub_consumers_with_every_baseline(
    run_all: ModuleType, harness: ModuleType
) -> None:
    """Issue 8 item 1: callback and stream, each against chan/drain, chan/receive and floor."""
    scale = harness.SCALES["smoke"]
    rows = run_all.BENCHMARKS["fanout"](scale)
    pairs = {(row.case, row.reference) for row in rows}
    assert pairs == {
        (f"N={n} {kind}", reference)
        for n in scale.fanout_observers
        for kind in ("callback", "stream")
        for reference in ("chan/drain", "chan/receive", "floor")
    }


def test_fanout_refuses_to_report_a_run_that_dropped_frames(harness: ModuleType) -> None:
    """A queue limit below the burst size overflows: that is an error, never a figure."""
    fanout = _load("bench_fanout")
    scale = harness.SCALES["smoke"]
    with pytest.raises(harness.BenchmarkError):
        fanout.measure(scale, 2, hub_factory=lambda: WorkflowActivityHub(queue_limit=2))


def test_run_all_prints_one_table_and_writes_results_json(
    run_all: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run_all.py` prints a single table and writes the machine and every row as JSON."""
    output = tmp_path / "results.json"
    assert run_all.main(["--smoke", "--only", "snapshot", "--output", str(output)]) == 0
    table = capsys.readouterr().out
    assert table.count("| benchmark ") == 1
    results = json.loads(output.read_text(encoding="utf-8"))
    assert set(results["machine"]) >= {"cpu", "cores", "python"}
    assert results["scale"] == "smoke"
    assert {row["benchmark"] for row in results["rows"]} == {"snapshot"}
    assert all("ratio" in row and "met" in row for row in results["rows"])


def test_plot_reads_every_fanout_series_back_from_the_results(
    run_all: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plot's data (not matplotlib itself) comes back out of results.json."""
    output = tmp_path / "results.json"
    run_all.main(["--smoke", "--only", "fanout", "--output", str(output)])
    capsys.readouterr()
    plot = _load("plot")
    series = plot.fanout_series(json.loads(output.read_text(encoding="utf-8")))
    assert set(series) == set(plot.SERIES)
    assert all(set(points) == {1, 3} for points in series.values())


def test_network_compares_sse_with_both_baselines_and_counts_encodings(
    smoke_rows: list[object],
) -> None:
    """Issue 15: (a) one event per write, (b) 100 per write, encodings per frame, publish cost."""
    rows = [row for row in smoke_rows if row.benchmark == "network"]  # type: ignore[attr-defined]
    references = {row.reference for row in rows}  # type: ignore[attr-defined]
    assert {"(a) one event per write", "(b) 100 events per write"} <= references
    encodings = [row for row in rows if row.case.startswith("encodings per frame")]  # type: ignore[attr-defined]
    assert encodings
    assert all(row.value == 1 for row in encodings)  # type: ignore[attr-defined]
    assert any(row.case.startswith("publish cost") for row in rows)  # type: ignore[attr-defined]


def test_network_takes_the_hubs_publish_off_the_servers_own_cpu_row(
    smoke_rows: list[object],
) -> None:
    """Issue 29: the one-client server CPU, less the hub's publish to a plain subscriber."""
    rows = {row.case: row for row in smoke_rows if row.benchmark == "network"}  # type: ignore[attr-defined]
    own = rows["SSE, 1 clients, server's own CPU"]
    whole = rows["SSE, 1 clients, server CPU"]
    assert own.goal is not None  # type: ignore[attr-defined]
    assert own.reference == whole.reference == "(b) 100 events per write"  # type: ignore[attr-defined]
    # Less cost per event than the whole, so more events per CPU second.
    assert own.value > whole.value  # type: ignore[attr-defined]


def test_airflow_reports_the_bridge_per_transition_against_decoding_and_the_facts(
    smoke_rows: list[object],
) -> None:
    """Issue 42: the bridge's CPU per 1 000 task-instance transitions, from API-shaped poll
    bodies (no Airflow), next to decoding them alone and to the tracker given the facts; and
    the requests per poll, the same for 500 running DAG runs as for 10."""
    rows = [row for row in smoke_rows if row.benchmark == "airflow"]  # type: ignore[attr-defined]
    cpu = [row for row in rows if row.unit == "ms CPU/1k transitions"]  # type: ignore[attr-defined]
    assert {row.reference for row in cpu} == {  # type: ignore[attr-defined]
        "json.loads of the same poll bodies",
        "decode + the changed statuses as facts",
    }
    assert all(row.value > 0 for row in cpu)  # type: ignore[attr-defined]
    (requests,) = [row for row in rows if row.unit == "requests"]  # type: ignore[attr-defined]
    assert requests.value == requests.reference_value == 4  # type: ignore[attr-defined]
    assert requests.met  # type: ignore[attr-defined]
