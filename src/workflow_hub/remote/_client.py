"""A remote hub's frames as a local stream: SSE over httpx, reconnecting and resuming by itself.

The stream pulls: each ``__anext__`` reads the next event from the open connection, and when the
connection fails it reconnects there and then (exponential backoff with jitter, bounded), sending
the id of the last frame it yielded as ``Last-Event-ID`` (a hub's ids are the frames' cursors; a
fleet server's are positions in its relay), or the ``since`` cursor before any frame. The server
resumes from it when its history allows (no snapshot, R2) and otherwise starts with a snapshot
(another server run, a position of another kind), so the frames yielded are always a
continuation a local observer could have seen (N2): never a gap, never a duplicate. A refusal
that carries ``Retry-After`` (a fleet's source that is not there yet) is an answer for now, not
for ever: it is tried again, no sooner than the server asked. Nothing is buffered here: a
consumer that falls behind is bounded by the server's queue.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Final, final

import attrs
import httpx
import trio
from httpx_sse import EventSource, ServerSentEvent, SSEError

from .._contract import (
    ContractError,
    Cursor,
    Frame,
    FrameDecoder,
    SnapshotFrame,
    format_cursor,
    loads,
)
from .._core import FrameReceiver
from .._defaults import MAX_STREAM_INTERVAL
from .._exceptions import WorkflowHubError

# No __all__: every public name here is listed once, by workflow_hub.remote's __all__.

_FRAME_EVENTS: Final = frozenset({"snapshot", "changed", "removed"})
# Retried like a network error: a timeout or a server asking to slow down.
_RETRIED_4XX: Final = frozenset({408, 429})


class RemoteError(WorkflowHubError):
    """The server refused the request in a way retrying cannot fix (a 4xx other than 408/429)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class RemoteAuthError(RemoteError):
    """The server wants a (different) token: 401. Raised at once, never retried."""


@attrs.frozen(kw_only=True)
class Backoff:
    """How long to wait before each reconnection attempt: exponential, capped, with jitter.

    Attempt ``n`` (from 0) waits a random time between half and all of
    ``min(maximum, initial * factor ** n)`` ("equal jitter"), so that many clients of a
    restarted server do not all come back at the same instant. A frame received resets ``n``.
    """

    initial: float = attrs.field(default=0.1)
    """The first delay, in seconds."""
    maximum: float = attrs.field(default=10.0)
    """The longest delay, in seconds."""
    factor: float = attrs.field(default=2.0)
    """How much each failed attempt multiplies the delay by."""

    def __attrs_post_init__(self) -> None:
        for name in ("initial", "maximum", "factor"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ContractError(name, f"expected a positive number, got {value!r}")
        if self.factor < 1:
            raise ContractError("factor", f"expected >= 1, got {self.factor!r}")
        if self.maximum < self.initial:
            raise ContractError("maximum", "must not be below initial")

    def delay(self, attempt: int, rng: random.Random) -> float:
        ceiling = min(self.maximum, self.initial * self.factor ** min(attempt, 64))
        return ceiling * (0.5 + 0.5 * rng.random())


def _retry_after(response: httpx.Response) -> float | None:
    """The seconds ``Retry-After`` asks for (delay-seconds or an HTTP date, RFC 9110 10.2.3);
    ``None`` when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(int(value[:12]))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if isinstance(body, Mapping) and isinstance(body.get("error"), str):
        return str(body["error"])
    return response.reason_phrase


async def _close(connection: AsyncExitStack) -> None:
    """Close a connection even when the caller is being cancelled: never leak a socket."""
    with trio.CancelScope(shield=True):
        await connection.aclose()


@final
@attrs.define(eq=False)
class RemoteLease:
    """The stream's counterpart of an observer lease: ``dispose()`` stops the stream."""

    _stream: RemoteStream

    @property
    def disposed(self) -> bool:
        return self._stream._closed

    @property
    def pending(self) -> int:
        """Always 0: frames wait on the server, bounded by its queue, not here."""
        return 0

    @property
    def resumed(self) -> bool:
        """Whether the current connection went on from the last cursor without a snapshot."""
        return self._stream._resumed

    def dispose(self) -> None:
        self._stream._closed = True


@final
class RemoteStream(FrameReceiver):
    """Frames of a remote hub, with the API of a local ``hub.subscribe()`` stream.

    ``async for frame in stream`` (or ``await stream.receive()``) yields contract frames: a
    snapshot first, then FIFO, with a fresh snapshot wherever continuity could not be kept.
    :attr:`cursor` is the cursor of the last frame yielded, :attr:`connected` whether a
    connection is open now, :attr:`reconnects` how many times it connected again after a
    failure, and :attr:`resynced` whether the latest reconnection had to start over from a
    snapshot (the server's history no longer held the frames after :attr:`cursor`).
    :attr:`refusal` is the server's latest answer that the stream is waiting out (a 5xx, or a
    4xx with ``Retry-After`` such as ``"404: no source 's1' in this fleet (yet)"``), ``None``
    once connected.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        *,
        since: Cursor | None,
        backoff: Backoff,
        rng: random.Random,
        conflate: bool = False,
        interval: float | None = None,
    ) -> None:
        self._client = client
        self._url = url
        self._params = {"conflate": "1"} if conflate else {}
        if interval is not None:
            self._params["interval"] = repr(interval)
        self._backoff = backoff
        self._rng = rng
        self._lease = RemoteLease(self)
        # Reuses the nodes a root's earlier frames decoded (most of a changed frame's CPU).
        self._decoder = FrameDecoder()
        self._connection: AsyncExitStack | None = None
        self._events: AsyncGenerator[ServerSentEvent, None] | None = None
        self._closed = False
        self._resumed = False
        self._attempt = 0
        self._not_before = 0.0  # the least wait before the next attempt (Retry-After)
        self._ever_connected = False
        self._last_id: str | None = None  # the server's id of the last frame yielded
        self.cursor: Cursor | None = since
        self.connected = False
        self.reconnects = 0
        self.resynced = False
        self.refusal: str | None = None

    @property
    def lease(self) -> RemoteLease:
        return self._lease

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self

    async def __anext__(self) -> Frame:
        while not self._closed:
            if self._events is None:
                await self._connect()
                continue
            try:
                event = await self._events.__anext__()
            except StopAsyncIteration:
                # The server ended the stream (it is shutting down): come back when it is up.
                await self._disconnect()
                continue
            except (httpx.TransportError, SSEError):
                await self._disconnect()
                continue
            if event.event not in _FRAME_EVENTS:
                continue  # an event type a newer server may add
            frame = self._decoder.loads(event.data)
            self.cursor = frame.cursor
            self._last_id = event.id or None
            self._attempt = 0
            return frame
        raise StopAsyncIteration

    async def _disconnect(self) -> None:
        self.connected = False
        self._events = None
        connection, self._connection = self._connection, None
        if connection is not None:
            await _close(connection)

    async def _connect(self) -> None:
        """Open a connection, retrying with backoff; 401 and other final 4xx raise."""
        while not self._closed:
            if self._attempt:
                delay = self._backoff.delay(self._attempt - 1, self._rng)
                await trio.sleep(max(delay, self._not_before))
            self._attempt += 1
            self._not_before = 0.0
            headers = {}
            if self._last_id is not None:
                # What the server named the frame: resumable there even when it is not the
                # frame's cursor (a fleet's relay numbers its frames).
                headers["Last-Event-ID"] = self._last_id
            elif self.cursor is not None:
                headers["Last-Event-ID"] = format_cursor(self.cursor)
            stack = AsyncExitStack()
            try:
                response = await stack.enter_async_context(
                    self._client.stream(
                        "GET",
                        f"{self._url}/v1/activity",
                        params=self._params,
                        headers={**headers, "Accept": "text/event-stream"},
                    )
                )
                status = response.status_code
                if status != 200:
                    await response.aread()
                    message = _error_message(response)
                    if status == 401:
                        raise RemoteAuthError(status, message)
                    retry_after = _retry_after(response)
                    if 400 <= status < 500 and status not in _RETRIED_4XX and retry_after is None:
                        raise RemoteError(status, message)
                    # The server's wish, within this stream's longest wait.
                    self._not_before = min(retry_after or 0.0, self._backoff.maximum)
                    self.refusal = f"{status}: {message}"
                    await _close(stack)
                    continue
                content_type = response.headers.get("content-type", "").partition(";")[0]
                if content_type.strip() != "text/event-stream":
                    # Not this server (a proxy's page, another service): retrying will not help.
                    raise RemoteError(
                        status, f"not an event stream (Content-Type {content_type!r})"
                    )
                events = EventSource(response).aiter_sse()
                # Closed before the response (last in, first out), so it never outlives it.
                stack.push_async_callback(events.aclose)
                self._events = events
            except (httpx.TransportError, SSEError):
                await _close(stack)
                continue
            except BaseException:
                await _close(stack)
                raise
            self._connection = stack
            self.connected = True
            self.refusal = None
            self._resumed = response.headers.get("x-workflow-hub-resumed") == "true"
            if self._ever_connected:
                self.reconnects += 1
                self.resynced = not self._resumed
            self._ever_connected = True
            return

    async def _aclose(self) -> None:
        self._closed = True
        await self._disconnect()


@final
class RemoteHub:
    """A remote hub seen through its HTTP server: ``subscribe()`` like a local hub.

    Enough of a hub for :func:`~workflow_hub.reporting.run_reporter` and anything else that only
    subscribes. Create it with ``RemoteHub(url, token=...)``; each ``subscribe()`` opens its own connection.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        backoff: Backoff | None = None,
        read_timeout: float = 45.0,
        seed: int | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ContractError("url", f"expected an http:// or https:// URL, got {url!r}")
        if token is not None and (not isinstance(token, str) or not token):
            raise ContractError("token", "expected a non-empty string or None")
        if (
            isinstance(read_timeout, bool)
            or not isinstance(read_timeout, int | float)
            or not math.isfinite(read_timeout)
            or not read_timeout > 0
        ):
            raise ContractError("read_timeout", f"expected seconds > 0, got {read_timeout!r}")
        if backoff is not None and not isinstance(backoff, Backoff):
            raise ContractError("backoff", f"expected a Backoff or None, got {backoff!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ContractError("seed", f"expected an int or None, got {seed!r}")
        self.url = url.rstrip("/")
        self._token = token
        self._backoff = backoff if backoff is not None else Backoff()
        self._read_timeout = float(read_timeout)
        self._rng = random.Random(seed)

    def _client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        # The read timeout must outlast the server's keep-alive comments (15 s by default):
        # silence longer than that means a dead connection, which is then replaced.
        timeout = httpx.Timeout(10.0, read=self._read_timeout)
        return httpx.AsyncClient(headers=headers, timeout=timeout)

    @asynccontextmanager
    async def subscribe(
        self,
        *,
        since: Cursor | None = None,
        conflate: bool = False,
        interval: float | None = None,
    ) -> AsyncIterator[RemoteStream]:
        """``async with remote.subscribe() as stream: async for frame in stream:``.

        ``conflate=True`` asks the server to conflate (``?conflate=1``): when this client lags,
        it receives each root's latest frame instead of every intermediate one, folding to the
        same state (see ``hub.subscribe(conflate=True)``). With it, ``interval`` (seconds, above
        0 and at most 10) asks the server to write at most once per interval
        (``?interval=``): a consumer that only shows the latest state (a view redrawn a few
        times a second) then decodes each root once per interval, however often it changes.
        """
        if since is not None and not isinstance(since, Cursor):
            raise ContractError("since", f"expected a Cursor or None, got {type(since).__name__}")
        if type(conflate) is not bool:
            raise ContractError("conflate", f"expected a bool, got {type(conflate).__name__}")
        if interval is not None:
            if type(interval) not in (int, float) or not 0 < interval <= MAX_STREAM_INTERVAL:
                raise ContractError(
                    "interval",
                    f"expected seconds above 0 and at most {MAX_STREAM_INTERVAL:g}, got {interval!r}",
                )
            if not conflate:
                raise ContractError("interval", "an interval needs conflate=True")
            interval = float(interval)
        async with self._client() as client:
            stream = RemoteStream(
                client,
                self.url,
                since=since,
                backoff=self._backoff,
                rng=self._rng,
                conflate=conflate,
                interval=interval,
            )
            try:
                yield stream
            finally:
                await stream._aclose()

    async def snapshot(self) -> SnapshotFrame:
        """The current snapshot (``GET /v1/snapshot``), once, without retrying."""
        async with self._client() as client:
            response = await client.get(f"{self.url}/v1/snapshot")
            if response.status_code != 200:
                message = _error_message(response)
                if response.status_code == 401:
                    raise RemoteAuthError(401, message)
                raise RemoteError(response.status_code, message)
            return loads(SnapshotFrame, response.content)


@asynccontextmanager
async def open_remote(
    url: str,
    *,
    token: str | None = None,
    since: Cursor | None = None,
    backoff: Backoff | None = None,
    read_timeout: float = 45.0,
) -> AsyncIterator[RemoteStream]:
    """``async with open_remote(url) as stream: async for frame in stream:`` — a remote hub's frames.

    ``url`` is the server's base URL (what ``serve_hub`` returned). The stream reconnects by
    itself and resumes after the last frame it yielded; ``since`` resumes from an earlier run's
    cursor. A 401 raises :class:`RemoteAuthError` at once; another 4xx but 408/429 raises
    :class:`RemoteError`, unless it carries ``Retry-After`` (a fleet's source not discovered
    yet: "not yet", not "never"); those, 5xx and network errors are retried with ``backoff``,
    never sooner than ``Retry-After`` asks (up to ``backoff.maximum``).
    """
    remote = RemoteHub(url, token=token, backoff=backoff, read_timeout=read_timeout)
    async with remote.subscribe(since=since) as stream:
        yield stream
