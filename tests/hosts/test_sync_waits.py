"""``workflow_hub.sync``: nothing a thread does with a subscription hangs (issue 37, SPEC H1, O9).

A receive inside ``hub.call`` (the hub's own thread, which sends the frames) is refused instead
of stopping the hub; a program that ends without leaving its host lets the threads reading
from it end, and the interpreter exit; ``receive(timeout=...)`` takes None or seconds >= 0
(infinity and more than the platform can wait mean "as long as it takes") and refuses the rest
at the call, naming the argument.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.support.builders import root
from workflow_hub import ChangedFrame, ContractError, Frame, SnapshotFrame
from workflow_hub.sync import FrameStream, open_hub

ROOT = Path(__file__).resolve().parents[2]
NET = 60.0  # a generous net for a loaded machine; the waits below end on events


def test_a_receive_inside_hub_call_is_refused_and_the_hub_goes_on() -> None:
    """H1, O9: ``hub.call(lambda: frames.receive())`` would stop the hub's thread for ever (the
    frames come from it): it raises at once, and the hub keeps delivering."""
    with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot_blocking("ready", [])
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=NET), SnapshotFrame)
            with pytest.raises(RuntimeError, match=r"hub's own thread.*wait for ever"):
                hub.call(lambda: frames.receive())
            with pytest.raises(RuntimeError, match=r"receive_all\(\)"):
                hub.call(frames.receive_all, 1.0)
            with pytest.raises(RuntimeError, match="wait forever"):
                hub.call(lambda: hub.statistics())
            publisher.publish_changed(root("r-1"))
            frame = frames.receive(timeout=NET)
            assert isinstance(frame, ChangedFrame)
            assert frame.cursor.revision == 2


@pytest.mark.parametrize("timeout", ["1", True, -1, -0.5, math.nan, -math.inf, [1]])
def test_a_bad_timeout_is_refused_at_the_call_naming_it(timeout: object) -> None:
    """C1, O9: a timeout that is no number of seconds >= 0 raises ContractError naming
    ``timeout``, before waiting (NaN used to wait for ever), and the stream is as it was."""
    with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot_blocking("ready", [])
        with hub.subscribe() as frames:
            for receive in (frames.receive, frames.receive_all):
                with pytest.raises(ContractError, match="timeout") as refused:
                    receive(timeout)  # type: ignore[arg-type]
                assert refused.value.path == "timeout"
            assert isinstance(frames.receive(timeout=NET), SnapshotFrame)


def _wait_until_receiving(frames: FrameStream, thread: threading.Thread) -> None:
    # The receiving thread has asked the hub for frames (the pump is wanted), or has failed.
    deadline = time.monotonic() + NET
    while not frames._pump.wanted and thread.is_alive():
        assert time.monotonic() < deadline
        time.sleep(0.001)


@pytest.mark.parametrize("timeout", [math.inf, 1e300, 2**63, threading.TIMEOUT_MAX])
def test_an_endless_timeout_waits_as_long_as_it_takes(timeout: float) -> None:
    """O9: infinity, and timeouts longer than the platform can wait, wait for the next frame
    (they raised OverflowError)."""
    with open_hub() as hub:
        publisher = hub.register_publisher()
        publisher.publish_snapshot_blocking("ready", [])
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=NET), SnapshotFrame)
            outcome: list[Frame | BaseException] = []

            def receive() -> None:
                try:
                    outcome.append(frames.receive(timeout=timeout))
                except BaseException as error:
                    outcome.append(error)

            thread = threading.Thread(target=receive)
            thread.start()
            _wait_until_receiving(frames, thread)
            publisher.publish_changed(root("r-1"))
            thread.join(NET)
            assert len(outcome) == 1
            assert isinstance(outcome[0], ChangedFrame), outcome


def test_a_zero_timeout_does_not_wait() -> None:
    """O9: ``timeout=0`` answers at once: TimeoutError when no frame is there."""
    with open_hub() as hub:
        hub.register_publisher().publish_snapshot_blocking("ready", [])
        with hub.subscribe() as frames:
            assert isinstance(frames.receive(timeout=NET), SnapshotFrame)
            with pytest.raises(TimeoutError):
                frames.receive(timeout=0)
            with pytest.raises(TimeoutError):
                frames.receive_all(timeout=0.0)


_PROGRAMS = {
    "entered, never left": """
        hub = open_hub(shutdown_grace=1.0).__enter__()
    """,
    "a with a generator never finished": """
        def hosting():
            with open_hub(shutdown_grace=1.0) as hub:
                yield hub
        hosts = hosting()
        hub = next(hosts)
    """,
}

_READER = """
    import threading
    from workflow_hub.sync import open_hub
    {host}
    publisher = hub.register_publisher()
    publisher.publish_snapshot_blocking("ready", [])
    attached = threading.Event()

    def read():
        last = None
        with hub.subscribe() as frames:
            attached.set()
            for frame in frames:
                last = frame
        print("reader ended after", last.availability, flush=True)

    threading.Thread(target=read, name="reader").start()  # not a daemon
    attached.wait()
    print("main ends", flush=True)
"""


@pytest.mark.parametrize("host", sorted(_PROGRAMS))
def test_a_program_that_never_leaves_its_host_still_exits(host: str) -> None:
    """H1: a non-daemon thread iterating a subscription of a host never left kept the
    interpreter from exiting for ever. At exit the host now closes as leaving it would: the
    reader gets the final ``unavailable`` frame, its iteration ends, and the process exits 0."""
    body = textwrap.dedent(_READER).replace("{host}", textwrap.dedent(_PROGRAMS[host]).strip())
    process = subprocess.Popen(
        [sys.executable, "-c", body],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=NET)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the program did not exit: the host kept its reader waiting")
    finally:
        if process.poll() is None:  # pragma: no cover - every path above waits for it
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, err
    assert out.splitlines() == ["main ends", "reader ended after unavailable"], (out, err)


def test_a_host_left_normally_is_not_closed_again_at_exit() -> None:
    """H1: leaving the block forgets the host; the exit hook has nothing left to close."""
    from workflow_hub.sync import _hub

    with open_hub() as hub:
        hub.register_publisher()
        assert len(_hub._open_hosts) >= 1
    assert not _hub._open_hosts
