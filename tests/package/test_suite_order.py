"""The suite's longest files are handed out first (tests/conftest.py, ``LONGEST_FIRST``): a file
renamed or removed must leave that list too, or the order quietly rots."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LONGEST_FIRST

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_named_longest_first_exists_once() -> None:
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, missing


def test_xdist_keeps_the_collection_order(request: pytest.FixtureRequest) -> None:
    """xdist would hand files out by their number of tests (its ``--loadscope-reorder``, on by
    default), undoing LONGEST_FIRST: the suite turns that off."""
    assert request.config.getoption("loadscopereorder") is False
