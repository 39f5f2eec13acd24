"""``workflow-hub serve --redis URL --source NAME``: see ``_redis_cli``."""

from ._redis_cli import add_serve_arguments as add_arguments
from ._redis_cli import run_serve as run

__all__ = ["add_arguments", "run"]
