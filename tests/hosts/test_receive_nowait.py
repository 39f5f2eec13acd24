"""``FrameStream.receive_nowait()``: a pending frame without waiting (what the asyncio host uses).

O9: the same frames in the same order as ``receive()``; never a checkpoint; ``trio.WouldBlock``
when nothing is pending and ``trio.EndOfChannel`` once the subscription is disposed.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tests.support.builders import root
from workflow_hub import ChangedFrame, SnapshotFrame, WorkflowActivityHub


async def test_receive_nowait_takes_pending_frames_in_order_without_a_checkpoint(
    hub: WorkflowActivityHub,
) -> None:
    """O9: snapshot first, then FIFO; nothing pending is WouldBlock, not a wait."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    async with hub.subscribe() as stream:
        publisher.publish_changed(root(active=1))
        publisher.publish_changed(root(active=2))
        with trio.testing.assert_no_checkpoints():
            first = stream.receive_nowait()
            frames = [stream.receive_nowait(), stream.receive_nowait()]
            with pytest.raises(trio.WouldBlock):
                stream.receive_nowait()
        assert isinstance(first, SnapshotFrame)
        assert [f.root.active_execution_count for f in frames if isinstance(f, ChangedFrame)] == [
            1,
            2,
        ]
        assert stream.lease.pending == 0


async def test_receive_nowait_after_disposal_is_end_of_channel(hub: WorkflowActivityHub) -> None:
    """O6, O9: a disposed subscription ends, for receive_nowait as for receive."""
    async with hub.subscribe() as stream:
        stream.lease.dispose()
        with pytest.raises(trio.EndOfChannel):
            stream.receive_nowait()


async def test_receive_all_nowait_takes_the_backlog_without_a_checkpoint(
    hub: WorkflowActivityHub,
) -> None:
    """O9: what receive_all returns (snapshot first, then FIFO), without a checkpoint; nothing
    pending is WouldBlock, a disposed subscription EndOfChannel."""
    publisher = hub.register_publisher()
    publisher.publish_snapshot("ready", [])
    async with hub.subscribe() as stream:
        publisher.publish_changed(root(active=1))
        publisher.publish_changed(root(active=2))
        with trio.testing.assert_no_checkpoints():
            frames = stream.receive_all_nowait()
            with pytest.raises(trio.WouldBlock):
                stream.receive_all_nowait()
        assert isinstance(frames[0], SnapshotFrame)
        assert [
            f.root.active_execution_count for f in frames[1:] if isinstance(f, ChangedFrame)
        ] == [
            1,
            2,
        ]
        assert stream.lease.pending == 0
        stream.lease.dispose()
        with pytest.raises(trio.EndOfChannel):
            stream.receive_all_nowait()
