"""The suite's longest files are handed out first (tests/conftest.py, ``LONGEST_FIRST``): a file
renamed or removed must leave that list too, or the order quietly rots."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONGEST_FIRST

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_named_longest_first_exists_once() -> None:
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, missing
