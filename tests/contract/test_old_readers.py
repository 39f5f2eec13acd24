"""Old readers ignore C3's ``error`` and ``labels``; new readers read them (issue 39).

C3 grew the contract compatibly: both fields are optional and omitted when absent, so a reader
written before them must take frames that carry them and behave as if they were not there.
The old reader here is the reference-compatible JavaScript adapter, ``tests/js/source_hub.mjs``
(a hub of the source profile that the conformance kit passes, docs/conformance.md), written
before C3 and knowing neither field; the old documents are the golden fixtures of
``tests/fixtures/``, recorded before C3. Each new document is its old one plus the new fields.

Under node, the old hub plays the same scenario (a ready snapshot, a change, a lifecycle fact
of a failed tool, its hook delivery) on the old documents and on the new ones: every answer is
the same once the new fields are taken out (cursors, diagnostics, frames, hook events), and the
new fields come out as they went in. The new readers, the Python decoder and the dashboard's
``fold.js`` and ``views.js``, read the hub's frames: the errors and labels of the new ones, none
of the old ones (absent is "none", never a refusal).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.dashboard import DASHBOARD, require_program
from tests.support.processes import owned_process
from workflow_hub import (
    ChangedFrame,
    FailureDetail,
    Frame,
    LifecycleEvent,
    SnapshotFrame,
    ToolNode,
    ToolTarget,
)
from workflow_hub.wire import from_wire

TESTS = Path(__file__).resolve().parents[1]
OLD_HUB = TESTS / "js" / "source_hub.mjs"
FIXTURES = TESTS / "fixtures"
NET = 60.0  # a safety net for a loaded machine: each exchange ends on its answer

ERROR = {"message": "health check of web-3 timed out after 30 s", "type": "TimeoutError"}
NODE_ERROR = {"message": "exit status 2"}
LABELS = {"team": "infra", "env": "prod"}


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def old_documents() -> dict[str, Any]:
    """Documents recorded before C3: a root with a graph whose tool failed (the fixture's
    running tool, failed as a pre-C3 frame says it: without why), a changed root (the
    fixture's, as a second root), and the lifecycle fact of a failed tool (the fixture's event,
    without its cursor)."""
    root = fixture("root_with_graph.json")
    root["graph"]["nodes"][2]["status"] = "failed"
    changed = fixture("changed.json")["root"]
    changed["rootRunId"] = "run-2"
    event = fixture("event_lifecycle.json")
    del event["cursor"]
    assert event["target"]["status"] == "failed"
    return {"root": root, "changed": changed, "input": event}


def new_documents() -> dict[str, Any]:
    """The same documents with C3's fields: labels on both roots, an error on the failed tool
    node and on the failed target."""
    documents = copy.deepcopy(old_documents())
    documents["root"]["labels"] = LABELS
    documents["root"]["graph"]["nodes"][2]["error"] = NODE_ERROR
    documents["changed"]["labels"] = {"team": "web"}
    documents["input"]["target"]["error"] = ERROR
    return documents


def without_new_fields(value: Any) -> Any:
    """``value`` with every C3 field taken out: ``labels`` maps and ``error`` details."""
    if isinstance(value, dict):
        return {
            key: without_new_fields(item)
            for key, item in value.items()
            if not (key == "labels" or (key == "error" and isinstance(item, dict)))
        }
    if isinstance(value, list):
        return [without_new_fields(item) for item in value]
    return value


def keys_in(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(keys_in(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_in(item) for item in value))
    return set()


class OldHub:
    """``node tests/js/source_hub.mjs``, spoken to in the JSON-lines protocol."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        self._ids = 0

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._ids += 1
        request = {"id": self._ids, "op": op, **fields}
        self._process.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        assert line, f"the old hub exited at {op}"
        answer: dict[str, Any] = json.loads(line)
        assert answer.pop("id") == self._ids
        assert answer.pop("ok") is True, answer
        return answer

    def play(self, documents: dict[str, Any]) -> dict[str, Any]:
        """One scenario: a publisher and a callback observer, the dispatcher bound; a ready
        snapshot of the root, the change, the failed tool's fact; everything settled."""
        self.ask("start", protocol=3, queueLimit=16, diagnosticsLimit=16, historyLimit=0)
        self.ask("registerPublisher")
        self.ask("observe", style="callback")
        self.ask("bindDispatcher")
        answers = {
            "snapshot": self.ask(
                "publishSnapshot", publisher=0, availability="ready", roots=[documents["root"]]
            ),
            "changed": self.ask("publishChanged", publisher=0, root=documents["changed"]),
            "lifecycle": self.ask("publishLifecycle", publisher=0, event=documents["input"]),
        }
        self.ask("settle")
        answers["frames"] = self.ask("frames", observer=0)["frames"]
        answers["events"] = self.ask("hookEvents")["events"]
        answers["now"] = self.ask("snapshot")["snapshot"]
        answers["diagnostics"] = self.ask("diagnostics")["diagnostics"]
        self.ask("close")
        # Each hub draws its own epochs: name them in the order they appear.
        text = json.dumps(answers, ensure_ascii=False)
        for n, epoch in enumerate(dict.fromkeys(re.findall(r'"epoch": "([^"]+)"', text))):
            text = text.replace(f'"epoch": "{epoch}"', f'"epoch": "epoch-{n}"')
        played: dict[str, Any] = json.loads(text)
        return played


@pytest.fixture(scope="module")
def node() -> str:
    return require_program("node", "WORKFLOW_HUB_NODE")


@pytest.fixture(scope="module")
def old_hub(node: str) -> Iterator[OldHub]:
    with owned_process(
        [node, str(OLD_HUB)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    ) as process:
        yield OldHub(process)


@pytest.fixture(scope="module")
def played(old_hub: OldHub) -> dict[str, dict[str, Any]]:
    return {"old": old_hub.play(old_documents()), "new": old_hub.play(new_documents())}


def run_driver(node: str, driver: str, module: str, request: dict[str, Any]) -> dict[str, Any]:
    """One request to one of tests/js' drivers of a dashboard module, under node."""
    with owned_process(
        [node, str(TESTS / "js" / driver), str(DASHBOARD / module)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    ) as process:
        output, _ = process.communicate(json.dumps(request, ensure_ascii=False) + "\n", NET)
    assert process.returncode == 0
    answer: dict[str, Any] = json.loads(output)
    return answer


def test_the_old_reader_and_the_fixtures_predate_c3() -> None:
    """What makes them old: the hub's code names neither field (it reads no ``.error`` and no
    ``labels``), and no fixture carries one."""
    source = OLD_HUB.read_text(encoding="utf-8")
    assert "labels" not in source
    assert ".error" not in source
    for path in FIXTURES.glob("*.json"):
        assert not {"error", "labels"} & keys_in(fixture(path.name)), path.name


def test_the_old_reader_ignores_the_new_fields(played: dict[str, dict[str, Any]]) -> None:
    """C3: the old hub answers the new documents as it answers the old ones: the same cursors,
    frames, hook events and diagnostics, once the new fields are taken out."""
    assert played["old"]["lifecycle"] == {"cursor": {"epoch": "epoch-0", "revision": 3}}
    assert without_new_fields(played["new"]) == played["old"]
    assert not {"error", "labels"} & keys_in(played["old"])


def test_the_old_reader_passes_the_new_fields_on_as_they_came(
    played: dict[str, dict[str, Any]],
) -> None:
    """What it does not understand it keeps: the frames and the hook event carry the labels and
    errors byte for byte, so readers after it still see them."""
    new = new_documents()
    snapshot, changed = played["new"]["frames"][1:3]
    assert snapshot["roots"] == [new["root"]]
    assert changed["root"] == new["changed"]
    activity, lifecycle = played["new"]["events"]
    assert activity["root"] == new["changed"]
    assert lifecycle["target"] == new["input"]["target"]
    assert played["new"]["now"]["roots"] == [new["root"], new["changed"]]


def test_the_python_decoder_reads_the_new_fields_and_their_absence(
    played: dict[str, dict[str, Any]],
) -> None:
    """The new reader: the old hub's new frames decode to their errors and labels, its old
    frames to none (absent fields are no refusal)."""
    for age in ("old", "new"):
        frames = [from_wire(Frame, frame) for frame in played[age]["frames"]]
        snapshot, changed = frames[1:3]
        assert isinstance(snapshot, SnapshotFrame)
        assert isinstance(changed, ChangedFrame)
        (root,) = snapshot.roots or ()
        assert root.graph is not None
        tool = root.graph.nodes[2]
        assert isinstance(tool, ToolNode)
        assert tool.status == "failed"
        event = from_wire(LifecycleEvent, played[age]["events"][-1])
        assert isinstance(event.target, ToolTarget)
        if age == "old":
            assert (root.labels, changed.root.labels, tool.error, event.target.error) == (
                None,
                None,
                None,
                None,
            )
        else:
            assert dict(root.labels or {}) == LABELS
            assert dict(changed.root.labels or {}) == {"team": "web"}
            assert tool.error == FailureDetail(message="exit status 2")
            assert event.target.error == FailureDetail(**ERROR)


def test_the_dashboard_reads_the_new_fields_and_their_absence(
    node: str, played: dict[str, dict[str, Any]]
) -> None:
    """The new reader in JavaScript: the dashboard's fold keeps the fields, its feed says the
    error, its cards name the failed tool with its error, its label filter finds the labelled
    root; the old frames fold alike with none of it."""
    seen = {}
    for age in ("old", "new"):
        answers = played[age]
        folded = run_driver(
            node,
            "fold_driver.js",
            "fold.js",
            {"frames": answers["frames"], "events": answers["events"]},
        )
        roots = folded["results"][-1]["roots"]
        viewed = run_driver(
            node,
            "views_driver.js",
            "views.js",
            {"roots": roots, "view": {"labels": ["team:infra"]}},
        )
        seen[age] = (roots, folded["descriptions"], viewed["failures"], viewed["shown"])
    old_roots, old_lines, old_failures, old_shown = seen["old"]
    new_roots, new_lines, new_failures, new_shown = seen["new"]
    assert without_new_fields(new_roots) == old_roots
    assert new_roots[0]["labels"] == LABELS
    assert old_lines == [
        "activity changed run-2 → working/stopping",
        "tool child-run:tool-1: failed",
    ]
    error = ": TimeoutError: health check of web-3 timed out after 30 s"
    assert new_lines == [old_lines[0], old_lines[1] + error]
    assert [failure["message"] for failure in old_failures[0]] == [""]
    assert [failure["message"] for failure in new_failures[0]] == ["exit status 2"]
    assert old_shown == []
    assert new_shown == ["run-1"]
