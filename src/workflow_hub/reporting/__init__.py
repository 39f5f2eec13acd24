"""Tools for status reporters: a consistent view of every root, and one status for a pane or badge.

- :class:`ActivityView` folds an observer's frames in delivery order, checking their continuity;
  ``view.apply(frame)`` returns a :class:`ViewChange` for renderers that redraw incrementally.
- :func:`aggregate` boils a view down to an :class:`AggregateStatus`: working, blocked, idle or
  unknown, with a reason, an attention flag and a short message. Unknown is never idle.
- :func:`run_reporter` subscribes to a hub, keeps a view up to date and calls a render callback
  after each frame: ``view = await nursery.start(run_reporter, hub, render)``.

See ``docs/reporters.md``.

:func:`run_reporter` (and its :data:`RenderCallback`) load trio, so they are imported on first
access (PEP 562): a one-shot reader such as ``workflow-hub status`` folds a snapshot and
aggregates it with attrs alone.
"""

from typing import TYPE_CHECKING

from .._public import fixup_module_metadata
from ._aggregate import AggregateState as AggregateState
from ._aggregate import AggregateStatus as AggregateStatus
from ._aggregate import aggregate as aggregate
from ._aggregate import combine as combine
from ._view import ActivityView as ActivityView
from ._view import ChangeKind as ChangeKind
from ._view import Rejection as Rejection
from ._view import ViewChange as ViewChange

if TYPE_CHECKING:
    from ._reporter import RenderCallback as RenderCallback
    from ._reporter import run_reporter as run_reporter

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
_LAZY = ("RenderCallback", "run_reporter")
fixup_module_metadata(__name__, {**globals(), "__all__": [n for n in __all__ if n not in _LAZY]})
del fixup_module_metadata

if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        if name not in _LAZY:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from .._public import fixup_module_metadata
        from . import _reporter

        loaded = {each: getattr(_reporter, each) for each in _LAZY}
        fixup_module_metadata(__name__, {**loaded, "__all__": list(_LAZY)})
        globals().update(loaded)
        return loaded[name]

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})


del TYPE_CHECKING
