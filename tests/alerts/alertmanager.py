"""A real Alertmanager (Debian's ``prometheus-alertmanager``) for the tests, and the receiver it
notifies: a threaded HTTP server on loopback, alive for the whole module as Alertmanager is.

Alertmanager runs on a free loopback port, clustering off, its data in a temporary directory,
with a route that sends every group (one per root and alert name) to the receiver at once and
again one second after any change. With ``CI=true`` a missing binary fails the tests instead of
skipping them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import owned_process
from tests.support.redis_server import free_port

BINARY = "prometheus-alertmanager"

CONFIG = """\
route:
  receiver: hook
  group_by: [alertname, source, root_run_id]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: {url}
        send_resolved: true
"""


class AlertmanagerReceiver:
    """What Alertmanager posted (its webhook JSON), with a way to wait for an alert in it."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()
                with receiver._changed:
                    receiver.posts.append(json.loads(body))
                    receiver._changed.notify_all()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/am"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert of every post, in the order they arrived."""
        with self._changed:
            return [alert for post in self.posts for alert in post["alerts"]]

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 15.0
    ) -> dict[str, Any]:
        """The first alert posted that satisfies ``predicate`` (waiting for it, at most
        ``timeout`` seconds: call it from a thread, e.g. ``trio.to_thread.run_sync``)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for post in self.posts:
                    for alert in post["alerts"]:
                        if predicate(alert):
                            return dict(alert)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no such alert in {self.posts!r}")
                self._changed.wait(left)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def running_alertmanager(receiver_url: str) -> Iterator[str]:
    """Alertmanager on a free loopback port, routing to ``receiver_url``; yields its URL."""
    binary = shutil.which(BINARY)
    if binary is None:
        message = f"{BINARY} is not installed (make pytest installs Debian's package)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    directory = Path(tempfile.mkdtemp(prefix="workflow-hub-alertmanager-"))
    (directory / "alertmanager.yml").write_text(CONFIG.format(url=receiver_url))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = directory / "alertmanager.log"
    with (
        log.open("wb") as output,
        owned_process(
            [
                binary,
                f"--config.file={directory / 'alertmanager.yml'}",
                f"--storage.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",
                "--log.level=warn",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        ) as process,
    ):
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"alertmanager did not start:\n{log.read_text()}")
            time.sleep(0.05)
        try:
            yield url
        except BaseException:
            print(f"alertmanager's log:\n{log.read_text(errors='replace')}")
            raise
    shutil.rmtree(directory, ignore_errors=True)
