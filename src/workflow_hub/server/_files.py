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
from starlette.types import Scope

from ._requests import error_response, not_modified

__all__ = ["FILE_CACHE_CONTROL", "PageFiles", "page_response"]

FILE_CACHE_CONTROL: Final = "no-cache"


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
        response.headers["Cache-Control"] = FILE_CACHE_CONTROL
        return response


def page_response(request: Request, page: Path) -> Response:
    """An HTML page of the package, or a 404 when it is not installed; ``304`` when unchanged."""
    try:
        stat = page.stat()
    except OSError:
        return error_response(404, "no web page is installed")
    response = FileResponse(page, media_type="text/html", stat_result=stat)
    response.headers["Cache-Control"] = FILE_CACHE_CONTROL
    etag = response.headers["etag"]
    if not_modified(request.headers, etag):
        return Response(
            status_code=304, headers={"ETag": etag, "Cache-Control": FILE_CACHE_CONTROL}
        )
    return response
