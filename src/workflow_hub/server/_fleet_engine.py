"""What ``serve_fleet`` was given, as the fleet engine it serves.

The one module of the fleet server that knows an engine by name: ``serve_fleet`` (and
``FleetApp``) took a coredis client before fleets had an interface, and still do. Such a client
is wrapped in :class:`~workflow_hub.redis.RedisFleet`, imported only then; every other module of
the fleet server reads the fleet through :class:`~workflow_hub.fleet.FleetEngine` alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from .._contract import ContractError
from ..fleet import FleetEngine

if TYPE_CHECKING:
    import coredis

__all__ = ["FleetGiven", "fleet_engine"]

FleetGiven: TypeAlias = "FleetEngine | coredis.Redis[Any]"
"""What ``serve_fleet`` and ``FleetApp`` take: an engine, or a coredis client."""


def fleet_engine(fleet: object, settings: dict[str, Any]) -> FleetEngine:
    """``fleet`` itself when it is a :class:`FleetEngine` (``settings`` must then be empty: an
    engine has its own); a :class:`~workflow_hub.redis.RedisFleet` over it, with ``settings``,
    when it is a coredis client."""
    given = {name: value for name, value in settings.items() if value is not None}
    if isinstance(fleet, FleetEngine):
        if given:
            first = sorted(given)[0]
            raise ContractError(first, "set on the engine: a FleetEngine brings its own settings")
        return fleet
    if type(fleet).__module__.partition(".")[0] != "coredis":
        raise ContractError(
            "fleet", f"expected a FleetEngine or a coredis client, got {type(fleet).__name__}"
        )
    from ..redis import RedisFleet

    client: coredis.Redis[Any] = fleet  # type: ignore[assignment]  # its module said so
    return RedisFleet(client, **given)
