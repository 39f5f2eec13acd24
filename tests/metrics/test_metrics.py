"""Prometheus metrics: exact values after scripted scenarios, scraped and parsed as text."""

from __future__ import annotations

import gc
import itertools
import subprocess
import sys
import threading
import weakref

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.builders import heartbeat, root, stage_lifecycle
from workflow_hub import ContractError, Frame, WorkflowActivityHub, open_hub
from workflow_hub.metrics import LAG_SAMPLE_EVERY, HubMetrics


def scrape(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, keyed by (name, sorted labels)."""
    text = generate_latest(registry).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return scrape(registry)[(name, tuple(sorted(labels.items())))]


def sampled(deliveries: int) -> int:
    """Lag samples of one observer after ``deliveries`` deliveries: its 1st, then one in N."""
    return 0 if deliveries == 0 else 1 + (deliveries - 1) // LAG_SAMPLE_EVERY


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


async def test_frames_published_and_delivered_and_gauges(registry: CollectorRegistry) -> None:
    """Frames published by kind, delivered, observers, revision, availability, epochs."""
    metrics = HubMetrics(registry)
    async with open_hub(metrics=metrics) as hub:
        seen: list[Frame] = []
        hub.observe(seen.append)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [root("a")])
        publisher.publish_changed(root("b"))
        publisher.publish_removed("a")
        publisher.publish_lifecycle(stage_lifecycle())
        await trio.testing.wait_all_tasks_blocked()
        assert value(registry, "workflow_hub_frames_published_total", kind="snapshot") == 2
        assert value(registry, "workflow_hub_frames_published_total", kind="changed") == 1
        assert value(registry, "workflow_hub_frames_published_total", kind="removed") == 1
        assert value(registry, "workflow_hub_frames_delivered_total") == len(seen) == 5
        assert value(registry, "workflow_hub_observers") == 1
        assert value(registry, "workflow_hub_revision") == 4
        assert value(registry, "workflow_hub_epochs_started_total") == 2
        assert value(registry, "workflow_hub_availability", state="ready") == 1
        assert value(registry, "workflow_hub_availability", state="unavailable") == 0
        # The lag is sampled: an observer's 1st, 33rd, 65th ... delivery.
        assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 1


async def test_overflow_is_counted_and_pending_gauges_follow(registry: CollectorRegistry) -> None:
    """An overflow: one overflow, one ObserverOverflow diagnostic, pending gauges."""
    async with open_hub(queue_limit=3, metrics=HubMetrics(registry)) as hub:
        gate = trio.Event()
        seen: list[Frame] = []

        async def stalled(frame: Frame) -> None:
            seen.append(frame)
            await gate.wait()

        hub.observe(stalled)
        await trio.testing.wait_all_tasks_blocked()
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        publisher.publish_changed(root("a"))
        assert value(registry, "workflow_hub_pending_frames") == 3
        assert value(registry, "workflow_hub_deepest_queue_frames") == 3
        publisher.publish_changed(root("b"))
        assert value(registry, "workflow_hub_observer_overflows_total") == 1
        assert (
            value(registry, "workflow_hub_diagnostics_recorded_total", kind="ObserverOverflow") == 1
        )
        assert value(registry, "workflow_hub_pending_frames") == 1
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        # Delivered: the frame in flight at the overflow, then the one resnapshot.
        assert len(seen) == 2
        assert value(registry, "workflow_hub_frames_delivered_total") == 2


async def test_fenced_publisher_is_counted(registry: CollectorRegistry) -> None:
    """A fenced publisher's calls count as fenced publications and PublisherFenced records."""
    async with open_hub(metrics=HubMetrics(registry)) as hub:
        old = hub.register_publisher()
        hub.register_publisher()
        old.publish_changed(root())
        old.publish_heartbeat(heartbeat())
        old.dispose()
        assert value(registry, "workflow_hub_fenced_publications_total") == 3
        assert (
            value(registry, "workflow_hub_diagnostics_recorded_total", kind="PublisherFenced") == 3
        )
        assert (
            value(registry, "workflow_hub_diagnostics_recorded_total", kind="SourceUnavailable")
            == 2
        )


async def test_failing_observer_is_counted(registry: CollectorRegistry) -> None:
    """A failing callback counts as a delivery failure, and its frames still as delivered."""
    async with open_hub(metrics=HubMetrics(registry)) as hub:

        def broken(frame: Frame) -> None:
            raise RuntimeError("no")

        hub.observe(broken)
        hub.register_publisher().publish_snapshot("ready", [])
        await trio.testing.wait_all_tasks_blocked()
        assert value(registry, "workflow_hub_delivery_failures_total") == 3
        assert value(registry, "workflow_hub_frames_delivered_total") == 3


async def test_hook_events_dispatched_by_type(registry: CollectorRegistry) -> None:
    """Hook events handed to the dispatcher are counted by type."""
    async with open_hub(metrics=HubMetrics(registry)) as hub:

        async def dispatch(event: object, is_current: object) -> None:
            pass

        hub.bind_dispatcher(dispatch)
        publisher = hub.register_publisher()
        publisher.publish_lifecycle(stage_lifecycle("completed"))
        publisher.publish_changed(root())
        publisher.publish_heartbeat(heartbeat())
        await trio.testing.wait_all_tasks_blocked()
        for kind in (
            "workflow_lifecycle",
            "workflow_stage_completed",
            "workflow_activity_changed",
            "workflow_heartbeat",
        ):
            assert value(registry, "workflow_hub_hook_events_dispatched_total", type=kind) == 1


def test_no_label_names_an_observer_root_or_run(registry: CollectorRegistry) -> None:
    """Low cardinality: the only label names are kind, type and state."""
    hub = WorkflowActivityHub(metrics=HubMetrics(registry))
    hub.register_publisher().publish_snapshot("ready", [root("a"), root("b")])
    labels = {name for (_, sample_labels) in scrape(registry) for name, _ in sample_labels}
    assert labels <= {"kind", "type", "state", "le"}


def test_metrics_argument_is_checked() -> None:
    with pytest.raises(ContractError, match="metrics"):
        WorkflowActivityHub(metrics=object())  # type: ignore[arg-type]


def test_namespace_prefixes_every_metric(registry: CollectorRegistry) -> None:
    WorkflowActivityHub(metrics=HubMetrics(registry, namespace="wf"))
    names = {name for (name, _) in scrape(registry)}
    assert names
    assert all(name.startswith("wf_") for name in names)


async def test_failing_hook_handler_is_counted(registry: CollectorRegistry) -> None:
    """K5 with metrics: each failing handler counts once; the chain goes on."""
    from workflow_hub import HookRunner

    async with open_hub(metrics=HubMetrics(registry)) as hub:
        runner = HookRunner(hub)
        reached: list[str] = []

        def broken(event: object) -> None:
            raise RuntimeError("handler bug")

        runner.extension("broken").on("workflow_heartbeat", broken)
        runner.extension("fine").on("workflow_heartbeat", lambda event: reached.append("fine"))
        runner.bind()
        hub.register_publisher().publish_heartbeat(heartbeat())
        await trio.testing.wait_all_tasks_blocked()
        assert reached == ["fine"]
        assert value(registry, "workflow_hub_hook_handler_failures_total") == 1
        assert value(registry, "workflow_hub_delivery_failures_total") == 0


async def test_delivery_lag_histogram_is_cumulative_and_sampled(
    registry: CollectorRegistry,
) -> None:
    """The lag histogram: cumulative buckets, one sample per LAG_SAMPLE_EVERY deliveries of each
    observer, its first included."""
    changes = 2 * LAG_SAMPLE_EVERY + 4
    async with open_hub(metrics=HubMetrics(registry)) as hub:
        hub.observe(lambda frame: None)
        hub.observe(lambda frame: None)
        publisher = hub.register_publisher()
        for index in range(changes):
            publisher.publish_changed(root(str(index)))
        await trio.testing.wait_all_tasks_blocked()
        samples = scrape(registry)
        buckets = sorted(
            (float(dict(labels)["le"]), count)
            for (name, labels), count in samples.items()
            if name == "workflow_hub_delivery_lag_seconds_bucket"
        )
        counts = [count for _, count in buckets]
        assert counts == sorted(counts)
        # Each observer: the attach snapshot, the register snapshot and the changes.
        deliveries = 2 + changes
        assert value(registry, "workflow_hub_frames_delivered_total") == 2 * deliveries
        assert buckets[-1] == (float("inf"), 2 * sampled(deliveries))
        assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 2 * sampled(deliveries)
        assert value(registry, "workflow_hub_delivery_lag_seconds_sum") >= 0


async def test_deliveries_of_disposed_observers_stay_counted(registry: CollectorRegistry) -> None:
    """frames_delivered is a counter: an observer's deliveries stay counted after it goes."""
    async with open_hub(metrics=HubMetrics(registry)) as hub:
        lease = hub.observe(lambda frame: None)
        hub.register_publisher().publish_snapshot("ready", [])
        await trio.testing.wait_all_tasks_blocked()
        assert value(registry, "workflow_hub_frames_delivered_total") == 3
        lease.dispose()
        lease.dispose()
        assert value(registry, "workflow_hub_frames_delivered_total") == 3
        hub.dispose()
        assert value(registry, "workflow_hub_frames_delivered_total") == 3


async def test_lag_samples_survive_long_runs(registry: CollectorRegistry) -> None:
    """Publication times are kept in bounded generations; every sample still finds its frame."""
    async with open_hub(queue_limit=2, metrics=HubMetrics(registry)) as hub:
        hub.observe(lambda frame: None)
        publisher = hub.register_publisher()
        changes = 6 * LAG_SAMPLE_EVERY + 8
        for index in range(changes):
            await trio.testing.wait_all_tasks_blocked()
            publisher.publish_changed(root(str(index % 7)))
        await trio.testing.wait_all_tasks_blocked()
        assert "ObserverOverflow" not in [d.kind for d in hub.diagnostics()]
        deliveries = 2 + changes  # the attach snapshot, the register snapshot, the changes
        assert value(registry, "workflow_hub_frames_delivered_total") == deliveries
        assert value(registry, "workflow_hub_delivery_lag_seconds_count") == sampled(deliveries)


def test_publication_times_cover_two_generations(registry: CollectorRegistry) -> None:
    """The newest frames' times are found across a generation swap; the oldest are forgotten.

    The generation's size is the probe's internal rule (``workflow_hub.metrics._hub_metrics``)."""
    from workflow_hub import ChangedFrame, Cursor
    from workflow_hub.metrics._hub_metrics import _generation_size

    metrics = HubMetrics(registry)
    probe = metrics.instrument(WorkflowActivityHub(), queue_limit=1)
    generation = _generation_size(queue_limit=1)
    frames = [
        ChangedFrame(cursor=Cursor(epoch="e", revision=index), root=root())
        for index in range(2 * generation + generation // 2)
    ]
    for frame in frames:
        probe.frame_built(frame)
    probe.sample_lag(frames[-1])  # the newest generation
    probe.sample_lag(frames[-(generation // 2) - 5])  # the generation before
    assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 2
    probe.sample_lag(frames[0])  # long gone: no sample
    assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 2


# --- the core knows nothing of Prometheus (issue 13.3) -----------------------------------------


def test_importing_the_package_does_not_import_prometheus() -> None:
    """``import workflow_hub`` (and running a hub) needs no prometheus-client."""
    program = (
        "import sys, trio, workflow_hub\n"
        "async def main():\n"
        "    async with workflow_hub.open_hub() as hub:\n"
        "        hub.register_publisher().publish_snapshot('ready', [])\n"
        "trio.run(main)\n"
        "assert 'prometheus_client' not in sys.modules, 'prometheus_client was imported'\n"
        "assert 'workflow_hub.metrics._hub_metrics' not in sys.modules, 'workflow_hub.metrics._hub_metrics was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_hot_path_calls_are_not_public_on_hub_metrics() -> None:
    """The calls a hub makes belong to its probe (the core's HubInstruments), not HubMetrics."""
    public = {name for name in dir(HubMetrics) if not name.startswith("_")}
    assert public == {"collect", "hub", "instrument", "unregister"}


# --- counters that only grow are counters (issue 12.4) ----------------------------------------


async def test_epochs_started_and_hook_events_dropped_are_counters(
    registry: CollectorRegistry,
) -> None:
    """Both only grow, so both are exported as ``_total`` counters (``rate()`` works on them)."""
    async with open_hub(hook_buffer_limit=2, metrics=HubMetrics(registry)) as hub:
        publisher = hub.register_publisher()
        for index in range(5):
            publisher.publish_heartbeat(heartbeat(index))
        types = {
            family.name: family.type
            for family in text_string_to_metric_families(generate_latest(registry).decode())
        }
        assert types["workflow_hub_epochs_started"] == "counter"
        assert types["workflow_hub_hook_events_dropped"] == "counter"
        assert value(registry, "workflow_hub_epochs_started_total") == 2
        assert value(registry, "workflow_hub_hook_events_dropped_total") == 3


# --- a counter never decreases, even scraped from another thread (issue 12.2) ------------------


ROUNDS = 400


async def test_frames_delivered_never_decreases_under_a_scraping_thread(
    registry: CollectorRegistry,
) -> None:
    """prometheus-client scrapes from its own thread while the hub changes what it reads.

    Observers come and go, overflow and drain while a thread scrapes as fast as it can, with
    thread switches forced every 10 µs. Every scrape's ``frames_delivered_total`` is at least
    the one before, and when the hub is quiet it is exact.
    """
    metrics = HubMetrics(registry)
    scraped: list[float] = []
    stop = threading.Event()

    def scrape_until_stopped() -> None:
        while not stop.is_set():
            for family in metrics.collect():
                if family.name == "workflow_hub_frames_delivered":
                    scraped.append(family.samples[0].value)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    scraper = threading.Thread(target=scrape_until_stopped)
    try:
        scraper.start()
        async with open_hub(queue_limit=4, metrics=metrics) as hub:
            delivered = 0

            def count(frame: Frame) -> None:
                nonlocal delivered
                delivered += 1

            publisher = hub.register_publisher()
            leases = [hub.observe(count) for _ in range(40)]
            for round_ in range(ROUNDS):
                # Overflows (a burst past the queue limit), disposals and new observers.
                for index in range(6):
                    publisher.publish_changed(root(str(index)))
                await trio.lowlevel.checkpoint()
                leases[round_ % len(leases)].dispose()
                leases[round_ % len(leases)] = hub.observe(count)
                await trio.lowlevel.checkpoint()
            for lease in leases:
                lease.dispose()
            await trio.testing.wait_all_tasks_blocked()
            stop.set()
            scraper.join()
            assert value(registry, "workflow_hub_frames_delivered_total") == delivered
    finally:
        stop.set()
        sys.setswitchinterval(interval)
    assert len(scraped) > 10
    decreases = [(a, b) for a, b in itertools.pairwise(scraped) if b < a]
    assert decreases == [], f"{len(decreases)} decreases in {len(scraped)} scrapes"
    assert scraped[-1] <= delivered


# --- one set of series across reloads (issue 12.3) ---------------------------------------------


async def test_one_metrics_object_follows_each_new_hub_without_keeping_the_old_one(
    registry: CollectorRegistry,
) -> None:
    """A reload gives the same HubMetrics to the new hub: counters go on, gauges follow it.

    The old hub is freed once the host lets go of it: nothing in the registry holds it.
    """
    metrics = HubMetrics(registry)
    old_hub: WorkflowActivityHub | None
    async with open_hub(metrics=metrics) as old_hub:
        old_hub.observe(lambda frame: None)
        old_hub.register_publisher().publish_snapshot("ready", [root("a")])
        await trio.testing.wait_all_tasks_blocked()
    assert metrics.hub is old_hub
    before = scrape(registry)
    gone = weakref.ref(old_hub)
    old_hub = None
    gc.collect()
    assert gone() is None, "the metrics kept the old hub alive"
    assert metrics.hub is None
    async with open_hub(metrics=metrics) as new_hub:
        new_hub.observe(lambda frame: None)
        new_hub.register_publisher().publish_changed(root("b"))
        await trio.testing.wait_all_tasks_blocked()
        assert metrics.hub is new_hub
        after = scrape(registry)
        # Counters continue from the old hub's totals; no counter goes back.
        for key, count in before.items():
            if key[0].endswith(("_total", "_bucket", "_count", "_sum")):
                assert after[key] >= count, key
        assert after["workflow_hub_epochs_started_total", ()] == 4
        assert after["workflow_hub_frames_delivered_total", ()] == 3 + 3
        assert after["workflow_hub_revision", ()] == new_hub.cursor.revision == 1
        assert after["workflow_hub_observers", ()] == 1


async def test_overlapping_generations_count_only_the_newest_hub(
    registry: CollectorRegistry,
) -> None:
    """Generations overlap during a handover: the metrics follow the newest, and the old one's
    later work is not counted (it is frozen at the handover)."""
    metrics = HubMetrics(registry)
    async with open_hub(metrics=metrics) as old_hub, open_hub(metrics=metrics) as new_hub:
        old_hub.register_publisher().publish_snapshot("ready", [])
        assert metrics.hub is new_hub
        assert value(registry, "workflow_hub_frames_published_total", kind="snapshot") == 0
        assert value(registry, "workflow_hub_epochs_started_total") == 2


def test_a_second_hub_metrics_on_one_registry_says_what_to_do(registry: CollectorRegistry) -> None:
    """Two HubMetrics would export the same series: the second is refused with advice, and
    ``unregister()`` lets a new one take the names."""
    first = HubMetrics(registry)
    with pytest.raises(ValueError, match=r"already registered.*unregister"):
        HubMetrics(registry)
    first.unregister()
    first.unregister()
    assert scrape(registry) == {}
    second = HubMetrics(registry)
    WorkflowActivityHub(metrics=second)
    assert value(registry, "workflow_hub_epochs_started_total") == 1


async def test_the_hub_reports_to_any_instrumentation() -> None:
    """The core's interface (13.3): a hub reports to whatever ``instrument()`` returned.

    The interface is internal (``workflow_hub._core._instruments``): imported by its private name."""
    from workflow_hub._core._instruments import HubInstruments

    calls: list[tuple[str, object]] = []

    class Recorder:
        def __getattr__(self, name: str) -> object:
            return lambda *args: calls.append((name, args))

    class Instrumentation:
        def instrument(self, hub: WorkflowActivityHub, *, queue_limit: int) -> HubInstruments:
            calls.append(("instrument", queue_limit))
            return Recorder()  # type: ignore[return-value]

    limit = 2 * LAG_SAMPLE_EVERY  # no overflow
    async with open_hub(queue_limit=limit, metrics=Instrumentation()) as hub:  # type: ignore[arg-type]
        hub.observe(lambda frame: None)
        publisher = hub.register_publisher()
        for index in range(LAG_SAMPLE_EVERY):
            publisher.publish_changed(root(str(index)))
        await trio.testing.wait_all_tasks_blocked()
    names = [name for name, _ in calls]
    assert calls[0] == ("instrument", limit)
    assert names.count("epoch_started") == 2
    assert names.count("frame_published") == 1 + LAG_SAMPLE_EVERY
    # LAG_SAMPLE_EVERY + 2 deliveries (two snapshots, the changes): the 1st and one more sampled.
    assert names.count("sample_lag") == sampled(LAG_SAMPLE_EVERY + 2) == 2
