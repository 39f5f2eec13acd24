"""How many workflow alerts fire, as Alertmanager says: ``status --alertmanager URL``.

One ``GET /api/v2/alerts`` with the standard library (``status`` stays a quick one-shot; while
following, :class:`AlertCount` asks again every few seconds, in a thread): the
alerts that are active, neither silenced nor inhibited, whose ``alertname`` is one of
``workflow-hub alert``'s (``Workflow…``), and, for a served hub, whose ``source`` is the hub's
``HOST:PORT`` (the label ``alert`` gives a served hub by default).
"""

from __future__ import annotations

import json
import urllib.request
from functools import partial
from urllib.parse import unquote, urlencode, urlsplit

TYPE_CHECKING = False  # not from typing: a status refresh does not load it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["AlertCount", "alert_suffix", "firing_alerts", "source_label"]


def source_label(url: str) -> str:
    """The ``source`` label of a served hub's alerts: the ``NAME`` of a served fleet's source
    (``URL/sources/NAME``: the label ``alert redis://…`` gives the same source), otherwise the
    URL's ``HOST:PORT``."""
    parts = urlsplit(url)
    path = [unquote(part) for part in parts.path.split("/") if part]
    if len(path) >= 2 and path[-2] == "sources":
        return path[-1]
    return parts.netloc


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
        query.append(("filter", f'source="{source_label(hub)}"'))
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


class AlertCount:
    """The count of one ``status`` or ``watch``: asked once per line, or, while following
    (``status --follow``, ``watch``), asked every ``every`` seconds in a thread and kept, so a
    frame never waits for Alertmanager and a change of the count alone redraws the line."""

    def __init__(
        self, alertmanager: str, hub: str | None, *, timeout: float, every: float = 5.0
    ) -> None:
        self._alertmanager = alertmanager
        self._hub = hub
        self._timeout = timeout
        self._every = every
        self._following = False
        self.count: int | None = None

    def now(self) -> int | None:
        """The count for the line being drawn (asked now, unless following)."""
        if self._following:
            return self.count
        return firing_alerts(self._alertmanager, self._hub, timeout=self._timeout)

    def suffix(self) -> str:
        """What a followed view's line says: nothing until the first answer (a view drawn
        before it never waits for Alertmanager)."""
        return alert_suffix(self.count) if self._following else ""

    async def follow(self, changed: Callable[[], object], *, task_status: Any) -> None:
        """Ask now, then every ``every`` seconds; ``changed()`` when the count changed."""
        import trio

        ask = partial(firing_alerts, self._alertmanager, self._hub, timeout=self._timeout)
        self.count = await trio.to_thread.run_sync(ask, abandon_on_cancel=True)
        self._following = True
        task_status.started()
        while True:
            await trio.sleep(self._every)
            count = await trio.to_thread.run_sync(ask, abandon_on_cancel=True)
            if count != self.count:
                self.count = count
                changed()
