"""Write the type-checking ``__init__`` of every contract class from its attrs fields.

Type checkers cannot read what the contract's converters accept (a wire string for an enum member,
any iterable for a tuple), so each class in ``workflow_hub/_contract/_values.py`` declares its constructor
under ``if TYPE_CHECKING:``. Those declarations are generated, never edited: this script imports
the module, reads each class's attrs fields (their names, order, defaults, and the type each
field's converter accepts, which the field helpers of ``_validate`` record in the field's
``metadata``), and rewrites each class's block in place.

    python tools/contract_inits.py          # rewrite the declarations
    python tools/contract_inits.py --check  # exit 1 with a diff if the file is not up to date

``make lint`` runs ``--check``, and so does tests/contract/test_typing.py.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import sys
from pathlib import Path
from types import ModuleType

import attrs

from workflow_hub._contract import _validate
from workflow_hub._contract import _values as _contract

MODULE: ModuleType = _contract

_INDENT = " " * 4


def declaration(cls: type[attrs.AttrsInstance]) -> str:
    """The ``if TYPE_CHECKING:`` block of ``cls``, as the formatter writes it (one level in)."""
    lines = [
        f"{_INDENT}if TYPE_CHECKING:",
        "",
        f"{_INDENT * 2}def __init__(",
        f"{_INDENT * 3}self,",
        f"{_INDENT * 3}*,",
    ]
    for field in attrs.fields(cls):
        if not field.init:
            continue
        accepts = field.metadata.get(_validate.ACCEPTS)
        if accepts is None:
            raise SystemExit(
                f"{cls.__name__}.{field.name} is not declared with a _validate field helper"
            )
        default = "" if field.default is attrs.NOTHING else f" = {_default(cls, field)}"
        lines.append(f"{_INDENT * 3}{field.alias}: {accepts}{default},")
    lines.append(f"{_INDENT * 2}) -> None: ...")
    return "\n".join(lines) + "\n"


def _default(cls: type, field: attrs.Attribute[object]) -> str:
    if field.default is None or isinstance(field.default, bool | int | str):
        return repr(field.default)
    raise SystemExit(f"{cls.__name__}.{field.name}: a default of {field.default!r} has no literal")


def _is_init_block(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.If)
        and ast.unparse(statement.test) == "TYPE_CHECKING"
        and any(
            isinstance(inner, ast.FunctionDef) and inner.name == "__init__"
            for inner in statement.body
        )
    )


def regenerate(source: str, classes: dict[str, type[attrs.AttrsInstance]]) -> str:
    """``source`` with the declaration of every class in ``classes`` written afresh.

    A class without a declaration gets one at the end of its body.
    """
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, end line) 0-based, half open
    seen: set[str] = set()
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef) or node.name not in classes:
            continue
        seen.add(node.name)
        text = declaration(classes[node.name])
        blocks = [statement for statement in node.body if _is_init_block(statement)]
        if blocks:
            block = blocks[0]
            assert block.end_lineno is not None
            edits.append((block.lineno - 1, block.end_lineno, text))
        else:
            assert node.end_lineno is not None
            edits.append((node.end_lineno, node.end_lineno, "\n" + text))
    missing = set(classes) - seen
    if missing:
        raise SystemExit(f"classes not defined at the top level: {sorted(missing)}")
    for start, end, text in sorted(edits, reverse=True):
        lines[start:end] = [text]
    return "".join(lines)


def value_classes() -> dict[str, type[attrs.AttrsInstance]]:
    return {cls.__name__: cls for cls in MODULE.VALUE_CLASSES}


def module_path() -> Path:
    path = inspect.getsourcefile(MODULE)
    assert path is not None
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 with a diff if out of date"
    )
    args = parser.parse_args(argv)
    path = module_path()
    current = path.read_text()
    wanted = regenerate(current, value_classes())
    if current == wanted:
        return 0
    if args.check:
        sys.stdout.writelines(
            difflib.unified_diff(
                current.splitlines(keepends=True),
                wanted.splitlines(keepends=True),
                f"{path.name} (as written)",
                f"{path.name} (generated)",
            )
        )
        print(f"{path} is out of date: run python tools/contract_inits.py", file=sys.stderr)
        return 1
    path.write_text(wanted)
    print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
