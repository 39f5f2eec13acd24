"""docs/contract.md defines every requirement id the docs, the code and the tests cite (issue 12)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"
ID = re.compile(r"\b([CPORNLKD][1-9])\b")


def cited() -> dict[str, set[str]]:
    sources = [
        *ROOT.glob("docs/*.md"),
        *ROOT.glob("src/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
        ROOT / "README.md",
    ]
    found: dict[str, set[str]] = {}
    for path in sources:
        if path == CONTRACT:
            continue
        for requirement in ID.findall(path.read_text(encoding="utf-8")):
            found.setdefault(requirement, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_cited_id_is_defined_on_the_contract_page() -> None:
    defined = set(re.findall(r"\*\*([CPORNLKD][1-9])\b", CONTRACT.read_text(encoding="utf-8")))
    # Ids in the families the contract defines; "D8" and "K3" must be there, "O10" cannot be.
    missing = {
        requirement: sorted(where)
        for requirement, where in cited().items()
        if requirement not in defined
    }
    assert not missing, missing
    for family, last in {"C": 2, "P": 9, "O": 9, "R": 4, "N": 3, "L": 3, "K": 7, "D": 8}.items():
        assert {f"{family}{n}" for n in range(1, last + 1)} <= defined, family


def test_the_contract_page_has_the_sections_the_docs_cite() -> None:
    text = CONTRACT.read_text(encoding="utf-8")
    for heading in ("## 2. Contract values", "## 3. The hub", "## 4. Hooks", "## 5. "):
        assert heading in text
    assert "](contract.md)" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
