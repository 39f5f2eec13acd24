"""Render every written-out copy of hot-path code from its one source, or check that it is.

Some code runs where a call per item would cost more than the item's work (issue 29), so it is
written out at the call site instead of called. Each such copy is generated, never edited: its
source is a marked region of live code (usually the body, or part of the body, of the function it
stands for), and the copy is a marked region whose text is the source's, with names replaced as
the copy's marker declares. Both markers are comments, so the code around them runs unchanged::

    def push(self, frame):
        # <copy-source ObserverQueue.push>
        frames = self._frames
        ...
        # </copy-source>

    for queue in hub._observers:
        # <copy-of ObserverQueue.push self=queue>
        frames = queue._frames
        ...
        # </copy-of>

A source's name is any word without spaces, unique across ``src/``. The copy marker names its
source, then any number of renames ``old=new``: ``old`` is a name or a dotted name (``self``,
``self._until_sample``) and ``new`` any text without spaces (``until_sample``, ``hub``). Renames
apply to code only: the tokens of a name (never an attribute after a dot: ``self=queue`` leaves
``x.self`` alone), not comments or strings (on Python 3.11 an f-string is one token, so a name
inside one is not renamed: give it the same name at both places). All renames apply at once, so
``self=hub publisher=self`` swaps. The source's text is re-indented to the copy's marker.

Every file under ``src/`` is scanned. A copy of an unknown source, a source without a copy, a
rename that matches nothing, or an unclosed or nested region is an error.

    python tools/written_out.py          # rewrite every copy from its source
    python tools/written_out.py --check  # change nothing; exit 1 with a diff if a copy drifted

``make lint`` runs ``--check``, and so does ``tests/core/test_written_out.py``.
"""

from __future__ import annotations

import argparse
import difflib
import io
import re
import sys
import textwrap
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src"

_OPEN = re.compile(r"^(?P<indent>[ \t]*)# <(?P<kind>copy-source|copy-of) (?P<spec>[^>]+)>\s*$")
_CLOSE = re.compile(r"^[ \t]*# </(?P<kind>copy-source|copy-of)>\s*$")


class MarkerError(Exception):
    """A marker that cannot be read or a copy that cannot be rendered, with its place."""


@dataclass(frozen=True)
class Region:
    """A marked region: its body is the lines strictly between the two marker lines."""

    path: Path
    kind: str  # "copy-source" or "copy-of"
    name: str
    renames: dict[str, str]
    indent: str
    start: int  # 0-based index of the first body line
    end: int  # 0-based index of the closing marker line
    body: str

    @property
    def place(self) -> str:
        return f"{self.path}:{self.start}"


def regions(path: Path, lines: list[str]) -> Iterator[Region]:
    """The marked regions of one file's lines, in order."""
    opened: tuple[int, re.Match[str]] | None = None
    for index, line in enumerate(lines):
        start = _OPEN.match(line)
        if start is not None:
            if opened is not None:
                raise MarkerError(f"{path}:{index + 1}: a region opens inside another")
            opened = (index, start)
            continue
        close = _CLOSE.match(line)
        if close is None:
            continue
        if opened is None or opened[1]["kind"] != close["kind"]:
            raise MarkerError(f"{path}:{index + 1}: </{close['kind']}> closes nothing")
        first, marker = opened
        opened = None
        name, *pairs = marker["spec"].split()
        renames: dict[str, str] = {}
        for pair in pairs:
            old, sep, new = pair.partition("=")
            if not sep or not old or not new or marker["kind"] == "copy-source":
                raise MarkerError(f"{path}:{first + 1}: {pair!r} is not a rename old=new")
            renames[old] = new
        yield Region(
            path=path,
            kind=marker["kind"],
            name=name,
            renames=renames,
            indent=marker["indent"],
            start=first + 1,
            end=index,
            body="".join(lines[first + 1 : index]),
        )
    if opened is not None:
        raise MarkerError(f"{path}:{opened[0] + 1}: a region is never closed")


def rename(code: str, renames: dict[str, str], place: str) -> str:
    """``code`` with every name (or dotted name) in ``renames`` replaced, all at once."""
    if not renames:
        return code
    # Each key as the token strings it matches (``a.b``: ``a``, ``.``, ``b``), longest first.
    keys = sorted(
        ([part for name in key.split(".") for part in (".", name)][1:] for key in renames),
        key=len,
        reverse=True,
    )
    line_starts = [0]
    for line in code.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    try:
        tokens = [
            token
            for token in tokenize.generate_tokens(io.StringIO(code).readline)
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        ]
    except (tokenize.TokenError, SyntaxError) as error:
        raise MarkerError(f"{place}: the source is not whole statements ({error})") from None
    edits: list[tuple[int, int, str]] = []
    used: set[str] = set()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        after_dot = index > 0 and tokens[index - 1].string == "."
        if token.type == tokenize.NAME and not after_dot:
            for parts in keys:
                span = tokens[index : index + len(parts)]
                if [t.string for t in span] == parts:
                    begin = line_starts[span[0].start[0] - 1] + span[0].start[1]
                    finish = line_starts[span[-1].end[0] - 1] + span[-1].end[1]
                    key = "".join(parts)
                    edits.append((begin, finish, renames[key]))
                    used.add(key)
                    index += len(span)
                    break
            else:
                index += 1
            continue
        index += 1
    unused = set(renames) - used
    if unused:
        raise MarkerError(f"{place}: the rename of {sorted(unused)} matches nothing in the source")
    for begin, finish, text in sorted(edits, reverse=True):
        code = code[:begin] + text + code[finish:]
    return code


def render(source: Region, copy: Region) -> str:
    """The body ``copy`` must have: ``source``'s, renamed, at the copy's indentation."""
    code = textwrap.dedent(source.body)
    code = rename(code, copy.renames, copy.place)
    return textwrap.indent(code, copy.indent)


def python_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.py") if path.is_file())


def rendered(root: Path = ROOT) -> dict[Path, tuple[str, str]]:
    """Every file with a copy: its text as written and as rendered from the sources."""
    texts = {path: path.read_text() for path in python_files(root)}
    found = {
        path: list(regions(path, text.splitlines(keepends=True))) for path, text in texts.items()
    }
    sources: dict[str, Region] = {}
    for region in (r for rs in found.values() for r in rs if r.kind == "copy-source"):
        if region.name in sources:
            raise MarkerError(f"{region.place}: a second source {region.name!r}")
        sources[region.name] = region
    copied: set[str] = set()
    result: dict[Path, tuple[str, str]] = {}
    for path, found_regions in found.items():
        copies = [r for r in found_regions if r.kind == "copy-of"]
        if not copies:
            continue
        lines = texts[path].splitlines(keepends=True)
        for copy in reversed(copies):
            source = sources.get(copy.name)
            if source is None:
                raise MarkerError(f"{copy.place}: no <copy-source {copy.name}> under {root}")
            copied.add(copy.name)
            lines[copy.start : copy.end] = [render(source, copy)]
        result[path] = (texts[path], "".join(lines))
    orphans = sorted(set(sources) - copied)
    if orphans:
        raise MarkerError(f"sources without a copy (remove their markers): {orphans}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 with a diff if out of date"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to scan (src/)")
    args = parser.parse_args(argv)
    try:
        files = rendered(args.root)
    except MarkerError as error:
        print(f"written_out: {error}", file=sys.stderr)
        return 1
    stale = {path: pair for path, pair in files.items() if pair[0] != pair[1]}
    if args.check:
        for path, (current, wanted) in stale.items():
            sys.stdout.writelines(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    wanted.splitlines(keepends=True),
                    f"{path} (as written)",
                    f"{path} (rendered from its sources)",
                )
            )
        if stale:
            print(
                "copies drifted from their sources: run python tools/written_out.py",
                file=sys.stderr,
            )
            return 1
        return 0
    for path, (_, wanted) in stale.items():
        path.write_text(wanted)
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
