"""The ``workflow-hub`` a command prints for a person to paste: a line that runs as printed."""

from __future__ import annotations

import functools
import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["command_name"]


@functools.cache
def command_name() -> str:
    """This program as a person types it in their shell, to print beside a command line that
    must work as printed: ``workflow-hub`` when that name on ``PATH`` is this program (an
    activated virtualenv, a ``pip install``), else its path (``.venv/bin/workflow-hub`` after
    ``make demo``, relative when it is under the working directory, else absolute). Found once
    a process: the live view asks on every refresh."""
    started = Path(sys.argv[0])
    # ``python -m workflow_hub._cli`` runs without the console script: the one beside the
    # interpreter is this program too.
    script = (
        started if started.name == "workflow-hub" else Path(sys.executable).parent / "workflow-hub"
    )
    if not script.is_file():
        return "workflow-hub"
    on_path = shutil.which("workflow-hub")
    if on_path is not None and Path(on_path).resolve() == script.resolve():
        return "workflow-hub"
    script = script.absolute()
    try:
        relative = script.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(script))
    return shlex.quote(str(relative) if len(relative.parts) > 1 else f"./{relative}")
