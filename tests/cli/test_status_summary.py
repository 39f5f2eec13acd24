"""``status``'s fast path (``_cli/_summary.py``) against the ordinary one, ``loads`` + ``aggregate``.

A refresh of a served hub sums its snapshot up from the JSON, without the contract's classes
(issue 24's cost goal). It must never be a second judge: on every snapshot it accepts it must
say exactly what ``aggregate(loads(SnapshotFrame, body))`` says (R-rules of SPEC §5, the wire
format of SPEC §2), and on anything the decoder refuses it must decline (``None``), so that the
ordinary path decides and explains. The one-refresh import test proves the point of it: neither
attrs nor the contract is imported for a plain snapshot.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.builders import root
from tests.support.netutil import served
from workflow_hub import (
    Availability,
    ContractError,
    Cursor,
    PromptKind,
    Reason,
    SnapshotFrame,
    StageStatus,
    State,
    ToolNodeStatus,
    WorkflowActivityHub,
)
from workflow_hub._cli import _summary
from workflow_hub._cli._status import exit_status, fields, with_roots
from workflow_hub.reporting import aggregate
from workflow_hub.testing import strategies
from workflow_hub.wire import dumps, loads, to_wire


def _ordinary(body: bytes) -> dict[str, Any] | None:
    """What the ordinary path shows, or None where it refuses the body."""
    try:
        frame = loads(SnapshotFrame, body)
    except (ContractError, ValueError):
        return None
    status = with_roots(aggregate(frame), frame.roots or ())
    return {**fields(status), "exit": exit_status(status)}


def _fast(body: bytes) -> dict[str, Any] | None:
    summary = _summary.summarize(body)
    if summary is None:
        return None
    return {**fields(summary), "exit": exit_status(summary)}


def test_the_tables_are_the_contracts() -> None:
    """The enumerations' values and the §5 priorities, as the fast path spells them."""
    from workflow_hub._contract import BLOCKED_PRIORITY, WORKING_PRIORITY

    assert {m.value for m in State} == _summary.STATES
    assert {m.value for m in Reason} == _summary.REASONS
    assert {m.value for m in Availability} == _summary.AVAILABILITIES
    assert {m.value for m in StageStatus} == _summary.STAGE_STATUSES
    assert {m.value for m in ToolNodeStatus} == _summary.TOOL_STATUSES
    assert {m.value for m in PromptKind} == _summary.PROMPT_KINDS
    assert tuple(m.value for m in WORKING_PRIORITY) == _summary.WORKING_PRIORITY
    assert tuple(m.value for m in BLOCKED_PRIORITY) == _summary.BLOCKED_PRIORITY


def test_the_c3_bounds_are_the_contracts() -> None:
    """C3: the fast path checks a failure's, a label's and a detail's bounds as the decoder does."""
    from workflow_hub import _contract
    from workflow_hub._contract import _validate

    for name in (
        "FAILURE_MESSAGE_MAX",
        "FAILURE_TYPE_MAX",
        "LABELS_MAX",
        "LABEL_KEY_MAX",
        "LABEL_VALUE_MAX",
        "DETAIL_MAX",
    ):
        assert getattr(_summary, name) == getattr(_contract, name), name
    assert _validate._LABEL_KEY.pattern == _summary._LABEL_KEY


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.snapshot_frames(max_roots=8))
def test_every_valid_snapshot_is_read_as_aggregate_reads_it(frame: SnapshotFrame) -> None:
    body = dumps(frame).encode()
    expected = _ordinary(body)
    assert expected is not None
    assert _fast(body) == expected


# --- broken snapshots: declined, or read exactly as the decoder reads them ----------------------

_ODD_VALUES = (None, True, False, 0, -1, 1.5, 2**70, "", "x", "working", "stage", [], {}, ["x"])


def _paths(value: object, here: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every position in a JSON document (the document itself too)."""
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*here, index))
    return found


def _mutated(document: Any, path: tuple[object, ...], how: str, odd: object) -> Any:
    odd = copy.deepcopy(odd)
    if not path:
        return odd
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "drop" and isinstance(parent, dict):
        del parent[last]  # type: ignore[arg-type]
    else:
        parent[last] = odd  # type: ignore[index]
    return document


@st.composite
def _broken_bodies(draw: st.DrawFn) -> bytes:
    frame = draw(strategies.snapshot_frames(max_roots=3))
    document = to_wire(frame)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(document)))
        how = draw(st.sampled_from(("drop", "replace")))
        document = _mutated(document, path, how, draw(st.sampled_from(_ODD_VALUES)))
    return json.dumps(document).encode()


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(_broken_bodies())
def test_a_broken_snapshot_is_declined_or_read_exactly_as_the_decoder_reads_it(
    body: bytes,
) -> None:
    fast = _fast(body)
    if fast is not None:
        assert fast == _ordinary(body)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[]",
        b"null",
        b'{"kind":"snapshot","cursor":{"epoch":"e","revision":1},"availability":"ready"}',
        b'{"kind":"snapshot","cursor":{"epoch":"e","revision":1},"availability":"ready",'
        b'"roots":null}',
        b'{"kind":"snapshot","cursor":{"epoch":"e","revision":1},"availability":"recovering",'
        b'"roots":[]}',
        b'{"cursor":{"epoch":"e","revision":1},"availability":"ready","roots":[]}',
        b'{"kind":"changed","cursor":{"epoch":"e","revision":1},"availability":"ready","roots":[]}',
        b'{"kind":"snapshot","cursor":{"epoch":"\\ud800","revision":1},"availability":"ready",'
        b'"roots":[]}',
        b'{"kind":"snapshot","cursor":{"epoch":"e","revision":NaN},"availability":"ready",'
        b'"roots":[]}',
        b'{"kind":"snapshot","cursor":{"epoch":"e","revision":1.0},"availability":"ready",'
        b'"roots":[]}',
        b"<html><body>not a hub</body></html>",
    ],
)
def test_what_the_decoder_refuses_is_declined(body: bytes) -> None:
    assert _ordinary(body) is None
    assert _summary.summarize(body) is None


def test_a_root_with_a_bad_graph_is_declined() -> None:
    good = to_wire(
        SnapshotFrame(
            cursor=Cursor(epoch="e", revision=1),
            availability="ready",
            roots=(root("r", state="working", reason="executing"),),
        )
    )
    good["roots"][0]["graph"] = {"nodes": [{"kind": "stage", "id": "s"}]}
    body = json.dumps(good).encode()
    assert _ordinary(body) is None
    assert _summary.summarize(body) is None


def _snapshot_with(roots: list[dict[str, Any]]) -> bytes:
    document = to_wire(
        SnapshotFrame(cursor=Cursor(epoch="e", revision=1), availability="ready", roots=())
    )
    document["roots"] = roots
    return json.dumps(document).encode()


def _failed_root(**extra: Any) -> dict[str, Any]:
    stage = {
        "kind": "stage",
        "id": "smoke:probe",
        "runId": "smoke",
        "nodeId": "probe",
        "name": "probe",
        "parentIds": [],
        "depth": 0,
        "status": "failed",
        "error": {"message": "expected 200, got 503", "type": "AssertionError"},
    }
    document = to_wire(root("smoke", state="working", reason="executing", attention=True))
    return {**document, "graph": {"nodes": [stage]}, "labels": {"team": "qa"}, **extra}


def test_failures_and_labels_are_read_from_json_as_from_the_contract() -> None:
    """C3 (issue 39): a failed stage's error and a root's labels are checked and counted by the
    fast path exactly as by the ordinary path."""
    body = _snapshot_with(
        [
            _failed_root(),
            {**to_wire(root("build")), "labels": {"team": "infra", "env": "prod"}},
        ]
    )
    fast = _fast(body)
    assert fast == _ordinary(body)
    assert fast is not None
    assert fast["failed"] == 1
    assert fast["labels"] == "env:prod,team:infra,team:qa"
    assert fast["attention_labels"] == "team:qa"


@pytest.mark.parametrize(
    "broken",
    [
        {"labels": {"9team": "qa"}},
        {"labels": {"team": ""}},
        {"labels": {"team": "a\nb"}},
        {"labels": {f"k{index}": "v" for index in range(17)}},
        {"labels": ["team", "qa"]},
    ],
)
def test_bad_labels_are_declined(broken: dict[str, Any]) -> None:
    body = _snapshot_with([_failed_root(**broken)])
    assert _ordinary(body) is None
    assert _summary.summarize(body) is None


@pytest.mark.parametrize(
    ("status", "error"),
    [
        ("running", {"message": "x"}),
        ("failed", {"message": ""}),
        ("failed", {"message": "x" * 501}),
        ("failed", {"message": "x", "type": ""}),
        ("failed", {"type": "TimeoutError"}),
    ],
)
def test_a_bad_error_is_declined(status: str, error: dict[str, Any]) -> None:
    document = _failed_root()
    document["graph"]["nodes"][0].update(status=status, error=error)
    body = _snapshot_with([document])
    assert _ordinary(body) is None
    assert _summary.summarize(body) is None


# --- one refresh imports neither attrs nor the contract -------------------------------------


STATUS_AVOIDS = (
    "attr",
    "attrs",
    "cattrs",
    "typing",
    "inspect",
    "trio",
    "httpx",
    "workflow_hub._contract",
    "workflow_hub.contract",
    "workflow_hub.wire",
    "workflow_hub.reporting",
)
"""What a refresh of a plain snapshot does not import (issue 24's cost goal)."""

_PROBE = """
import sys
from workflow_hub._cli import main
code = main(["status", sys.argv[1]])
loaded = sorted(m for m in {avoids!r} if m in sys.modules)
print(code, loaded)
"""


async def test_a_refresh_imports_neither_attrs_nor_the_contract(
    hub: WorkflowActivityHub,
) -> None:
    import trio

    hub.register_publisher().publish_snapshot(
        "ready", [root("build", state="working", reason="executing")]
    )
    async with served(hub) as url:
        with trio.fail_after(60):
            result = await trio.run_process(
                [sys.executable, "-c", _PROBE.format(avoids=STATUS_AVOIDS), url],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert result.stderr == b""
    assert result.stdout.decode().splitlines()[-1] == "1 []"


def test_the_probe_sees_a_module_that_is_loaded() -> None:
    """The import probe can fail: the ordinary path does load what the fast path avoids."""
    program = (
        "import sys\n"
        "import workflow_hub.reporting\n"
        f"print(sorted(m for m in {STATUS_AVOIDS!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "attrs" in out
    assert "workflow_hub._contract" in out


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("labels", {"team": None}),
        ("labels", {"Team Name": "x"}),
        ("labels", {"team": ""}),
        ("labels", {"team": "a\nb"}),
        ("labels", {f"k{i}": "v" for i in range(17)}),
        ("error", {"message": ""}),
        ("error", {"message": "x" * 501}),
        ("error", {"message": "boom", "type": None}),
        ("error-on-running", {"message": "boom"}),
    ],
)
def test_bad_c3_fields_are_declined_as_the_decoder_refuses_them(where: str, value: Any) -> None:
    """C3: labels and a failure detail the decoder refuses are never read by the fast path."""
    root: dict[str, Any] = {
        "rootRunId": "r",
        "ownerSessionId": "s",
        "state": "idle",
        "reason": "quiescent",
        "activeExecutionCount": 0,
        "actionableBlockCount": 0,
        "needsAttention": True,
    }
    node = {
        "kind": "stage",
        "id": "r:a",
        "runId": "r",
        "nodeId": "a",
        "name": "a",
        "parentIds": [],
        "depth": 0,
        "status": "running" if where == "error-on-running" else "failed",
    }
    if where == "labels":
        root["labels"] = value
    else:
        node["error"] = value
        root["graph"] = {"nodes": [node]}
    document = {
        "kind": "snapshot",
        "cursor": {"epoch": "e", "revision": 1},
        "availability": "ready",
        "roots": [root],
    }
    body = json.dumps(document).encode()
    assert _ordinary(body) is None
    assert _fast(body) is None
    good = json.loads(body)
    if where == "labels":
        good["roots"][0]["labels"] = {"team": "infra"}
    else:
        good["roots"][0]["graph"]["nodes"][0].update(status="failed", error={"message": "boom"})
    assert _fast(json.dumps(good).encode()) == _ordinary(json.dumps(good).encode()) is not None
