"""Memory per stalled client, whatever the roots (issue 37): the server's RSS with 20 000 roots
(a snapshot of about 3 MB) changing 100 times a second, and 0, 100 and 300 clients (half SSE,
half WebSocket) that never read.

The server runs in a process of its own (``serve_hub``), so that its RSS is its own; the
clients are raw sockets with a 4 KiB receive buffer that send their request and never read.
The figure per client is (RSS with N clients - RSS with none) / N; the goal is at most 256 KiB,
the budget a client has of its own (the snapshots' encodings are shared, and counted in the
row with no client). It takes about a minute: ``python benchmarks/bench_stalled_clients.py``
(``--clients 0,50,100`` on a small machine). Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOTS = 20_000
RATE = 100.0
SETTLE = 8.0
"""Seconds the clients stall before RSS is read (the hub changes 800 times meanwhile)."""

_SERVER = """
import sys, trio
sys.path.insert(0, {bench!r})
from _harness import make_roots
from workflow_hub import open_hub
from workflow_hub.server import serve_hub

async def main(count, rate):
    roots = make_roots(count)
    async with open_hub() as hub, trio.open_nursery() as nursery:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", roots)
        print(await nursery.start(serve_hub, hub), flush=True)
        index = 0
        while True:
            await trio.sleep(1 / rate)
            publisher.publish_changed(roots[index % count])
            index += 1

trio.run(main, {roots}, {rate})
"""

_SSE = b"GET /v1/activity HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
_WS = (
    b"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def measure(clients: int) -> tuple[int, int, int]:
    """RSS without clients, with ``clients`` stalled ones, and after they left (bytes)."""
    code = _SERVER.format(bench=str(Path(__file__).parent), roots=ROOTS, rate=RATE)
    server = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    sockets: list[socket.socket] = []
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().strip().rpartition(":")[2])
        time.sleep(2)
        before = _rss(server.pid)
        for index in range(clients):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", port))
            sock.sendall(_WS if index % 2 else _SSE)
            sockets.append(sock)
            time.sleep(0.01)
        time.sleep(SETTLE)
        stalled = _rss(server.pid)
        for sock in sockets:
            sock.close()
        sockets.clear()
        time.sleep(3)
        after = _rss(server.pid)
        return before, stalled, after
    finally:
        for sock in sockets:
            sock.close()
        os.killpg(server.pid, 15)
        server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="0,100,300")
    counts = [int(text) for text in parser.parse_args().clients.split(",")]
    print(f"{ROOTS:,} roots changing {RATE:g}/s; RSS of the server")
    previous: tuple[int, int] | None = None
    for count in counts:
        before, stalled, after = measure(count)
        per = (stalled - before) / count if count else 0.0
        line = (
            f"{count:4d} stalled clients: {before / 2**20:7.1f} MiB -> {stalled / 2**20:7.1f} MiB"
            f" ({per / 1024:7.1f} KiB per client, shared encodings included)"
        )
        if previous is not None and count > previous[0]:
            # The shared encodings are there with any number of clients: the cost of one more
            # client is the slope between two counts.
            slope = (stalled - previous[1]) / (count - previous[0])
            line += f", {slope / 1024:7.1f} KiB per client beyond {previous[0]} (goal <= 256)"
        print(line + f"; {after / 2**20:7.1f} MiB after they left")
        if count:
            previous = (count, stalled)


if __name__ == "__main__":
    main()
