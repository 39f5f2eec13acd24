"""``python -m workflow_hub.testing.jsonl_adapter``: this package's hub behind the JSON-lines protocol.

It reads one request per line on stdin and answers each with one line on stdout, exactly as a
host in another language would (see ``docs/conformance.md``), so that

    workflow-hub conformance --adapter "python -m workflow_hub.testing.jsonl_adapter"

checks the command, the protocol and the hub end to end. It is also a reference for anyone
writing such an adapter: the whole of it is :func:`~workflow_hub.testing.conformance.serve`
applied to :class:`~workflow_hub.testing.conformance.HubAdapter`.
"""

from __future__ import annotations

from ._adapter import HubAdapter
from ._jsonl import serve

__all__ = ["main"]


def main() -> None:
    """Serve until stdin ends."""
    serve(HubAdapter)


if __name__ == "__main__":
    main()
