"""Scheduler embedding: derive root activity from facts, beat heartbeats, publish from threads.

:class:`SchedulerFacts` is what every scheduler bridge reports to; :class:`RunTracker` (and the
thread host's tracker) implement it. Everything else here is also exported by ``workflow_hub``;
see docs/scheduler-guide.md.
"""

from .._public import claim_root_names, fixup_module_metadata
from .._threads import ThreadPublisher as ThreadPublisher
from ._scheduler_facts import SchedulerFacts as SchedulerFacts
from ._tracker import RunTracker as RunTracker
from ._tracker import run_heartbeats as run_heartbeats

__all__ = ["RunTracker", "SchedulerFacts", "ThreadPublisher", "run_heartbeats"]

fixup_module_metadata(__name__, globals())
# ...but what the package root also exports (lazily) says workflow_hub, as if the root loaded it.
claim_root_names(globals())
del fixup_module_metadata, claim_root_names
