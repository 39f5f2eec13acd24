"""A served hub's snapshot fetched once, with the standard library only.

``snapshot``, ``status`` and ``watch`` (before it opens its stream) fetch ``/v1/snapshot`` with
the standard library (a plain socket for http://, :mod:`urllib.request` for https://): no httpx,
no trio run, so a one-shot command stays cheap. What can go
wrong is said in one line that says what to do: nothing listens there, the token is missing or
refused, the URL is a fleet server's root, or the server is not a workflow-hub server at all.
"""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

from ._errors import CommandError, describe_os_error

TYPE_CHECKING = False  # not from typing: a status refresh does not load it
if TYPE_CHECKING:
    from .._contract import SnapshotFrame

__all__ = [
    "NotYet",
    "decode_snapshot",
    "fetch_snapshot",
    "fetch_snapshot_body",
    "probe_followed_hub",
    "short_reason",
    "why_down",
]

DEFAULT_TIMEOUT = 5.0


class NotYet(CommandError):
    """What the URL names is not there *yet*: a fleet's source not discovered (or without a
    snapshot). A one-shot command reports it; ``watch`` waits (docs/fleet.md)."""


def fetch_snapshot(
    url: str, token: str | None, *, timeout: float = DEFAULT_TIMEOUT
) -> SnapshotFrame:
    """``GET {url}/v1/snapshot`` once; :class:`CommandError` saying what to do when it fails."""
    return decode_snapshot(url, *fetch_snapshot_body(url, token, timeout=timeout))


def fetch_snapshot_body(
    url: str, token: str | None, *, timeout: float = DEFAULT_TIMEOUT
) -> tuple[bytes, str]:
    """The body and content type of ``GET {url}/v1/snapshot`` answered 200, not decoded;
    :class:`CommandError` saying what to do when it is not."""
    status, content_type, body = _get(f"{url}/v1/snapshot", token, timeout)
    if status == 401:
        raise CommandError(
            f"{url}: the hub wants a token (401): pass it with --token TOKEN"
            if token is None
            else f"{url}: the hub refused this token (401): check --token"
        )
    if status in (404, 503) and (detail := _about_the_source(body)) is not None:
        raise NotYet(f"{url}: {detail}")
    if status == 404:
        raise CommandError(_not_found(url, token, timeout))
    if status != 200:
        raise CommandError(f"{url}: the server answered {status} for /v1/snapshot")
    return body, content_type


def decode_snapshot(url: str, body: bytes, content_type: str) -> SnapshotFrame:
    """The snapshot ``url`` answered; :class:`CommandError` when it is not one."""
    from .._contract import ContractError, SnapshotFrame
    from ..wire import loads

    try:
        return loads(SnapshotFrame, body)
    except (ContractError, ValueError):
        kind = content_type or "no content type"
        raise CommandError(
            f"{url}: not a workflow-hub server (its /v1/snapshot is {kind}, not a snapshot): "
            f"give the URL '{_serve()}' prints"
        ) from None


def _about_the_source(body: bytes) -> str | None:
    """The detail of a fleet's problem that blames the source (``field``), or None."""
    try:
        problem = json.loads(body)
    except ValueError:
        return None
    if isinstance(problem, dict) and problem.get("field") == "source":
        detail = problem.get("detail")
        return detail if isinstance(detail, str) else None
    return None


def probe_followed_hub(url: str, token: str | None, *, timeout: float = 5.0) -> str | None:
    """Before a command follows a hub's streams for a long time (``otel``, ``alert``): None
    when the hub answers; what to say once when it is not up *yet* (nothing listening, no
    answer, a fleet's source not there yet), for the command to wait for it.
    :class:`CommandError` for what waiting cannot mend: an unknown host, a server that is no
    hub, a token refused, a fleet server's root (which names its sources)."""
    try:
        fetch_snapshot(url, token, timeout=timeout)
    except NotYet as waiting:
        return f"{waiting}; following it once it is there"
    except CommandError as error:
        text = str(error)
        if not text.startswith("cannot connect to") or "unknown host" in text:
            raise
        return f"{text}; following it once it answers"
    return None


def _fleet_root(url: str, token: str | None, timeout: float) -> str | None:
    """What to do instead, when ``url`` serves a fleet (its ``/v1/sources`` lists sources)."""
    try:
        status, _, body = _get(f"{url}/v1/sources", token, timeout)
        listed = json.loads(body) if status == 200 else None
    except ValueError:
        listed = None
    if not (isinstance(listed, dict) and isinstance(listed.get("sources"), list)):
        return None
    names = [
        str(item.get("source") or item.get("name"))
        for item in listed["sources"]
        if isinstance(item, dict)
    ]
    example = names[0] if names else "NAME"
    return (
        f"{url} serves a fleet, not one hub: add /sources/{example} to the URL"
        + (f" (sources: {', '.join(names)})" if names else " (no sources yet)")
        + ", or give the fleet's redis:// URL for every source"
    )


def _not_found(url: str, token: str | None, timeout: float) -> str:
    """404 for the snapshot: a fleet's root (say its sources), or not a hub's base URL."""
    try:
        fleet = _fleet_root(url, token, timeout)
    except CommandError:
        fleet = None
    if fleet is not None:
        return fleet
    return (
        f"{url}: no hub here (404 for /v1/snapshot): give the hub's base URL, "
        f"as '{_serve()}' prints it"
    )


def _get(url: str, token: str | None, timeout: float) -> tuple[int, str, bytes]:
    """(status, content type, body) of ``GET url``; :class:`CommandError` when nothing answers."""
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        if url.startswith("http://"):
            return _get_plain(url, headers, timeout)
        return _get_tls(url, headers, timeout)
    except TimeoutError:
        raise CommandError(_unreachable(url, "timed out")) from None
    except OSError as error:
        raise CommandError(_unreachable(url, error)) from None


def _get_plain(url: str, headers: dict[str, str], timeout: float) -> tuple[int, str, bytes]:
    """HTTP/1.1 over a socket: ``urllib``/``http.client`` load ``ssl`` and ``email``, some 7 MB
    and tens of milliseconds that a status line refreshed every few seconds should not pay."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"GET {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    with socket.create_connection((host, parts.port or 80), timeout=timeout) as connection:
        connection.sendall(request)
        received = bytearray()
        while chunk := connection.recv(65536):
            received.extend(chunk)
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(status_line.split()[1])
    except (IndexError, ValueError):
        raise CommandError(
            f"{url}: not an HTTP server (it answered {status_line[:40]!r})"
        ) from None
    fields = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    content_type = fields.get("content-type", "").partition(";")[0].strip()
    return status, content_type, body


def _unchunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.extend(rest[:size])
        body = rest[size + 2 :]
    return bytes(out)


def _get_tls(url: str, headers: dict[str, str], timeout: float) -> tuple[int, str, bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers.get_content_type(), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers.get_content_type(), error.read()
    except urllib.error.URLError as error:
        raise CommandError(_unreachable(url, error.reason)) from None


def _unreachable(url: str, reason: object) -> str:
    parts = urlsplit(url)
    where = parts.netloc
    if isinstance(reason, socket.gaierror):
        return f"cannot connect to {where}: unknown host {parts.hostname!r}"
    if isinstance(reason, ConnectionRefusedError):
        return (
            f"cannot connect to {where}: connection refused (is the hub running? "
            f"'{_serve()}' starts one)"
        )
    if isinstance(reason, TimeoutError) or reason == "timed out":
        return f"cannot connect to {where}: no answer (timed out)"
    if isinstance(reason, OSError):
        return f"cannot connect to {where}: {describe_os_error(reason)}"
    return f"cannot connect to {where}: {reason}"


def short_reason(error: CommandError) -> str:
    """A failure in a few words, for a status line: ``connection refused``, ``the hub wants a
    token``."""
    text = str(error)
    if text.startswith(("cannot connect to ", "http://", "https://")):
        text = text.split(": ", 1)[-1]
    return text.partition(": ")[0].partition(" (")[0]


def why_down(url: str, token: str | None, *, timeout: float = 2.0) -> str:
    """Why a stream cannot connect, in a few words; ``""`` when the snapshot can be fetched."""
    try:
        fetch_snapshot(url, token, timeout=timeout)
    except CommandError as error:
        return short_reason(error)
    return ""


def _serve() -> str:
    """``workflow-hub serve`` as the person's shell runs it; loaded only for these messages."""
    from ._command_line import command_name

    return f"{command_name()} serve"
