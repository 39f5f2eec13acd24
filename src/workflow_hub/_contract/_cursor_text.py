"""The text form of a cursor, ``"<epoch>:<revision>"``, for transports (SPEC R4).

A transport hands it to a client with every frame (an SSE ``id:``, a WebSocket message, a Redis
stream field) and takes it back to resume (``Last-Event-ID``, a query parameter). An epoch may
itself contain colons, so the text splits at the **last** one; the revision is a plain
non-negative decimal. Anything else is a :class:`~workflow_hub.ContractError`, never a guess:
a cursor misread as another one would resume from the wrong place.
"""

from __future__ import annotations

from ._errors import ContractError
from ._values import Cursor

__all__ = ["MAX_REVISION", "epoch_text_problem", "format_cursor", "parse_cursor"]

MAX_REVISION = 2**63 - 1
"""The largest revision with a text form: a hub advancing a million times a second takes
292 000 years to reach it, and clients in every language hold it in a 64-bit integer."""

_DIGITS = frozenset("0123456789")
_MAX_DIGITS = len(str(MAX_REVISION))
# A line break inside an epoch would end an SSE ``id:`` line early (SSE splits at CR and LF).
_LINE_BREAKS = frozenset("\r\n")


def epoch_text_problem(epoch: str) -> str | None:
    """Why ``epoch`` has no text form (empty, surrounding whitespace, a line break), or None.

    The hub refuses such an epoch from ``epoch_factory`` (so no transport ever meets one), and
    the text form refuses it both ways.
    """
    if not epoch:
        return "is empty"
    if epoch != epoch.strip():
        return "has surrounding whitespace"
    if not _LINE_BREAKS.isdisjoint(epoch):
        return "contains a line break"
    return None


def format_cursor(cursor: Cursor) -> str:
    """``"<epoch>:<revision>"``; :func:`parse_cursor` reads it back to an equal cursor.

    An epoch that could not come back (see :func:`epoch_text_problem`) is a ``ContractError``
    here rather than a cursor no client can resume from.
    """
    if not isinstance(cursor, Cursor):
        raise ContractError("cursor", f"expected a Cursor, got {type(cursor).__name__}")
    epoch = cursor.epoch
    problem = epoch_text_problem(epoch)
    if problem is not None:
        raise ContractError("cursor.epoch", f"{epoch!r} has no text form: it {problem}")
    if cursor.revision > MAX_REVISION:
        raise ContractError(
            "cursor.revision", f"{cursor.revision} has no text form: it is above {MAX_REVISION}"
        )
    return f"{epoch}:{cursor.revision}"


def parse_cursor(text: str) -> Cursor:
    """The cursor written by :func:`format_cursor`; ``ContractError`` naming what is wrong."""
    if not isinstance(text, str):
        raise ContractError("cursor", f"expected a str, got {type(text).__name__}")
    if text != text.strip():
        raise ContractError("cursor", f"surrounding whitespace in {_shorten(text)}")
    epoch, colon, revision = text.rpartition(":")
    if not colon:
        raise ContractError("cursor", f"no ':' between epoch and revision in {_shorten(text)}")
    problem = epoch_text_problem(epoch)
    if problem is not None:
        raise ContractError("cursor.epoch", f"the epoch of {_shorten(text)} {problem}")
    # isdigit() would accept other scripts' digits and int() underscores and signs: be exact.
    if not revision or not _DIGITS.issuperset(revision):
        raise ContractError(
            "cursor.revision", f"expected a non-negative decimal integer, got {_shorten(revision)}"
        )
    # Checked before int(): past 4 300 digits int() itself refuses (CPython's digit limit), and
    # converting a long string costs quadratic time.
    if len(revision) > _MAX_DIGITS or int(revision) > MAX_REVISION:
        raise ContractError(
            "cursor.revision",
            f"out of range: a revision is at most {MAX_REVISION}, got {_shorten(revision)}",
        )
    return Cursor(epoch=epoch, revision=int(revision))


def _shorten(text: str) -> str:
    """``text`` for an error message: never thousands of characters."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"
