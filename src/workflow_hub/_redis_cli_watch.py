"""``workflow-hub watch redis://HOST:PORT/DB``: see ``_redis_cli``."""

from ._redis_cli import add_watch_arguments as add_arguments
from ._redis_cli import run_watch as run

__all__ = ["add_arguments", "run"]
