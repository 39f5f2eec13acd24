"""Small but real (issue 37): a response that says ``Connection: close`` closes the
connection, whatever the route; a refused CORS preflight is a problem document."""

from __future__ import annotations

import httpx
import pytest
import trio

from tests.server.stalled import port_of
from tests.support.netutil import served
from workflow_hub import open_hub

WAIT = 20
PROBLEM = "application/problem+json"


async def read_to_the_end(port: int, request: bytes) -> bytes:
    sock = trio.socket.socket()
    with sock:
        await sock.connect(("127.0.0.1", port))
        await sock.send(request)
        received = b""
        while chunk := await sock.recv(1 << 16):
            received += chunk
    return received


@pytest.mark.parametrize("path", ["/", "/static/dashboard.js", "/healthz"])
async def test_a_response_that_says_connection_close_closes_it(path: str) -> None:
    """A client that asks for ``Connection: close`` gets it and its connection ends once the
    response is sent (the page's files waited for the client to leave)."""
    async with open_hub() as hub, served(hub) as url:
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        with trio.fail_after(WAIT):
            received = await read_to_the_end(port_of(url), request.encode())
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"connection: close" in head.lower()
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    assert len(body) == length


async def test_a_refused_cors_preflight_is_a_problem_document() -> None:
    """Every error the server controls is problem+json (docs/network.md), CORS's too."""
    async with (
        open_hub() as hub,
        served(hub, cors_origins=["https://good.example"]) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        with trio.fail_after(WAIT):
            response = await client.options(
                "/v1/snapshot",
                headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
            )
    assert response.status_code == 400
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == 400
    assert "origin" in body["detail"]
