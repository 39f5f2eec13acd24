"""Every written-out copy of hot-path code is what ``tools/written_out.py`` renders from its source.

The tool is what ``make lint`` runs with ``--check``; running it here too means ``pytest`` alone
catches a copy edited by hand, or a source changed without its copies. The other tests hold the
tool itself to what its docstring promises, on small trees of their own.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).parents[2] / "tools" / "written_out.py"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("written_out", TOOL)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


written_out = _load_tool()


def _tree(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    return tmp_path


SOURCE = """\
    class Queue:
        def push(self, frame):
            # <copy-source Queue.push>
            frames = self._frames
            if len(frames) < self._limit:
                frames.append(frame)  # room
            # </copy-source>
    """


def test_every_copy_under_src_is_rendered_from_its_source() -> None:
    """The package's copies agree with their sources (what ``make lint`` checks)."""
    files = written_out.rendered()
    assert files, "no <copy-of ...> region found under src/"
    for path, (current, wanted) in files.items():
        assert current == wanted, f"{path} drifted: run python tools/written_out.py"


def test_check_passes_on_an_exact_copy_with_renames(tmp_path: Path) -> None:
    """A copy in another file, re-indented and renamed as its marker says, is up to date."""
    root = _tree(
        tmp_path,
        queue=SOURCE,
        hub="""\
        def broadcast(hub, frame):
            for queue in hub.queues:
                # <copy-of Queue.push self=queue frames=pending>
                pending = queue._frames
                if len(pending) < queue._limit:
                    pending.append(frame)  # room
                # </copy-of>
        """,
    )
    assert written_out.main(["--check", "--root", str(root)]) == 0


def test_check_fails_on_a_hand_edit_and_the_rewrite_restores_the_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand edit fails ``--check`` with a diff and no change; the rewrite renders it again."""
    edited = """\
        def broadcast(hub, frame):
            for queue in hub.queues:
                # <copy-of Queue.push self=queue>
                frames = queue._frames
                if len(frames) <= queue._limit:
                    frames.append(frame)  # room
                # </copy-of>
        """
    root = _tree(tmp_path, queue=SOURCE, hub=edited)
    assert written_out.main(["--check", "--root", str(root)]) == 1
    assert "-        if len(frames) <= queue._limit:" in capsys.readouterr().out
    assert (root / "hub.py").read_text() == textwrap.dedent(edited)  # --check changes nothing
    assert written_out.main(["--root", str(root)]) == 0
    assert "len(frames) < queue._limit" in (root / "hub.py").read_text()
    assert written_out.main(["--check", "--root", str(root)]) == 0


def test_renames_touch_names_only_never_attributes_comments_or_strings() -> None:
    """A rename (dotted or not) replaces a name, never an attribute, a comment or a string."""
    code = 'self.self = self._n  # self\nx = "self" + self._n.self\n'
    renamed = written_out.rename(code, {"self": "hub", "self._n": "n"}, "here")
    assert renamed == 'hub.self = n  # self\nx = "self" + n.self\n'


def test_renames_apply_at_once_so_two_names_can_swap() -> None:
    """``self=hub publisher=self`` works: each token is renamed once, from the source."""
    assert written_out.rename("a(b)\n", {"a": "b", "b": "a"}, "here") == "b(a)\n"


@pytest.mark.parametrize(
    ("hub", "problem"),
    [
        ("# <copy-of Nowhere>\nx = 1\n# </copy-of>\n", "no <copy-source Nowhere>"),
        ("# <copy-of Queue.push ghost=x>\n# </copy-of>\n", "matches nothing"),
        ("# <copy-of Queue.push>\nx = 1\n", "never closed"),
        ("# <copy-of Queue.push>\n# <copy-of Queue.push>\n", "opens inside another"),
        ("x = 1\n# </copy-of>\n", "closes nothing"),
        ("# <copy-of Queue.push self>\n# </copy-of>\n", "not a rename"),
        (
            "# <copy-source Half>\nif (x:\n# </copy-source>\n# <copy-of Half x=y>\n# </copy-of>\n",
            "not whole statements",
        ),
    ],
)
def test_a_marker_that_cannot_be_rendered_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hub: str, problem: str
) -> None:
    """Unknown sources, stale renames, unclosed, nested or stray markers name the problem."""
    root = _tree(tmp_path, queue=SOURCE, hub=hub)
    assert written_out.main(["--check", "--root", str(root)]) == 1
    assert problem in capsys.readouterr().err


def test_a_source_without_a_copy_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source nothing copies is a stale marker."""
    root = _tree(tmp_path, queue=SOURCE)
    assert written_out.main(["--check", "--root", str(root)]) == 1
    assert "without a copy" in capsys.readouterr().err
