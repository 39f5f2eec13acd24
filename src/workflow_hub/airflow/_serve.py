"""``serve_airflow``: an Airflow deployment's DAG runs on the dashboard, in one trio call.

The composition ``workflow-hub airflow`` runs: a hub, a :class:`~workflow_hub.tracker.RunTracker`
with a :class:`~workflow_hub.HookRunner` bound (so the tracker's lifecycle events reach
``/v1/events`` and the fleet), the HTTP server, an optional Redis mirror, and
:func:`watch_airflow` polling the API. Nothing runs inside Airflow: it is only read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import final

import attrs
import trio

from .. import HookRunner, WorkflowActivityHub, open_hub
from .._defaults import DEFAULT_PORT
from ..tracker import RunTracker
from ._api import AirflowApi
from ._bridge import AirflowBridge
from ._watch import DEFAULT_INTERVAL, watch_airflow

__all__ = ["AirflowServer", "serve_airflow"]


@final
@attrs.frozen
class AirflowServer:
    """What :func:`serve_airflow` serves, once started."""

    url: str
    """The hub's base URL (the dashboard and its streams)."""
    hub: WorkflowActivityHub
    """The hub the DAG runs are reported to."""
    bridge: AirflowBridge
    """The bridge (``bridge.ready``: Airflow was read and a scheduler is alive)."""
    api: AirflowApi
    """The API client (``api.requests``: how many requests it made)."""


async def serve_airflow(
    url: str,
    *,
    username: str | None = None,
    password: str | None = None,
    token: str | None = None,
    interval: float = DEFAULT_INTERVAL,
    keep_ended: float = 300.0,
    labels: Mapping[str, str] | None = None,
    label_conf: Iterable[str] = (),
    tag_labels: bool = True,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    serve_token: str | None = None,
    insecure: bool = False,
    redis_url: str | None = None,
    source: str = "airflow",
    prefix: str | None = None,
    task_status: trio.TaskStatus[AirflowServer] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the DAG runs of the Airflow at ``url`` until cancelled: ``served = await
    nursery.start(functools.partial(serve_airflow, "http://localhost:8080", username="admin",
    password=...))``.

    The API is read as ``username``/``password`` (a JWT from ``/auth/token``) or with a ready
    ``token``, every ``interval`` seconds (:func:`watch_airflow`). The hub is served at
    ``host:port`` (``port=0`` picks one; :func:`workflow_hub.server.serve_hub`'s rules for
    ``serve_token`` and ``insecure``). With ``redis_url`` the hub and its hook events are also
    mirrored into that Redis as ``source`` under ``prefix`` (needs the ``redis`` extra).
    ``labels``, ``label_conf`` and ``tag_labels`` are :func:`watch_airflow`'s. When
    cancelled, the source ends: every observer sees its final ``unavailable`` frame (H1).
    """
    from ..server import serve_hub

    labels = dict(labels or {})
    async with open_hub() as hub:
        tracker = RunTracker(
            hub.register_publisher(), owner_session_id="airflow", include_graph=True
        )
        runner = HookRunner(hub)
        runner.bind()
        try:
            async with (
                AirflowApi(url, username=username, password=password, token=token) as api,
                trio.open_nursery() as nursery,
            ):
                served: str = await nursery.start(
                    functools.partial(
                        serve_hub,
                        hub,
                        host=host,
                        port=port,
                        token=serve_token,
                        insecure=insecure,
                        runner=runner,
                    )
                )
                if redis_url is not None:
                    from ..redis import DEFAULT_PREFIX, mirror_hub_at

                    await nursery.start(
                        functools.partial(
                            mirror_hub_at,
                            hub,
                            redis_url,
                            source=source,
                            prefix=DEFAULT_PREFIX if prefix is None else prefix,
                            runner=runner,
                        )
                    )
                bridge: AirflowBridge = await nursery.start(
                    functools.partial(
                        watch_airflow,
                        tracker,
                        api,
                        interval=interval,
                        keep_ended=keep_ended,
                        labels=labels,
                        label_conf=label_conf,
                        tag_labels=tag_labels,
                    )
                )
                task_status.started(AirflowServer(url=served, hub=hub, bridge=bridge, api=api))
        finally:
            tracker.publisher.dispose()
