"""What the hosts load: ``import workflow_hub`` loads no host; a host loads no extra (issue 26)."""

from __future__ import annotations

import subprocess
import sys

from ..test_architecture import NOT_ON_IMPORT

HOSTS = ("workflow_hub.asyncio", "workflow_hub.sync", "asyncio")


def loaded_after(program: str, names: tuple[str, ...]) -> list[str]:
    check = f"\nimport sys\nprint(sorted(m for m in {names!r} if m in sys.modules))\n"
    result = subprocess.run(
        [sys.executable, "-c", program + check],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = eval(result.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_package_loads_no_host() -> None:
    """H1: ``import workflow_hub`` (and a trio hub) loads neither host, nor asyncio."""
    program = (
        "import trio, workflow_hub\n"
        "async def main():\n"
        "    async with workflow_hub.open_hub() as hub:\n"
        "        hub.register_publisher().publish_snapshot('ready', [])\n"
        "trio.run(main)\n"
    )
    assert loaded_after(program, HOSTS) == []


def test_running_an_asyncio_host_loads_no_extra() -> None:
    """H1: ``workflow_hub.asyncio`` needs guest mode only: no server, client or metrics."""
    program = (
        "import asyncio, workflow_hub.asyncio\n"
        "async def main():\n"
        "    async with workflow_hub.asyncio.open_hub() as hub:\n"
        "        hub.register_publisher().publish_snapshot('ready', [])\n"
        "        async with hub.subscribe() as frames:\n"
        "            await frames.receive()\n"
        "asyncio.run(main())\n"
    )
    assert loaded_after(program, (*NOT_ON_IMPORT, "workflow_hub.server", "anyio")) == []
