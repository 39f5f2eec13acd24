"""What a request says, read once: resume positions and the error responses that name a field."""

from __future__ import annotations

from starlette.datastructures import Headers, QueryParams
from starlette.responses import JSONResponse

from .._contract import ContractError, Cursor, parse_cursor

__all__ = ["error_response", "parse_request_cursor", "resume_position"]


def parse_request_cursor(text: str, field: str) -> Cursor:
    """A cursor's text form (R4), its errors naming the request's ``field``."""
    try:
        return parse_cursor(text)
    except ContractError as error:
        raise ContractError(field, f"{error.problem} (expected '<epoch>:<revision>')") from None


def error_response(
    status: int, message: str, field: str | None = None, **headers: str
) -> JSONResponse:
    body: dict[str, str] = {"error": message}
    if field is not None:
        body["field"] = field
    return JSONResponse(body, status_code=status, headers=headers or None)


def resume_position(query: QueryParams, headers: Headers) -> Cursor | None:
    """Where a stream resumes: the ``since`` query parameter wins over ``Last-Event-ID``.

    An empty value means "no cursor" (a fresh start with a snapshot); anything else that is not a
    cursor raises :class:`ContractError` naming the parameter.
    """
    text = query.get("since")
    if text is not None:
        return parse_request_cursor(text, "since") if text else None
    text = headers.get("last-event-id")
    if text:
        return parse_request_cursor(text, "Last-Event-ID")
    return None
