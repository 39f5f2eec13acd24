"""The HTTP conventions real clients expect, driven with httpx (issue 23).

Errors in one shape (RFC 9457), conditional requests (RFC 9110 13.1.2), ``Cache-Control``,
gzip for JSON but never for event streams, liveness apart from readiness, and Prometheus'
content negotiation on ``/metrics``.
"""

from __future__ import annotations

import gzip

import httpx
import pytest
import trio

from tests.support.builders import root
from tests.support.netutil import hooks_for, served, sse
from workflow_hub import RootActivity, open_hub
from workflow_hub.metrics import HubMetrics

WAIT = 5
PROBLEM = "application/problem+json"


def assert_problem(response: httpx.Response, status: int, field: str | None = None) -> None:
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == status
    assert body["type"] == "about:blank"
    assert body["title"]
    assert body["detail"]
    assert body.get("field") == field
    assert response.headers["cache-control"] == "no-store"


def wide_root(name: str) -> RootActivity:
    return RootActivity(
        root_run_id=name,
        owner_session_id="session-" * 40,
        state="working",
        reason="executing",
        active_execution_count=1,
        actionable_block_count=0,
        needs_attention=False,
    )


# --- errors -----------------------------------------------------------------------------


async def test_every_error_is_a_problem_document_including_the_routers_own() -> None:
    async with (
        open_hub() as hub,
        served(hub, token="s3cret") as url,
        httpx.AsyncClient(headers={"Authorization": "Bearer s3cret"}) as client,
    ):
        with trio.fail_after(WAIT):
            not_found = await client.get(f"{url}/nothing/here")
            not_allowed = await client.post(f"{url}/v1/snapshot")
            bad_cursor = await client.get(f"{url}/v1/activity?since=nonsense")
            no_runner = await client.get(f"{url}/v1/events")
            no_metrics = await client.get(f"{url}/metrics")
            no_file = await client.get(f"{url}/static/nothing.js")
            no_token = await client.get(f"{url}/v1/snapshot", headers={"Authorization": ""})
    assert_problem(not_found, 404)
    assert_problem(not_allowed, 405)
    assert "GET" in not_allowed.headers["allow"]
    assert_problem(bad_cursor, 400, "since")
    assert_problem(no_runner, 404)
    assert_problem(no_metrics, 404)
    assert_problem(no_file, 404)
    assert_problem(no_token, 401, "token")
    assert no_token.headers["www-authenticate"] == "Bearer"


async def test_a_plain_get_on_the_websocket_path_is_426_upgrade_required() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}/v1/ws")
    assert_problem(response, 426)
    assert response.headers["upgrade"].lower() == "websocket"


# --- caching ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("if_none_match", "matches"),
    [
        ("{etag}", True),
        ("W/{etag}", True),  # weak comparison
        ('"other", {etag}', True),  # a list
        ('"other",W/{etag}', True),
        ("*", True),
        ('"other"', False),
        ('"e:1", "e:2"', False),
    ],
)
async def test_the_snapshot_answers_conditional_requests_as_rfc_9110_says(
    if_none_match: str, matches: bool
) -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        hub.register_publisher().publish_snapshot("ready", [root("a")])
        with trio.fail_after(WAIT):
            first = await client.get(f"{url}/v1/snapshot")
            etag = first.headers["etag"]
            again = await client.get(
                f"{url}/v1/snapshot", headers={"If-None-Match": if_none_match.format(etag=etag)}
            )
    assert first.headers["cache-control"] == "no-cache"
    if matches:
        assert again.status_code == 304
        assert again.content == b""
        assert again.headers["etag"] == etag
        assert again.headers["cache-control"] == "no-cache"
    else:
        assert again.status_code == 200


async def test_a_new_revision_changes_the_etag() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        with trio.fail_after(WAIT):
            first = await client.get(f"{url}/v1/snapshot")
            publisher.publish_changed(root("a"))
            again = await client.get(
                f"{url}/v1/snapshot", headers={"If-None-Match": first.headers["etag"]}
            )
    assert again.status_code == 200
    assert again.headers["etag"] != first.headers["etag"]


async def test_with_a_token_the_snapshot_is_private() -> None:
    async with (
        open_hub() as hub,
        served(hub, token="s3cret") as url,
        httpx.AsyncClient(headers={"Authorization": "Bearer s3cret"}) as client,
    ):
        with trio.fail_after(WAIT):
            response = await client.get(f"{url}/v1/snapshot")
    assert response.headers["cache-control"] == "private, no-cache"


async def test_the_page_and_its_files_are_revalidated_and_streams_never_kept() -> None:
    async with (
        open_hub() as hub,
        served(hub, runner=hooks_for(hub)) as url,
        httpx.AsyncClient() as client,
    ):
        with trio.fail_after(WAIT):
            page = await client.get(f"{url}/")
            page_again = await client.get(
                f"{url}/", headers={"If-None-Match": page.headers["etag"]}
            )
            script = await client.get(f"{url}/static/dashboard.js")
            script_again = await client.get(
                f"{url}/static/dashboard.js",
                headers={"If-None-Match": f'"x", W/{script.headers["etag"]}'},
            )
            async with sse(client, f"{url}/v1/activity") as activity:
                activity_cache = activity.response.headers.get_list("cache-control")
            async with sse(client, f"{url}/v1/events") as events:
                events_cache = events.response.headers.get_list("cache-control")
            probes = [await client.get(f"{url}{path}") for path in ("/livez", "/healthz")]
    assert page.headers["cache-control"] == "no-cache"
    assert page_again.status_code == 304
    assert script.headers["cache-control"] == "no-cache"
    assert script_again.status_code == 304
    assert activity_cache == events_cache == ["no-store"]
    assert all(probe.headers["cache-control"] == "no-store" for probe in probes)


# --- compression ------------------------------------------------------------------------


async def test_json_is_gzipped_for_clients_that_accept_it_and_streams_never_are() -> None:
    async with open_hub() as hub, served(hub) as url:
        hub.register_publisher().publish_snapshot("ready", [wide_root(f"r{n}") for n in range(50)])
        raw = httpx.AsyncClient(headers={"Accept-Encoding": "gzip"})
        plain = httpx.AsyncClient(headers={"Accept-Encoding": "identity"})
        async with raw, plain:
            with trio.fail_after(WAIT):
                zipped = await raw.get(f"{url}/v1/snapshot")
                unzipped = await plain.get(f"{url}/v1/snapshot")
                revalidated = await plain.get(
                    f"{url}/v1/snapshot", headers={"If-None-Match": zipped.headers["etag"]}
                )
                async with raw.stream("GET", f"{url}/v1/activity") as stream:
                    stream_headers = stream.headers
                    chunk = b""
                    async for data in stream.aiter_raw():
                        chunk += data
                        if b"\n\n" in chunk:
                            break
    assert zipped.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in zipped.headers["vary"].lower()
    assert zipped.content == unzipped.content  # httpx decoded it: the same JSON
    assert "content-encoding" not in unzipped.headers
    # The same cursor, another encoding: a weak tag, equal under weak comparison.
    assert zipped.headers["etag"] == "W/" + unzipped.headers["etag"]
    assert revalidated.status_code == 304
    assert "content-encoding" not in stream_headers
    assert chunk.startswith(b"retry: ")  # the raw bytes are the SSE text itself


async def test_a_gzip_body_is_real_gzip() -> None:
    async with open_hub() as hub, served(hub) as url:
        hub.register_publisher().publish_snapshot("ready", [wide_root(f"r{n}") for n in range(50)])
        async with httpx.AsyncClient(headers={"Accept-Encoding": "gzip"}) as client:
            with trio.fail_after(WAIT):
                async with client.stream("GET", f"{url}/v1/snapshot") as response:
                    body = b"".join([part async for part in response.aiter_raw()])
    assert gzip.decompress(body).startswith(b'{"kind":"snapshot"')
    assert len(body) < len(gzip.decompress(body)) / 4


@pytest.mark.parametrize("accept", ["gzip;q=0", "identity", "br", "*;q=0", "gzip;q=0, *"])
async def test_no_gzip_unless_the_client_accepts_it(accept: str) -> None:
    async with open_hub() as hub, served(hub) as url:
        hub.register_publisher().publish_snapshot("ready", [wide_root(f"r{n}") for n in range(50)])
        async with httpx.AsyncClient(headers={"Accept-Encoding": accept}) as client:
            with trio.fail_after(WAIT):
                response = await client.get(f"{url}/v1/snapshot")
    assert "content-encoding" not in response.headers


# --- probes -----------------------------------------------------------------------------


async def test_liveness_is_always_200_and_readiness_follows_the_source() -> None:
    """Readiness fails (503) while the source is unavailable or recovering (P3, O3); liveness
    never depends on it. Neither needs the token."""
    async with open_hub() as hub, served(hub, token="s3cret") as url, httpx.AsyncClient() as client:
        publisher = hub.register_publisher()
        answers = {}
        with trio.fail_after(WAIT):
            answers["unavailable"] = (
                await client.get(f"{url}/livez"),
                await client.get(f"{url}/readyz"),
            )
            publisher.publish_snapshot("recovering")
            answers["recovering"] = (
                await client.get(f"{url}/livez"),
                await client.get(f"{url}/readyz"),
            )
            publisher.publish_snapshot("recovering", detail="broker unreachable: refused")
            said = (await client.get(f"{url}/readyz")).json()
            publisher.publish_snapshot("ready", [])
            answers["ready"] = (await client.get(f"{url}/livez"), await client.get(f"{url}/readyz"))
            hub.dispose()
            answers["disposed"] = (
                await client.get(f"{url}/livez"),
                await client.get(f"{url}/readyz"),
            )
    for state, (live, ready) in answers.items():
        assert live.status_code == 200, state
        assert live.json() == {"status": "ok"}
        if state == "ready":
            assert ready.status_code == 200
            assert ready.json() == {"status": "ready", "availability": "ready"}
        else:
            assert_problem(ready, 503)
            assert ready.json()["availability"] == ("unavailable" if state == "disposed" else state)
    # C3: why, when the source said.
    assert said["detail"] == (
        "the source is recovering (broker unreachable: refused): its roots are not known"
    )


async def test_head_on_probes_and_the_snapshot_answers_headers_only() -> None:
    async with open_hub() as hub, served(hub) as url, httpx.AsyncClient() as client:
        with trio.fail_after(WAIT):
            responses = [await client.head(f"{url}{p}") for p in ("/livez", "/v1/snapshot")]
    assert all(r.status_code == 200 and r.content == b"" for r in responses)


# --- metrics ----------------------------------------------------------------------------


async def test_metrics_negotiate_openmetrics_for_prometheus_and_text_otherwise() -> None:
    from prometheus_client import CollectorRegistry
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    from prometheus_client.parser import text_string_to_metric_families as text_families

    metrics = HubMetrics(CollectorRegistry())
    prometheus_accept = (
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
        "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    )
    async with open_hub(metrics=metrics) as hub, served(hub, metrics=metrics) as url:
        hub.register_publisher().publish_snapshot("ready", [root("a")])
        async with httpx.AsyncClient() as client:
            with trio.fail_after(WAIT):
                open_metrics = await client.get(
                    f"{url}/metrics", headers={"Accept": prometheus_accept}
                )
                text = await client.get(f"{url}/metrics")
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert open_metrics.text.endswith("# EOF\n")
    names = {family.name for family in text_string_to_metric_families(open_metrics.text)}
    assert any(name.startswith("workflow_hub_") for name in names)
    assert text.headers["content-type"].startswith("text/plain")
    assert {family.name for family in text_families(text.text)} & names
