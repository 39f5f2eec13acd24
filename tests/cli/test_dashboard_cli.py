"""`workflow-hub serve` and `workflow-hub demo --serve` (what `make demo` runs) print where the
dashboard is, and that address serves the page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request

from tests.support.processes import owned_process

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
DASHBOARD = re.compile(r"dashboard: (http://127\.0\.0\.1:\d+/)\)")


def test_serve_prints_the_dashboard_url_and_it_serves_the_page() -> None:
    with owned_process(
        [*CLI, "serve", "--port", "0", "--duration", "20"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    ) as server:
        try:
            assert server.stderr is not None
            found = DASHBOARD.search(server.stderr.readline())
            assert found is not None
            with urllib.request.urlopen(found.group(1), timeout=10) as response:
                page = response.read().decode()
            assert 'data-testid="aggregate"' in page
            assert "static/fold.js" in page
        finally:
            server.terminate()
            server.wait(timeout=30)


def test_the_demo_prints_the_dashboard_url() -> None:
    result = subprocess.run(
        [*CLI, "demo", "--serve", "127.0.0.1:0", "--duration", "1", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert DASHBOARD.search(result.stderr) is not None
