"""Option types shared by the commands: argparse refuses a bad value as a usage mistake (exit 2).

A leaf of the standard library only: every command imports it, ``status`` among them.
"""

from __future__ import annotations

import argparse
import math

from .._defaults import DEFAULT_PORT

__all__ = ["add_bind_arguments", "address", "parse_address", "port", "seconds"]

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


def parse_address(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT``."""
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected [HOST:]PORT with a port 0-65535, got {text!r}")
    return host, int(port)


def add_bind_arguments(parser: argparse.ArgumentParser, *, served: str = "") -> None:
    """``--host``, ``--port`` and ``--token`` of a command that serves a hub (``serve``,
    ``celery``): one spelling, one port type (a usage mistake for 99999), one default."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port,
        default=DEFAULT_PORT,
        help=f"port{served} (default {DEFAULT_PORT}; 0 picks one)",
    )
    parser.add_argument("--token", default=None, help="the token clients must send")
