"""docs/contract.md defines every requirement id the docs, the code and the tests cite (issue 12),
and the repository cites no contract it does not contain (issue 35).

An id is a family letter and a number: **C** contract values, **P** publishers, **O** observers,
**R** resuming, **N** remote observers, **H** hosts, **L** lifetime, **K** hooks, **D** the
derivation (§5). The contract page defines each in bold (``**O4 ...**``); every other text file
under src/, tests/ and docs/, and the README, may cite them, in any language (the JavaScript
tests do too). Numbers of any length count: an "O10" cited anywhere fails until the page defines
it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"
FAMILIES = "CPORNHLKD"
ID = re.compile(rf"\b([{FAMILIES}][1-9][0-9]*)\b")
DEFINED = re.compile(rf"\*\*([{FAMILIES}][1-9][0-9]*)\b")
# A contract kept outside the repository; written apart so that this file does not name it.
OUTSIDE_CONTRACT = re.compile(r"\b" + "SPEC" + r"\.md\b", re.IGNORECASE)
SKIPPED_FOLDERS = {"node_modules", "__pycache__"}
BINARY_SUFFIXES = {".png", ".svg", ".ico", ".woff", ".woff2", ".gz", ".pyc"}


def texts() -> Iterator[tuple[str, str]]:
    """(path relative to the repository, text) of every text file that may cite an id."""
    yield "README.md", (ROOT / "README.md").read_text(encoding="utf-8")
    for top in ("src", "tests", "docs"):
        for folder, folders, files in os.walk(ROOT / top):
            folders[:] = sorted(name for name in folders if name not in SKIPPED_FOLDERS)
            for name in sorted(files):
                path = Path(folder) / name
                if path.suffix in BINARY_SUFFIXES:
                    continue
                try:
                    text = path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    continue
                yield str(path.relative_to(ROOT)), text


def cited() -> dict[str, set[str]]:
    """Every id cited outside the contract page (and outside this checker), with where."""
    found: dict[str, set[str]] = {}
    skipped = {CONTRACT, Path(__file__).resolve()}
    for where, text in texts():
        if ROOT / where in skipped:
            continue
        for requirement in ID.findall(text):
            found.setdefault(requirement, set()).add(where)
    return found


def defined() -> set[str]:
    return set(DEFINED.findall(CONTRACT.read_text(encoding="utf-8")))


def missing(citations: dict[str, set[str]], known: set[str]) -> dict[str, list[str]]:
    return {
        requirement: sorted(where)
        for requirement, where in sorted(citations.items())
        if requirement not in known
    }


def test_every_cited_id_is_defined_on_the_contract_page() -> None:
    assert missing(cited(), defined()) == {}


def test_the_checker_sees_citations_of_every_kind() -> None:
    """It cannot pass by reading nothing: ids of the code, the tests, the docs and the
    JavaScript tests are all found, and a number past 9 would be caught."""
    citations = cited()
    assert {"C1", "O4", "K3", "D8", "N2", "H1"} <= set(citations)
    assert any(where.startswith("src/") for where in citations["C1"])
    assert any(where.endswith(".mjs") for where in set().union(*citations.values()))
    assert missing({"O10": {"somewhere.py"}, "O4": {"x.md"}}, defined()) == {
        "O10": ["somewhere.py"]
    }


def test_each_family_is_numbered_from_one_without_a_gap() -> None:
    ids = defined()
    for family in FAMILIES:
        numbers = sorted(int(each[1:]) for each in ids if each[0] == family)
        assert numbers, f"the contract defines no {family} id"
        assert numbers == list(range(1, len(numbers) + 1)), family


def test_each_id_is_defined_once() -> None:
    found = DEFINED.findall(CONTRACT.read_text(encoding="utf-8"))
    assert sorted(each for each in set(found) if found.count(each) > 1) == []


def test_no_file_cites_a_contract_outside_the_repository() -> None:
    """The repository stands alone: docs/contract.md is the contract, nothing names another."""
    naming = sorted(where for where, text in texts() if OUTSIDE_CONTRACT.search(text))
    assert naming == []


def test_the_contract_page_has_the_sections_the_docs_cite() -> None:
    text = CONTRACT.read_text(encoding="utf-8")
    for heading in ("## 2. Contract values", "## 3. The hub", "## 4. Hooks", "## 5. "):
        assert heading in text
    assert "](contract.md)" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
