"""Which output a terminal gets: the live view when ``rich`` is installed, plain lines otherwise."""

from __future__ import annotations

import sys
from collections import deque

from ._output import Output, PlainOutput

__all__ = ["HOOK_HISTORY", "HOOK_PANE_LINES", "rich_output_or_plain"]

HOOK_PANE_LINES = 12
"""The pane's height when the terminal's is not known; on a terminal it takes the lines left."""
HOOK_HISTORY = 200
"""Hook lines kept, enough for the pane of a tall terminal."""


def rich_output_or_plain() -> Output:
    """The live view (the ``demo`` extra's rich) or, without rich, one plain line per frame."""
    try:
        import rich  # noqa: F401
    except ImportError:
        print(
            "workflow-hub demo: install the 'demo' extra (rich) for the live view; "
            "showing plain lines",
            file=sys.stderr,
        )
        return PlainOutput(sys.stdout)
    from ._rich import RichOutput

    return RichOutput(pane_lines=HOOK_PANE_LINES, events=deque(maxlen=HOOK_HISTORY))
