"""Apache Airflow's DAG runs as live roots, read from Airflow 3's stable REST API (``/api/v2``).

Needs the ``airflow`` extra (``pip install 'workflow-hub[airflow]'``: httpx, not Airflow itself).
See ``docs/airflow.md``.

- :func:`watch_airflow` — poll the API and report what changed to a tracker (a
  :class:`~workflow_hub.tracker.RunTracker` or anything that takes
  :class:`~workflow_hub.tracker.SchedulerFacts`): ``bridge = await nursery.start(watch_airflow,
  tracker, api)``.
- :class:`AirflowApi` — the API client it reads with (a JWT from ``/auth/token``).
- :class:`AirflowBridge` — the mapping itself (API records in, tracker facts out), without I/O.
- :func:`serve_airflow` — all of it in one call: hub, HTTP server, optional Redis mirror and the
  poller. ``workflow-hub airflow --url URL`` is this call.
"""

from .._public import fixup_module_metadata
from ._api import AirflowApi as AirflowApi
from ._api import AirflowUnreachable as AirflowUnreachable
from ._bridge import AirflowBridge as AirflowBridge
from ._bridge import DagShape as DagShape
from ._bridge import root_id_of as root_id_of
from ._serve import AirflowServer as AirflowServer
from ._serve import serve_airflow as serve_airflow
from ._watch import DEFAULT_INTERVAL as DEFAULT_INTERVAL
from ._watch import watch_airflow as watch_airflow

__all__ = [
    "DEFAULT_INTERVAL",
    "AirflowApi",
    "AirflowBridge",
    "AirflowServer",
    "AirflowUnreachable",
    "DagShape",
    "root_id_of",
    "serve_airflow",
    "watch_airflow",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
