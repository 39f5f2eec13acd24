"""Airflow 3's stable REST API (``/api/v2``), the few reads the bridge makes, over httpx.

Airflow 3's api-server wants a JWT: :class:`AirflowApi` gets one from ``POST /auth/token`` with a
user name and password (the simple auth manager's; other auth managers issue the same kind of
token to whoever may have one), keeps it, and fetches a new one when a request is refused with
401. Every failure to read (connection refused, a timeout, a 5xx, a refused login) is an
:class:`AirflowUnreachable`: the bridge treats them all alike, as "Airflow's state is unknown".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, final
from urllib.parse import quote

import httpx

from .._exceptions import WorkflowHubError
from ._marks import MARK_EVENTS

__all__ = ["AirflowApi", "AirflowUnreachable"]

_PAGE = 100


class AirflowUnreachable(WorkflowHubError):
    """Airflow's API could not be read (its message says why): the poller catches it and
    reports the source as unknown; a caller of :class:`AirflowApi` sees it raised."""


@final
class AirflowApi:
    """Reads an Airflow deployment's REST API at ``url`` (``http://host:8080``), as ``username``
    with ``password`` (or with a ready ``token``). ``timeout`` bounds every request (seconds).
    ``transport`` is httpx's (a proxy, custom TLS, or ``httpx.MockTransport`` for recorded
    answers). Use ``async with AirflowApi(url, ...) as api:``; it owns its HTTP connections."""

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._username = username
        self._password = password
        self._token = token
        self._client = httpx.AsyncClient(base_url=self.url, timeout=timeout, transport=transport)
        self.requests = 0
        """Requests tried so far, answered or not (the benchmarks count them per poll)."""
        self.server_time: datetime | None = None
        """The API server's clock at its last answer (its ``Date`` header): the bridge asks for
        what changed since a time of Airflow's clock, never of its own."""

    async def __aenter__(self) -> AirflowApi:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    async def _login(self) -> str:
        if self._username is None:
            raise AirflowUnreachable("refused: no token, and no user name to ask for one")
        try:
            self.requests += 1
            response = await self._client.post(
                "/auth/token", json={"username": self._username, "password": self._password or ""}
            )
        except httpx.HTTPError as error:
            raise AirflowUnreachable(f"cannot reach {self.url}: {error!r}") from error
        if response.status_code >= 400:
            raise AirflowUnreachable(
                f"{self.url}/auth/token refused {self._username!r} ({response.status_code})"
            )
        token = response.json().get("access_token")
        if not isinstance(token, str):
            raise AirflowUnreachable(f"{self.url}/auth/token gave no access_token")
        return token

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """One authenticated GET; its JSON body."""
        for attempt in (1, 2):
            if self._token is None:
                self._token = await self._login()
            try:
                self.requests += 1
                response = await self._client.get(
                    path, params=params, headers={"Authorization": f"Bearer {self._token}"}
                )
            except httpx.HTTPError as error:
                raise AirflowUnreachable(f"cannot reach {self.url}: {error!r}") from error
            self._clock(response)
            if response.status_code == 401 and attempt == 1 and self._username is not None:
                self._token = None  # expired: log in again, once
                continue
            if response.status_code >= 400:
                raise AirflowUnreachable(f"GET {path} answered {response.status_code}")
            try:
                return response.json()
            except ValueError as error:
                raise AirflowUnreachable(f"GET {path} answered no JSON") from error
        raise AssertionError("unreachable")  # pragma: no cover

    def _clock(self, response: httpx.Response) -> None:
        date = response.headers.get("date")
        if date:
            with suppress(TypeError, ValueError):
                self.server_time = parsedate_to_datetime(date).astimezone(UTC)

    async def pages(self, path: str, key: str, params: Mapping[str, Any]) -> list[Any]:
        """Every item of a paged list (``limit``/``offset``), in the API's order."""
        items: list[Any] = []
        while True:
            body = await self.get(path, {**params, "limit": _PAGE, "offset": len(items)})
            page = body.get(key) or []
            items.extend(page)
            if len(page) < _PAGE or len(items) >= int(body.get("total_entries", 0)):
                return items

    async def health(self) -> Mapping[str, Any]:
        """``/api/v2/monitor/health``: is a scheduler alive (it needs no token)."""
        try:
            self.requests += 1
            response = await self._client.get("/api/v2/monitor/health")
        except httpx.HTTPError as error:
            raise AirflowUnreachable(f"cannot reach {self.url}: {error!r}") from error
        self._clock(response)
        if response.status_code >= 400:
            raise AirflowUnreachable(f"the health check answered {response.status_code}")
        body: Mapping[str, Any] = response.json()
        return body

    async def dags(self) -> list[Mapping[str, Any]]:
        return await self.pages("/api/v2/dags", "dags", {"exclude_stale": "true"})

    async def tasks(self, dag_id: str) -> list[Mapping[str, Any]]:
        body = await self.get(f"/api/v2/dags/{_quote(dag_id)}/tasks")
        return list(body.get("tasks") or [])

    async def dag_runs(
        self, *, updated_since: datetime | None = None, states: Sequence[str] = ()
    ) -> list[Mapping[str, Any]]:
        params: dict[str, Any] = {"order_by": "id"}
        if updated_since is not None:
            params["updated_at_gte"] = _iso(updated_since)
        if states:
            params["state"] = list(states)
        return await self.pages("/api/v2/dags/~/dagRuns", "dag_runs", params)

    async def task_instances(
        self,
        *,
        dag_id: str = "~",
        dag_run_id: str = "~",
        updated_since: datetime | None = None,
    ) -> list[Mapping[str, Any]]:
        params: dict[str, Any] = {"order_by": "id"}
        if updated_since is not None:
            params["updated_at_gte"] = _iso(updated_since)
        path = f"/api/v2/dags/{_quote(dag_id)}/dagRuns/{_quote(dag_run_id)}/taskInstances"
        return await self.pages(path, "task_instances", params)

    async def marks(self, *, after: datetime) -> list[Mapping[str, Any]]:
        """The audit log's hand-made state changes after ``after`` (Airflow's clock): a task
        instance or a DAG run marked or cleared by a user, from the UI or the API (``owner`` is
        the user; docs/airflow.md, "Who changed it")."""
        logs = await self.pages(
            "/api/v2/eventLogs",
            "event_logs",
            {"included_events": list(MARK_EVENTS), "after": _iso(after), "order_by": "id"},
        )
        return [log for log in logs if log.get("event") in MARK_EVENTS]

    async def open_questions(self) -> list[Mapping[str, Any]]:
        """The human-in-the-loop requests no one has answered yet (Airflow 3.1+)."""
        return await self.pages(
            "/api/v2/dags/~/dagRuns/~/hitlDetails", "hitl_details", {"response_received": "false"}
        )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _quote(part: str) -> str:
    return quote(part, safe="~")
