"""Celery canvases as live roots, from the events Celery's workers already send (``-E``).

Needs the ``celery`` extra (``pip install 'workflow-hub[celery]'``). See ``docs/celery.md``.

- :func:`watch_celery` — run Celery's own event receiver in threads and report what it hears to
  a tracker (a :class:`~workflow_hub.tracker.RunTracker` or the sync host's thread-safe one):
  ``with watch_celery(app, tracker) as watch: watch.ready.wait(5)``.
- :class:`CeleryBridge` — the mapping itself (events and inspections in, tracker facts out),
  without I/O or threads: for hosts that receive Celery's events their own way.
- :func:`serve_celery` — all of it in one call, from plain threads: the sync host, the HTTP
  server with the dashboard, an optional Redis mirror and the bridge:
  ``with serve_celery(app, port=8765) as served: print(served.url)``. ``workflow-hub celery
  --app module:app`` is this call.
"""

from .._public import fixup_module_metadata
from ._bridge import BridgeStatistics as BridgeStatistics
from ._bridge import CeleryBridge as CeleryBridge
from ._bridge import Inspection as Inspection
from ._bridge import WorkerStatus as WorkerStatus
from ._facts import Facts as Facts
from ._runner import DEFAULT_INSPECT_TIMEOUT as DEFAULT_INSPECT_TIMEOUT
from ._runner import CeleryWatch as CeleryWatch
from ._runner import watch_celery as watch_celery
from ._serve import CeleryServer as CeleryServer
from ._serve import serve_celery as serve_celery

__all__ = [
    "DEFAULT_INSPECT_TIMEOUT",
    "BridgeStatistics",
    "CeleryBridge",
    "CeleryServer",
    "CeleryWatch",
    "Facts",
    "Inspection",
    "WorkerStatus",
    "serve_celery",
    "watch_celery",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
