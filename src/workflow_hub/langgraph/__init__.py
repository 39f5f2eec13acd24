"""Watch LangGraph runs live: every invocation of a compiled graph reports to a run tracker.

``watched = watch(graph, tracker)`` gives an object whose ``invoke``, ``ainvoke``, ``stream`` and
``astream`` are the graph's own, and which reports as the graph runs: a thread is a root (its
last few turns kept, the earlier ones folded into a summary), a task a stage, a subgraph a
nested run, a tool call a tool, an ``interrupt()`` a prompt, a retry a
retrying stage. Needs the ``langgraph`` extra (``pip install 'workflow-hub[langgraph]'``).
See docs/langgraph.md.
"""

from .._public import fixup_module_metadata
from ._facts import FactSink as FactSink
from ._shared import WatchStatistics as WatchStatistics
from ._watch import WatchedGraph as WatchedGraph
from ._watch import watch as watch

__all__ = ["FactSink", "WatchStatistics", "WatchedGraph", "watch"]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
