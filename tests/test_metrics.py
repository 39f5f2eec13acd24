"""Prometheus metrics: exact values after scripted scenarios, scraped and parsed as text."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from workflow_hub import ContractError, Frame, WorkflowActivityHub, open_hub
from workflow_hub.metrics import HubMetrics

from .builders import heartbeat, root, stage_lifecycle


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
        assert value(registry, "workflow_hub_epochs_started") == 2
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


def test_one_metrics_object_serves_one_hub(registry: CollectorRegistry) -> None:
    metrics = HubMetrics(registry)
    WorkflowActivityHub(metrics=metrics)
    with pytest.raises(RuntimeError, match="one hub"):
        WorkflowActivityHub(metrics=metrics)


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
    """The lag histogram: cumulative buckets, one sample per 32 deliveries of each observer."""
    async with open_hub(metrics=HubMetrics(registry)) as hub:
        hub.observe(lambda frame: None)
        hub.observe(lambda frame: None)
        publisher = hub.register_publisher()
        for index in range(68):
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
        # Each observer: 70 deliveries (attach snapshot, register snapshot, 68 changes),
        # sampled at its 1st, 33rd and 65th.
        assert value(registry, "workflow_hub_frames_delivered_total") == 140
        assert buckets[-1] == (float("inf"), 6)
        assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 6
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
        for index in range(200):
            await trio.testing.wait_all_tasks_blocked()
            publisher.publish_changed(root(str(index % 7)))
        await trio.testing.wait_all_tasks_blocked()
        assert "ObserverOverflow" not in [d.kind for d in hub.diagnostics()]
        # 202 deliveries (attach snapshot, register snapshot, 200 changes), sampled 1 in 32.
        assert value(registry, "workflow_hub_frames_delivered_total") == 202
        assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 7


def test_publication_times_cover_two_generations(registry: CollectorRegistry) -> None:
    """The newest frames' times are found across a generation swap; the oldest are forgotten."""
    from workflow_hub import ChangedFrame, Cursor

    metrics = HubMetrics(registry)
    WorkflowActivityHub(queue_limit=1, metrics=metrics)  # generations of 2 * 1 + 32 = 34
    frames = [
        ChangedFrame(cursor=Cursor(epoch="e", revision=index), root=root()) for index in range(100)
    ]
    for frame in frames:
        metrics.frame_built(frame)
    metrics.sample_lag(frames[-1])  # the newest generation
    metrics.sample_lag(frames[-40])  # the generation before
    assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 2
    metrics.sample_lag(frames[0])  # long gone: no sample
    assert value(registry, "workflow_hub_delivery_lag_seconds_count") == 2
