"""A DAG run's labels (C3): the bridge's fixed ones, the DAG's tags, and the ``conf`` keys the
user names.

Tags are one label, ``tags`` (the DAG's tags, sorted, comma-separated): Airflow's tags are free
text (spaces, a leading digit, dozens of them) that would often not be label keys, and one
label keeps a DAG with many tags within the contract's sixteen. A run's ``conf`` is the
trigger's payload, often large and sometimes secret, so only the keys the user names become
labels, each under its own name, and only when its value is a string, a number or a boolean
that fits a label's value; anything else is left out (a label is never worth a failed poll).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

from .._contract import ContractError, Labels

__all__ = ["TAGS_LABEL", "RunLabels"]

logger = logging.getLogger("workflow_hub.airflow")

TAGS_LABEL: Final = "tags"
_VALUE_MAX: Final = 256
_LABELS_MAX: Final = 16


@final
class RunLabels:
    """Makes each DAG run's labels. ``fixed`` go on every root; ``conf_keys`` name the keys of
    a run's ``conf`` to copy (a value there wins over a fixed label of the same key); ``tags``
    puts the DAG's tags on as ``tags``. Bad keys, or more than sixteen labels in all, are a
    :class:`ContractError` here, before anything runs."""

    def __init__(
        self,
        fixed: Mapping[str, str] | None = None,
        *,
        conf_keys: Iterable[str] = (),
        tags: bool = True,
    ) -> None:
        self._fixed = dict(Labels(dict(fixed or {})))
        keys = list(dict.fromkeys(conf_keys))
        for key in keys:
            if not isinstance(key, str):
                raise ContractError("label_conf", f"expected str keys, got {key!r}")
            try:
                Labels({key: "x"})
            except ContractError as error:
                raise ContractError("label_conf", str(error)) from None
        self._conf_keys = tuple(keys)
        self._tags = tags
        count = len({*self._fixed, *keys, *([TAGS_LABEL] if tags else [])})
        if count > _LABELS_MAX:
            raise ContractError(
                "label_conf", f"expected at most {_LABELS_MAX} labels in all, got {count}"
            )
        self._said: set[str] = set()

    def of(self, tags: Iterable[str], conf: Mapping[str, Any] | None) -> dict[str, str]:
        labels = dict(self._fixed)
        if self._tags:
            value = _fit(",".join(sorted({str(tag) for tag in tags})))
            if value is not None:
                labels[TAGS_LABEL] = value
        for key in self._conf_keys:
            if not conf or key not in conf:
                continue
            value = _fit(_scalar(conf[key]))
            if value is None:
                if key not in self._said:
                    self._said.add(key)
                    logger.warning("conf key %r is not a label value (left out)", key)
                continue
            labels[key] = value
        return labels


def _scalar(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return None


def _fit(value: str | None) -> str | None:
    """The value if a label can hold it; a long one is cut, an empty or unprintable one is out."""
    if not value or not value.isprintable():
        return None
    return value if len(value) <= _VALUE_MAX else value[: _VALUE_MAX - 1] + "…"
