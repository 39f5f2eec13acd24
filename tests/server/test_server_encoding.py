"""Frames are encoded once and backlogs joined once, whatever the number of clients (N1).

The encoder is internal (``workflow_hub.server._encode``); these tests are about it.
"""

from __future__ import annotations

import gc
import json
import weakref

import httpx
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.builders import root
from tests.support.netutil import sse
from workflow_hub import ChangedFrame, ContractError, Cursor, Frame, open_hub
from workflow_hub.server import create_app
from workflow_hub.server._encode import ROOTS_KEPT, ROOTS_PAUSE, FrameEncoder, sse_event
from workflow_hub.testing.strategies import (
    changed_frames,
    cursors,
    frames,
    ids,
    root_activities,
)
from workflow_hub.wire import dumps, format_cursor, to_wire


def _frames(count: int) -> list[Frame]:
    return [
        ChangedFrame(cursor=Cursor(epoch="e", revision=index + 1), root=root(f"r{index}"))
        for index in range(count)
    ]


def test_a_backlog_is_joined_once_and_reused_for_the_same_frames() -> None:
    encoder = FrameEncoder()
    frames = _frames(5)
    first = encoder.backlog(frames)
    again = encoder.backlog(list(frames))
    assert again == first
    assert encoder.batches_joined == 1
    assert encoder.encodings == 5
    assert first == b"".join(encoder.sse(frame) for frame in frames)


def test_a_different_backlog_is_never_served_from_the_cache() -> None:
    encoder = FrameEncoder()
    frames = _frames(6)
    encoder.backlog(frames[0:5])
    shorter = encoder.backlog([frames[0], *frames[2:5]])  # same first and last, one fewer
    assert shorter == b"".join(encoder.sse(f) for f in (frames[0], *frames[2:5]))
    assert encoder.batches_joined == 2


def test_a_backlog_of_one_frame_is_its_event() -> None:
    encoder = FrameEncoder()
    (frame,) = _frames(1)
    assert encoder.backlog([frame]) == encoder.sse(frame)
    assert encoder.batches_joined == 0


async def test_each_frame_is_encoded_once_for_many_clients() -> None:
    async with open_hub() as hub, httpx.AsyncClient() as client:
        app = create_app(hub)
        publisher = hub.register_publisher()
        publisher.publish_snapshot("ready", [])
        # The app from create_app, served as a user mounting it would, to read its encoder.
        async with trio.open_nursery() as nursery:
            config = Config()
            config.bind = ["127.0.0.1:0"]
            config.errorlog = None
            binds = await nursery.start(serve, app, config)  # type: ignore[arg-type]
            base = binds[0]
            with trio.fail_after(10):
                async with (
                    sse(client, f"{base}/v1/activity") as a,
                    sse(client, f"{base}/v1/activity") as b,
                    sse(client, f"{base}/v1/activity") as c,
                ):
                    for reader in (a, b, c):
                        await reader.next()
                    before = app.encoder.encodings
                    for index in range(30):
                        publisher.publish_changed(root(f"r{index}"))
                    for reader in (a, b, c):
                        await reader.events(30)
            nursery.cancel_scope.cancel()
    assert app.encoder.encodings - before == 30


# --- one changed frame's event from its epoch's template (issue 29) -------------------------


def _reference_event(frame: Frame) -> bytes | type[ContractError]:
    """What a frame's SSE event is by definition (R4, W1): its cursor text as the id, its
    kind as the event name, its wire JSON as one data line; or the error of a cursor with no
    text form."""
    try:
        return sse_event(frame.kind, dumps(frame), format_cursor(frame.cursor))
    except ContractError:
        return ContractError


def _encoded_event(encoder: FrameEncoder, frame: Frame) -> bytes | type[ContractError]:
    try:
        return encoder.sse(frame)
    except ContractError:
        return ContractError


_EPOCHS = st.sampled_from(["e", "epoch:with:colons", "é", " padded", "line\nbreak", ""]) | ids()

# Root objects shared by many frames, as a tracker shares its kept summaries: the encoder's
# cache of roots' JSON (by the object's identity) is hit by these.
_SHARED_ROOTS = [
    root("a"),
    root("b", state="blocked", reason="awaiting_input", blocks=2, attention=True),
    root("é-ünïcode", state="idle", reason="quiescent", active=0),
]
_SHARED = st.builds(
    ChangedFrame,
    cursor=st.builds(
        Cursor,
        epoch=st.sampled_from(["e", "f"]),
        revision=st.sampled_from([0, 1, 7, 2**63 - 1, 2**63]) | st.integers(0, 10**6),
    ),
    root=st.sampled_from(_SHARED_ROOTS),
)


@given(
    st.lists(
        st.one_of(
            changed_frames(),
            st.builds(
                ChangedFrame,
                cursor=cursors(epochs=_EPOCHS),
                root=root_activities(),
            ),
            st.builds(
                ChangedFrame,
                cursor=st.builds(
                    Cursor,
                    epoch=_EPOCHS,
                    revision=st.sampled_from([0, 1, 2**63 - 1, 2**63, 10**30]),
                ),
                root=root_activities(),
            ),
            _SHARED,
            frames(),
        ),
        max_size=12,
    ),
    st.sampled_from(["sse", "backlog"]),
)
@settings(max_examples=300, deadline=None)
def test_every_event_is_the_frame_s_wire_json_framed_as_sse(frames_: list[Frame], how: str) -> None:
    """W1, R4: whatever frames come in whatever order (epochs change, revisions pass the text
    form's limit, epochs with no text form), each event is exactly the frame's cursor text,
    kind and wire JSON, or the ContractError of a cursor with no text form; the same frame
    object asked again gets the same bytes, and an error caches nothing."""
    encoder = FrameEncoder()
    for frame in frames_:
        expected = _reference_event(frame)
        if how == "backlog" and expected is not ContractError:
            assert encoder.backlog([frame, frame]) == expected * 2
        assert _encoded_event(encoder, frame) == expected
        assert _encoded_event(encoder, frame) == expected
        if expected is not ContractError:
            assert encoder.json(frame) == dumps(frame)
            message = json.loads(encoder.message(frame))
            assert message == {"id": format_cursor(frame.cursor), "frame": to_wire(frame)}


def test_changed_frames_of_one_epoch_are_each_encoded_once() -> None:
    """N1: one encoding per frame, the first of an epoch and the ones after it alike."""
    encoder = FrameEncoder()
    frames = _frames(300)
    body = encoder.backlog(frames)
    assert body == b"".join(_reference_event(frame) for frame in frames)  # type: ignore[misc]
    assert encoder.encodings == 300
    # The frames after the first were made from the epoch's template (the fast path is taken).
    assert encoder._changed is not None
    assert encoder._changed.epoch == "e"


def test_a_revision_past_the_text_form_is_refused_after_a_good_one() -> None:
    """R4: the template of an epoch never writes a cursor that format_cursor would refuse."""
    encoder = FrameEncoder()
    good = ChangedFrame(cursor=Cursor(epoch="e", revision=2**63 - 1), root=root("r"))
    assert encoder.sse(good) == _reference_event(good)
    too_far = ChangedFrame(cursor=Cursor(epoch="e", revision=2**63), root=root("r"))
    with pytest.raises(ContractError, match=r"cursor\.revision"):
        encoder.sse(too_far)
    assert encoder.encodings == 1


@given(
    st.lists(st.one_of(_SHARED, _SHARED, changed_frames(), frames()), max_size=30),
    st.lists(st.integers(1, 8), min_size=1, max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_every_backlog_is_its_frames_events_joined(frames_: list[Frame], cuts: list[int]) -> None:
    """W1, R4, N1: backlogs of many frames (the server's path), roots shared between frames,
    epochs changing: each backlog is its frames' events, exactly, and each frame object is
    encoded once however many backlogs hold it."""
    good = [frame for frame in frames_ if _reference_event(frame) is not ContractError]
    encoder = FrameEncoder()
    start = 0
    for size in cuts * 4:
        # Overlapping backlogs, as clients that are behind by different amounts hold.
        batch = good[start : start + size]
        if batch:
            assert encoder.backlog(batch) == b"".join(_reference_event(f) for f in batch)  # type: ignore[misc]
        start = max(0, start + size - 2)
    assert encoder.encodings <= len({id(frame) for frame in good})


def test_roots_that_do_not_repeat_pause_the_roots_cache_and_stay_exact() -> None:
    """More distinct roots than the cache holds, none repeating: the cache pauses (a lookup
    would only ever miss), every event is still the reference, and after the pause the cache
    is used again."""
    encoder = FrameEncoder()
    count = ROOTS_KEPT + 10
    frames_ = [
        ChangedFrame(cursor=Cursor(epoch="e", revision=index + 1), root=root(f"r{index}"))
        for index in range(count)
    ]
    for start in range(0, count, 100):
        batch = frames_[start : start + 100]
        assert encoder.backlog(batch) == b"".join(_reference_event(f) for f in batch)  # type: ignore[misc]
    assert encoder._roots is None  # paused
    shared = root("shared")
    revision = count
    for _ in range(ROOTS_PAUSE):
        if encoder._roots is not None:
            break
        revision += 1
        encoder.backlog(
            [ChangedFrame(cursor=Cursor(epoch="e", revision=revision), root=shared)] * 2
        )
    assert encoder._roots is not None
    later = [
        ChangedFrame(cursor=Cursor(epoch="e", revision=revision + index + 1), root=shared)
        for index in range(3)
    ]
    assert encoder.backlog(later) == b"".join(_reference_event(f) for f in later)  # type: ignore[misc]
    assert encoder._roots is not None
    assert encoder._root_hits >= 2  # the same root object, encoded once


def test_the_roots_cache_holds_the_root_so_that_its_id_stays_its_own() -> None:
    """A root's text is found by the object's identity; the entry holds the object, so that no
    other object can take its id() while the text is kept."""
    encoder = FrameEncoder()
    kept = root("kept")
    alive = weakref.ref(kept)
    frames_ = [ChangedFrame(cursor=Cursor(epoch="e", revision=n), root=kept) for n in (1, 2, 3)]
    encoder.backlog(frames_)
    del kept, frames_
    encoder._current.clear()
    encoder._previous.clear()
    encoder._batches.clear()
    gc.collect()
    assert alive() is not None
