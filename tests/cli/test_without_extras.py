"""Commands that need no extra run without it: a missing optional library is only ever named by
the command, or the option, that needs it (``redis`` for ``redis://`` URLs and ``--redis``).

The extras are all installed here, so each check runs in a child process where importing the
missing library fails as it would on a machine without it (``sys.modules[name] = None``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from workflow_hub._cli import SUBCOMMANDS

# Every command's --help, without one extra's libraries (the first argument, comma-separated):
# none of them needs it to start.
HELP_WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from workflow_hub._cli import main
failed = []
for command in sys.argv[2:]:
    try:
        code = main([command, "--help"])
    except SystemExit as exit:
        code = exit.code
    if code:
        failed.append(command)
print("failed:", failed)
"""


@pytest.mark.parametrize(
    "libraries",
    [
        "coredis",  # redis
        "hypercorn,starlette",  # server
        "httpx",  # server, alerts
        "opentelemetry",  # otel
        "celery,kombu",  # celery
        "langgraph,langchain_core",  # langgraph
    ],
)
def test_every_command_shows_its_help_without_an_extra(libraries: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", HELP_WITHOUT, libraries, *SUBCOMMANDS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.stdout.splitlines()[-1] == "failed: []", result.stderr[-2000:]


def test_serve_runs_the_demo_without_the_redis_extra() -> None:
    """``serve`` needs the ``server`` extra only (docs/network.md)."""
    program = (
        "import sys\n"
        "sys.modules['coredis'] = None\n"
        "from workflow_hub._cli import main\n"
        "main(['serve', '--port', '0', '--duration', '1', '--seed', '1'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("http://127.0.0.1:"), result.stdout
