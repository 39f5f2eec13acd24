"""The web page's files: kept by browsers, but asked again every time (``no-cache`` + ``ETag``).

An upgrade of the package changes the files under the same URLs, so a browser may keep them only
if it revalidates; a revalidation that matches costs a ``304`` and no body.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, final

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.staticfiles import PathLike, StaticFiles
from starlette.types import Receive, Scope, Send

from ._requests import error_response, not_modified

__all__ = ["FILE_CACHE_CONTROL", "PageFiles", "page_response"]

FILE_CACHE_CONTROL: Final = "no-cache"


@final
class _PageFile(FileResponse):
    """A file of the page, sent and done. Starlette's ``FileResponse``, under an ASGI server
    older than spec 2.4 (hypercorn says 2.1), then waits for the client to disconnect: the
    connection stayed open after a response that said ``Connection: close``, and a kept-alive
    one could not be recycled until then (issue 37). The file is small and sent at once, so
    nothing is lost by not listening: the response returns when its last byte is handed over."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "asgi": {**scope.get("asgi", {}), "spec_version": "2.4"}}
        await super().__call__(scope, receive, send)


@final
class PageFiles(StaticFiles):
    """Starlette's static files (ETag, ``If-None-Match`` with weak comparison, lists and ``*``)
    with ``Cache-Control: no-cache``."""

    def file_response(
        self,
        full_path: PathLike,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        if type(response) is FileResponse:
            response.__class__ = _PageFile
        response.headers["Cache-Control"] = FILE_CACHE_CONTROL
        return response


def page_response(request: Request, page: Path) -> Response:
    """An HTML page of the package, or a 404 when it is not installed; ``304`` when unchanged."""
    try:
        stat = page.stat()
    except OSError:
        return error_response(404, "no web page is installed")
    response = _PageFile(page, media_type="text/html", stat_result=stat)
    response.headers["Cache-Control"] = FILE_CACHE_CONTROL
    etag = response.headers["etag"]
    if not_modified(request.headers, etag):
        return Response(
            status_code=304, headers={"ETag": etag, "Cache-Control": FILE_CACHE_CONTROL}
        )
    return response
