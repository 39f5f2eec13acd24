"""``workflow-hub serve`` and ``demo --serve`` set what a deployer sets on ``serve_hub``: CORS
origins (repeatable), metrics on the served port (on by default, ``--no-metrics``), and the rest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.support.processes import owned_process

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


@contextmanager
def running(*args: str) -> Iterator[str]:
    """The command, started; yields the URL it reports on stderr ("serving at URL")."""
    with owned_process(
        [*CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV
    ) as process:
        assert process.stderr is not None
        try:
            for line in process.stderr:  # bounded: the command's own --duration ends it
                if "serving at http://" in line:
                    url = line.split("serving at ", 1)[1].split()[0]
                    break
            else:
                raise AssertionError("the command never said where it serves")
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_serve_sends_cors_headers_for_each_origin_given_and_serves_metrics() -> None:
    command = ["serve", "--port", "0", "--duration", "30", "--keepalive", "5"]
    command += ["--cors-origin", "https://one.example", "--cors-origin", "https://two.example"]
    with running(*command) as url, httpx.Client(timeout=10) as client:
        one = client.get(f"{url}/v1/snapshot", headers={"Origin": "https://one.example"})
        two = client.get(f"{url}/v1/snapshot", headers={"Origin": "https://two.example"})
        other = client.get(f"{url}/v1/snapshot", headers={"Origin": "https://evil.example"})
        metrics = client.get(f"{url}/metrics")
    assert one.headers["access-control-allow-origin"] == "https://one.example"
    assert two.headers["access-control-allow-origin"] == "https://two.example"
    assert "access-control-allow-origin" not in other.headers
    assert metrics.status_code == 200
    assert "workflow_hub_" in metrics.text


def test_no_metrics_turns_metrics_off_on_serve_and_demo() -> None:
    for command in (
        ["serve", "--port", "0", "--duration", "30", "--no-metrics"],
        ["demo", "--json", "--serve", "127.0.0.1:0", "--duration", "30", "--no-metrics"],
    ):
        with running(*command) as url, httpx.Client(timeout=10) as client:
            assert client.get(f"{url}/metrics").status_code == 404, command


def test_demo_serve_serves_metrics_by_default() -> None:
    with (
        running("demo", "--json", "--serve", "127.0.0.1:0", "--duration", "30") as url,
        httpx.Client(timeout=10) as client,
    ):
        metrics = client.get(f"{url}/metrics")
    assert metrics.status_code == 200
    assert "workflow_hub_" in metrics.text
