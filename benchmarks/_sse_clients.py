"""N raw SSE readers in one process: the load side of ``bench_network.py``.

``python _sse_clients.py PORT PATH CLIENTS EVENTS [STALLED]``: opens CLIENTS connections to
``GET PATH``, counts events (blank-line terminated blocks) with ``bytes.count`` and nothing
else, prints ``ready`` once every client has its first event and ``done`` once every client has
EVENTS events. STALLED more connections send the request and never read. The readers are kept
as cheap as possible so that the server, not this process, is what gets measured.
"""

from __future__ import annotations

import sys

import trio


async def _read(port: int, path: str, target: int, ready: list[int], done: list[int]) -> None:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        count = 0
        tail = b""
        first = True
        while count < target:
            data = await stream.receive_some(1 << 20)
            if not data:
                raise RuntimeError(f"the server closed after {count} of {target} events")
            count += (tail + data).count(b"\n\n") - tail.count(b"\n\n")
            tail = data[-1:]
            if first and count:
                first = False
                ready[0] += 1
                if ready[0] == ready[1]:
                    print("ready", flush=True)
        done[0] += 1
        if done[0] == done[1]:
            print("done", flush=True)


async def _stall(port: int, path: str) -> None:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        await trio.sleep_forever()


async def main(port: int, path: str, clients: int, events: int, stalled: int) -> None:
    ready = [0, clients]
    done = [0, clients]
    async with trio.open_nursery() as nursery:
        for _ in range(stalled):
            nursery.start_soon(_stall, port, path)
        async with trio.open_nursery() as readers:
            for _ in range(clients):
                readers.start_soon(_read, port, path, events, ready, done)
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    port, path, clients, events, *rest = sys.argv[1:]
    trio.run(main, int(port), path, int(clients), int(events), int(rest[0]) if rest else 0)
