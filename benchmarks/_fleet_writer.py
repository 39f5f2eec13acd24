"""Many sources' entries appended by a process of their own: the load side of the fleet rows.

``python _fleet_writer.py URL PREFIX SOURCES live RATE SECONDS`` writes, for every source, what a
mirror writes (docs/fleet.md's layout): a snapshot entry with its checkpoint and owner, then
changed frames, one ``seq`` more each, at ``RATE`` frames per second per source, round robin.
It prints ``ready`` once every source is registered, waits for a line on stdin, publishes, and
prints one JSON line: ``[[source index, revision, monotonic ns], ...]``, the moment each entry
was sent. ``CLOCK_MONOTONIC`` is one clock for every process of the machine, so the follower's
process takes its own timestamps and subtracts.

``python _fleet_writer.py URL PREFIX SOURCES backlog FRAMES`` appends FRAMES changed frames
spread over the sources at once, prints ``ready`` and the last revision of each source as JSON.

Each entry goes out as one script call (as a mirror's append does), so the writer costs little
per frame: at 1 000 sources the follower's process is what gets measured, not 1 000 hubs and
mirrors competing with it for the same interpreter (docs/performance.md, "Fleet lag").
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from typing import Any

import coredis
import trio

from workflow_hub import (
    Availability,
    ChangedFrame,
    Cursor,
    Reason,
    RootActivity,
    SnapshotFrame,
    State,
    wire,
)

# KEYS: frames, owner, sources, checkpoint. ARGV: maxlen, seq, frame, source, '1' to checkpoint.
_APPEND = """
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'seq', ARGV[2],
  'frame', ARGV[3])
redis.call('HSET', KEYS[2], 'epoch', 'bench', 'seq', ARGV[2], 'last', id)
local now = redis.call('TIME')
redis.call('ZADD', KEYS[3], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000),
  ARGV[4])
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[4], 'frame', ARGV[3], 'seq', ARGV[2], 'id', id)
end
return id
"""
# KEYS: sources. ARGV: source names. The refresh of idle mirrors.
_REFRESH = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for i = 1, #ARGV do redis.call('ZADD', KEYS[1], ms, ARGV[i]) end
return #ARGV
"""
_MAXLEN = 100_000


def _roots(count: int) -> list[RootActivity]:
    return [
        RootActivity(
            root_run_id=f"root-{index}",
            owner_session_id="session-1",
            state=State.WORKING,
            reason=Reason.EXECUTING,
            active_execution_count=1,
            actionable_block_count=0,
            needs_attention=False,
        )
        for index in range(count)
    ]


class _Fleet:
    def __init__(self, redis: Any, prefix: str, sources: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.names = [f"s{index:04d}" for index in range(sources)]
        self.revisions = [0] * sources
        self.roots = _roots(20)
        self.append_sha = ""
        self.refresh_sha = ""

    async def load(self) -> None:
        for script in (_APPEND, _REFRESH):
            await self.redis.script_load(script)
        self.append_sha = hashlib.sha1(_APPEND.encode()).hexdigest()
        self.refresh_sha = hashlib.sha1(_REFRESH.encode()).hexdigest()

    def keys(self, index: int) -> list[str]:
        base = f"{self.prefix}:{self.names[index]}"
        return [f"{base}:frames", f"{base}:owner", f"{self.prefix}:sources", f"{base}:checkpoint"]

    async def snapshot(self, index: int) -> None:
        self.revisions[index] = 1
        frame = SnapshotFrame(
            cursor=Cursor(epoch=self.names[index], revision=1),
            availability=Availability.READY,
            roots=(),
        )
        await self.redis.evalsha(
            self.append_sha,
            keys=self.keys(index),
            args=[str(_MAXLEN), "1", wire.dumps(frame), self.names[index], "1"],
        )

    def changed(self, index: int) -> tuple[int, str]:
        revision = self.revisions[index] = self.revisions[index] + 1
        root = self.roots[revision % len(self.roots)]
        cursor = Cursor(epoch=self.names[index], revision=revision)
        return revision, wire.dumps(ChangedFrame(cursor=cursor, root=root))

    async def append(self, index: int, revision: int, payload: str) -> None:
        await self.redis.evalsha(
            self.append_sha,
            keys=self.keys(index),
            args=[str(_MAXLEN), str(revision), payload, self.names[index], "0"],
        )

    async def refresh(self) -> None:
        await self.redis.evalsha(self.refresh_sha, keys=[f"{self.prefix}:sources"], args=self.names)


async def _setup(fleet: _Fleet) -> None:
    await fleet.load()
    async with trio.open_nursery() as nursery:
        for index in range(len(fleet.names)):
            nursery.start_soon(fleet.snapshot, index)


async def _live(url: str, prefix: str, sources: int, rate: float, seconds: float) -> None:
    async with coredis.Redis.from_url(url) as redis:
        fleet = _Fleet(redis, prefix, sources)
        await _setup(fleet)
        count = max(1, int(seconds * rate * sources))
        # Encoded up front: the writer's time goes into sending, as a mirror's does.
        payloads = [(index % sources, *fleet.changed(index % sources)) for index in range(count)]
        print("ready", flush=True)
        async with trio.open_nursery() as nursery:

            async def refresh() -> None:
                while True:  # idle mirrors refresh once a second
                    await fleet.refresh()
                    await trio.sleep(1.0)

            nursery.start_soon(refresh)
            await trio.to_thread.run_sync(sys.stdin.readline)
            nursery.cancel_scope.cancel()
        sent: list[tuple[int, int, int]] = []
        interval = 1 / (rate * sources)
        start = trio.current_time()
        for number, (index, revision, payload) in enumerate(payloads):
            await trio.sleep_until(start + number * interval)
            sent.append((index, revision, time.monotonic_ns()))
            await fleet.append(index, revision, payload)
        print(json.dumps(sent), flush=True)


async def _backlog(url: str, prefix: str, sources: int, frames: int) -> None:
    async with coredis.Redis.from_url(url) as redis:
        fleet = _Fleet(redis, prefix, sources)
        await _setup(fleet)
        payloads = [(index % sources, *fleet.changed(index % sources)) for index in range(frames)]
        for first in range(0, len(payloads), 256):
            async with trio.open_nursery() as nursery:  # one source's entries stay in order
                by_source: dict[int, list[tuple[int, str]]] = {}
                for index, revision, payload in payloads[first : first + 256]:
                    by_source.setdefault(index, []).append((revision, payload))

                async def one(index: int, entries: list[tuple[int, str]]) -> None:
                    for revision, payload in entries:
                        await fleet.append(index, revision, payload)

                for index, entries in by_source.items():
                    nursery.start_soon(one, index, entries)
        await fleet.refresh()
        print("ready", flush=True)
        print(json.dumps(dict(zip(fleet.names, fleet.revisions, strict=True))), flush=True)


if __name__ == "__main__":
    url, prefix, count, mode, *rest = sys.argv[1:]
    if mode == "live":
        trio.run(_live, url, prefix, int(count), float(rest[0]), float(rest[1]))
    else:
        trio.run(_backlog, url, prefix, int(count), int(rest[0]))
