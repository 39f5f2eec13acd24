"""Observe a hub over the network: an HTTP server (SSE and WebSocket) inside the scheduler.

``url = await nursery.start(serve_hub, hub)`` serves the hub from the scheduler's own nursery;
:func:`create_app` gives the ASGI application for mounting elsewhere. ``serve_fleet`` serves every
source of a fleet (``workflow_hub.fleet``; Redis: ``workflow_hub.redis``) the same way. Needs the ``server`` extra
(``pip install 'workflow-hub[server]'``). See ``docs/network.md``.
"""

from .._defaults import DEFAULT_PORT as DEFAULT_PORT
from .._public import fixup_module_metadata
from ._app import DEFAULT_EVENTS_BUFFER as DEFAULT_EVENTS_BUFFER
from ._app import DEFAULT_KEEPALIVE as DEFAULT_KEEPALIVE
from ._app import STATIC_DIR as STATIC_DIR
from ._app import HubApp as HubApp
from ._app import create_app as create_app
from ._fleet_app import DEFAULT_FLEET_HISTORY as DEFAULT_FLEET_HISTORY
from ._fleet_app import FleetApp as FleetApp
from ._fleet_app import serve_fleet as serve_fleet
from ._serve import serve_hub as serve_hub

__all__ = [
    "DEFAULT_EVENTS_BUFFER",
    "DEFAULT_FLEET_HISTORY",
    "DEFAULT_KEEPALIVE",
    "DEFAULT_PORT",
    "STATIC_DIR",
    "FleetApp",
    "HubApp",
    "create_app",
    "serve_fleet",
    "serve_hub",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
