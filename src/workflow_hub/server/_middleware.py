"""The middleware every application of the server wraps its routes in: the token guard and the
default ``Cache-Control``. One class a concern, shared by the hub's and the fleet's apps."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Final, final

from starlette.datastructures import Headers, QueryParams
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._requests import error_response, problem

__all__ = ["Guard", "NoStore", "ProblemCORS", "is_open_path"]

# Paths a client may read without the token: the probes, the API description, and the page (it
# holds no hub data and asks the user for the token itself).
_OPEN_PATHS: Final = frozenset(
    {"/healthz", "/livez", "/readyz", "/openapi.json", "/", "/favicon.ico"}
)
_OPEN_PREFIXES: Final = ("/static/", "/schemas/")

_NO_STORE: Final = (b"cache-control", b"no-store")


def is_open_path(path: str) -> bool:
    """Whether ``path`` is readable without the token (liveness, the page and its files)."""
    return path in _OPEN_PATHS or path.startswith(_OPEN_PREFIXES)


@final
class NoStore:
    """The outermost layer: ``Cache-Control: no-store`` on every response that does not say
    otherwise (errors included); the snapshot and the page's files say ``no-cache`` (keep, but
    ask again with the ``ETag``)."""

    __slots__ = ("_app",)

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return

        async def send_no_store(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.http.response.start"):
                headers = message.get("headers", ())
                if not any(name.lower() == b"cache-control" for name, _ in headers):
                    message["headers"] = [*headers, _NO_STORE]
            await send(message)

        await self._app(scope, receive, send_no_store)


@final
class Guard:
    """The token check, inside CORS (so that a browser can read a 401) and outside the routes."""

    __slots__ = ("_app", "_is_open", "_token")

    def __init__(
        self, app: ASGIApp, token: str | None, is_open: Callable[[str], bool] | None = None
    ) -> None:
        self._app = app
        self._token = None if token is None else token.encode()
        self._is_open = is_open or is_open_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._token is None or scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        if not self._allowed(scope):
            response = error_response(
                401, "a valid token is required", "token", **{"WWW-Authenticate": "Bearer"}
            )
            if scope["type"] == "websocket":
                await receive()  # websocket.connect: the handshake comes before any answer
                if "websocket.http.response" not in scope.get("extensions", {}):
                    await send({"type": "websocket.close", "code": 1008})
                    return
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        if self._is_open(scope["path"]):
            return True
        given = Headers(scope=scope).get("authorization", "")
        scheme, _, credentials = given.partition(" ")
        if scheme.lower() == "bearer" and credentials:
            offered = credentials.strip()
        else:
            offered = QueryParams(scope.get("query_string", b"")).get("token", "")
        assert self._token is not None
        # Constant time: how long the comparison takes says nothing about the token.
        return hmac.compare_digest(offered.encode(), self._token)


@final
class ProblemCORS(CORSMiddleware):
    """Starlette's CORS middleware, whose refused preflight is a problem document like every
    other error of the server (it answers ``400 text/plain`` on its own; issue 37)."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        detail = bytes(response.body).decode() + " (see the server's cors_origins)"
        headers = {
            name: value
            for name, value in response.headers.items()
            if name not in ("content-type", "content-length")
        }
        return problem(response.status_code, detail, "Origin", headers)
