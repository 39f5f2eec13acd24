"""Alerts: what needs a person reaches them, through Alertmanager, signed webhooks or your code.

- :func:`run_alerts` follows a source (a hub, a :class:`~workflow_hub.remote.RemoteHub`, a
  :class:`~workflow_hub.fleet.FleetEngine`) and hands every alert that fires or resolves to its
  sinks; ``workflow-hub alert SOURCE`` runs it as a command.
- :class:`AlertRules` — the conditions' durations (``WorkflowNeedsAttention``, ``WorkflowStuck``,
  ``WorkflowSourceUnknown``, see :class:`AlertName`).
- :class:`AlertBook` — the conditions derived from the folded view of every source, with their
  durations; the firing set is re-derived after any resnapshot or restart.
- Sinks: :class:`AlertmanagerSink` (Prometheus Alertmanager's v2 API), :class:`WebhookSink`
  (CloudEvents 1.0, signed the Standard Webhooks way), :class:`CallbackSink` (your function), or
  any :class:`AlertSink`; each behind its own bounded, retrying :class:`SinkRunner`. A sink
  raises :class:`SinkRefused` when retrying cannot help.

The HTTP sinks need httpx (the ``alerts`` extra), imported when they first send. See
``docs/alerts.md``.
"""

from .._public import fixup_module_metadata
from ._alertmanager import AlertmanagerSink as AlertmanagerSink
from ._book import AlertBook as AlertBook
from ._metrics import AlertMetrics as AlertMetrics
from ._run import Alerter as Alerter
from ._run import run_alerts as run_alerts
from ._service import serve_alerts as serve_alerts
from ._sinks import AlertSink as AlertSink
from ._sinks import CallbackSink as CallbackSink
from ._sinks import SinkPolicy as SinkPolicy
from ._sinks import SinkRefused as SinkRefused
from ._sinks import SinkRunner as SinkRunner
from ._sinks import SinkStatistics as SinkStatistics
from ._values import DEFAULT_NEEDS_ATTENTION_FOR as DEFAULT_NEEDS_ATTENTION_FOR
from ._values import DEFAULT_STUCK_AFTER as DEFAULT_STUCK_AFTER
from ._values import DEFAULT_UNKNOWN_AFTER as DEFAULT_UNKNOWN_AFTER
from ._values import Alert as Alert
from ._values import AlertName as AlertName
from ._values import AlertNotification as AlertNotification
from ._values import AlertRules as AlertRules
from ._values import NotificationKind as NotificationKind
from ._webhook import SECRET_FILE_VARIABLE as SECRET_FILE_VARIABLE
from ._webhook import SECRET_VARIABLE as SECRET_VARIABLE
from ._webhook import WebhookSink as WebhookSink
from ._webhook import webhook_secret as webhook_secret

__all__ = [
    "DEFAULT_NEEDS_ATTENTION_FOR",
    "DEFAULT_STUCK_AFTER",
    "DEFAULT_UNKNOWN_AFTER",
    "SECRET_FILE_VARIABLE",
    "SECRET_VARIABLE",
    "Alert",
    "AlertBook",
    "AlertMetrics",
    "AlertName",
    "AlertNotification",
    "AlertRules",
    "AlertSink",
    "Alerter",
    "AlertmanagerSink",
    "CallbackSink",
    "NotificationKind",
    "SinkPolicy",
    "SinkRefused",
    "SinkRunner",
    "SinkStatistics",
    "WebhookSink",
    "run_alerts",
    "serve_alerts",
    "webhook_secret",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
