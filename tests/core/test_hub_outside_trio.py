"""Running the trio hub outside trio names the host to use instead (SPEC H1)."""

from __future__ import annotations

import asyncio

import pytest
import trio

from workflow_hub import WorkflowActivityHub, open_hub


def test_open_hub_under_asyncio_says_which_host_to_use() -> None:
    """H1: the hub is a trio program; under asyncio, open_hub() says so instead of failing deep
    in trio, and points to workflow_hub.asyncio."""

    async def main() -> None:
        async with open_hub():
            pass  # pragma: no cover - never entered

    with pytest.raises(RuntimeError, match=r"workflow_hub\.asyncio\.open_hub"):
        asyncio.run(main())


def test_a_hub_refused_outside_trio_can_still_run_in_trio() -> None:
    """H1: the refusal changes nothing: the same hub object still runs once in trio."""
    hub = WorkflowActivityHub()

    async def under_asyncio() -> None:
        async with hub:
            pass  # pragma: no cover - never entered

    with pytest.raises(RuntimeError, match="trio"):
        asyncio.run(under_asyncio())

    async def under_trio() -> None:
        async with hub:
            pass

    trio.run(under_trio)
