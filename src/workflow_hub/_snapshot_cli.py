"""``workflow-hub snapshot URL``: the current snapshot of a served hub, as wire JSON."""

from ._watch_cli import add_snapshot_arguments as add_arguments
from ._watch_cli import run_snapshot as run

__all__ = ["add_arguments", "run"]
