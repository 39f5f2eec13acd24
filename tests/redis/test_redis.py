"""Mirroring hubs into Redis Streams and following them back, against a real redis-server.

SPEC N1-N3: a follower folds what the hub holds, through trims, a restart without persistence
and cut connections, never seeing a gap without a snapshot; the newest mirror of a source wins;
a fleet is discovered and followed as one.
"""

from __future__ import annotations

import contextlib
import functools
import random
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from tests.support.builders import root
from tests.support.processes import OwnedProcesses, lines_until
from tests.support.redis_server import CuttableProxy, RedisServer, eventually
from workflow_hub import (
    Availability,
    ChangedFrame,
    ContractError,
    Cursor,
    Frame,
    RemovedFrame,
    SnapshotFrame,
    WorkflowActivityHub,
    open_hub,
    wire,
)
from workflow_hub.redis import (
    FleetView,
    Mirror,
    MirrorMetrics,
    RedisSource,
    SourceStream,
    follow_fleet,
    follow_source,
    mirror_hub,
)
from workflow_hub.reporting import ActivityView, AggregateState, run_reporter

STATES = [
    ("working", "executing", 1, 0),
    ("working", "retrying", 1, 0),
    ("blocked", "awaiting_input", 0, 1),
    ("idle", "quiescent", 0, 0),
    ("idle", "paused", 0, 0),
]


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def client(url: str) -> AsyncIterator[coredis.Redis[bytes]]:
    async with coredis.Redis.from_url(url) as redis:
        yield redis


def random_root(rng: random.Random, ids: int = 30):  # type: ignore[no-untyped-def]
    state, reason, active, blocks = rng.choice(STATES)
    return root(
        f"root-{rng.randrange(ids)}",
        state=state,
        reason=reason,
        active=active,
        blocks=blocks,
        attention=rng.random() < 0.1,
    )


def publish_random(publisher, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    roll = rng.random()
    if roll < 0.75:
        publisher.publish_changed(random_root(rng))
    elif roll < 0.97:
        publisher.publish_removed(f"root-{rng.randrange(30)}")
    else:
        roots = [random_root(rng) for _ in range(rng.randrange(8))]
        publisher.publish_snapshot(Availability.READY, roots)


class ContinuityChecker:
    """Fails on any frame that continues a sequence it does not follow: a gap without a snapshot.

    The hubs in these tests publish no lifecycle events, so within an epoch every changed or
    removed frame is exactly one revision after the frame before it.
    """

    def __init__(self) -> None:
        self.cursor: Cursor | None = None
        self.frames = 0
        self.snapshots = 0
        self.stream: SourceStream | None = None

    def check(self, frame: Frame) -> None:
        self.frames += 1
        if isinstance(frame, SnapshotFrame):
            self.snapshots += 1
        else:
            assert isinstance(frame, ChangedFrame | RemovedFrame)
            assert self.cursor is not None, "a change before any snapshot"
            assert frame.cursor.epoch == self.cursor.epoch, "a change of another epoch"
            assert frame.cursor.revision == self.cursor.revision + 1, (
                f"gap: revision {frame.cursor.revision} after {self.cursor.revision}"
            )
        self.cursor = frame.cursor


async def wait_until_folded(view: ActivityView, hub: WorkflowActivityHub, seconds: float) -> None:
    with trio.fail_after(seconds):
        await eventually(lambda: view.cursor == hub.cursor and view.in_sync and view.known)


async def follow_into(
    redis: coredis.Redis[bytes],
    source: str,
    prefix: str,
    view: ActivityView,
    checker: ContinuityChecker,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    async with follow_source(redis, source=source, prefix=prefix, block=0.05) as stream:
        checker.stream = stream
        task_status.started()
        async for frame in stream:
            checker.check(frame)
            assert view.apply(frame).applied, f"the view refused {frame!r}"


async def trim_below(admin: coredis.Redis[bytes], key: str, keep: int) -> int:
    """Trim ``key`` to at most ``keep`` entries, the first of them not a snapshot (a snapshot
    would restart the sequence, so a follower would lose nothing); returns its ``seq``."""
    newest = await admin.xrevrange(key, count=keep)
    for kept, entry in reversed(list(enumerate(newest, start=1))):
        frame = wire.loads(
            SnapshotFrame | ChangedFrame | RemovedFrame, entry.field_values[b"frame"]
        )
        if not isinstance(frame, SnapshotFrame):
            await admin.xtrim(key, threshold=kept, trim_strategy="maxlen")
            return int(entry.field_values[b"seq"])
    raise AssertionError(f"the newest {keep} entries are all snapshots")


async def make_the_follower_lose_continuity(
    mirror: Mirror,
    stream: SourceStream,
    admin: coredis.Redis[bytes],
    key: str,
    stalled: CuttableProxy,
    seq_at_stall: int,
) -> None:
    """The follower's connection stalled at ``seq_at_stall``: once the mirror appended well
    beyond it, trim the stream below that, release the follower and wait for its resync.

    The follower had read everything when it stalled, so it can hold at most the first append
    after the stall (a blocked XREAD is answered by it, the reply held in the proxy): a few
    frames, published before the loop first yields. Trimmed to the newest 10 of 150 or more
    later entries, the gap is certain, whatever the timing.
    """
    with trio.fail_after(10):
        await eventually(lambda: mirror.statistics().last_seq >= seq_at_stall + 150)
    resyncs_before = stream.statistics().resyncs
    first_kept = await trim_below(admin, key, 10)
    assert first_kept > seq_at_stall + 100
    stalled.release()
    with trio.fail_after(10):
        await eventually(lambda: stream.statistics().resyncs > resyncs_before)


@pytest.mark.parametrize("seed", [1, 2])
async def test_follower_folds_the_hub_through_trims_a_restart_and_cut_connections(
    own_redis_server: RedisServer, prefix: str, seed: int
) -> None:
    """N2: 5 000 random frames, random trims, a Redis restart and two connection cuts; the
    follower ends with the hub's roots and never saw a gap without a snapshot.

    A follower that keeps up need not lose continuity at all (the sequence survives shallow
    trims and the restart when it had read everything), so once it is made to: its connection
    stalls while the mirror appends a few hundred frames and the stream is trimmed below what
    it has read; released, it must find the gap and resync from the checkpoint.
    """
    rng = random.Random(seed)
    server = own_redis_server
    view = ActivityView()
    checker = ContinuityChecker()
    frames_key = f"{prefix}:sched:frames"
    with trio.fail_after(60):
        async with open_hub() as hub, trio.open_nursery() as nursery:
            proxy = CuttableProxy(server.port)
            await nursery.start(proxy.run)
            follower_proxy = CuttableProxy(server.port)
            await nursery.start(follower_proxy.run)
            async with (
                client(proxy.url) as via_proxy,
                client(follower_proxy.url) as follower_redis,
                client(server.url) as admin,
            ):
                publisher = hub.register_publisher()
                publisher.publish_snapshot(Availability.READY, [])
                mirror = await nursery.start(
                    functools.partial(
                        mirror_hub,
                        hub,
                        via_proxy,
                        source="sched",
                        prefix=prefix,
                        maxlen=400,
                        checkpoint_every=100,
                        refresh_interval=0.05,
                    )
                )
                await nursery.start(follow_into, follower_redis, "sched", prefix, view, checker)
                assert checker.stream is not None
                stream = checker.stream
                trims = 0
                connections_before_cuts = 0
                seq_at_stall = 0
                for index in range(5_000):
                    publish_random(publisher, rng)
                    if index % 5 == 0:
                        await trio.sleep(0.0002)
                    if rng.random() < 0.004:
                        trims += 1
                        # (A trim may meet the server restarting right now.)
                        with contextlib.suppress(coredis.exceptions.ConnectionError):
                            await admin.xtrim(
                                frames_key,
                                threshold=rng.randrange(20),
                                trim_strategy="maxlen",
                            )
                    if index == 1_800:
                        # Caught up and reading entries (not waiting for a checkpoint), so the
                        # only way it can lose continuity now is the gap made below.
                        await wait_until_folded(view, hub, 10)
                        follower_proxy.stall()
                        seq_at_stall = mirror.statistics().last_seq
                    if index == 2_200:
                        await make_the_follower_lose_continuity(
                            mirror, stream, admin, frames_key, follower_proxy, seq_at_stall
                        )
                        trims += 1
                    if index == 2_500:
                        server.restart()
                    if index in (1_200, 3_800):
                        if index == 1_200:
                            connections_before_cuts = proxy.connections
                        proxy.cut()
                        follower_proxy.cut()
                await wait_until_folded(view, hub, 30)
                assert view.roots == hub.snapshot_frame().roots
                assert view.rejected == 0
                statistics = mirror.statistics()
                assert statistics.reclaims >= 1, "the restart went unnoticed by the mirror"
                assert trims > 0
                follower = stream.statistics()
                assert follower.resyncs > 0, "continuity was never lost: the test proved nothing"
                assert follower_proxy.stalls == 1
                assert proxy.connections > connections_before_cuts, "no cut hit a connection"
                assert follower_proxy.connections > 1, "no cut hit the follower's connection"
                assert checker.frames - checker.snapshots > 1_000, "hardly any change was streamed"
                nursery.cancel_scope.cancel()


async def test_a_late_follower_starts_from_the_checkpoint(
    redis_server: RedisServer, prefix: str
) -> None:
    """N2: a follower that joins after thousands of frames gets the current state first."""
    rng = random.Random(7)
    with trio.fail_after(20):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [])
            await nursery.start(
                functools.partial(
                    mirror_hub, hub, redis, source="late", prefix=prefix, refresh_interval=0.05
                )
            )
            for index in range(2_000):
                publish_random(publisher, rng)
                if index % 50 == 0:
                    await trio.sleep(0.001)
            view = ActivityView()
            checker = ContinuityChecker()
            await nursery.start(follow_into, redis, "late", prefix, view, checker)
            await wait_until_folded(view, hub, 15)
            assert view.roots == hub.snapshot_frame().roots
            nursery.cancel_scope.cancel()


async def test_stream_entries_carry_consecutive_sequence_numbers_and_wire_frames(
    redis_server: RedisServer, prefix: str
) -> None:
    """The entry format of docs/fleet.md: ``seq`` counts up by one, ``frame`` is wire JSON."""
    with trio.fail_after(10):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            mirror = await nursery.start(
                functools.partial(mirror_hub, hub, redis, source="fmt", prefix=prefix)
            )
            publisher.publish_changed(root("b"))
            publisher.publish_removed("a")
            with trio.fail_after(5):
                await eventually(lambda: mirror.statistics().frames >= 3)
            entries = await redis.xrange(f"{prefix}:fmt:frames")
            seqs = [int(entry.field_values[b"seq"]) for entry in entries]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
            frames = [
                wire.loads(
                    SnapshotFrame | ChangedFrame | RemovedFrame, entry.field_values[b"frame"]
                )
                for entry in entries
            ]
            assert [frame.kind for frame in frames] == ["snapshot", "changed", "removed"]
            # The checkpoint is the state as of its entry: that entry's cursor, the roots so far.
            checkpoint = await redis.hgetall(f"{prefix}:fmt:checkpoint")
            snapshot = wire.loads(SnapshotFrame, checkpoint[b"frame"])
            position = [entry.identifier for entry in entries].index(checkpoint[b"id"])
            assert snapshot.cursor == frames[position].cursor
            assert int(checkpoint[b"seq"]) == seqs[position]
            if position == len(frames) - 1:
                assert snapshot.roots == hub.snapshot_frame().roots
            sources = dict(await redis.zrange(f"{prefix}:sources", 0, -1, withscores=True))
            assert b"fmt" in sources
            nursery.cancel_scope.cancel()


async def test_only_the_newest_mirror_appends_after_it_claimed(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """N3: two mirrors of one source with interleaved publishing: after the second claims the
    source, only its frames reach the stream, and the first stops, fenced, for good (with a log
    line and a metric)."""
    registry = CollectorRegistry()
    metrics = MirrorMetrics(registry)
    with trio.fail_after(20):
        async with (
            open_hub() as old_hub,
            open_hub() as new_hub,
            trio.open_nursery() as nursery,
            client(redis_server.url) as old_redis,
            client(redis_server.url) as new_redis,
        ):
            old_publisher = old_hub.register_publisher()
            old_publisher.publish_snapshot(Availability.READY, [])
            old_mirror = await nursery.start(
                functools.partial(
                    mirror_hub,
                    old_hub,
                    old_redis,
                    source="twin",
                    prefix=prefix,
                    refresh_interval=0.02,
                    metrics=metrics,
                )
            )
            await old_mirror.wait_claimed()
            for index in range(20):
                old_publisher.publish_changed(root(f"old-{index}"))
                await trio.sleep(0.001)
            new_publisher = new_hub.register_publisher()
            new_publisher.publish_snapshot(Availability.READY, [])
            new_mirror = await nursery.start(
                functools.partial(
                    mirror_hub,
                    new_hub,
                    new_redis,
                    source="twin",
                    prefix=prefix,
                    refresh_interval=0.02,
                )
            )
            await new_mirror.wait_claimed()
            claimed_at = (await redis_last_id(new_redis, f"{prefix}:twin:frames")) or b"0-0"
            for index in range(50):
                old_publisher.publish_changed(root(f"old-late-{index}"))
                new_publisher.publish_changed(root(f"new-{index}"))
                await trio.sleep(0.002)
            with trio.fail_after(5):
                await eventually(lambda: old_mirror.fenced and new_mirror.statistics().frames >= 51)
            entries = await new_redis.xrange(f"{prefix}:twin:frames", start=claimed_at)
            epochs = {
                wire.loads(
                    SnapshotFrame | ChangedFrame | RemovedFrame, entry.field_values[b"frame"]
                ).cursor.epoch
                for entry in entries
                if entry.identifier != claimed_at
            }
            assert epochs == {new_hub.cursor.epoch}
            assert old_mirror.statistics().fenced
            assert not old_mirror.statistics().claimed
            fenced = registry.get_sample_value(
                "workflow_hub_mirror_fenced_total", {"source": "twin"}
            )
            assert fenced == 1
            assert any("fenced" in record.getMessage() for record in caplog.records)
            # The fenced mirror never claims again: more publishing appends nothing of its own.
            old_publisher.publish_changed(root("old-after-fence"))
            await trio.sleep(0.1)
            later = await new_redis.xrange(f"{prefix}:twin:frames", start=claimed_at)
            assert all(b"old-after-fence" not in entry.field_values[b"frame"] for entry in later)
            nursery.cancel_scope.cancel()


async def redis_last_id(redis: coredis.Redis[bytes], key: str) -> bytes | None:
    entries = await redis.xrevrange(key, count=1)
    return entries[0].identifier if entries else None


async def test_an_old_instance_that_reclaims_after_a_restart_loses_to_the_newer_one(
    own_redis_server: RedisServer, prefix: str
) -> None:
    """N3 across a restart without persistence: the claim order survives in the mirrors, so an
    older instance that reclaims first is fenced as soon as the newer one appends again.

    Each mirror talks to Redis only when its hub publishes (the refresh interval is longer than
    the test), and each has appended what its hub holds before the next step, so the steps
    happen in the order written. (A claimed mirror still has its first snapshot to append: when
    that append, or a refresh, came after the newer claim, the old mirror was fenced before the
    restart and the owner read after it found nothing: the flake this order removes.)"""
    server = own_redis_server
    owner_key = f"{prefix}:s:owner"
    quiet = 60.0  # no refresh of its own during the test: a mirror appends when its hub publishes

    def appended_all(mirror: Mirror, hub: WorkflowActivityHub) -> bool:
        return mirror.appended_cursor == hub.snapshot_frame().cursor

    async def owner_epoch() -> str:
        owner = await redis.hgetall(owner_key)
        return owner[b"epoch"].decode() if b"epoch" in owner else ""

    with trio.fail_after(20):
        async with (
            open_hub() as old_hub,
            open_hub() as new_hub,
            trio.open_nursery() as nursery,
            client(server.url) as redis,
        ):
            old_publisher = old_hub.register_publisher()
            old_publisher.publish_snapshot(Availability.READY, [])
            old_mirror = await nursery.start(
                functools.partial(
                    mirror_hub, old_hub, redis, source="s", prefix=prefix, refresh_interval=quiet
                )
            )
            await old_mirror.wait_claimed()
            await eventually(lambda: appended_all(old_mirror, old_hub))
            new_publisher = new_hub.register_publisher()
            new_publisher.publish_snapshot(Availability.READY, [])
            new_mirror = await nursery.start(
                functools.partial(
                    mirror_hub, new_hub, redis, source="s", prefix=prefix, refresh_interval=quiet
                )
            )
            await new_mirror.wait_claimed()
            await eventually(lambda: appended_all(new_mirror, new_hub))
            assert await owner_epoch() == new_mirror.epoch
            assert not old_mirror.fenced, "the old mirror has not appended since"

            server.restart()
            assert await owner_epoch() == "", "the restart lost the owner"
            # The old instance appends first: it finds no owner and reclaims with its old order.
            old_publisher.publish_changed(root("old"))
            await eventually(lambda: old_mirror.statistics().reclaims == 1)
            assert await owner_epoch() == old_mirror.epoch
            # The newer one appends: its later claim order takes the source back.
            new_publisher.publish_changed(root("new"))
            await eventually(lambda: new_mirror.statistics().reclaims == 1)
            assert await owner_epoch() == new_mirror.epoch
            # The old one's next append is fenced, and it stops.
            old_publisher.publish_changed(root("old-again"))
            await eventually(lambda: old_mirror.fenced)
            assert not new_mirror.fenced
            assert await owner_epoch() == new_mirror.epoch
            nursery.cancel_scope.cancel()


async def test_a_fleet_of_twenty_hubs_is_followed_by_one_follow_fleet(
    redis_server: RedisServer, prefix: str
) -> None:
    """A fleet: every source's view equals its hub; a source whose mirror stops is marked
    unavailable (unknown, never idle)."""
    rng = random.Random(20)
    fleet_view = FleetView()
    with trio.fail_after(40):
        async with (
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
            client(redis_server.url) as reader,
        ):
            hubs: dict[str, WorkflowActivityHub] = {}
            publishers = {}
            mirror_scopes: dict[str, trio.CancelScope] = {}
            for index in range(20):
                source = f"sched-{index:02d}"
                hub = await nursery.start(run_hub)
                hubs[source] = hub
                publishers[source] = hub.register_publisher()
                publishers[source].publish_snapshot(Availability.READY, [])
                scope = trio.CancelScope()
                mirror_scopes[source] = scope
                await nursery.start(run_mirror, scope, hub, redis, source, prefix)

            async def fold() -> None:
                async with follow_fleet(
                    reader, prefix=prefix, stale_after=0.5, poll_interval=0.05, block=0.05
                ) as fleet:
                    async for source, frame in fleet:
                        assert fleet_view.apply(source, frame).applied

            nursery.start_soon(fold)
            for _ in range(2_000):
                source = rng.choice(list(hubs))
                publish_random(publishers[source], rng)
                if rng.random() < 0.05:
                    await trio.sleep(0.001)
            with trio.fail_after(20):
                await eventually(
                    lambda: all(
                        (view := fleet_view.views.get(source)) is not None
                        and view.cursor == hub.cursor
                        and view.known
                        for source, hub in hubs.items()
                    )
                )
            for source, hub in hubs.items():
                assert fleet_view.views[source].roots == hub.snapshot_frame().roots, source
            # A scheduler that starts later is discovered too.
            late = await nursery.start(run_hub)
            late.register_publisher().publish_snapshot(Availability.READY, [root("late")])
            await nursery.start(run_mirror, trio.CancelScope(), late, redis, "sched-late", prefix)
            with trio.fail_after(10):
                await eventually(
                    lambda: (view := fleet_view.views.get("sched-late")) is not None and view.known
                )
            assert fleet_view.views["sched-late"].roots == late.snapshot_frame().roots
            assert fleet_view.aggregate().state is not AggregateState.UNKNOWN
            # One scheduler goes away: its source stops refreshing and becomes unknown.
            mirror_scopes["sched-07"].cancel()
            with trio.fail_after(10):
                await eventually(
                    lambda: fleet_view.views["sched-07"].availability is Availability.UNAVAILABLE
                )
            assert fleet_view.statuses()["sched-07"].state is AggregateState.UNKNOWN
            assert fleet_view.views["sched-03"].known
            assert fleet_view.aggregate().state is not AggregateState.IDLE  # unknown is not idle
            # The scheduler comes back (a new mirror of the same hub): its state does too.
            publish_random(publishers["sched-07"], rng)
            await nursery.start(
                run_mirror, trio.CancelScope(), hubs["sched-07"], redis, "sched-07", prefix
            )
            with trio.fail_after(10):
                await eventually(
                    lambda: (
                        fleet_view.views["sched-07"].known
                        and fleet_view.views["sched-07"].cursor == hubs["sched-07"].cursor
                    )
                )
            assert fleet_view.views["sched-07"].roots == hubs["sched-07"].snapshot_frame().roots
            nursery.cancel_scope.cancel()


async def run_hub(*, task_status: trio.TaskStatus[WorkflowActivityHub]) -> None:
    async with open_hub() as hub:
        task_status.started(hub)
        await trio.sleep_forever()


async def run_mirror(
    scope: trio.CancelScope,
    hub: WorkflowActivityHub,
    redis: coredis.Redis[bytes],
    source: str,
    prefix: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    with scope:
        async with trio.open_nursery() as nursery:
            mirror = await nursery.start(
                functools.partial(
                    mirror_hub, hub, redis, source=source, prefix=prefix, refresh_interval=0.05
                )
            )
            await mirror.wait_claimed()
            task_status.started()


async def test_run_reporter_works_on_a_remote_source(
    redis_server: RedisServer, prefix: str
) -> None:
    """The remote stream has the local stream's API: run_reporter folds it unchanged."""
    with trio.fail_after(10):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            await nursery.start(
                functools.partial(mirror_hub, hub, redis, source="rep", prefix=prefix)
            )
            changes = []
            view = await nursery.start(
                run_reporter,
                RedisSource(redis, "rep", prefix=prefix),
                lambda v, c: changes.append(c),
            )
            publisher.publish_changed(
                root("b", state="blocked", reason="awaiting_input", active=0, blocks=1)
            )
            await wait_until_folded(view, hub, 5)
            assert [r.root_run_id for r in view.roots] == ["a", "b"]
            assert all(change.applied for change in changes)
            nursery.cancel_scope.cancel()


async def test_bad_arguments_are_contract_errors_naming_the_field(
    redis_server: RedisServer,
) -> None:
    """C1: bad options raise ContractError naming the field, before anything happens."""
    async with open_hub() as hub, client(redis_server.url) as redis:
        with pytest.raises(ContractError, match="source"):
            await mirror_hub(hub, redis, source="")
        with pytest.raises(ContractError, match="checkpoint_every"):
            await mirror_hub(hub, redis, source="s", maxlen=100, checkpoint_every=80)
        with pytest.raises(ContractError, match="refresh_interval"):
            await mirror_hub(hub, redis, source="s", refresh_interval=0)
        with pytest.raises(ContractError, match="count"):
            async with follow_source(redis, source="s", count=0):
                pass
        with pytest.raises(ContractError, match="stale_after"):
            async with follow_fleet(redis, stale_after=-1):
                pass


def test_serve_mirrors_the_demo_and_watch_shows_the_fleet(
    redis_server: RedisServer, prefix: str, owned: OwnedProcesses
) -> None:
    """``workflow-hub serve --redis --no-http`` mirrors the demo scheduler; ``workflow-hub watch
    redis://`` shows it (plain lines when stdout is not a terminal)."""
    command = [sys.executable, "-m", "workflow_hub._cli"]
    serve = owned.start(
        [
            *command,
            *("serve", "--redis", redis_server.url, "--source", "cli-demo", "--no-http"),
            *("--prefix", prefix, "--seed", "1"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    # Both run until the watch has shown the source working (events, not two --duration
    # guesses that a loaded machine outruns), then Ctrl-C ends each.
    watch = owned.start(
        [*command, "watch", redis_server.url, "--prefix", prefix],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        shown = lines_until(
            watch, lambda lines: any(line.startswith("fleet working: 1 source") for line in lines)
        )
        watch.send_signal(signal.SIGINT)
        _, watch_err = watch.communicate(timeout=30)
    finally:
        serve.send_signal(signal.SIGINT)
        _, serve_err = serve.communicate(timeout=30)
    assert serve.returncode == 0, serve_err
    assert "cli-demo" in serve_err
    assert watch.returncode == 0, watch_err
    assert any(line.startswith("cli-demo: ") for line in shown)
    assert any("working" in line for line in shown)


async def test_a_follower_shows_unknown_when_redis_lost_a_quiet_source_until_it_returns(
    own_redis_server: RedisServer, prefix: str
) -> None:
    """N2: a restart loses the stream of a source whose mirror is gone; no entry will reveal
    it, so the follower notices by itself, says unavailable, and resyncs when a mirror returns."""
    server = own_redis_server
    view = ActivityView()
    checker = ContinuityChecker()
    with trio.fail_after(20):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            client(server.url) as redis,
            client(server.url) as reader,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a"), root("b")])
            first = trio.CancelScope()
            await nursery.start(run_mirror, first, hub, redis, "quiet", prefix)
            await nursery.start(follow_into, reader, "quiet", prefix, view, checker)
            await wait_until_folded(view, hub, 5)
            first.cancel()
            server.restart()
            with trio.fail_after(5):
                await eventually(lambda: view.availability is Availability.UNAVAILABLE)
            assert view.roots == ()
            publisher.publish_changed(root("c"))
            await nursery.start(run_mirror, trio.CancelScope(), hub, redis, "quiet", prefix)
            await wait_until_folded(view, hub, 5)
            assert view.roots == hub.snapshot_frame().roots
            nursery.cancel_scope.cancel()


_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(1, 60)),
        st.tuples(st.just("trim"), st.integers(0, 30)),
        st.tuples(st.just("pause"), st.just(0)),
    ),
    max_size=12,
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=_OPERATIONS, seed=st.integers(0, 2**16))
async def test_any_sequence_of_publishing_and_trimming_folds_to_the_hub_without_a_gap(
    redis_server: RedisServer, operations: list[tuple[str, int]], seed: int
) -> None:
    """N2 as a property: whatever is published and however the stream is trimmed (even below
    the checkpoint), the follower ends with the hub's roots and never saw a gap."""
    rng = random.Random(seed)
    prefix = f"prop-{uuid.uuid4().hex[:8]}"
    view = ActivityView()
    checker = ContinuityChecker()
    with trio.fail_after(30):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
            client(redis_server.url) as reader,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [])
            await nursery.start(
                functools.partial(
                    mirror_hub,
                    hub,
                    redis,
                    source="p",
                    prefix=prefix,
                    maxlen=100,
                    checkpoint_every=20,
                    refresh_interval=0.02,
                )
            )
            await nursery.start(follow_into, reader, "p", prefix, view, checker)
            for name, amount in operations:
                if name == "publish":
                    for _ in range(amount):
                        publish_random(publisher, rng)
                elif name == "trim":
                    await redis.xtrim(
                        f"{prefix}:p:frames", threshold=amount, trim_strategy="maxlen"
                    )
                else:
                    await trio.sleep(0.01)
            await wait_until_folded(view, hub, 20)
            assert view.roots == hub.snapshot_frame().roots
            nursery.cancel_scope.cancel()


async def test_a_stale_source_that_appends_again_is_known_again_without_a_gap(
    redis_server: RedisServer, prefix: str
) -> None:
    """A source marked stale (as ``follow_fleet`` does when it stops refreshing) is shown
    unavailable; when its mirror appends again with nothing lost, its state comes back from the
    follower's own fold and the change applies on top, in sequence."""
    view = ActivityView()
    checker = ContinuityChecker()
    with trio.fail_after(15):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
            client(redis_server.url) as reader,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            await nursery.start(
                functools.partial(mirror_hub, hub, redis, source="nap", prefix=prefix)
            )
            await nursery.start(follow_into, reader, "nap", prefix, view, checker)
            await wait_until_folded(view, hub, 5)
            assert checker.stream is not None
            checker.stream.mark_stale()
            with trio.fail_after(5):
                await eventually(lambda: view.availability is Availability.UNAVAILABLE)
            snapshots = checker.snapshots
            publisher.publish_changed(root("b"))
            await wait_until_folded(view, hub, 5)
            assert [r.root_run_id for r in view.roots] == ["a", "b"]
            # One snapshot (the follower's own fold, ready again), then the change in sequence.
            assert checker.snapshots == snapshots + 1
            nursery.cancel_scope.cancel()


async def test_a_foreign_or_malformed_entry_never_crashes_a_follower(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Something else writes into the stream: the follower logs it and starts over from a
    checkpoint; the mirror sees the sequence broken, claims again and resnapshots."""
    view = ActivityView()
    checker = ContinuityChecker()
    with trio.fail_after(15):
        async with (
            open_hub() as hub,
            trio.open_nursery() as nursery,
            client(redis_server.url) as redis,
            client(redis_server.url) as reader,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [root("a")])
            mirror = await nursery.start(
                functools.partial(
                    mirror_hub, hub, redis, source="odd", prefix=prefix, refresh_interval=0.05
                )
            )
            await nursery.start(follow_into, reader, "odd", prefix, view, checker)
            await wait_until_folded(view, hub, 5)
            owner = await redis.hgetall(f"{prefix}:odd:owner")
            await redis.xadd(
                f"{prefix}:odd:frames", {"seq": str(int(owner[b"seq"]) + 1), "frame": "{oops"}
            )
            await redis.hset(f"{prefix}:odd:owner", {"seq": str(int(owner[b"seq"]) + 1)})
            publisher.publish_changed(root("b"))
            await wait_until_folded(view, hub, 10)
            assert view.roots == hub.snapshot_frame().roots
            assert mirror.statistics().reclaims == 1
            assert any("malformed" in record.getMessage() for record in caplog.records)
            nursery.cancel_scope.cancel()
