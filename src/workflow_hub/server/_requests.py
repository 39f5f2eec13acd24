"""What a request says, read once, and the answers every endpoint shares.

- Errors are RFC 9457 problem details (``application/problem+json``): ``type``, ``title``,
  ``status``, ``detail``, and ``field`` naming the input to blame when there is one (``error``
  repeats ``detail`` for clients written against the first release).
- Resume positions: a hub's cursor (``<epoch>:<revision>``, R4) or a fleet relay's position
  (``<boot>-<position>``), from ``since`` or ``Last-Event-ID``. A position of the other kind
  (a cursor sent to a fleet's stream, a fleet's id sent to a hub's) is no position *here*: the
  stream starts over with a fresh snapshot, as for a position of another server run, because a
  client that resends what a server gave it must never be refused for it (a browser's
  EventSource and ``RemoteHub`` stop at a 4xx). Text that is neither is a
  :class:`~workflow_hub.ContractError` naming the field, which the endpoints answer with a 400.
- Conditional requests (RFC 9110 section 13.1.2): ``If-None-Match`` with weak comparison,
  lists and ``*``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Mapping
from http import HTTPStatus
from typing import Final

from starlette.datastructures import Headers, QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .._contract import ContractError, Cursor, parse_cursor
from .._defaults import MAX_STREAM_INTERVAL

__all__ = [
    "EXCEPTION_HANDLERS",
    "FOREIGN_POSITION",
    "MAX_POSITION",
    "PROBLEM_JSON",
    "contract_problem",
    "document_bytes",
    "document_response",
    "error_response",
    "json_response",
    "not_modified",
    "parse_position",
    "parse_request_cursor",
    "problem",
    "resume_fleet_position",
    "resume_position",
    "resume_text",
]

PROBLEM_JSON: Final = "application/problem+json"

MAX_POSITION: Final = 2**63 - 1
"""The largest fleet position (and hub revision) a client may name."""

_MAX_DIGITS: Final = len(str(MAX_POSITION))
_DIGITS: Final = frozenset("0123456789")
_BOOT: Final = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

FOREIGN_POSITION: Final = ("", 0)
"""What a fleet's stream resumes from when the client sent a hub's cursor: a boot no server
run has (boots are ASCII letters and digits), so every stream starts over from it and says so
(a fresh snapshot, a fresh picture, a ``dropped`` notice), as for an id of another run."""

GZIP_MINIMUM: Final = 1024
"""JSON bodies smaller than this are sent as they are: compressing them saves nothing."""


def problem(
    status: int,
    detail: str,
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, object] | None = None,
) -> Response:
    """An RFC 9457 problem response; ``field`` names the request input that is wrong, ``extra``
    adds members of its own (RFC 9457's extension members)."""
    body: dict[str, object] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if field is not None:
        body["field"] = field
    if extra:
        clash = body.keys() & extra.keys()
        if clash:  # RFC 9457's own members keep their meaning ("status" is the status code)
            raise ValueError(f"extension members may not replace {sorted(clash)}")
        body.update(extra)
    body["error"] = detail
    return Response(
        json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(),
        status_code=status,
        media_type=PROBLEM_JSON,
        headers=headers,
    )


def error_response(status: int, message: str, field: str | None = None, **headers: str) -> Response:
    """:func:`problem` with the headers as keywords (``WWW_Authenticate`` spelt as a dict key)."""
    return problem(status, message, field, headers or None)


def contract_problem(error: ContractError) -> Response:
    """The 400 for bad input: the field is the request's (``since``, ``Last-Event-ID`` ...)."""
    return problem(400, error.problem, error.path)


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    if status == 404:
        detail = f"nothing is served at {request.url.path}"
    elif status == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        detail = f"{request.method} is not allowed here (allowed: {allowed})"
    else:
        detail = exc.detail
    return problem(status, detail, headers=exc.headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    return problem(500, "the server failed to answer; its log says why")


EXCEPTION_HANDLERS: Final = {HTTPException: _http_exception, Exception: _server_error}
"""Starlette's ``exception_handlers``: its own 404, 405 and 500 in the problem shape too."""


# --- resume positions ----------------------------------------------------------------------


def parse_request_cursor(text: str, field: str) -> Cursor:
    """A cursor's text form (R4), its errors naming the request's ``field``."""
    try:
        return parse_cursor(text)
    except ContractError as error:
        raise ContractError(field, f"{error.problem} (expected '<epoch>:<revision>')") from None


def resume_text(query: QueryParams, headers: Headers) -> tuple[str, str] | None:
    """The field and the text a stream resumes from: ``since`` wins over ``Last-Event-ID``.

    ``None`` for no position: neither given, or an empty value (a fresh start).
    """
    text = query.get("since")
    if text is not None:
        return ("since", text) if text else None
    text = headers.get("last-event-id")
    if text:
        return "Last-Event-ID", text
    return None


def resume_position(query: QueryParams, headers: Headers) -> Cursor | None:
    """Where a hub's stream resumes: ``None`` (a fresh snapshot) for no position and for a fleet
    server's event id (what this URL's EventSource kept when a fleet served it before); text
    that is neither raises naming the field."""
    given = resume_text(query, headers)
    if given is None:
        return None
    field, text = given
    if ":" not in text and _is_position(text):
        return None
    return parse_request_cursor(text, field)


def parse_interval(text: str) -> float:
    """``?interval=`` of ``/v1/activity``: seconds, a decimal number above 0 and at most
    :data:`MAX_STREAM_INTERVAL`; anything else raises naming the field."""
    try:
        interval = float(text)
    except ValueError:
        interval = math.nan
    if not 0 < interval <= MAX_STREAM_INTERVAL:  # also refuses nan
        raise ContractError(
            "interval",
            f"expected seconds above 0 and at most {MAX_STREAM_INTERVAL:g}, got {text!r}",
        )
    return interval


def resume_fleet_position(query: QueryParams, headers: Headers) -> tuple[str, int] | None:
    """Where a fleet's stream resumes: an event id of a fleet (``<boot>-<position>``), or
    :data:`FOREIGN_POSITION` for a hub's cursor (``RemoteHub`` and other clients that resume
    by cursor; a single hub served this URL before), so that the stream starts over; ``None``
    for no position. Text that is neither raises naming the field."""
    given = resume_text(query, headers)
    if given is None:
        return None
    field, text = given
    if ":" in text:
        try:
            parse_cursor(text)
        except ContractError:
            pass
        else:
            return FOREIGN_POSITION
    return parse_position(text, field)


def _is_position(text: str) -> bool:
    try:
        parse_position(text, "")
    except ContractError:
        return False
    return True


def parse_position(text: str, field: str) -> tuple[str, int]:
    """A fleet relay's event id, ``<boot>-<position>``: the boot and the position.

    The boot is ASCII letters and digits (every server run draws a new one); the position is
    ASCII decimal digits, at most :data:`MAX_POSITION`. Anything else (other scripts' digits,
    signs, thousands of digits) raises :class:`ContractError` naming ``field``.
    """
    boot, dash, digits = text.rpartition("-")
    if not dash or not boot or not _BOOT.issuperset(boot):
        raise ContractError(field, "expected '<boot>-<position>' (an event id of this stream)")
    if not digits or not _DIGITS.issuperset(digits):
        raise ContractError(field, "the position after '-' must be ASCII decimal digits")
    if len(digits) > _MAX_DIGITS or int(digits) > MAX_POSITION:
        raise ContractError(field, f"the position is out of range (at most {MAX_POSITION})")
    return boot, int(digits)


# --- conditional requests and compression --------------------------------------------------


def _opaque(tag: str) -> str:
    """An entity tag without its weakness indicator: what weak comparison compares."""
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def not_modified(headers: Headers, etag: str) -> bool:
    """Whether ``If-None-Match`` matches ``etag`` (RFC 9110 13.1.2): ``*``, or any tag of the
    list equal to it under weak comparison."""
    given = headers.get("if-none-match")
    if given is None:
        return False
    if given.strip() == "*":
        return True
    wanted = _opaque(etag)
    return any(_opaque(tag) == wanted for tag in given.split(","))


def _accepts_gzip(headers: Headers) -> bool:
    """Whether ``Accept-Encoding`` gives gzip (or ``*``, when gzip is not named) a quality > 0."""
    qualities: dict[str, float] = {}
    for part in headers.get("accept-encoding", "").split(","):
        coding, *params = (piece.strip().lower() for piece in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        qualities[coding] = quality
    for coding in ("gzip", "x-gzip", "*"):
        if coding in qualities:
            return qualities[coding] > 0
    return False


def json_response(
    request: Request,
    body: bytes | str,
    *,
    etag: str | None = None,
    cache_control: str = "no-store",
) -> Response:
    """A JSON answer: ``304`` when ``etag`` matches, gzip when the client accepts it.

    A gzip body carries the entity tag as weak (as nginx does): the same cursor, another
    encoding of it. Weak comparison, the one ``If-None-Match`` uses, treats both alike.
    """
    headers = {"Cache-Control": cache_control, "Vary": "Accept-Encoding"}
    if etag is not None:
        headers["ETag"] = etag
        if not_modified(request.headers, etag):
            return Response(status_code=304, headers=headers)
    data = body.encode() if isinstance(body, str) else body
    if len(data) >= GZIP_MINIMUM and _accepts_gzip(request.headers):
        data = gzip.compress(data, compresslevel=6, mtime=0)
        headers["Content-Encoding"] = "gzip"
        if etag is not None:
            headers["ETag"] = f"W/{etag}"
    return Response(data, media_type="application/json", headers=headers)


def document_bytes(document: Mapping[str, object]) -> bytes:
    """A JSON document (the API's descriptions) as the bytes served, keys in a stable order."""
    return json.dumps(document, ensure_ascii=False, indent=1).encode()


def document_response(request: Request, body: bytes, media_type: str) -> Response:
    """A document that changes only with the package: ``no-cache`` and an ETag of its bytes."""
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    response = json_response(request, body, etag=etag, cache_control="no-cache")
    if response.status_code == 200:
        response.headers["Content-Type"] = media_type
    return response
