"""``create_app`` is ``HubApp`` by another name: one signature, every option (issue 35).

It used to repeat ``HubApp``'s keywords by hand and had dropped ``static_dir``; now it is the
class itself. The page options are checked through it, over ASGI without a socket.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import httpx
import trio

from workflow_hub import open_hub
from workflow_hub.server import STATIC_DIR, HubApp, create_app

WAIT = 5  # seconds: generous for a loaded 2-core machine


def test_create_app_is_hub_app_itself() -> None:
    """Not a second signature to keep in step: the class, under the name the docs use."""
    assert create_app is HubApp
    assert "static_dir" in inspect.signature(create_app).parameters


async def _get(app: HubApp, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hub") as client:
        with trio.fail_after(WAIT):
            return await client.get(path)


async def test_the_shipped_page_is_served_by_default() -> None:
    async with open_hub() as hub:
        response = await _get(create_app(hub), "/")
    assert response.status_code == 200
    assert response.content == (STATIC_DIR / "index.html").read_bytes()


async def test_a_page_folder_of_ones_own_is_served(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<p>our page</p>", encoding="utf-8")
    (tmp_path / "style.css").write_text("p { color: teal }", encoding="utf-8")
    async with open_hub() as hub:
        app = create_app(hub, static_dir=tmp_path)
        page = await _get(app, "/")
        style = await _get(app, "/static/style.css")
    assert page.status_code == 200
    assert page.text == "<p>our page</p>"
    assert style.status_code == 200
    assert style.text == "p { color: teal }"


async def test_no_page_folder_serves_no_page_and_says_so_in_the_api_document() -> None:
    async with open_hub() as hub:
        app = create_app(hub, static_dir=None)
        page = await _get(app, "/")
        health = await _get(app, "/healthz")
    assert page.status_code == 404
    assert health.status_code == 200
    assert "/" not in app.api_document()["paths"]  # type: ignore[operator]
