"""How many workflow alerts fire, as Alertmanager says: ``status --alertmanager URL``.

One ``GET /api/v2/alerts`` with the standard library (``status`` stays a quick one-shot): the
alerts that are active, neither silenced nor inhibited, whose ``alertname`` is one of
``workflow-hub alert``'s (``Workflow…``), and, for a served hub, whose ``source`` is the hub's
``HOST:PORT`` (the label ``alert`` gives a served hub by default).
"""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import urlencode, urlsplit

__all__ = ["alert_suffix", "firing_alerts"]


def firing_alerts(alertmanager: str, hub: str | None, *, timeout: float) -> int | None:
    """The alerts firing for ``hub`` (a served hub's URL; ``None``: every source), or ``None``
    when Alertmanager cannot be asked (the line then says so instead of a count)."""
    query = [
        ("active", "true"),
        ("silenced", "false"),
        ("inhibited", "false"),
        ("filter", 'alertname=~"Workflow.*"'),
    ]
    if hub is not None:
        query.append(("filter", f'source="{urlsplit(hub).netloc}"'))
    url = f"{alertmanager.rstrip('/')}/api/v2/alerts?{urlencode(query)}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            alerts = json.load(answer)
    except (OSError, ValueError):
        return None
    return len(alerts) if isinstance(alerts, list) else None


def alert_suffix(count: int | None) -> str:
    """What the line of ``status`` says of the alerts."""
    if count is None:
        return " · alerts unknown"
    return f" · {count} alert{'' if count == 1 else 's'} firing"
