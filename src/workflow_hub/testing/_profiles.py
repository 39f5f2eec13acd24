"""Profiles: the parts of the contract an implementation declares, and the kit checks.

The contract (``docs/contract.md``) has a core every implementation shares, the *source* contract
(what the source documents describe: publishers P, observers O1-O8, lifetime L, hooks K), and parts
beyond it that an implementation may leave out: resuming (R1-R4), the pull style of observation (O9)
and hosts beyond trio (threads, H1: checked only when the adapter offers a thread entry point, which
a JSON-lines adapter never does). An adapter declares the profiles it implements (the ``profiles``
attribute of a Python adapter factory, the ``hello`` answer of the JSON-lines protocol); the kit
checks exactly those. A missing declaration means every profile: a silent adapter is never let off.

This module imports nothing heavy (no hypothesis), so the command line can parse and show
profiles before it loads the kit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, TypeAlias, cast

__all__ = [
    "PROFILES",
    "PROFILE_REQUIREMENTS",
    "THREADS_NOT_OFFERED",
    "WITHOUT_SCENARIOS",
    "Profile",
    "check_profiles",
    "declared_profiles",
    "describe_profiles",
]

Profile: TypeAlias = Literal["source", "resume", "stream", "threads"]
"""A profile's name."""

PROFILES: Final[tuple[Profile, ...]] = ("source", "resume", "stream", "threads")
"""Every profile of the contract, in the order they are shown: what an adapter that declares
nothing is checked for. ``source`` (P, O1-O8, L, K) is required; resume (R), stream (O9) and
threads (H1) extend it. Also ``workflow_hub.testing.defaults.PROFILES``."""

PROFILE_REQUIREMENTS: Final[dict[Profile, str]] = {
    "source": "P1-P9, O1-O8, L1-L3, K1-K2: publishers, callback observers, lifetime, hooks",
    "resume": "R1-R4: history and observe(since=...)",
    "stream": "O9: subscribe() streams",
    "threads": "H1: publishing from other threads",
}
"""What each profile covers, in the requirement ids of ``docs/contract.md``."""

WITHOUT_SCENARIOS: Final[frozenset[Profile]] = frozenset()
"""Profiles an adapter may declare that the kit has no scenarios for yet: a run never counts
them as checked, and says so. (Empty since the kit checks ``threads``.)"""


def check_profiles(profiles: Iterable[object], what: str = "profiles") -> tuple[Profile, ...]:
    """The profiles named, deduplicated, in :data:`PROFILES` order; ``ValueError`` naming
    ``what`` for an unknown name, a non-string, or a set without ``source``."""
    if isinstance(profiles, str | bytes):
        raise ValueError(f"{what}: expected a list of profile names, got {profiles!r}")
    names = list(profiles)
    unknown = [name for name in names if name not in PROFILES]
    if unknown:
        raise ValueError(
            f"{what}: unknown profile {unknown[0]!r}; the profiles are {', '.join(PROFILES)}"
        )
    if "source" not in names:
        raise ValueError(f"{what}: 'source' is required (every other profile extends it)")
    return tuple(profile for profile in PROFILES if profile in names)


def declared_profiles(adapter_factory: object) -> tuple[Profile, ...]:
    """What an adapter factory declares: its ``profiles`` attribute (a property of a
    :class:`~workflow_hub.testing.conformance.JsonLinesProcess` asks the child's ``hello``),
    or every profile when it declares nothing."""
    declared = getattr(adapter_factory, "profiles", None)
    if declared is None:
        return PROFILES
    return check_profiles(cast(Iterable[object], declared), "the adapter's declared profiles")


THREADS_NOT_OFFERED: Final = (
    "declared, not checked: the adapter has no thread entry point; a JSON-lines adapter never has"
)
"""Why a declared ``threads`` profile went unchecked: see ``ThreadsAdapter``."""


def describe_profiles(
    checked: Iterable[Profile],
    declared: Iterable[Profile] = (),
    unchecked: dict[Profile, str] | None = None,
) -> str:
    """One line per profile: checked (``[x]``) or not, and what it covers; a declared profile
    the kit has no scenarios for, or could not check (``unchecked``: profile -> why), is marked
    ``[?]``."""
    chosen = set(checked)
    offered = set(declared)
    reasons = unchecked or {}
    lines = []
    for profile in PROFILES:
        line = f"{profile}: {PROFILE_REQUIREMENTS[profile]}"
        if profile in chosen:
            lines.append(f"  [x] {line}")
        elif profile in offered and profile in reasons:
            lines.append(f"  [?] {line} ({reasons[profile]})")
        elif profile in offered and profile in WITHOUT_SCENARIOS:
            lines.append(f"  [?] {line} (declared; the kit has no scenarios for it yet)")
        else:
            lines.append(f"  [ ] {line}")
    return "\n".join(lines)
