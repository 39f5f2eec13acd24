"""The fleet server's own OpenAPI document and compression (issue 23's loose ends, issue 25).

``/openapi.json`` on a fleet server is valid OpenAPI 3.1 (openapi-spec-validator), documents
exactly the routes of ``FleetApp``, and the real answers of a fleet server on a real
redis-server — JSON bodies and every kind of ``/v1/fleet`` event — validate against the
schemas it names. JSON of 1 KiB or more is sent gzip to a client that accepts it.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import coredis
import httpx
import pytest
import trio
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from starlette.routing import Mount, Route

from tests.support.builders import root
from tests.support.fleet import mirrored
from tests.support.netutil import sse
from tests.support.redis_server import RedisServer
from workflow_hub.server import FleetApp, serve_fleet

WAIT = 15
OPENAPI_URI = "urn:workflow-hub:fleet-openapi"


def validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(OPENAPI_URI, resource)
    ref = schema["$ref"].replace("#", f"{OPENAPI_URI}#", 1)
    return Draft202012Validator({"$ref": ref}, registry=registry)


@asynccontextmanager
async def fleet_served(redis_url: str, prefix: str) -> AsyncIterator[tuple[str, Any]]:
    async with coredis.Redis.from_url(redis_url) as redis, trio.open_nursery() as nursery:
        url: str = await nursery.start(functools.partial(serve_fleet, redis, prefix=prefix, port=0))
        try:
            yield url, redis
        finally:
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("token", [None, "s3cret"])
async def test_the_fleet_document_is_valid_openapi_3_1(
    token: str | None, redis_server: RedisServer
) -> None:
    async with coredis.Redis.from_url(redis_server.url) as redis:
        document = FleetApp(redis, token=token).api_document()
    validate_openapi(document)  # raises on anything that is not OpenAPI 3.1
    assert ("security" in document) == (token is not None)


@pytest.mark.parametrize("page", [True, False])
async def test_the_documented_paths_are_the_routes_of_the_fleet_app(
    page: bool, redis_server: RedisServer
) -> None:
    """The document cannot drift from the routes: every route is documented, nothing else."""
    from workflow_hub.server import STATIC_DIR

    async with coredis.Redis.from_url(redis_server.url) as redis:
        app = FleetApp(redis, static_dir=STATIC_DIR if page else None)
        documented = set(app.api_document()["paths"])
        routed = set()
        for route in app._router.routes:
            if isinstance(route, Mount):
                routed.add(f"{route.path}/{{path}}")
            else:
                assert isinstance(route, Route)
                routed.add(route.path)
    assert routed == documented


async def test_real_answers_validate_and_big_json_is_gzip(redis_server: RedisServer) -> None:
    prefix = "fleet-api"
    with trio.fail_after(WAIT):
        async with (
            fleet_served(redis_server.url, prefix) as (url, redis),
            trio.open_nursery() as nursery,
            httpx.AsyncClient(timeout=WAIT) as http,
        ):
            served = await http.get(f"{url}/openapi.json")
            assert served.status_code == 200
            document = served.json()
            validate_openapi(document)
            paths = document["paths"]

            def schema(path: str, status: str) -> dict[str, Any]:
                content = paths[path]["get"]["responses"][status]["content"]
                (media,) = content.values()
                return dict(media["schema"])

            names = [f"source-{index:02d}" for index in range(12)]
            publishers = {}
            for name in names:
                hub = await mirrored(nursery, redis, prefix, name)
                publishers[name] = hub.register_publisher()
                publishers[name].publish_snapshot("ready", [root(f"{name}-run")])
            while True:
                if len((await http.get(f"{url}/v1/sources")).json()["sources"]) == len(names):
                    break
                await trio.sleep(0.05)
            checks = [
                ("/livez", "200", await http.get(f"{url}/livez")),
                ("/readyz", "200", await http.get(f"{url}/readyz")),
                ("/healthz", "200", await http.get(f"{url}/healthz")),
                ("/v1/sources", "200", await http.get(f"{url}/v1/sources")),
                ("/v1/fleet", "400", await http.get(f"{url}/v1/fleet?frames=x")),
                (
                    "/sources/{source}/v1/snapshot",
                    "200",
                    await http.get(f"{url}/sources/source-01/v1/snapshot"),
                ),
                (
                    "/sources/{source}/v1/snapshot",
                    "404",
                    await http.get(f"{url}/sources/nobody/v1/snapshot"),
                ),
                (
                    "/sources/{source}/v1/events",
                    "404",
                    await http.get(f"{url}/sources/nobody/v1/events"),
                ),
                (
                    "/sources/{source}/v1/events",
                    "400",
                    await http.get(f"{url}/sources/source-01/v1/events?since=zzz"),
                ),
                ("/v1/events", "400", await http.get(f"{url}/v1/events?since=zzz")),
            ]
            for path, status, response in checks:
                assert str(response.status_code) == status, path
                validator(document, schema(path, status)).validate(response.json())
            # gzip from 1 KiB on: the list of 12 sources is more; a probe's answer is less.
            raw = await http.get(f"{url}/v1/sources", headers={"Accept-Encoding": "gzip"})
            assert raw.headers["content-encoding"] == "gzip"
            assert raw.headers["vary"] == "Accept-Encoding"
            assert json.loads(raw.content)["prefix"] == prefix  # httpx decodes it
            async with http.stream(
                "GET", f"{url}/v1/sources", headers={"Accept-Encoding": "gzip"}
            ) as response:
                body = b"".join([chunk async for chunk in response.aiter_raw()])
            assert json.loads(gzip.decompress(body))["sources"][0]["source"] == "source-00"
            plain = await http.get(f"{url}/v1/sources", headers={"Accept-Encoding": "identity"})
            assert "content-encoding" not in plain.headers
            small = await http.get(f"{url}/livez", headers={"Accept-Encoding": "gzip"})
            assert "content-encoding" not in small.headers
            # Every kind of event of /v1/fleet validates against the schema it is documented
            # with.
            events = paths["/v1/fleet"]["get"]["responses"]["200"]["content"]["text/event-stream"][
                "x-events"
            ]
            seen: set[str] = set()
            async with sse(http, f"{url}/v1/fleet?source=source-03") as reader:
                kinds = {"fleet", "snapshot"}
                while not kinds <= seen:
                    event = await reader.next()
                    kind = event.get("event") or ""
                    validator(document, events[kind]).validate(json.loads(event.get("data") or ""))
                    seen.add(kind)
                    if seen == {"fleet", "snapshot"}:
                        publishers["source-03"].publish_changed(
                            root("more", state="blocked", reason="paused", blocks=1)
                        )
                        publishers["source-03"].publish_removed("more")
                        kinds = {"fleet", "snapshot", "changed", "removed", "source"}
            nursery.cancel_scope.cancel()
