"""One redis-server (the broker and result backend) and one Celery worker for the session.

Tests that kill or restart a worker start their own (``CeleryWorker``); the shared one stays.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.redis_server import RedisServer

from .app import app
from .support import CeleryWorker


@pytest.fixture(scope="session")
def broker() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    app.conf.broker_url = server.url
    app.conf.result_backend = server.url
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def worker(broker: RedisServer) -> Iterator[CeleryWorker]:
    process = CeleryWorker(broker.url, "w1@workflow-hub-tests")
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.failed:
        worker = getattr(item, "funcargs", {}).get("worker")
        if isinstance(worker, CeleryWorker):
            report.sections.append(("celery worker log", worker.log[-8000:]))
    return report
