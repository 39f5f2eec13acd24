"""``--label KEY=VALUE`` (repeatable), as the bridge commands take it: checked before anything
starts, a mistake a usage error naming the option and the key."""

from __future__ import annotations

from collections.abc import Iterable

from .. import ContractError, Labels
from ._errors import UsageError

__all__ = ["given_labels"]


def given_labels(items: Iterable[str]) -> dict[str, str]:
    """The labels ``--label`` gave: each ``KEY=VALUE``, valid as C3's labels all together."""
    labels: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals:
            raise UsageError(f"--label {item!r}: expected KEY=VALUE")
        labels[key] = value
    try:
        Labels(labels)
    except ContractError as error:  # it names the key
        raise UsageError(f"--label: {error}") from None
    return labels
