"""The conformance kit's defaults, written once for the Python API, the pytest plugin and the CLI.

Public so that a runner of the kit (a CI script, the ``workflow-hub conformance`` command) can
show and reuse them; it imports nothing heavy, so reading it does not load hypothesis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ._profiles import PROFILES as PROFILES

if TYPE_CHECKING:
    from ._adapter import ObserverStyle

__all__ = [
    "DIAGNOSTICS_LIMITS",
    "EXAMPLES",
    "HISTORY_LIMITS",
    "MAX_STEPS",
    "PROFILES",
    "QUEUE_LIMITS",
    "STYLES",
    "TIMEOUT",
]

EXAMPLES: Final = 100
"""Scenarios per run."""
MAX_STEPS: Final = 40
"""Operations per scenario at most."""
QUEUE_LIMITS: Final[tuple[int, ...]] = (256, 1, 2, 4)
"""Observer queue limits tried. The first is the contract's default and the one shrinking moves
towards; the small ones make overflow (O4) reachable in a few steps."""
DIAGNOSTICS_LIMITS: Final[tuple[int, ...]] = (256, 8)
"""Diagnostics ring sizes tried; the small one makes the ring (L3) wrap."""
HISTORY_LIMITS: Final[tuple[int, ...]] = (1024, 0, 1, 3)
"""Frame history limits tried (R1): the default, none at all, and small ones that put resumes on
both sides of the history's edge."""
STYLES: Final[tuple[ObserverStyle, ...]] = ("callback", "stream")
"""Observer styles attached: every style the contract defines."""
TIMEOUT: Final = 30.0
"""Seconds one scenario may take in the Python API."""
