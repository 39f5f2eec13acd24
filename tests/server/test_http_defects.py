"""Regressions of issue 23: odd resume positions (never a 500), the WebSocket message cap, and
HEAD on the event streams (R4, N1, N2).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import coredis
import httpx
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from wsproto.events import BytesMessage, TextMessage

from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.netutil import WsClosed, hooks_for, served, websocket
from tests.support.redis_server import RedisServer
from workflow_hub import ContractError, Cursor, open_hub
from workflow_hub.server import serve_fleet
from workflow_hub.server._requests import parse_position
from workflow_hub.wire import format_cursor, parse_cursor

WAIT = 10
PROBLEM = "application/problem+json"

# Positions no revision can be: too many digits for int() (CPython refuses past 4 300), digits
# of other scripts (str.isdigit() accepts them, int() may or may not), and signs and spaces.
ODD_REVISIONS = [
    "9" * 4301,
    "9" * 20,
    "²",
    "①",
    "\u0661",
    "\u0663\u0664",
    "+1",
    "-0",
    "1_0",
    " 1",
    "0x1",
    "1e3",
]


# --- the text form of a cursor (R4) --------------------------------------------------------


@pytest.mark.parametrize("revision", ODD_REVISIONS)
def test_a_revision_that_is_not_ascii_digits_within_range_is_a_contract_error(
    revision: str,
) -> None:
    """R4/C1: never a ValueError out of int(), never a misread revision."""
    with pytest.raises(ContractError) as raised:
        parse_cursor(f"epoch:{revision}")
    assert raised.value.path == "cursor.revision"
    assert len(str(raised.value)) < 200  # the message never echoes thousands of digits


def test_the_largest_revision_round_trips_and_one_more_has_no_text_form() -> None:
    top = Cursor(epoch="e", revision=2**63 - 1)
    assert parse_cursor(format_cursor(top)) == top
    with pytest.raises(ContractError) as raised:
        format_cursor(Cursor(epoch="e", revision=2**63))
    assert raised.value.path == "cursor.revision"
    with pytest.raises(ContractError):
        parse_cursor(f"e:{2**63}")


# --- the single hub: every endpoint that takes a position -----------------------------------


@pytest.mark.parametrize("revision", ODD_REVISIONS)
async def test_an_odd_revision_is_a_400_naming_the_field_on_every_resume_input(
    revision: str,
) -> None:
    """R4: ``since`` and ``Last-Event-ID`` on /v1/activity, ``since`` on the WebSocket."""
    text = f"epoch:{revision}"
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            by_query = await client.get(f"{url}/v1/activity", params={"since": text})
            by_header = await client.get(
                f"{url}/v1/activity", headers={"Last-Event-ID": text.encode()}
            )
            with pytest.raises(WsClosed) as refused:
                async with websocket(url, f"/v1/ws?since={quote(text)}"):
                    pass  # pragma: no cover
    for response, field in ((by_query, "since"), (by_header, "Last-Event-ID")):
        assert response.status_code == 400
        assert response.headers["content-type"] == PROBLEM
        assert response.json()["field"] == field
    assert refused.value.code == 400


async def test_a_websocket_handshake_with_thousands_of_digits_is_refused_with_a_problem() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        handshake = {
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13",
        }
        with trio.fail_after(WAIT):
            refused = await client.get(
                f"{url}/v1/ws", params={"since": "e:" + "9" * 4301}, headers=handshake
            )
    assert refused.status_code == 400
    assert refused.json()["field"] == "since"


# --- the fleet ---------------------------------------------------------------------------


@asynccontextmanager
async def fleet_source(redis_url: str, prefix: str) -> AsyncIterator[tuple[str, str]]:
    """A fleet server with one ready source; yields the server's URL and one event id."""
    async with (
        coredis.Redis.from_url(redis_url) as redis,
        trio.open_nursery() as nursery,
        httpx.AsyncClient(timeout=WAIT) as client,
    ):
        url: str = await nursery.start(functools.partial(serve_fleet, redis, prefix=prefix, port=0))
        hub = await mirrored(nursery, redis, prefix, "a")
        hub.register_publisher().publish_snapshot("ready", [root("a1")])
        while True:
            sources: list[Any] = (await client.get(f"{url}/v1/sources")).json()["sources"]
            if sources and sources[0]["availability"] == "ready":
                break
            await trio.sleep(0.05)
        async with client.stream("GET", f"{url}/sources/a/v1/activity") as response:
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    event_id = line[4:]
                    break
        try:
            yield url, event_id
        finally:
            nursery.cancel_scope.cancel()


async def test_a_fleet_position_that_is_not_ascii_digits_within_range_is_a_400(
    redis_server: RedisServer,
) -> None:
    """R4 on the fleet: ``<boot>-²``, ``<boot>-①``, 5 000 digits, ``<boot>-\\u0661`` and ``zzz`` are
    400s naming the field, never a 500 and never a resume at some other position."""
    with trio.fail_after(WAIT * 3):
        async with (
            fleet_source(redis_server.url, "odd-positions") as (url, event_id),
            httpx.AsyncClient(timeout=WAIT) as client,
        ):
            boot = event_id.rpartition("-")[0]
            stream = f"{url}/sources/a/v1/activity"
            odd = [f"{boot}-{p}" for p in ("²", "①", "\u0661", "9" * 5000, "+1", "")] + ["zzz"]
            for text in odd:
                by_query = await client.get(stream, params={"since": text})
                by_header = await client.get(stream, headers={"Last-Event-ID": text.encode()})
                for response, field in ((by_query, "since"), (by_header, "Last-Event-ID")):
                    assert response.status_code == 400, (text[:20], field)
                    assert response.headers["content-type"] == PROBLEM
                    assert response.json()["field"] == field
            # A well-formed position still resumes (no snapshot first).
            async with client.stream("GET", stream, params={"since": event_id}) as response:
                assert response.headers["x-workflow-hub-resumed"] == "true"
            # HEAD answers the headers and ends; the router's own 404 is a problem too.
            head = await client.head(stream)
            assert head.status_code == 200
            assert head.headers["content-type"].startswith("text/event-stream")
            missing = await client.get(f"{url}/no/such/path")
            assert missing.status_code == 404
            assert missing.headers["content-type"] == PROBLEM


# --- the WebSocket message cap ------------------------------------------------------------


async def test_a_websocket_message_beyond_a_few_kib_closes_with_1009() -> None:
    """N1: an unfinished fragmented message is not buffered up to 16 MiB; the server closes
    with 1009 (message too big) as soon as it passes the cap."""
    async with open_hub() as hub, served(hub) as url:
        hub.register_publisher().publish_snapshot("ready", [])
        with trio.fail_after(WAIT):
            async with websocket(url, "/v1/ws") as ws:
                await ws.get_message()  # the snapshot
                # 64 KiB in fragments of 2 KiB, never finished.
                with contextlib.suppress(trio.BrokenResourceError):
                    for _ in range(32):
                        await ws.send(TextMessage(data="x" * 2048, message_finished=False))
                with pytest.raises(WsClosed) as closed:
                    await ws.get_message()
    assert closed.value.code == 1009


async def test_small_client_messages_text_or_binary_are_ignored() -> None:
    async with open_hub() as hub, served(hub) as url:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        with trio.fail_after(WAIT):
            async with websocket(url, "/v1/ws") as ws:
                await ws.get_message()
                await ws.send(TextMessage(data="hello"))
                await ws.send(BytesMessage(data=b"\x00\x01"))
                publisher.publish_changed(root("a"))
                assert '"kind":"changed"' in await ws.get_message()


# --- HEAD on the event streams ------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/activity", "/v1/events"])
async def test_head_on_a_stream_answers_the_headers_and_ends_without_subscribing(
    path: str,
) -> None:
    """The connection stays usable: the next request on it is answered."""
    async with (
        open_hub() as hub,
        httpx.AsyncClient() as client,
        served(hub, runner=hooks_for(hub)) as url,
    ):
        with trio.fail_after(WAIT):
            head = await client.head(f"{url}{path}")
            after = await client.get(f"{url}/v1/snapshot")
        assert hub.statistics().observers == 0
    assert head.status_code == 200
    assert head.headers["content-type"].startswith("text/event-stream")
    assert head.content == b""
    assert after.status_code == 200


@given(st.text(max_size=60) | st.from_regex(r"\A[^:\s]{1,8}:[0-9]{15,25}\Z"))
def test_any_text_is_a_cursor_or_a_contract_error(text: str) -> None:
    """R4/C1: whatever a client sends, parsing ends in the cursor it spells or a
    ContractError, never another exception."""
    try:
        cursor = parse_cursor(text)
    except ContractError:
        return
    epoch, _, digits = text.rpartition(":")
    assert (cursor.epoch, cursor.revision) == (epoch, int(digits))
    assert digits.isascii()
    assert cursor.revision <= 2**63 - 1


@given(st.text(max_size=40) | st.from_regex(r"\A[0-9a-f]{8}-[0-9]{15,25}\Z"))
def test_any_text_is_a_fleet_position_or_a_contract_error_naming_the_field(text: str) -> None:
    try:
        boot, position = parse_position(text, "since")
    except ContractError as error:
        failure: ContractError | None = error
    else:
        failure = None
        head, _, digits = text.rpartition("-")
        assert (boot, position) == (head, int(digits))
        assert digits.isascii()
        assert position <= 2**63 - 1
    assert failure is None or failure.path == "since"
