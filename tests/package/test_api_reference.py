"""The API reference covers the public API: every public module has a page, every name is on one.

The reference (docs/reference/, built by ``make docs``) is rendered from the docstrings by Sphinx;
each page renders its module's ``__all__`` when the site is built. This test builds the reference
alone into a temporary folder, in strict mode (a warning fails it, so a docstring that is not
valid reStructuredText does too), and reads the inventory Sphinx writes for other sites to link
to (``objects.inv``): what it lists is what a reader finds. The guide pages are left out here,
because they take as long again to build; ``make docs`` builds everything, in strict mode too.
Every public name must also say what it is: its entry on the built page carries a description
(``UNDESCRIBED`` lists the exceptions, each with its reason).

A new public module needs a page: docs/reference/<dotted name>.rst, whose title is the module's
name and whose body is ``.. public-module:: <dotted name>`` (copy any page there).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import zlib
from html.parser import HTMLParser
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
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    command = [
        *(sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-E"),
        # The reference alone: its own index is the root, the guide's Markdown is left out.
        *("-D", "root_doc=reference/index", "-D", "exclude_patterns=api,*.md"),
        *(str(DOCS), str(out)),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture(scope="module")
def inventory(site: Path) -> dict[str, tuple[str, str]]:
    return read_inventory(site / "objects.inv")


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


# Public names the reference shows without a word of their own, each with the reason it may.
UNDESCRIBED: dict[str, str] = {}


class _Entry:
    """The text one entry's own description holds: the ``<dd>`` after ``<dt id="name">``,
    without the entries nested in it (an enumeration's members, a class's methods) and without
    the ``Bases:`` line autodoc writes for an exception."""

    def __init__(self) -> None:
        self.state = "between"  # in its <dt>; then "inside" (its <dd>), "after"
        self.depth = 0  # elements open inside the <dd>
        self.nested = 0  # <dl> open inside the <dd>: another entry's description
        self.text: list[str] = []
        self.paragraph: list[str] = []

    def start(self, tag: str) -> None:
        if self.state == "between" and tag == "dd":
            self.state = "inside"
        elif self.state == "inside":
            self.depth += 1
            self.nested += tag == "dl"

    def end(self, tag: str) -> None:
        if self.state != "inside":
            return
        if self.depth == 0:  # the entry's own </dd>
            self.state = "after"
            return
        self.depth -= 1
        self.nested -= tag == "dl"
        if tag == "p" and self.nested == 0:
            line = " ".join("".join(self.paragraph).split())
            if not line.startswith("Bases:"):
                self.text.append(line)
            self.paragraph = []

    def data(self, data: str) -> None:
        if self.state == "inside" and self.nested == 0:
            self.paragraph.append(data)


class PageEntries(HTMLParser):
    """Every entry of a page (each ``<dt id=...>``, its first one for an id that repeats) with its
    own description, in one pass: the reference has hundreds of names on a few long pages."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, _Entry] = {}
        self.open: list[_Entry] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for entry in self.open:
            entry.start(tag)
        anchor = dict(attrs).get("id")
        if tag == "dt" and anchor is not None and anchor not in self.entries:
            self.entries[anchor] = _Entry()
            self.open.append(self.entries[anchor])

    def handle_endtag(self, tag: str) -> None:
        for entry in self.open:
            entry.end(tag)
        self.open = [entry for entry in self.open if entry.state != "after"]

    def handle_data(self, data: str) -> None:
        for entry in self.open:
            entry.data(data)


@functools.cache
def page_entries(page: Path) -> dict[str, _Entry]:
    parser = PageEntries()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.entries


def description(site: Path, uri: str) -> str:
    page, _, anchor = uri.partition("#")
    entry = page_entries(site / page).get(anchor)
    assert entry is not None, f"no entry #{anchor} on {page}"
    assert entry.state == "after", f"the entry #{anchor} on {page} never ends"
    return " ".join(entry.text).strip()


def test_every_public_name_says_what_it_is(
    site: Path, inventory: dict[str, tuple[str, str]]
) -> None:
    """Each name's entry in the reference carries a description (its docstring, or for a
    constant or type alias the docstring written under its assignment), not only a signature.

    A name re-exported by the package root is described where it is documented in full, which is
    where its inventory entry points; the root's table repeats that description's first line.
    """
    names = sorted(
        {f"{module.__name__}.{name}" for module in PUBLIC_MODULES for name in module.__all__}
    )
    silent = [
        name
        for name in names
        if name not in UNDESCRIBED and not description(site, inventory[name][1])
    ]
    assert silent == [], "public names with no docstring in the reference"
    described = [name for name in UNDESCRIBED if description(site, inventory[name][1])]
    assert described == [], "described now: take them off UNDESCRIBED"


def test_signatures_show_defaults_not_attrs_internals(site: Path) -> None:
    """An attrs class's signature shows its defaults (``graph=None``, ``received=list()``), not
    the table attrs reads them from (``attr_dict['graph'].default``) or its ``NOTHING``."""
    shown = [
        f"{page.name}: {word}"
        for page in sorted((site / "reference").glob("*.html"))
        for word in ("attr_dict", "NOTHING")
        if word in page.read_text(encoding="utf-8")
    ]
    assert shown == []
