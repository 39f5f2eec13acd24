"""The CLI as the otel tests run it: ``workflow-hub otel`` against a served demo on loopback."""

from __future__ import annotations

import subprocess
import sys

from tests.support.processes import owned_process

CLI = [sys.executable, "-m", "workflow_hub._cli"]


def otel_against_served_demo(
    env: dict[str, str], *options: str
) -> subprocess.CompletedProcess[str]:
    """``workflow-hub otel URL --duration 4 OPTIONS`` while ``workflow-hub serve`` runs the demo
    (seed 3) at URL; both processes get ``env`` (the ``OTEL_*`` variables)."""
    with owned_process(
        [*CLI, "serve", "--port", "0", "--seed", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as server:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        return subprocess.run(
            [*CLI, "otel", url, "--duration", "4", *options],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
