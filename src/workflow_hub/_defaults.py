"""Defaults that several layers share, written once.

The port is the server's (``serve_hub``, ``serve_fleet``) and the commands' that serve or name a
served hub (``serve``, ``celery``): one number, so that a URL printed by one is the URL another
expects. The longest stream interval is the server's and the remote client's (which checks it
before asking). This module imports nothing, so that the commands read it without loading the
server.
"""

from __future__ import annotations

__all__ = ["DEFAULT_PORT", "MAX_STREAM_INTERVAL"]

DEFAULT_PORT = 8765
"""The TCP port a served hub or fleet binds when none is given."""

MAX_STREAM_INTERVAL = 10.0
"""The longest ``?interval=`` of ``/v1/activity`` (seconds) a server accepts and a client asks
for: longer is a view that looks stuck."""
