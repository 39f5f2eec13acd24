"""A busy fleet read by the registry's hints keeps every guarantee of a follower.

With a few hundred sources and entries coming all the time, ``follow_fleet`` reads only the
sources the registry lists as having appended since its previous round (docs/fleet.md, "Sizing")
instead of naming every stream in each ``XREAD``. These tests write what mirrors write (the
layout of docs/fleet.md, one script per entry, as a scheduler in another language would) for
250 sources at once, against a real redis-server, and check that nothing of SPEC N2 is traded
for it: every entry in order, a gap restarts that source from a checkpoint (never folded on
top), an idle source whose stream is deleted is noticed, and an entry the registry does not
hint at still arrives.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import trio

from tests.support.builders import root
from tests.support.redis_server import RedisServer, eventually
from workflow_hub import Availability, ChangedFrame, Cursor, Frame, SnapshotFrame, wire
from workflow_hub.redis import FleetView, follow_fleet
from workflow_hub.reporting import ActivityView

SOURCES = 250

# KEYS: frames, owner, sources, checkpoint. ARGV: seq, frame, source, '1' to checkpoint,
# '1' to score the source in the registry (a mirror always does).
_APPEND = """
local id = redis.call('XADD', KEYS[1], '*', 'seq', ARGV[1], 'frame', ARGV[2])
redis.call('HSET', KEYS[2], 'epoch', 'test', 'seq', ARGV[1], 'last', id)
if ARGV[5] == '1' then
  local now = redis.call('TIME')
  redis.call('ZADD', KEYS[3], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000),
    ARGV[3])
end
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[4], 'frame', ARGV[2], 'seq', ARGV[1], 'id', id)
end
return id
"""
_REFRESH = """
local now = redis.call('TIME')
for i = 1, #ARGV do
  redis.call('ZADD', KEYS[1], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000),
    ARGV[i])
end
return #ARGV
"""


class RawFleet:
    """Sources written the way mirrors write them, and what each should fold to."""

    def __init__(self, redis: coredis.Redis[bytes], prefix: str, count: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.names = [f"s{index:03d}" for index in range(count)]
        self.seq = dict.fromkeys(self.names, 0)
        self.revision = dict.fromkeys(self.names, 0)
        self.expected = {name: ActivityView() for name in self.names}

    async def _append(
        self, name: str, frame: Frame, *, seq: int, checkpoint: bool, registry: bool
    ) -> None:
        base = f"{self.prefix}:{name}"
        await self.redis.eval(
            _APPEND,
            keys=[
                f"{base}:frames",
                f"{base}:owner",
                f"{self.prefix}:sources",
                f"{base}:checkpoint",
            ],
            args=[
                str(seq),
                wire.dumps(frame),
                name,
                "1" if checkpoint else "0",
                "1" if registry else "0",
            ],
        )

    async def snapshot(self, name: str, *, skip: int = 0) -> None:
        """A snapshot entry with its checkpoint (``skip`` entries after the last one)."""
        self.seq[name] += 1 + skip
        self.revision[name] += 1
        frame = SnapshotFrame(
            cursor=Cursor(epoch=name, revision=self.revision[name]),
            availability=Availability.READY,
            roots=self.expected[name].roots,
        )
        self.expected[name].apply(frame)
        await self._append(name, frame, seq=self.seq[name], checkpoint=True, registry=True)

    async def changed(
        self, name: str, root_id: str, *, skip: int = 0, registry: bool = True
    ) -> ChangedFrame:
        """A changed entry (``skip`` entries after the last one: a gap)."""
        self.seq[name] += 1 + skip
        self.revision[name] += 1
        frame = ChangedFrame(
            cursor=Cursor(epoch=name, revision=self.revision[name]), root=root(root_id)
        )
        if not skip:
            self.expected[name].apply(frame)
        await self._append(name, frame, seq=self.seq[name], checkpoint=False, registry=registry)
        return frame

    async def refresh(self, names: list[str]) -> None:
        await self.redis.eval(_REFRESH, keys=[f"{self.prefix}:sources"], args=names)


@asynccontextmanager
async def followed(
    url: str, raw: RawFleet, *, poll_interval: float = 0.2
) -> AsyncIterator[tuple[FleetView, dict[str, list[Frame]]]]:
    """A ``follow_fleet`` folding into a ``FleetView``, and every frame by source."""
    fleet_view = FleetView()
    frames: dict[str, list[Frame]] = {name: [] for name in raw.names}
    async with coredis.Redis.from_url(url) as reader, trio.open_nursery() as nursery:

        async def fold() -> None:
            # Staleness and read timeouts are other files' subject: on a loaded machine a source
            # the test is still catching up with must not go stale (server time) meanwhile.
            async with follow_fleet(
                reader,
                prefix=raw.prefix,
                poll_interval=poll_interval,
                stale_after=300,
                retire_after=600,
                read_timeout=60,
            ) as fleet:
                async for source, frame in fleet:
                    if frame is not None:
                        frames[source].append(frame)
                    fleet_view.apply(source, frame)

        nursery.start_soon(fold)
        yield fleet_view, frames
        nursery.cancel_scope.cancel()


def matches(fleet_view: FleetView, raw: RawFleet, name: str) -> bool:
    view = fleet_view.views.get(name)
    expected = raw.expected[name]
    return view is not None and view.cursor == expected.cursor and view.roots == expected.roots


async def test_a_busy_fleet_delivers_every_entry_of_every_source_in_order(
    redis_server: RedisServer,
) -> None:
    """N2: 250 sources appending 4 000 entries, round robin, about one per millisecond:
    every source's frames are its snapshot then each of its entries, in order, none skipped
    and none twice. Entries of one source appended without a registry score (a writer the hints
    miss) still arrive while the others keep the follower busy."""
    async with coredis.Redis.from_url(redis_server.url) as redis:
        raw = RawFleet(redis, f"busy-{uuid.uuid4().hex[:8]}", SOURCES)
        with trio.fail_after(90):
            for name in raw.names:
                await raw.snapshot(name)
            async with followed(redis_server.url, raw) as (fleet_view, frames):
                await eventually(lambda: all(frames[name] for name in raw.names))
                for index in range(4_000):
                    name = raw.names[index % SOURCES]
                    await raw.changed(name, f"r{index % 7}")
                    if index % 4 == 3:
                        await trio.sleep(0.001)
                # While the others keep appending, one source appends without a score.
                unhinted = raw.names[7]
                others = [name for name in raw.names if name != unhinted]
                for index in range(3):
                    await raw.changed(unhinted, f"quiet-{index}", registry=False)
                index = 0
                while not matches(fleet_view, raw, unhinted):
                    await raw.changed(others[index % len(others)], f"r{index % 7}")
                    index += 1
                    if index % 4 == 3:
                        await trio.sleep(0.001)
                await eventually(lambda: all(matches(fleet_view, raw, name) for name in raw.names))
        for name in raw.names:
            revisions = [frame.cursor.revision for frame in frames[name]]
            assert isinstance(frames[name][0], SnapshotFrame), name
            assert all(isinstance(frame, ChangedFrame) for frame in frames[name][1:]), name
            assert revisions == list(range(1, raw.revision[name] + 1)), name


async def test_a_gap_or_a_deleted_stream_in_a_busy_fleet_is_never_folded_over(
    redis_server: RedisServer,
) -> None:
    """N2 while the fleet is busy: an entry of one source that skips a sequence number is never
    folded on top of what came before (that source shows unavailable until a usable checkpoint
    comes, then folds it); an idle source whose stream is deleted while its owner is ahead shows
    unavailable (the background quiet check), never its old state; the other sources keep
    folding throughout."""
    async with coredis.Redis.from_url(redis_server.url) as redis:
        raw = RawFleet(redis, f"gap-{uuid.uuid4().hex[:8]}", SOURCES)
        gapped, idle = raw.names[3], raw.names[4]
        busy = [name for name in raw.names if name != idle]
        with trio.fail_after(90):
            for name in raw.names:
                await raw.snapshot(name)
            async with followed(redis_server.url, raw) as (fleet_view, frames):
                await eventually(lambda: all(frames[name] for name in raw.names))

                async def traffic(count: int) -> None:
                    for index in range(count):
                        await raw.changed(busy[index % len(busy)], f"r{index % 5}")
                        if index % 4 == 3:
                            await trio.sleep(0.001)
                    await raw.refresh([idle])  # alive, only quiet

                await traffic(1_000)
                await eventually(lambda: matches(fleet_view, raw, gapped))
                seen = len(frames[gapped])
                lost = await raw.changed(gapped, "after-the-gap", skip=1)
                await redis.delete([f"{raw.prefix}:{idle}:frames"])
                await redis.hset(f"{raw.prefix}:{idle}:owner", {"seq": "999"})
                await traffic(1_000)
                await eventually(lambda: len(frames[gapped]) > seen)
                after = frames[gapped][seen]
                assert isinstance(after, SnapshotFrame), after
                assert after.availability is Availability.UNAVAILABLE
                assert all(frame != lost for frame in frames[gapped])
                await eventually(
                    lambda: fleet_view.views[idle].availability is Availability.UNAVAILABLE
                )
                # A fresh checkpoint (what a mirror writes after a reclaim): the source folds it.
                await raw.snapshot(gapped)
                await traffic(500)
                await eventually(lambda: all(matches(fleet_view, raw, name) for name in busy))
                assert fleet_view.views[gapped].known
                assert not fleet_view.views[idle].known


async def test_a_hinted_entry_after_unhinted_ones_brings_them_all_in_order(
    redis_server: RedisServer,
) -> None:
    """N2 for doorbell rounds (one script returns a busy source's latest entries): a source
    appends entries the registry does not hint at, then, rounds later, one it does. The script
    returns only the latest, so the follower must see that they do not follow on from the last
    entry it read and read the source from there: all four arrive in order, long before the
    next full round (``poll_interval`` 30 s), with no gap, no resync and no snapshot between."""
    async with coredis.Redis.from_url(redis_server.url) as redis:
        raw = RawFleet(redis, f"hint-{uuid.uuid4().hex[:8]}", SOURCES)
        late = raw.names[11]
        others = [name for name in raw.names if name != late]
        with trio.fail_after(60):
            for name in raw.names:
                await raw.snapshot(name)
            async with (
                followed(redis_server.url, raw, poll_interval=30) as (fleet_view, frames),
                trio.open_nursery() as nursery,
            ):
                await eventually(lambda: all(frames[name] for name in raw.names))

                async def traffic() -> None:  # keeps the follower in doorbell rounds
                    index = 0
                    while True:
                        await raw.changed(others[index % len(others)], f"r{index % 7}")
                        index += 1
                        if index % 4 == 3:
                            await trio.sleep(0.001)

                nursery.start_soon(traffic)
                await trio.sleep(0.1)
                for index in range(3):
                    await raw.changed(late, f"unhinted-{index}", registry=False)
                await trio.sleep(0.05)  # several rounds: the entries are well before the next
                await raw.changed(late, "hinted")
                with trio.fail_after(5):  # well before the next full round
                    await eventually(lambda: matches(fleet_view, raw, late))
                nursery.cancel_scope.cancel()
        revisions = [frame.cursor.revision for frame in frames[late]]
        assert revisions == list(range(1, raw.revision[late] + 1))
        assert isinstance(frames[late][0], SnapshotFrame)
        assert all(isinstance(frame, ChangedFrame) for frame in frames[late][1:])


async def test_a_frames_key_of_the_wrong_type_in_a_busy_fleet_makes_that_source_unknown(
    redis_server: RedisServer,
) -> None:
    """Bad data in one source of a busy fleet (its frames key replaced by a string while
    doorbell rounds run, and its registry score refreshed so that the rounds' script looks at
    it) makes that source unknown, never anything more: the others keep folding every entry."""
    async with coredis.Redis.from_url(redis_server.url) as redis:
        raw = RawFleet(redis, f"type-{uuid.uuid4().hex[:8]}", SOURCES)
        broken = raw.names[5]
        others = [name for name in raw.names if name != broken]
        with trio.fail_after(300):
            for name in raw.names:
                await raw.snapshot(name)
            async with followed(redis_server.url, raw) as (fleet_view, frames):
                await eventually(lambda: all(frames[name] for name in raw.names))

                async def traffic(count: int) -> None:
                    for index in range(count):
                        await raw.changed(others[index % len(others)], f"r{index % 7}")
                        if index % 4 == 3:
                            await trio.sleep(0.001)
                            await raw.refresh([broken])

                await traffic(500)
                await redis.delete([f"{raw.prefix}:{broken}:frames"])
                await redis.set(f"{raw.prefix}:{broken}:frames", "not a stream")
                await traffic(1_000)
                await eventually(
                    lambda: fleet_view.views[broken].availability is Availability.UNAVAILABLE
                )
                await traffic(500)
                await eventually(lambda: all(matches(fleet_view, raw, name) for name in others))


async def test_a_source_that_lost_its_position_mid_round_is_left_out_of_the_read(
    redis_server: RedisServer,
) -> None:
    """The fleet's reader picks the streams it reads, then awaits (the server's time, a
    doorbell) before its XREAD; a quiet check in the other task may meanwhile find a source lost
    and set it to start over (no position). The read leaves that source out instead of sending
    XREAD a position it no longer has (seen as a TypeError that ended the fleet, under load),
    and still reads the others (O4: the lost one resyncs with a fresh snapshot)."""
    from workflow_hub.redis._follow import FollowState
    from workflow_hub.redis._follow_fleet import _FleetReader
    from workflow_hub.redis._keys import source_keys, sources_key

    prefix = f"lost-{uuid.uuid4().hex[:8]}"
    async with coredis.Redis.from_url(redis_server.url) as redis:
        kept, lost = (
            FollowState(redis, prefix, name, block=0.05, count=10, read_timeout=5.0)
            for name in ("kept", "lost")
        )
        await redis.xadd(kept.keys.frames, {"frame": "x"})
        kept.last_id = "0-0"
        lost.last_id = None  # what losing continuity leaves
        send, _receive = trio.open_memory_channel[tuple[str, Frame | None]](10)
        reader = _FleetReader(
            redis,
            {"kept": kept, "lost": lost},
            send,
            sources=sources_key(prefix),
            frames_key=source_keys(prefix, "\0").frames,
            block=0.05,
            count=10,
            read_timeout=5.0,
            quiet_every=1.0,
        )
        with trio.fail_after(10):
            got = await reader._read({kept.keys.frames: kept, lost.keys.frames: lost}, block=False)
    assert got == {"kept"}
    assert lost.last_id is None
