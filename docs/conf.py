"""Sphinx's configuration for the documentation site that ``make docs`` builds into build/docs.

The guide is docs/*.md as it reads on GitHub (MyST parses it); the API reference is
docs/reference/, one page per public module, rendered from the docstrings by autodoc (the
docstrings are reStructuredText: ``:class:`` roles, ``::`` blocks). docs/reference/public_api.py
says how a page follows its module's ``__all__``.
"""

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "reference"))

project = "workflow-hub"
author = "the workflow-hub authors"
copyright = "the workflow-hub authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "public_api",
]

root_doc = "index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# docs/api/*.json are the server's API documents (linked from the guide as files, not pages).
exclude_patterns = ["api"]

# docs/performance.md's tables of results use a level-4 heading under a level-2 one: fine on GitHub.
suppress_warnings = ["myst.header"]

# GitHub's anchors: the guide links to sections of other pages the way GitHub names them.
myst_heading_anchors = 4

# The reference follows each public module's ``__all__`` in its order.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# Defaults as written in the source (``static_dir=STATIC_DIR``), not as computed on this machine.
autodoc_preserve_defaults = True
# The page says the module; an entry says its own name.
add_module_names = False
# Signatures name types by their last part (``Cursor``), linked to the full entry.
python_use_unqualified_type_names = True
# Cross-references by default role: ``Cursor`` in a docstring is a literal, as on GitHub.
default_role = "literal"

# Furo ships its own assets and uses the system's fonts: building and reading the site fetch
# nothing from the network.
html_theme = "furo"
html_title = "workflow-hub"
html_copy_source = False
html_show_sourcelink = False


def _navigation(app: object, docname: str, source: list[str]) -> None:
    """The site's navigation: docs/index.md's own links, in its order, then the reference.

    The toctree is added when the site is built, not written in index.md, which stays a plain
    page on GitHub; a guide page linked from nowhere in index.md fails the build (strict mode).
    """
    if docname != "index":
        return
    pages = dict.fromkeys(re.findall(r"\]\(([\w-]+)\.md\)", source[0]))
    source[0] += "\n".join(
        [
            "",
            "```{toctree}",
            ":hidden:",
            ":caption: Guide",
            "",
            *pages,
            "```",
            "",
            "```{toctree}",
            ":hidden:",
            ":caption: Reference",
            "",
            "reference/index",
            "```",
            "",
        ]
    )


def setup(app: Any) -> None:
    app.connect("source-read", _navigation)
