"""Mirroring into Redis Streams: throughput against plain XADD, and end-to-end lag.

Two figures, each next to a baseline measured in the same run against the same redis-server
(started here on a free loopback port, without persistence):

- **throughput**: frames per second that ``mirror_hub`` appends, against the same payloads
  appended by plain pipelined ``XADD … MAXLEN ~`` with the same batching (512 per round trip)
  from the same client. The goal from issue 17 is at least 0.7 of the baseline. The mirror's
  figure includes what the baseline is spared: encoding each frame, folding it into the
  mirror's view, the fencing check and the checkpoints.
- **lag**: from ``publish_changed`` to a follower's frame (``follow_source`` on its own
  client), p50 and p99, at a steady 1 000 frames per second; the baseline is a bare
  ``XADD`` → blocking ``XREAD`` round trip of one entry at the same rate.

- **fleet lag** (issue 25): an entry's append → the ``follow_fleet`` frame, p50 and p99, with
  1 000 sources appending one frame per second each (200 at ``--quick``), against the same
  fleet follower with one source appending 100 frames per second (enough samples for a p99).
  Goal: p99 at most 3 times the one-source p99 (the best of up to 3 interleaved runs of
  each). The entries are appended by another process
  (``_fleet_writer.py``, what a mirror writes, one script call per entry), so this process runs
  the follower alone, as it does in production; both processes take their timestamps from the
  machine's monotonic clock.
- **fleet folding**: frames per second delivered by one ``follow_fleet`` over 100 sources
  against one ``follow_source`` over one source, from a backlog of the same number of entries
  that another process appended beforehand (so neither includes a mirror's work).

Usage: ``python benchmarks/bench_redis.py [--quick | --smoke]`` (needs ``redis-server``).
"""

from __future__ import annotations

import functools
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import coredis
import trio
import trio.lowlevel

from _harness import (
    BenchmarkError,
    Goal,
    HubFactory,
    Row,
    Scale,
    make_roots,
    run_script,
    run_trio,
)
from workflow_hub import Availability, ChangedFrame, WorkflowActivityHub, wire
from workflow_hub.redis import Mirror, follow_fleet, follow_source, mirror_hub

# Per scale: frames for the throughput run, seconds of steady publishing for the lag run.
_SIZES = {"full": (50_000, 5.0), "quick": (20_000, 2.0), "smoke": (600, 0.3)}
_BATCH = 512
_MAXLEN = 100_000
_RATE = 1_000


@contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise BenchmarkError("redis-server is not installed (make bench installs it)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    directory = tempfile.mkdtemp(prefix="bench-redis-")
    process = subprocess.Popen(
        [
            *(binary, "--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no"),
            *("--dir", directory, "--logfile", str(Path(directory) / "redis.log")),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as probe:
                    probe.sendall(b"PING\r\n")
                    if probe.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise BenchmarkError("redis-server did not start") from None
                time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


def _open(url: str) -> Any:
    return coredis.Redis.from_url(url)


# --- throughput --------------------------------------------------------------------------------


async def _appended(mirror: Mirror, frames: int) -> None:
    # The mirror counts what Redis acknowledged; there is no event to wait on.
    while mirror.statistics().frames < frames:  # noqa: ASYNC110
        await trio.sleep(0.0005)


async def _mirrored(url: str, frames: int) -> float:
    """Frames per second appended by ``mirror_hub`` for ``frames`` changes published at once.

    The hub's queue holds them all (no overflow resnapshot), so the mirror drains it in batches
    of ``_BATCH``, exactly as the baseline sends them.
    """
    roots = make_roots(100)
    async with _open(url) as redis:
        await redis.flushdb()
        async with (
            WorkflowActivityHub(queue_limit=frames + 16) as hub,
            trio.open_nursery() as nursery,
        ):
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [])
            mirror = await nursery.start(
                functools.partial(
                    mirror_hub,
                    hub,
                    redis,
                    source="bench",
                    maxlen=_MAXLEN,
                    checkpoint_every=_MAXLEN // 4,
                    batch_limit=_BATCH,
                )
            )
            await mirror.wait_claimed()
            with trio.fail_after(60):
                await _appended(mirror, 1)
            start = time.perf_counter()
            for index in range(frames):
                publisher.publish_changed(roots[index % len(roots)])
            with trio.fail_after(120):
                await _appended(mirror, frames + 1)
            seconds = time.perf_counter() - start
            nursery.cancel_scope.cancel()
    return frames / seconds


async def _pipelined(url: str, payloads: list[str]) -> float:
    """Frames per second for the same payloads by plain pipelined XADD, ``_BATCH`` per trip."""
    async with _open(url) as redis:
        await redis.flushdb()
        start = time.perf_counter()
        for first in range(0, len(payloads), _BATCH):
            async with redis.pipeline(transaction=False) as pipe:
                for payload in payloads[first : first + _BATCH]:
                    pipe.xadd(
                        "bench:baseline",
                        {"seq": "0", "frame": payload},
                        trim_strategy="maxlen",
                        threshold=_MAXLEN,
                        trim_operator="~",
                    )
        seconds = time.perf_counter() - start
    return len(payloads) / seconds


def _payloads(frames: int) -> list[str]:
    """The wire text of the frames the mirrored run appends (same roots, same order)."""
    hub = WorkflowActivityHub()
    publisher = hub.register_publisher()
    publisher.publish_snapshot(Availability.READY, [])
    roots = make_roots(100)
    payloads = []
    for index in range(frames):
        root = roots[index % len(roots)]
        cursor = publisher.publish_changed(root)
        assert cursor is not None
        payloads.append(wire.dumps(ChangedFrame(cursor=cursor, root=root)))
    return payloads


# --- lag ---------------------------------------------------------------------------------------


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        raise BenchmarkError("no lag sample")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _mirrored_lag(url: str, hub_factory: HubFactory, seconds: float) -> list[float]:
    """Nanoseconds from ``publish_changed`` to the follower's frame, one per published frame."""
    roots = make_roots(100)
    published: dict[int, int] = {}
    lags: list[float] = []
    count = int(seconds * _RATE)
    async with _open(url) as redis, _open(url) as reader:
        await redis.flushdb()
        async with hub_factory() as hub, trio.open_nursery() as nursery:
            publisher = hub.register_publisher()
            publisher.publish_snapshot(Availability.READY, [])
            await nursery.start(
                functools.partial(
                    mirror_hub, hub, redis, source="lag", maxlen=_MAXLEN, checkpoint_every=1_000
                )
            )
            done = trio.Event()

            async def follow(task_status: trio.TaskStatus[None]) -> None:
                async with follow_source(reader, source="lag") as stream:
                    await stream.__anext__()  # the checkpoint: from here on, it waits on the stream
                    task_status.started()
                    async for frame in stream:
                        sent = published.pop(frame.cursor.revision, None)
                        if sent is not None and isinstance(frame, ChangedFrame):
                            lags.append(time.perf_counter_ns() - sent)
                            if len(lags) >= count:
                                done.set()

            await nursery.start(follow)
            start = trio.current_time()
            for index in range(count):
                await trio.sleep_until(start + index / _RATE)
                root = roots[index % len(roots)]
                published[hub.cursor.revision + 1] = time.perf_counter_ns()
                publisher.publish_changed(root)
            with trio.move_on_after(10):
                await done.wait()
            nursery.cancel_scope.cancel()
    if len(lags) < count * 0.9:  # an overflow resnapshot (a stalled machine) replaces some
        raise BenchmarkError(f"the follower saw {len(lags)} of {count} frames")
    return lags


async def _bare_lag(url: str, seconds: float) -> list[float]:
    """Nanoseconds of a bare XADD → XREAD round trip, one entry at a time, at the same rate."""
    count = int(seconds * _RATE)
    lags: list[float] = []
    async with _open(url) as writer, _open(url) as reader:
        await writer.flushdb()
        done = trio.Event()

        async def read(task_status: trio.TaskStatus[None]) -> None:
            last = "0-0"
            task_status.started()
            while len(lags) < count:
                reply = await reader.xread({"bench:bare": last}, count=1_000, block=1_000)
                if not reply:
                    continue
                now = time.perf_counter_ns()
                for entry in next(iter(reply.values())):
                    lags.append(now - int(entry.field_values[b"t"]))
                    last = entry.identifier
            done.set()

        async with trio.open_nursery() as nursery:
            await nursery.start(read)
            start = trio.current_time()
            for index in range(count):
                await trio.sleep_until(start + index / _RATE)
                await writer.xadd("bench:bare", {"t": str(time.perf_counter_ns())})
            with trio.move_on_after(10):
                await done.wait()
            nursery.cancel_scope.cancel()
    return lags


_WRITER = Path(__file__).resolve().parent / "_fleet_writer.py"


class _Lines:
    """Lines from a process's stdout."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._buffer = b""

    async def next(self) -> str:
        while b"\n" not in self._buffer:
            data = await self._stream.receive_some(1 << 20)
            if not data:
                raise BenchmarkError("the fleet writer exited early")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()


@asynccontextmanager
async def _writer(url: str, *arguments: object) -> AsyncIterator[tuple[Any, _Lines]]:
    """``_fleet_writer.py`` in a process of its own; yields it and its stdout's lines."""
    command = [sys.executable, str(_WRITER), url, *map(str, arguments)]
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        lines = _Lines(process.stdout)
        with trio.fail_after(120):
            if await lines.next() != "ready":
                raise BenchmarkError("the fleet writer did not start")
        yield process, lines
    finally:
        with trio.move_on_after(10) as cleanup:
            cleanup.shield = True
            if process.returncode is None:
                process.kill()
            await process.wait()


async def _fleet_lag(
    url: str, sources: int, rate: float, seconds: float
) -> tuple[list[float], float]:
    """Nanoseconds from an entry's append to the fleet follower's frame, ``sources`` sources
    appending ``rate`` frames per second each, round robin, from another process
    (``_fleet_writer.py``); both take their timestamps from the machine's monotonic clock.
    Also the CPU this process spent per second of publishing (the follower's cost)."""
    prefix = f"lag{sources}"
    received: dict[tuple[str, int], int] = {}
    count = max(1, int(seconds * rate * sources))
    async with _open(url) as redis, _open(url) as reader:
        await redis.flushdb()
        async with _writer(url, prefix, sources, "live", rate, seconds) as (process, lines):
            known: set[str] = set()
            ready = trio.Event()
            done = trio.Event()

            async def follow() -> None:
                async with follow_fleet(reader, prefix=prefix) as stream:
                    async for source, frame in stream:
                        if frame is None:
                            continue
                        if isinstance(frame, ChangedFrame):
                            received[(source, frame.cursor.revision)] = time.monotonic_ns()
                            if len(received) >= count:
                                done.set()
                        elif len(known) < sources:
                            known.add(source)
                            if len(known) == sources:
                                ready.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow)
                with trio.fail_after(60):
                    await ready.wait()
                assert process.stdin is not None
                await process.stdin.send_all(b"go\n")
                cpu, wall = time.process_time(), time.monotonic()
                with trio.fail_after(seconds + 60):
                    line = await lines.next()
                cpu = (time.process_time() - cpu) / (time.monotonic() - wall)
                sent = json.loads(line)
                with trio.move_on_after(10):
                    await done.wait()
                nursery.cancel_scope.cancel()
    names = [f"s{index:04d}" for index in range(sources)]
    lags = [
        received[key] - at
        for index, revision, at in sent
        if (key := (names[index], revision)) in received
    ]
    if len(lags) < count * 0.9:
        raise BenchmarkError(f"the fleet follower saw {len(lags)} of {count} frames")
    return lags, cpu


async def _fold_rate(url: str, sources: int, frames: int) -> float:
    """Frames per second a follower folds from a backlog: ``frames`` entries appended
    beforehand over ``sources`` sources by another process, then the time from the follower's
    start until its last cursor of every source is the last appended (``follow_source`` for
    one source, ``follow_fleet`` for more)."""
    prefix = f"fold{sources}"
    async with _open(url) as redis, _open(url) as reader:
        await redis.flushdb()
        async with _writer(url, prefix, sources, "backlog", frames) as (_, lines):
            last: dict[str, int] = json.loads(await lines.next())
        behind = {name for name, revision in last.items() if revision > 1}
        caught_up = trio.Event()

        def seen(source: str, frame: Any) -> None:
            if frame.cursor.revision == last[source]:
                behind.discard(source)
                if not behind:
                    caught_up.set()

        begin = time.perf_counter()
        async with trio.open_nursery() as nursery:

            async def follow() -> None:
                if sources == 1:
                    (name,) = last
                    async with follow_source(reader, source=name, prefix=prefix) as one:
                        async for frame in one:
                            seen(name, frame)
                else:
                    async with follow_fleet(reader, prefix=prefix) as many:
                        async for source, frame in many:
                            if frame is not None:
                                seen(source, frame)

            nursery.start_soon(follow)
            with trio.fail_after(120):
                await caught_up.wait()
            elapsed = time.perf_counter() - begin
            nursery.cancel_scope.cancel()
    return frames / elapsed


_ONE_RATE = 100.0
"""Frames per second of the one-source baseline: 500 samples in 5 s (a p99 of 100 samples is
the second-worst one, and as noisy)."""
# Per scale: fleet sources for the lag run, seconds of it; frames for the folding run.
_FLEET = {"full": (1_000, 5.0, 20_000), "quick": (200, 3.0, 10_000), "smoke": (10, 1.0, 500)}


# --- rows --------------------------------------------------------------------------------------


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the transport is measured once; hub variants are measured elsewhere
    frames, seconds = _SIZES.get(scale.name, _SIZES["quick"])
    payloads = _payloads(frames)
    with redis_server() as url:
        mirrored = baseline = 0.0
        for _ in range(max(1, scale.repeats)):
            mirrored = max(mirrored, run_trio(_mirrored, url, frames))
            baseline = max(baseline, run_trio(_pipelined, url, payloads))
        lags = run_trio(_mirrored_lag, url, hub_factory, seconds)
        bare = run_trio(_bare_lag, url, seconds)
        sources, fleet_seconds, fold_frames = _FLEET.get(scale.name, _FLEET["quick"])
        # Interleaved repeats, the one with the best p99 kept for each (noise only ever makes
        # a run slower, and on a shared machine it comes in bursts).
        fleet_runs, one_runs = [], []
        for _ in range(min(3, max(1, scale.repeats))):
            fleet_runs.append(run_trio(_fleet_lag, url, sources, 1.0, fleet_seconds))
            one_runs.append(run_trio(_fleet_lag, url, 1, _ONE_RATE, fleet_seconds))
        fleet_lags, fleet_cpu = min(fleet_runs, key=lambda run: _percentile(run[0], 0.99))
        one_lags, one_cpu = min(one_runs, key=lambda run: _percentile(run[0], 0.99))
        fold_sources = min(sources, 100)
        fold_fleet = run_trio(_fold_rate, url, fold_sources, fold_frames)
        fold_one = run_trio(_fold_rate, url, 1, fold_frames)
    rows = [
        Row(
            benchmark="redis",
            case=f"mirror {frames} frames",
            variant=label,
            value=mirrored,
            unit="/s",
            reference="pipelined XADD",
            reference_value=baseline,
            goal=Goal(op=">=", threshold=0.7),
        )
    ]
    for name, fraction in (("p50", 0.5), ("p99", 0.99)):
        rows.append(
            Row(
                benchmark="redis",
                case=f"lag {name} at {_RATE}/s",
                variant=label,
                value=_percentile(lags, fraction),
                unit="ns",
                reference="XADD→XREAD",
                reference_value=_percentile(bare, fraction),
            )
        )
    for name, fraction in (("p50", 0.5), ("p99", 0.99)):
        rows.append(
            Row(
                benchmark="redis",
                case=f"fleet lag {name}, {sources} sources x 1/s",
                variant=label,
                value=_percentile(fleet_lags, fraction),
                unit="ns",
                reference=f"1 source x {_ONE_RATE:g}/s",
                reference_value=_percentile(one_lags, fraction),
                goal=Goal(op="<=", threshold=3.0) if name == "p99" else None,
                note=(
                    f"follower CPU {fleet_cpu:.0%} of a core, {one_cpu:.0%} for one source"
                    if name == "p50"
                    else ""
                ),
            )
        )
    rows.append(
        Row(
            benchmark="redis",
            case=f"fleet follower folds {fold_frames} frames of {fold_sources} sources",
            variant=label,
            value=fold_fleet,
            unit="/s",
            reference="follow_source, 1 source",
            reference_value=fold_one,
        )
    )
    return rows


if __name__ == "__main__":
    run_script(run)
