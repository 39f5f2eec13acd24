"""The API reference covers the public API: every public module has a page, every name is on one.

The reference (docs/reference/, built by ``make docs``) is rendered from the docstrings by Sphinx;
each page renders its module's ``__all__`` when the site is built. This test builds the reference
alone into a temporary folder, in strict mode (a warning fails it, so a docstring that is not
valid reStructuredText does too), and reads the inventory Sphinx writes for other sites to link
to (``objects.inv``): what it lists is what a reader finds. The guide pages are left out here,
because they take as long again to build; ``make docs`` builds everything, in strict mode too.

A new public module needs a page: docs/reference/<dotted name>.rst, whose title is the module's
name and whose body is ``.. public-module:: <dotted name>`` (copy any page there).
"""

from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from .test_exports import PUBLIC_MODULES

DOCS = Path(__file__).resolve().parents[2] / "docs"
REFERENCE = DOCS / "reference"


def read_inventory(path: Path) -> dict[str, tuple[str, str]]:
    """Sphinx's ``objects.inv`` (version 2): each name with its role and its page's address.

    Four lines of header, then zlib-compressed lines of ``name domain:role priority uri
    display-name``; a uri ending in ``$`` stands for the name itself.
    """
    header, _, body = path.read_bytes().partition(b"zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2"), header[:40]
    found: dict[str, tuple[str, str]] = {}
    for line in zlib.decompress(body).decode().splitlines():
        name, role, _priority, uri, _display = line.split(" ", 4)
        found[name] = (role, uri.replace("$", name) if uri.endswith("$") else uri)
    return found


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    out = tmp_path_factory.mktemp("reference")
    command = [
        *(sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-E"),
        # The reference alone: its own index is the root, the guide's Markdown is left out.
        *("-D", "root_doc=reference/index", "-D", "exclude_patterns=api,*.md"),
        *(str(DOCS), str(out)),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return read_inventory(out / "objects.inv")


def test_every_public_module_has_a_page_of_its_own(
    inventory: dict[str, tuple[str, str]],
) -> None:
    pages = {page.stem for page in REFERENCE.glob("*.rst")} - {"index"}
    modules = {module.__name__ for module in PUBLIC_MODULES}
    assert modules - pages == set(), "public modules without a page in docs/reference/"
    assert pages - modules == set(), "pages in docs/reference/ for no public module"
    for name in sorted(modules):
        assert inventory.get(name, ("", ""))[0] == "py:module", f"{name} is not rendered"
        assert inventory[name][1].startswith(f"reference/{name}.html"), inventory[name]


def test_every_public_name_is_in_the_reference(inventory: dict[str, tuple[str, str]]) -> None:
    """Each module's ``__all__``, the package root's re-exports included (``workflow_hub.Cursor``
    is documented with ``workflow_hub.contract`` and listed on the root's page)."""
    missing = [
        f"{module.__name__}.{name}"
        for module in PUBLIC_MODULES
        for name in module.__all__
        if not inventory.get(f"{module.__name__}.{name}", ("", ""))[0].startswith("py:")
    ]
    assert missing == []


def test_the_reference_names_nothing_private(inventory: dict[str, tuple[str, str]]) -> None:
    """What the reader is shown lives under a public module: no ``workflow_hub._core.X``."""
    private = [
        name
        for name, (role, _uri) in inventory.items()
        if role.startswith("py:") and any(part.startswith("_") for part in name.split(".")[:-1])
    ]
    assert private == []
