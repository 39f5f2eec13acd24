"""The fleet's one stream (``/v1/fleet``, issue 25): what a browser receives, and its lag.

A real redis-server (started here), ``serve_fleet``, and ``N`` mirrored sources publishing one
frame per second each (200 at full scale, as many as the page's browser test shows), round
robin; four SSE clients read at the same time:

- **bytes per second** of a table-only client (``/v1/fleet``, what the fleet page holds with no
  source opened) against a client of every source's frames (``?frames=all``): what selecting
  saves a browser;
- **lag** from ``publish_changed`` to the event, p50 and p99, for one source followed on the
  fleet's stream (``?source=s0000``) against the same source's own stream
  (``/sources/s0000/v1/activity``), the same frames: what multiplexing costs. Goal: p99 at most
  1.5 times the source's own stream.

Usage: ``python benchmarks/bench_fleet_stream.py [--quick | --smoke]`` (needs ``redis-server``).
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any

import httpx
import trio

from _harness import BenchmarkError, Goal, HubFactory, Row, Scale, make_roots, run_script, run_trio
from bench_redis import _hubs, _open, _percentile, redis_server
from workflow_hub import WorkflowActivityHub
from workflow_hub.server import serve_fleet

# Per scale: sources, seconds of publishing.
_SIZES = {"full": (200, 10.0), "quick": (50, 4.0), "smoke": (5, 1.0)}
_PROBE = "s0000"


async def _measure(url: str, hub_factory: HubFactory, sources: int, seconds: float) -> Any:
    roots = make_roots(20)
    published: dict[int, int] = {}  # revision of the probe source -> perf_counter_ns
    lags: dict[str, list[float]] = {"fleet": [], "own": []}
    received = {"table": 0, "all": 0}
    prefix = f"stream{sources}"
    async with _open(url) as redis, _open(url) as served:
        await redis.flushdb()
        async with trio.open_nursery() as nursery, httpx.AsyncClient(timeout=30) as http:
            base: str = await nursery.start(
                functools.partial(serve_fleet, served, prefix=prefix, port=0)
            )
            fleet = await _hubs(nursery, redis, hub_factory, sources, prefix)
            while True:
                if len((await http.get(f"{base}/v1/sources")).json()["sources"]) >= sources:
                    break
                await trio.sleep(0.1)
            counting = trio.Event()
            opened = [0]
            all_open = trio.Event()

            def one_open() -> None:
                opened[0] += 1
                if opened[0] == 4:
                    all_open.set()

            async def count(name: str, query: str) -> None:
                async with http.stream("GET", f"{base}/v1/fleet{query}") as response:
                    one_open()
                    async for chunk in response.aiter_bytes():
                        if counting.is_set():
                            received[name] += len(chunk)

            async def lag(name: str, path: str, sourced: bool) -> None:
                async with http.stream("GET", f"{base}{path}") as response:
                    one_open()
                    async for line in response.aiter_lines():
                        if not line.startswith("data: "):
                            continue
                        data = json.loads(line[6:])
                        frame = data.get("frame", {}) if sourced else data
                        if frame.get("kind") != "changed":
                            continue
                        sent = published.get(frame["cursor"]["revision"])
                        if sent is not None:
                            lags[name].append(time.perf_counter_ns() - sent)

            nursery.start_soon(count, "table", "")
            nursery.start_soon(count, "all", "?frames=all")
            nursery.start_soon(lag, "fleet", f"/v1/fleet?source={_PROBE}", True)
            nursery.start_soon(lag, "own", f"/sources/{_PROBE}/v1/activity", False)
            await all_open.wait()
            await trio.sleep(0.5)
            counting.set()
            start = trio.current_time()
            total = int(seconds * sources)
            interval = seconds / total
            # The probe source publishes 20 frames per second (samples for a p99); the others
            # one per second each.
            probe_every = max(1, int(sources / 20))
            for index in range(total):
                await trio.sleep_until(start + index * interval)
                _, _, publisher = fleet[index % sources]
                publisher.publish_changed(roots[index % len(roots)])
                if index % probe_every == 0:
                    probe_hub, probe_publisher = fleet[0][1], fleet[0][2]
                    published[probe_hub.cursor.revision + 1] = time.perf_counter_ns()
                    probe_publisher.publish_changed(roots[index % len(roots)])
            elapsed = trio.current_time() - start
            await trio.sleep(1)
            nursery.cancel_scope.cancel()
    expected = len(published)
    for name, values in lags.items():
        if len(values) < expected * 0.9:
            raise BenchmarkError(f"{name}: {len(values)} of {expected} probe frames arrived")
    return received["table"] / elapsed, received["all"] / elapsed, lags


def run(
    scale: Scale, *, hub_factory: HubFactory = WorkflowActivityHub, label: str = "hub"
) -> list[Row]:
    if label != "hub":
        return []  # the server is measured once; hub variants are measured elsewhere
    sources, seconds = _SIZES.get(scale.name, _SIZES["quick"])
    with redis_server() as url:
        table, every, lags = run_trio(_measure, url, hub_factory, sources, seconds)
    rows = [
        Row(
            benchmark="fleet_stream",
            case=f"bytes/s to a table-only client, {sources} sources x 1/s",
            variant=label,
            value=table,
            unit="B/s",
            reference="?frames=all",
            reference_value=every,
        )
    ]
    for name, fraction in (("p50", 0.5), ("p99", 0.99)):
        rows.append(
            Row(
                benchmark="fleet_stream",
                case=f"lag {name} of one source on /v1/fleet, {sources} sources",
                variant=label,
                value=_percentile(lags["fleet"], fraction),
                unit="ns",
                reference="its own /sources/S/v1/activity",
                reference_value=_percentile(lags["own"], fraction),
                goal=Goal(op="<=", threshold=1.5) if name == "p99" else None,
            )
        )
    return rows


if __name__ == "__main__":
    run_script(run)
