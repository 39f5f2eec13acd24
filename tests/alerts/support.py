"""What the alert tests share: a recording sink, and roots in the states that alert."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from tests.support.builders import root_in
from workflow_hub import NodePrompt, RootActivity, RootGraph, StageNode
from workflow_hub.alerts import Alert, AlertNotification, NotificationKind


@attrs.define
class Recorder:
    """A sink (through ``deliver``) that keeps every notification, and checks that each alert
    fires once and resolves once."""

    name: str = "recorder"
    notifications: list[AlertNotification] = attrs.field(factory=list)
    firing: dict[str, Alert] = attrs.field(factory=dict)
    resolved: set[str] = attrs.field(factory=set)

    async def deliver(self, batch: Sequence[AlertNotification]) -> None:
        for notification in batch:
            self.record(notification)

    def record(self, notification: AlertNotification) -> None:
        self.notifications.append(notification)
        alert = notification.alert
        if notification.kind is NotificationKind.FIRING:
            assert alert.id not in self.firing, f"fired twice: {alert.labels}"
            self.firing[alert.id] = alert
        else:
            assert alert.id in self.firing, f"resolved but never fired: {alert.labels}"
            del self.firing[alert.id]
            self.resolved.add(alert.id)

    def names(self) -> list[tuple[str, str, str | None]]:
        return [(str(n.kind), str(n.alert.name), n.alert.root_run_id) for n in self.notifications]


def asking(
    root_run_id: str, question: str = "deploy to prod?", *, prompt_id: str = "p1", **labels: str
) -> RootActivity:
    """A root blocked on one stage's prompt."""
    prompt = NodePrompt(id=prompt_id, kind="confirm", message=question, created_at=1_000)
    stage = StageNode(
        id=f"{root_run_id}:approve",
        run_id=root_run_id,
        node_id="approve",
        name="approve",
        parent_ids=(),
        depth=0,
        status="awaiting_input",
        pending_prompt=prompt,
    )
    blocked = root_in(root_run_id, "blocked", "awaiting_input", attention=True, labels=labels)
    return attrs.evolve(blocked, graph=RootGraph(nodes=(stage,)))


def working(root_run_id: str, **labels: str) -> RootActivity:
    return root_in(root_run_id, "working", "executing", labels=labels or None)


def idle(root_run_id: str) -> RootActivity:
    return root_in(root_run_id, "idle", "quiescent")
