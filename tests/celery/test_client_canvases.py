"""Groups and chords sent from a client (not from a task), through a real worker (issue 38).

Celery's task events carry a task's ``root_id`` and ``parent_id`` and nothing of its group or
chord, and a client sets ``root_id`` to each message's own id: these tests pin down which
shapes split into several roots, and run the page's one-line way to keep them whole
(docs/celery.md, "Canvases and roots").
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from typing import Any

import pytest
from celery import chain, chord, group
from celery.result import AsyncResult

from workflow_hub import RootActivity

from .app import add, nap, total
from .support import REPO, CeleryWorker, blocking, bridged, ended, stages


@pytest.fixture(autouse=True)
def _unsubscribed() -> Iterator[None]:
    """A client's chord keeps its results subscribed in the result store's consumer (of the
    thread that sent it: Celery's backend is per thread) until they are fulfilled or
    forgotten; let go of them here, while redis-server is up (at exit, after it stopped, each
    one complains on stderr)."""
    yield
    gc.collect()
    for result in [o for o in gc.get_objects() if isinstance(o, AsyncResult)]:
        result.backend.remove_pending_result(result)


def section(title: str) -> str:
    page = (REPO / "docs" / "celery.md").read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", page, flags=re.M | re.S)
    assert found is not None, title
    return found.group(1)


def ended_with(count: int) -> Any:
    return lambda root: ended(root) and len(stages(root)) == count


async def test_a_group_sent_from_a_client_is_one_root_per_member(worker: CeleryWorker) -> None:
    """What the page says splits: each member of a client's group is a root of its own (its
    events name no group, and its ``root_id`` is its own id)."""
    async with bridged() as (roots, _watch, _tracker):
        result = await blocking(group(add.s(1, 1), add.s(2, 2)).apply_async)
        for member in result.results:
            root = await roots.wait_root(member.id, ended_with(1), "a member's own root")
            assert list(stages(root)) == [member.id]


async def test_a_chords_body_joins_the_root_of_the_header_member_that_finished_last(
    worker: CeleryWorker,
) -> None:
    """A client's chord: the header members are roots of their own; the body, sent by the
    member that finished last, is that member's child in its root."""
    async with bridged() as (roots, _watch, _tracker):
        header = [add.si(1, 1), nap.si(0.5)]
        body = await blocking(chord(header, total.si([2])).apply_async)
        last = await roots.wait_root(body.parent.results[1].id, ended_with(2), "nap + body")
        nap_id = body.parent.results[1].id
        assert stages(last)[body.id].parent_ids == (f"{nap_id}:{nap_id}",)
        first = body.parent.results[0].id
        await roots.wait_root(first, ended_with(1), "the other member's own root")


async def test_a_chain_that_starts_with_a_group_splits_as_a_chord(worker: CeleryWorker) -> None:
    """``chain(group(a, b), c)`` from a client is a chord (Celery upgrades it): the members are
    roots of their own, and ``c`` joins the root of the one that finished last."""
    async with bridged() as (roots, _watch, _tracker):
        canvas = chain(group(add.si(1, 1), nap.si(0.5)), total.s())
        result = await blocking(canvas.apply_async)
        members = [member.id for member in result.parent.results]
        last = await roots.wait_root(members[1], ended_with(2), "the nap and the body")
        assert stages(last)[result.id].parent_ids == (f"{members[1]}:{members[1]}",)
        await roots.wait_root(members[0], ended_with(1), "the other member's own root")


async def test_a_group_of_chains_from_a_client_is_one_root_per_chain(
    worker: CeleryWorker,
) -> None:
    """``group(chain(a, b), chain(c, d))`` from a client: each chain is one root (its first
    task's id: the second step is sent by the first), the group is not."""
    async with bridged() as (roots, _watch, _tracker):
        canvas = group(chain(add.si(1, 1), add.si(2, 2)), chain(add.si(3, 3), add.si(4, 4)))
        result = await blocking(canvas.apply_async)
        for last in result.results:
            first = last.parent.id
            root = await roots.wait_root(first, ended_with(2), "a chain's own root")
            assert stages(root)[last.id].parent_ids == (f"{first}:{first}",)


async def test_a_chain_from_a_client_keeps_a_group_inside_it_in_its_root(
    worker: CeleryWorker,
) -> None:
    """A chain is one root even with a group in it: the group is sent by the step before it
    (a task), so its members and the step after them share the chain's root."""
    async with bridged() as (roots, _watch, _tracker):
        canvas = chain(add.si(1, 1), group(add.si(2, 2), add.si(3, 3)), total.s())
        result = await blocking(canvas.apply_async)
        root_id = result.parent.parent.id
        root = await roots.wait_root(root_id, ended_with(4), "the chain ended in one root")
        assert stages(root)[result.id].name == "tests.celery.app.total"


async def test_the_page_s_one_line_keeps_a_client_s_group_and_chord_whole(
    worker: CeleryWorker,
) -> None:
    """The page's way, run as printed: ``apply_async(root_id=…)`` gives every member (and the
    body) that root, so a client's group and chord are one root each."""
    blocks = re.findall(r"```python\n(.*?)```", section("Canvases and roots"), flags=re.S)
    [program] = [block for block in blocks if "apply_async(root_id=" in block]
    async with bridged() as (roots, _watch, _tracker):
        namespace: dict[str, Any] = {"add": add, "total": total, "nap": nap}
        await blocking(exec, program, namespace)
        for name, count in (("group_root", 2), ("chord_root", 3)):
            root_id = namespace[name]
            root: RootActivity = await roots.wait_root(
                root_id, ended_with(count), f"the page's {name} ended whole"
            )
            assert root.root_run_id == root_id
        chord_stages = stages(roots.get(namespace["chord_root"]))  # type: ignore[arg-type]
        [body] = [n for n in chord_stages.values() if n.name == "tests.celery.app.total"]
        assert len(body.parent_ids) == 1  # the header member that finished last
