"""The JSON-lines adapter protocol: test an implementation that runs in another process.

The harness side is :class:`JsonLinesProcess` (it owns the child process, one for a whole run)
and :class:`JsonLinesAdapter` (one per scenario, speaking through the process). The other side is
:func:`serve`, which puts any Python :class:`ConformanceAdapter` on stdin/stdout; hosts in other
languages implement the same few lines of protocol themselves (``docs/conformance.md``).

Each request is one JSON object on one line of the child's stdin; the child answers each with one
JSON object on one line of its stdout before it reads the next request. Contract values travel in
the wire format of :mod:`workflow_hub.wire`.

The harness side uses blocking pipes read by a helper thread, not trio streams: the child lives
across the many ``trio.run`` calls of a run (one per scenario), which trio's process objects
cannot, and spawning a process per scenario would cost more than the scenario itself. Every
answer is awaited for at most ``timeout`` seconds; a child that is late or dies is killed, and
the next scenario starts a fresh one, so a crash is shrunk like any other failure.
"""

from __future__ import annotations

import collections
import json
import queue
import shlex
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO, Any, Self, final

import trio

from .._contract import (
    Cursor,
    Diagnostic,
    Frame,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
    SnapshotFrame,
    WorkflowEvent,
)
from .._enums import Availability
from ..wire import from_wire, to_wire
from ._adapter import AdapterConfig, AdapterFactory, ConformanceAdapter, ObserverStyle

__all__ = ["PROTOCOL_VERSION", "JsonLinesAdapter", "JsonLinesError", "JsonLinesProcess", "serve"]

PROTOCOL_VERSION = 1
"""Sent as ``protocol`` with every ``start`` request."""

DEFAULT_TIMEOUT = 10.0
DEFAULT_STARTUP_TIMEOUT = 30.0


class JsonLinesError(Exception):
    """The child process broke the protocol, answered with an error, was late or exited."""


def _dump(message: Mapping[str, Any]) -> bytes:
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


# --- the harness side ---------------------------------------------------------------------------


@final
class _Child:
    """One running child process, a thread turning its stdout into lines, one draining stderr."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | None) -> None:
        self.popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=None if env is None else dict(env),
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.answered = False
        """Whether it has answered once: the first answer may take as long as starting up."""
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        stdout = self.popen.stdout
        assert stdout is not None
        for line in stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        stderr = self.popen.stderr
        assert stderr is not None
        for line in stderr:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send(self, data: bytes) -> None:
        stdin = self.popen.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def stop(self, grace: float) -> None:
        """Close stdin (the child should exit on EOF), then kill it if it does not."""
        popen = self.popen
        try:
            if popen.stdin is not None:
                popen.stdin.close()
        except OSError:
            pass  # the child is gone already
        try:
            popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
        for thread in self._threads:
            thread.join(timeout=grace)
        for stream in (popen.stdout, popen.stderr):
            if stream is not None:
                stream.close()

    def describe_exit(self) -> str:
        code = self.popen.poll()
        if code is None:
            status = "is still running"
        elif code < 0:
            status = f"was ended by signal {-code}"
        else:
            status = f"exited with code {code}"
        tail = "\n".join(f"    {line}" for line in self.stderr_tail)
        return f"the adapter process {status}" + (
            f"; its stderr ends with:\n{tail}" if tail else ""
        )


@final
class JsonLinesProcess:
    """A child process speaking the JSON-lines protocol; an :data:`AdapterFactory`.

    ``command`` is a string (split like a shell would, without running one) or an argument list.
    The process is started by :meth:`open` (or entering the ``with`` block), lives for the whole
    run, and is restarted for the next scenario if it exits or stops answering within
    ``timeout`` seconds (``startup_timeout`` for the first answer of a fresh process, which
    includes its start-up). Use it as ``check_conformance(process)``.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("the adapter command is empty")
        self.argv: tuple[str, ...] = tuple(argv)
        self.timeout = timeout
        self.startup_timeout = max(timeout, startup_timeout)
        self._env = env
        self._cwd = cwd
        self._child: _Child | None = None
        self._next_id = 1

    def __call__(self, config: AdapterConfig) -> JsonLinesAdapter:
        return JsonLinesAdapter(self, config)

    def open(self) -> None:
        """Start the child now (it is otherwise started by the first request). Raises ``OSError``."""
        if self._child is None or self._child.popen.poll() is not None:
            self._discard()
            self._child = _Child(self.argv, self._env, self._cwd)

    def close(self) -> None:
        """Stop the child: close its stdin, and kill it if it has not exited soon after."""
        self._discard()

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _discard(self, grace: float = 2.0) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.stop(grace)

    def _fail(self, problem: str) -> JsonLinesError:
        child = self._child
        self._discard(grace=0.5)
        detail = "" if child is None else "\n" + child.describe_exit()
        return JsonLinesError(problem + detail)

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its answer; raise :class:`JsonLinesError` on any problem."""
        self.open()
        child = self._child
        assert child is not None
        request_id = self._next_id
        self._next_id += 1
        try:
            child.send(_dump({"id": request_id, "op": op, **fields}))
        except OSError as error:
            raise self._fail(f"could not send {op!r}: {error}") from None
        timeout = self.timeout if child.answered else self.startup_timeout
        try:
            line = child.lines.get(timeout=timeout)
        except queue.Empty:
            raise self._fail(f"no answer to {op!r} within {timeout} s") from None
        child.answered = True
        if line is None:
            raise self._fail(f"the adapter closed its stdout instead of answering {op!r}")
        try:
            answer = json.loads(line)
        except ValueError:
            raise self._fail(f"the answer to {op!r} is not a JSON line: {line[:200]!r}") from None
        if not isinstance(answer, dict):
            raise self._fail(f"the answer to {op!r} is not a JSON object: {line[:200]!r}")
        if answer.get("id") != request_id:
            raise self._fail(
                f"the answer to {op!r} (id {request_id}) carries id {answer.get('id')!r}"
            )
        if answer.get("ok") is False and "error" in answer:
            raise JsonLinesError(f"{op!r} failed in the adapter: {answer['error']}")
        if answer.get("ok") is not True:
            raise self._fail(f'the answer to {op!r} has no "ok": true: {line[:200]!r}')
        return answer


def _cursor(answer: Mapping[str, Any]) -> Cursor | None:
    data = answer.get("cursor")
    return None if data is None else from_wire(Cursor, data)


def _list(answer: Mapping[str, Any], key: str) -> list[Any]:
    items = answer.get(key)
    if not isinstance(items, list):
        raise JsonLinesError(f"the answer has no {key!r} array: {answer!r}")
    return items


@final
class JsonLinesAdapter:
    """One scenario's adapter, speaking to a :class:`JsonLinesProcess`. Made by the process."""

    def __init__(self, process: JsonLinesProcess, config: AdapterConfig) -> None:
        self._process = process
        self._config = config

    def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        return self._process.request(op, **fields)

    async def start(self) -> None:
        self._request(
            "start",
            protocol=PROTOCOL_VERSION,
            queueLimit=self._config.queue_limit,
            diagnosticsLimit=self._config.diagnostics_limit,
        )

    async def close(self) -> None:
        self._request("close")

    async def register_publisher(self) -> None:
        self._request("registerPublisher")

    async def publish_snapshot(
        self,
        publisher: int,
        availability: Availability,
        roots: tuple[RootActivity, ...] | None,
    ) -> Cursor | None:
        fields: dict[str, Any] = {"publisher": publisher, "availability": str(availability)}
        if roots is not None:
            fields["roots"] = [to_wire(root) for root in roots]
        return _cursor(self._request("publishSnapshot", **fields))

    async def publish_changed(self, publisher: int, root: RootActivity) -> Cursor | None:
        return _cursor(self._request("publishChanged", publisher=publisher, root=to_wire(root)))

    async def publish_removed(self, publisher: int, root_run_id: str) -> Cursor | None:
        return _cursor(self._request("publishRemoved", publisher=publisher, rootRunId=root_run_id))

    async def publish_lifecycle(self, publisher: int, event: LifecycleInput) -> Cursor | None:
        return _cursor(self._request("publishLifecycle", publisher=publisher, event=to_wire(event)))

    async def publish_heartbeat(self, publisher: int, event: HeartbeatEvent) -> None:
        self._request("publishHeartbeat", publisher=publisher, event=to_wire(event))

    async def dispose_publisher(self, publisher: int) -> None:
        self._request("disposePublisher", publisher=publisher)

    async def observe(self, style: ObserverStyle, failing: bool) -> None:
        self._request("observe", style=style, failing=failing)

    async def stall(self, observer: int) -> None:
        self._request("stall", observer=observer)

    async def release(self, observer: int) -> None:
        self._request("release", observer=observer)

    async def dispose_observer(self, observer: int) -> None:
        self._request("disposeObserver", observer=observer)

    async def bind_dispatcher(self) -> None:
        self._request("bindDispatcher")

    async def dispose_hub(self) -> None:
        self._request("disposeHub")

    async def settle(self) -> None:
        self._request("settle")

    async def frames(self, observer: int) -> Sequence[Frame]:
        answer = self._request("frames", observer=observer)
        return [from_wire(Frame, item) for item in _list(answer, "frames")]

    async def pending(self, observer: int) -> int:
        pending = self._request("pending", observer=observer).get("pending")
        if type(pending) is not int:
            raise JsonLinesError(f"'pending' answered {pending!r}, not an int")
        return pending

    async def snapshot(self) -> SnapshotFrame:
        return from_wire(SnapshotFrame, self._request("snapshot").get("snapshot"))

    async def diagnostics(self) -> Sequence[Diagnostic]:
        answer = self._request("diagnostics")
        return [from_wire(Diagnostic, item) for item in _list(answer, "diagnostics")]

    async def hook_events(self) -> Sequence[WorkflowEvent]:
        answer = self._request("hookEvents")
        return [from_wire(WorkflowEvent, item) for item in _list(answer, "events")]


# --- the implementation side --------------------------------------------------------------------


def _int(request: Mapping[str, Any], key: str) -> int:
    value = request.get(key)
    if type(value) is not int:
        raise ValueError(f"{key!r} must be an int, got {value!r}")
    return value


async def _handle(
    adapter: ConformanceAdapter, op: str, request: Mapping[str, Any]
) -> dict[str, Any]:
    """Play one request on the adapter; the answer's fields besides ``id`` and ``ok``."""
    match op:
        case "registerPublisher":
            await adapter.register_publisher()
        case "publishSnapshot":
            raw_roots = request.get("roots")
            roots = (
                None
                if raw_roots is None
                else tuple(from_wire(RootActivity, item) for item in raw_roots)
            )
            availability = Availability(str(request.get("availability")))
            cursor = await adapter.publish_snapshot(_int(request, "publisher"), availability, roots)
            return {} if cursor is None else {"cursor": to_wire(cursor)}
        case "publishChanged":
            root = from_wire(RootActivity, request.get("root"))
            cursor = await adapter.publish_changed(_int(request, "publisher"), root)
            return {} if cursor is None else {"cursor": to_wire(cursor)}
        case "publishRemoved":
            root_run_id = request.get("rootRunId")
            if not isinstance(root_run_id, str):
                raise ValueError(f"'rootRunId' must be a string, got {root_run_id!r}")
            cursor = await adapter.publish_removed(_int(request, "publisher"), root_run_id)
            return {} if cursor is None else {"cursor": to_wire(cursor)}
        case "publishLifecycle":
            event = from_wire(LifecycleInput, request.get("event"))
            cursor = await adapter.publish_lifecycle(_int(request, "publisher"), event)
            return {} if cursor is None else {"cursor": to_wire(cursor)}
        case "publishHeartbeat":
            heartbeat = from_wire(HeartbeatEvent, request.get("event"))
            await adapter.publish_heartbeat(_int(request, "publisher"), heartbeat)
        case "disposePublisher":
            await adapter.dispose_publisher(_int(request, "publisher"))
        case "observe":
            style = request.get("style")
            if style not in ("callback", "stream"):
                raise ValueError(f"'style' must be 'callback' or 'stream', got {style!r}")
            await adapter.observe(style, request.get("failing") is True)
        case "stall":
            await adapter.stall(_int(request, "observer"))
        case "release":
            await adapter.release(_int(request, "observer"))
        case "disposeObserver":
            await adapter.dispose_observer(_int(request, "observer"))
        case "bindDispatcher":
            await adapter.bind_dispatcher()
        case "disposeHub":
            await adapter.dispose_hub()
        case "settle":
            await adapter.settle()
        case "frames":
            frames = await adapter.frames(_int(request, "observer"))
            return {"frames": [to_wire(frame) for frame in frames]}
        case "pending":
            return {"pending": await adapter.pending(_int(request, "observer"))}
        case "snapshot":
            return {"snapshot": to_wire(await adapter.snapshot())}
        case "diagnostics":
            return {"diagnostics": [to_wire(item) for item in await adapter.diagnostics()]}
        case "hookEvents":
            return {"events": [to_wire(event) for event in await adapter.hook_events()]}
        case _:
            raise ValueError(f"unknown op {op!r}")
    return {}


async def _serve(adapter_factory: AdapterFactory, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    adapter: ConformanceAdapter | None = None
    try:
        while True:
            # A blocking read, on purpose: while this task waits for the next request, no other
            # task of this trio run may deliver anything (deliveries happen only in `settle`).
            line = stdin.readline()
            if not line:
                return
            request_id: object = None
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("a request must be a JSON object")
                request_id = request.get("id")
                op = request.get("op")
                if op == "start":
                    if adapter is not None:
                        await adapter.close()
                        adapter = None
                    config = AdapterConfig(
                        queue_limit=_int(request, "queueLimit"),
                        diagnostics_limit=_int(request, "diagnosticsLimit"),
                    )
                    adapter = adapter_factory(config)
                    await adapter.start()
                    answer: dict[str, Any] = {}
                elif op == "close":
                    if adapter is not None:
                        await adapter.close()
                        adapter = None
                    answer = {}
                elif adapter is None:
                    raise ValueError(f"{op!r} before 'start'")
                else:
                    answer = await _handle(adapter, str(op), request)
                response = {"id": request_id, "ok": True, **answer}
            except Exception as error:
                response = {
                    "id": request_id,
                    "ok": False,
                    "error": f"{type(error).__name__}: {error}",
                }
            stdout.write(_dump(response))
            stdout.flush()
    finally:
        if adapter is not None:
            await adapter.close()


def serve(
    adapter_factory: AdapterFactory,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
) -> None:
    """Serve the JSON-lines protocol for ``adapter_factory`` until stdin ends.

    This is the child's side of :class:`JsonLinesProcess`, for any Python adapter: the process
    ``python -m workflow_hub.testing.jsonl_adapter`` is ``serve(HubAdapter)``. Requests are read
    with blocking reads so that nothing is delivered between two ``settle`` requests.
    """
    trio.run(
        _serve,
        adapter_factory,
        stdin if stdin is not None else sys.stdin.buffer,
        stdout if stdout is not None else sys.stdout.buffer,
    )
