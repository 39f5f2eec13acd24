"""Conflation (issue 29): the bytes a lagging SSE client is sent, conflated or not, at one lag.

One publisher changes roots from a pool of 64 (``ROOT_POOL_SIZE``), one ``publish_changed`` after
another. Two subscribers of the same hub stand for two SSE clients that lag by L frames: each
takes its backlog (``receive_all()``) once every L publications and turns it into the bytes the
server would write (the server's own ``FrameEncoder.backlog``). One subscribed with
``conflate=True`` (what ``?conflate=1`` asks for), the other did not. At the same publication
rate, the ratio of bytes per publication is the ratio of bytes per second. Lags stay under the
queue limit (256), so the unconflated client is never overflowed into a snapshot: it is sent
every frame, the conflated one each root's latest frame of the backlog. The figure is bytes,
not time, so it does not depend on the machine's load. Every run checks that both clients fold
to the hub's state after every backlog.
"""

from __future__ import annotations

from _harness import (
    ROOT_POOL_SIZE,
    BenchmarkError,
    HubFactory,
    Row,
    Scale,
    make_roots,
    run_script,
    run_trio,
)
from workflow_hub import (
    ChangedFrame,
    Frame,
    RemovedFrame,
    RootActivity,
    SnapshotFrame,
    WorkflowActivityHub,
)
from workflow_hub.server._encode import FrameEncoder

LAGS = (1, 10, 100, 200)
PUBLICATIONS = {"full": 20_000, "quick": 4_000, "smoke": 400}


def _fold(held: dict[str, RootActivity], frames: list[Frame]) -> None:
    for frame in frames:
        if isinstance(frame, SnapshotFrame):
            held.clear()
            held.update((root.root_run_id, root) for root in frame.roots or ())
        elif isinstance(frame, ChangedFrame):
            held[frame.root.root_run_id] = frame.root
        elif isinstance(frame, RemovedFrame):
            held.pop(frame.root_run_id, None)


async def _bytes_sent(hub_factory: HubFactory, lag: int, publications: int) -> tuple[int, int]:
    """Bytes sent to (a conflating client, an unconflated client) lagging ``lag`` frames."""
    roots = make_roots(ROOT_POOL_SIZE)
    encoder = FrameEncoder()
    sent = [0, 0]
    held: list[dict[str, RootActivity]] = [{}, {}]
    async with hub_factory() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        async with hub.subscribe(conflate=True) as conflated, hub.subscribe() as plain:
            streams = (conflated, plain)
            for index in range(publications):
                publisher.publish_changed(roots[index % ROOT_POOL_SIZE])
                if (index + 1) % lag:
                    continue
                expected = hub.snapshot_frame().roots
                assert expected is not None
                for which, stream in enumerate(streams):
                    backlog = await stream.receive_all()
                    sent[which] += len(encoder.backlog(backlog))
                    _fold(held[which], backlog)
                    if held[which] != {root.root_run_id: root for root in expected}:
                        raise BenchmarkError("a client's fold is not the hub's state")
            if plain.lease.pending or conflated.lease.pending:
                raise BenchmarkError("a backlog was left unsent")
    return sent[0], sent[1]


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    # Bytes do not depend on the hub's options (metrics on or off): measured once.
    if label != "hub":
        return []
    publications = PUBLICATIONS.get(scale.name, PUBLICATIONS["full"])
    rows: list[Row] = []
    for lag in LAGS:
        conflated, plain = run_trio(_bytes_sent, hub_factory, lag, publications)
        rows.append(
            Row(
                benchmark="conflation",
                case=f"SSE bytes per publication, lag {lag} frames, ?conflate=1",
                variant=label,
                value=conflated / publications,
                unit="B",
                reference="unconflated, same lag",
                reference_value=plain / publications,
            )
        )
    return rows


if __name__ == "__main__":
    run_script(run)
