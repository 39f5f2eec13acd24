"""Tools for status reporters: a consistent view of every root, and one status for a pane or badge.

- :class:`ActivityView` folds an observer's frames in delivery order, checking their continuity;
  ``view.apply(frame)`` returns a :class:`ViewChange` for renderers that redraw incrementally.
- :func:`aggregate` boils a view down to an :class:`AggregateStatus`: working, blocked, idle or
  unknown, with a reason, an attention flag and a short message. Unknown is never idle.
- :func:`run_reporter` subscribes to a hub, keeps a view up to date and calls a render callback
  after each frame: ``view = await nursery.start(run_reporter, hub, render)``.

See ``docs/reporters.md``.
"""

from .._public import fixup_module_metadata
from ._aggregate import AggregateState as AggregateState
from ._aggregate import AggregateStatus as AggregateStatus
from ._aggregate import aggregate as aggregate
from ._aggregate import combine as combine
from ._reporter import RenderCallback as RenderCallback
from ._reporter import run_reporter as run_reporter
from ._view import ActivityView as ActivityView
from ._view import ChangeKind as ChangeKind
from ._view import Rejection as Rejection
from ._view import ViewChange as ViewChange

__all__ = [
    "ActivityView",
    "AggregateState",
    "AggregateStatus",
    "ChangeKind",
    "Rejection",
    "RenderCallback",
    "ViewChange",
    "aggregate",
    "combine",
    "run_reporter",
]

# A name the package itself already re-exports (as workflow_hub.X) is left as the package set it.
fixup_module_metadata(__name__, globals())
del fixup_module_metadata
