""":func:`mirror_hub` with a Redis client of its own, opened from a URL.

What ``--redis URL`` needs in every bridge (``serve_celery``, ``serve_airflow``): the client lives
exactly as long as the mirror, so the caller has nothing to open or close.
"""

from __future__ import annotations

import trio

from .._core import HookRunner, WorkflowActivityHub
from ._keys import DEFAULT_PREFIX
from ._mirror import Mirror, mirror_hub

__all__ = ["mirror_hub_at"]


async def mirror_hub_at(
    hub: WorkflowActivityHub,
    url: str,
    *,
    source: str,
    prefix: str = DEFAULT_PREFIX,
    runner: HookRunner | None = None,
    task_status: trio.TaskStatus[Mirror] = trio.TASK_STATUS_IGNORED,
) -> None:
    """:func:`mirror_hub` into the Redis at ``url`` (``redis://host:6379/0``), through a client
    opened here and closed when the mirror ends (for ``maxlen``, ``retire_after`` and the other
    settings, open the client yourself and call :func:`mirror_hub`). Start it as
    :func:`mirror_hub` is started:
    ``mirror = await nursery.start(functools.partial(mirror_hub_at, hub, url, source="s"))``."""
    import coredis  # here: importing workflow_hub.redis needs no Redis client (serve, watch)

    async with coredis.Redis.from_url(url) as redis:
        await mirror_hub(
            hub,
            redis,
            source=source,
            prefix=prefix,
            runner=runner,
            task_status=task_status,
        )
