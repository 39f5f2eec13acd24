"""An Airflow whose API cannot be read is unknown (N4): ``recovering``, never idle, said once."""

from __future__ import annotations

import functools
import logging

import pytest
import trio

from tests.support.redis_server import free_port
from workflow_hub import open_hub
from workflow_hub.airflow import AirflowApi, watch_airflow
from workflow_hub.tracker import RunTracker


async def test_an_api_nobody_answers_is_recovering_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """N4: the source is recovering (unknown), not ready with no roots; the log says it once
    however many polls fail."""
    caplog.set_level(logging.WARNING, logger="workflow_hub.airflow")
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="airflow")
        url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        async with (
            AirflowApi(url, username="u", password="p") as api,
            trio.open_nursery() as nursery,
        ):
            bridge = await nursery.start(
                functools.partial(watch_airflow, tracker, api, interval=0.01)
            )
            with trio.fail_after(30):
                # The failed polls are the events waited for: each one counts a request.
                while api.requests < 3:  # noqa: ASYNC110
                    await trio.sleep(0.01)
            assert not bridge.ready
            snapshot = hub.snapshot_frame()
            assert snapshot.availability == "recovering"
            # C3: every view says why (the first failure's reason, once it was said).
            assert snapshot.detail is not None
            assert snapshot.detail.startswith("Airflow unreachable: "), snapshot.detail
            assert url in snapshot.detail
            nursery.cancel_scope.cancel()
    said = [r for r in caplog.records if "unknown" in r.getMessage()]
    assert len(said) == 1
    assert url in said[0].getMessage()


def test_a_bad_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        trio.run(_watch_with_interval, 0.0)


async def _watch_with_interval(interval: float) -> None:
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="airflow")
        async with AirflowApi("http://127.0.0.1:9") as api:
            await watch_airflow(tracker, api, interval=interval)
