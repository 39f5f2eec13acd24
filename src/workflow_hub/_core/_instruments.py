"""What a hub tells its instrumentation while it works, owned by the core.

The hub knows nothing of Prometheus: it reports to a :class:`HubInstruments` that it gets, once,
from the :class:`Instrumentation` it was given (``WorkflowActivityHub(metrics=...)``).
``workflow_hub.metrics.HubMetrics`` is the one implementation this library ships; importing
``workflow_hub`` does not import it, nor prometheus-client.

A hub without instrumentation holds ``None`` and skips every call: a test of a reference is
cheaper than a call to a no-op, and delivery is the hottest path there is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._contract import DiagnosticKind, Frame

if TYPE_CHECKING:
    from ._hub import WorkflowActivityHub

__all__ = ["LAG_SAMPLE_EVERY", "HubInstruments", "Instrumentation"]

LAG_SAMPLE_EVERY = 32
"""Each observer's 1st, 33rd, 65th … delivery is reported to ``HubInstruments.sample_lag``."""


class HubInstruments(Protocol):
    """The calls one hub makes, on its own thread, as things happen.

    Frames and hook events are reported where they happen, never per delivery except the sampled
    ``sample_lag``: an implementation does plain additions and leaves the rest to its reader.
    """

    def epoch_started(self) -> None:
        """A new epoch began (the hub's first, and one per ``register_publisher()``)."""

    def frame_built(self, frame: Frame) -> None:
        """A frame was built and is about to be queued: its delivery lag counts from now."""

    def frame_published(self, frame: Frame, observers: int) -> None:
        """``frame`` was put in the queues of ``observers`` observers (called after they hold it)."""

    def frames_queued(self, count: int) -> None:
        """``count`` frames entered observer queues outside a publication (an attach snapshot)."""

    def frames_dropped(self, count: int) -> None:
        """``count`` queued frames left a queue undelivered (an overflow, a disposal)."""

    def sample_lag(self, frame: Frame) -> None:
        """An observer starts processing ``frame`` (one delivery in ``LAG_SAMPLE_EVERY``)."""

    def hook_dispatched(self, event_type: str) -> None:
        """A hook event was handed to the dispatcher."""

    def hook_events_dropped(self, count: int) -> None:
        """``count`` hook events were dropped because the hook buffer was full."""

    def handler_failed(self) -> None:
        """A hook handler raised (reported by ``HookRunner``)."""

    def record_diagnostic(self, kind: DiagnosticKind) -> None:
        """A diagnostic was recorded."""


@runtime_checkable
class Instrumentation(Protocol):
    """What ``WorkflowActivityHub(metrics=...)`` accepts: a source of :class:`HubInstruments`."""

    def instrument(self, hub: WorkflowActivityHub, *, queue_limit: int) -> HubInstruments:
        """The instruments ``hub`` reports to from now on; called once, by its constructor.

        ``queue_limit`` bounds how many frames one observer can have pending. The hub is built
        by then; its first epoch is reported right after.
        """
        ...
