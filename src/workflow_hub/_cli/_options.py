"""Option types shared by the commands: argparse refuses a bad value as a usage mistake (exit 2)."""

from __future__ import annotations

import argparse
import math

from ._serving import parse_address

__all__ = ["address", "port", "seconds"]

_MAX_PORT = 65535


def port(text: str) -> int:
    """A TCP port: 0 (any free one) to 65535."""
    if not text.strip().isdigit() or not 0 <= int(text) <= _MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"expected a port from 0 to {_MAX_PORT} (0 picks a free one), got {text!r}"
        )
    return int(text)


def seconds(text: str) -> float:
    """A duration in seconds, > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def address(text: str) -> str:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT``, checked (kept as typed)."""
    try:
        parse_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text
