"""The text form of a cursor, ``"<epoch>:<revision>"``, for transports (SPEC R4).

A transport hands it to a client with every frame (an SSE ``id:``, a WebSocket message, a Redis
stream field) and takes it back to resume (``Last-Event-ID``, a query parameter). An epoch may
itself contain colons, so the text splits at the **last** one; the revision is a plain
non-negative decimal. Anything else is a :class:`~workflow_hub.ContractError`, never a guess:
a cursor misread as another one would resume from the wrong place.
"""

from __future__ import annotations

from ._contract import Cursor
from ._errors import ContractError

__all__ = ["format_cursor", "parse_cursor"]

_DIGITS = frozenset("0123456789")


def format_cursor(cursor: Cursor) -> str:
    """``"<epoch>:<revision>"``; :func:`parse_cursor` reads it back to an equal cursor.

    An epoch that could not come back (empty, or with surrounding whitespace, which the text form
    forbids) is a ``ContractError`` here rather than a cursor no client can resume from.
    """
    if not isinstance(cursor, Cursor):
        raise ContractError("cursor", f"expected a Cursor, got {type(cursor).__name__}")
    epoch = cursor.epoch
    if not epoch or epoch != epoch.strip():
        raise ContractError("cursor.epoch", f"{epoch!r} has no text form (empty or spaced)")
    return f"{epoch}:{cursor.revision}"


def parse_cursor(text: str) -> Cursor:
    """The cursor written by :func:`format_cursor`; ``ContractError`` naming what is wrong."""
    if not isinstance(text, str):
        raise ContractError("cursor", f"expected a str, got {type(text).__name__}")
    if text != text.strip():
        raise ContractError("cursor", f"surrounding whitespace in {text!r}")
    epoch, colon, revision = text.rpartition(":")
    if not colon:
        raise ContractError("cursor", f"no ':' between epoch and revision in {text!r}")
    if not epoch:
        raise ContractError("cursor.epoch", f"empty epoch in {text!r}")
    # isdigit() would accept other scripts' digits and int() underscores and signs: be exact.
    if not revision or not _DIGITS.issuperset(revision):
        raise ContractError(
            "cursor.revision", f"expected a non-negative decimal integer, got {revision!r}"
        )
    return Cursor(epoch=epoch, revision=int(revision))
