"""Write the server's API documents into docs/api/ (the copies the docs link to).

The server generates them (``/openapi.json``, ``/schemas/wire.json``); these copies describe a
server with every feature on (a token, hook events, metrics, the page), for readers and tools
that have no server at hand. ``fleet-openapi.json`` is the fleet server's (``serve_fleet``).

    python tools/api_documents.py          # rewrite docs/api/openapi.json, fleet-openapi.json
                                           # and wire.schema.json
    python tools/api_documents.py --check  # exit 1 if either is out of date

``make lint`` runs ``--check``, and so does tests/server/test_api_documents.py.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path

from workflow_hub.server._fleet_openapi import fleet_openapi_document
from workflow_hub.server._openapi import openapi_document
from workflow_hub.server._requests import document_bytes
from workflow_hub.server._schemas import events_schema

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api"


def documents() -> dict[Path, bytes]:
    """Each file and the bytes it should hold."""
    openapi = openapi_document(
        version=version("workflow-hub"), token=True, hooks=True, metrics=True, page=True
    )
    fleet = fleet_openapi_document(version=version("workflow-hub"), token=True, page=True)
    return {
        DOCS / "openapi.json": document_bytes(openapi) + b"\n",
        DOCS / "fleet-openapi.json": document_bytes(fleet) + b"\n",
        DOCS / "wire.schema.json": document_bytes(events_schema()) + b"\n",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = [
        path
        for path, data in documents().items()
        if not path.is_file() or path.read_bytes() != data
    ]
    if args.check:
        for path in stale:
            print(f"{path} is out of date: run python tools/api_documents.py", file=sys.stderr)
        return 1 if stale else 0
    DOCS.mkdir(parents=True, exist_ok=True)
    for path, data in documents().items():
        if path in stale:
            path.write_bytes(data)
            print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
