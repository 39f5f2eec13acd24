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
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Self, cast, final

import attrs
import trio

from .._contract import (
    Availability,
    Cursor,
    Diagnostic,
    Frame,
    HeartbeatEvent,
    LifecycleInput,
    RootActivity,
    SnapshotFrame,
    WorkflowEvent,
    from_wire,
    to_wire,
)
from .._exceptions import WorkflowHubError
from ._adapter import (
    AdapterConfig,
    AdapterFactory,
    ConformanceAdapter,
    ObserverStyle,
    takes_details,
)
from ._profiles import PROFILES, Profile, check_profiles

__all__ = [
    "CALLS",
    "PROTOCOL_VERSION",
    "JsonLinesAdapter",
    "JsonLinesError",
    "JsonLinesProcess",
    "serve",
]

PROTOCOL_VERSION = 3
"""Sent as ``protocol`` with ``hello`` and every ``start`` request. Version 2 added resuming:
``historyLimit`` on ``start``, ``since`` on ``observe`` and its answer ``resumed``. Version 3 added
``hello``, whose answer declares the adapter's ``profiles``."""

DEFAULT_TIMEOUT = 10.0
DEFAULT_STARTUP_TIMEOUT = 30.0


class JsonLinesError(WorkflowHubError):
    """The child process broke the protocol, answered with an error, was late or exited."""


class _Refused(JsonLinesError):
    """The child answered ``"ok": false`` with an error: it is alive and speaking."""


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
        self._profiles: tuple[Profile, ...] | None = None
        self._extensions: frozenset[str] = frozenset()

    def __call__(self, config: AdapterConfig) -> JsonLinesAdapter:
        return JsonLinesAdapter(self, config)

    @property
    def profiles(self) -> tuple[Profile, ...]:
        """The profiles the adapter declares in its ``hello`` answer (asked once).

        An adapter that answers ``hello`` without ``profiles``, or refuses it (an adapter of
        protocol 2), declares nothing: every profile is checked. A declaration that is not a
        list of known profile names including ``source`` is a :class:`JsonLinesError`.
        """
        if self._profiles is None:
            try:
                answer = self.request("hello", protocol=PROTOCOL_VERSION)
            except _Refused:
                answer = {}
            extensions = answer.get("extensions", [])
            if not isinstance(extensions, list) or not all(
                isinstance(name, str) for name in extensions
            ):
                raise JsonLinesError(
                    f"the answer to 'hello' has a bad 'extensions': {extensions!r} is not a "
                    "list of names"
                )
            self._extensions = frozenset(extensions)
            declared = answer.get("profiles")
            if declared is None:
                self._profiles = PROFILES
            else:
                if not isinstance(declared, list):
                    raise JsonLinesError(
                        f"the answer to 'hello' has a bad 'profiles': {declared!r} is not a list"
                    )
                try:
                    self._profiles = check_profiles(declared, "the answer to 'hello': 'profiles'")
                except ValueError as error:
                    raise JsonLinesError(str(error)) from None
        return self._profiles

    @property
    def details(self) -> bool:
        """Whether the adapter takes C3's ``detail`` on ``publishSnapshot``: its ``hello``
        answer lists ``"detail"`` in ``extensions`` (asked once, with :attr:`profiles`)."""
        self.profiles  # noqa: B018  # asks hello once, which reads the extensions too
        return "detail" in self._extensions

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

    def __exit__(self, *exc_info: object) -> None:
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
            raise _Refused(f"{op!r} failed in the adapter: {answer['error']}")
        if answer.get("ok") is not True:
            raise self._fail(f'the answer to {op!r} has no "ok": true: {line[:200]!r}')
        return answer


# --- the one table of calls, shared by both sides ------------------------------------------------


@final
@attrs.frozen
class _Codec:
    """How one value travels: ``encode`` to JSON-ready data, ``decode`` back (raising on junk)."""

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


def _checked(kind: type, what: str) -> _Codec:
    def decode(value: Any) -> Any:
        # bool is an int subclass; an int field never takes one.
        if type(value) is not kind:
            raise ValueError(f"expected {what}, got {value!r}")
        return value

    return _Codec(lambda value: value, decode)


def _wire(cls: Any) -> _Codec:
    return _Codec(to_wire, lambda value: from_wire(cls, value))


def _many(codec: _Codec) -> _Codec:
    def decode(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise ValueError(f"expected an array, got {value!r}")
        return [codec.decode(item) for item in value]

    return _Codec(lambda values: [codec.encode(item) for item in values], decode)


def _style(value: Any) -> ObserverStyle:
    if value not in ("callback", "stream"):
        raise ValueError(f"expected 'callback' or 'stream', got {value!r}")
    return cast(ObserverStyle, value)


_INT = _checked(int, "an int")
_STR = _checked(str, "a string")
_BOOL = _checked(bool, "true or false")
_STYLE = _Codec(lambda value: value, _style)
_AVAILABILITY = _Codec(str, lambda value: Availability(str(value)))
_ROOTS = _Codec(
    lambda roots: [to_wire(root) for root in roots],
    lambda value: tuple(_many(_wire(RootActivity)).decode(value)),
)


@final
@attrs.frozen
class _Field:
    """One argument of a call: the adapter method's parameter, under a JSON key.

    An *optional* field is omitted when it is None (never ``null``, as on the wire) and absent
    means None; ``failing`` is the one that is absent for False, as protocol 1 had it.
    """

    key: str
    codec: _Codec
    optional: bool = False
    absent: Any = None
    extension: bool = False
    """A C3 extension (``detail``): when absent, not passed to the adapter's method at all, so
    an adapter written before it still takes the call."""


@final
@attrs.frozen
class _Answer:
    """What a call answers besides ``id`` and ``ok``: one value under ``key``; an optional one
    is omitted for None."""

    key: str
    codec: _Codec
    optional: bool = False


@final
@attrs.frozen
class _Call:
    """One adapter method as a JSON-lines request, and its answer (if any)."""

    op: str
    method: str
    fields: tuple[_Field, ...] = ()
    answer: _Answer | None = None


_PUBLISHER = _Field("publisher", _INT)
_OBSERVER = _Field("observer", _INT)
_CURSOR = _Answer("cursor", _wire(Cursor), optional=True)

CALLS: tuple[_Call, ...] = (
    _Call("registerPublisher", "register_publisher"),
    _Call(
        "publishSnapshot",
        "publish_snapshot",
        (
            _PUBLISHER,
            _Field("availability", _AVAILABILITY),
            _Field("roots", _ROOTS, True),
            _Field("detail", _STR, True, extension=True),
        ),
        _CURSOR,
    ),
    _Call(
        "publishChanged",
        "publish_changed",
        (_PUBLISHER, _Field("root", _wire(RootActivity))),
        _CURSOR,
    ),
    _Call(
        "publishRemoved",
        "publish_removed",
        (_PUBLISHER, _Field("rootRunId", _STR)),
        _CURSOR,
    ),
    _Call(
        "publishLifecycle",
        "publish_lifecycle",
        (_PUBLISHER, _Field("event", _wire(LifecycleInput))),
        _CURSOR,
    ),
    _Call(
        "publishHeartbeat",
        "publish_heartbeat",
        (_PUBLISHER, _Field("event", _wire(HeartbeatEvent))),
    ),
    _Call("disposePublisher", "dispose_publisher", (_PUBLISHER,)),
    _Call(
        "observe",
        "observe",
        (
            _Field("style", _STYLE),
            _Field("failing", _BOOL, optional=True, absent=False),
            _Field("since", _wire(Cursor), optional=True),
        ),
        _Answer("resumed", _BOOL),
    ),
    _Call("stall", "stall", (_OBSERVER,)),
    _Call("release", "release", (_OBSERVER,)),
    _Call("disposeObserver", "dispose_observer", (_OBSERVER,)),
    _Call("bindDispatcher", "bind_dispatcher"),
    _Call("disposeHub", "dispose_hub"),
    _Call("settle", "settle"),
    _Call("frames", "frames", (_OBSERVER,), _Answer("frames", _many(_wire(Frame)))),
    _Call("pending", "pending", (_OBSERVER,), _Answer("pending", _INT)),
    _Call("snapshot", "snapshot", (), _Answer("snapshot", _wire(SnapshotFrame))),
    _Call("diagnostics", "diagnostics", (), _Answer("diagnostics", _many(_wire(Diagnostic)))),
    _Call("hookEvents", "hook_events", (), _Answer("events", _many(_wire(WorkflowEvent)))),
)
"""Every request after ``start``: its ``op``, the adapter method it plays, the JSON keys of the
method's arguments in order, and the key of the answer. Both sides read this one table."""

_BY_METHOD = {call.method: call for call in CALLS}
_BY_OP = {call.op: call for call in CALLS}


def _encode_request(call: _Call, args: Sequence[Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for field, value in zip(call.fields, args, strict=True):
        if value is None and field.optional:
            continue
        if field.optional and value == field.absent:
            continue
        fields[field.key] = field.codec.encode(value)
    return fields


def _decode_request(call: _Call, request: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The method's positional arguments, and its keyword ones: the extensions present."""
    args = []
    keywords: dict[str, Any] = {}
    for field in call.fields:
        if field.key not in request and field.optional:
            if not field.extension:
                args.append(field.absent)
            continue
        try:
            value = field.codec.decode(request.get(field.key))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{field.key!r}: {error}") from None
        if field.extension:
            keywords[field.key] = value
        else:
            args.append(value)
    return args, keywords


@final
class JsonLinesAdapter:
    """One scenario's adapter, speaking to a :class:`JsonLinesProcess`. Made by the process."""

    def __init__(self, process: JsonLinesProcess, config: AdapterConfig) -> None:
        self._process = process
        self._config = config

    def _call(self, method: str, *args: Any) -> Any:
        call = _BY_METHOD[method]
        answer = self._process.request(call.op, **_encode_request(call, args))
        result = call.answer
        if result is None or (result.optional and result.key not in answer):
            return None
        try:
            return result.codec.decode(answer.get(result.key))
        except (ValueError, TypeError) as error:
            raise JsonLinesError(
                f"the answer to {call.op!r} has a bad {result.key!r}: {error}"
            ) from None

    async def start(self) -> None:
        self._process.request(
            "start",
            protocol=PROTOCOL_VERSION,
            queueLimit=self._config.queue_limit,
            diagnosticsLimit=self._config.diagnostics_limit,
            historyLimit=self._config.history_limit,
        )

    async def close(self) -> None:
        self._process.request("close")

    async def register_publisher(self) -> None:
        self._call("register_publisher")

    async def publish_snapshot(
        self,
        publisher: int,
        availability: Availability,
        roots: tuple[RootActivity, ...] | None,
        detail: str | None = None,
    ) -> Cursor | None:
        return cast(
            Cursor | None,
            self._call("publish_snapshot", publisher, availability, roots, detail),
        )

    async def publish_changed(self, publisher: int, root: RootActivity) -> Cursor | None:
        return cast(Cursor | None, self._call("publish_changed", publisher, root))

    async def publish_removed(self, publisher: int, root_run_id: str) -> Cursor | None:
        return cast(Cursor | None, self._call("publish_removed", publisher, root_run_id))

    async def publish_lifecycle(self, publisher: int, event: LifecycleInput) -> Cursor | None:
        return cast(Cursor | None, self._call("publish_lifecycle", publisher, event))

    async def publish_heartbeat(self, publisher: int, event: HeartbeatEvent) -> None:
        self._call("publish_heartbeat", publisher, event)

    async def dispose_publisher(self, publisher: int) -> None:
        self._call("dispose_publisher", publisher)

    async def observe(self, style: ObserverStyle, failing: bool, since: Cursor | None) -> bool:
        return cast(bool, self._call("observe", style, failing, since))

    async def stall(self, observer: int) -> None:
        self._call("stall", observer)

    async def release(self, observer: int) -> None:
        self._call("release", observer)

    async def dispose_observer(self, observer: int) -> None:
        self._call("dispose_observer", observer)

    async def bind_dispatcher(self) -> None:
        self._call("bind_dispatcher")

    async def dispose_hub(self) -> None:
        self._call("dispose_hub")

    async def settle(self) -> None:
        self._call("settle")

    async def frames(self, observer: int) -> Sequence[Frame]:
        return cast(list[Frame], self._call("frames", observer))

    async def pending(self, observer: int) -> int:
        return cast(int, self._call("pending", observer))

    async def snapshot(self) -> SnapshotFrame:
        return cast(SnapshotFrame, self._call("snapshot"))

    async def diagnostics(self) -> Sequence[Diagnostic]:
        return cast(list[Diagnostic], self._call("diagnostics"))

    async def hook_events(self) -> Sequence[WorkflowEvent]:
        return cast(list[WorkflowEvent], self._call("hook_events"))


# --- the implementation side --------------------------------------------------------------------


def _int(request: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = request.get(key, default)
    if type(value) is not int:
        raise ValueError(f"{key!r} must be an int, got {value!r}")
    return value


async def _handle(
    adapter: ConformanceAdapter, op: str, request: Mapping[str, Any]
) -> dict[str, Any]:
    """Play one request on the adapter; the answer's fields besides ``id`` and ``ok``."""
    call = _BY_OP.get(op)
    if call is None:
        raise ValueError(f"unknown op {op!r}")
    args, keywords = _decode_request(call, request)
    value = await getattr(adapter, call.method)(*args, **keywords)
    answer = call.answer
    if answer is None or (value is None and answer.optional):
        return {}
    return {answer.key: answer.codec.encode(value)}


async def _serve(
    adapter_factory: AdapterFactory,
    stdin: IO[bytes],
    stdout: IO[bytes],
    profiles: tuple[Profile, ...] | None,
) -> None:
    adapter: ConformanceAdapter | None = None
    answer: dict[str, Any]
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
                if op == "hello":
                    answer = {} if profiles is None else {"profiles": list(profiles)}
                    if takes_details(adapter_factory):
                        answer["extensions"] = ["detail"]
                elif op == "start":
                    if adapter is not None:
                        await adapter.close()
                        adapter = None
                    config = AdapterConfig(
                        queue_limit=_int(request, "queueLimit"),
                        diagnostics_limit=_int(request, "diagnosticsLimit"),
                        # Absent in protocol 1: the contract's default.
                        history_limit=_int(request, "historyLimit", 1024),
                    )
                    adapter = adapter_factory(config)
                    await adapter.start()
                    answer = {}
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
    profiles: Sequence[str] | None = None,
) -> None:
    """Serve the JSON-lines protocol for ``adapter_factory`` until stdin ends.

    ``profiles`` is what the ``hello`` answer declares (by default the factory's ``profiles``
    attribute; with neither, the answer declares nothing, which means every profile).

    This is the child's side of :class:`JsonLinesProcess`, for any Python adapter: the process
    ``python -m workflow_hub.testing.jsonl_adapter`` is ``serve(HubAdapter)``. Requests are read
    with blocking reads so that nothing is delivered between two ``settle`` requests.
    """
    declared = profiles if profiles is not None else getattr(adapter_factory, "profiles", None)
    trio.run(
        _serve,
        adapter_factory,
        stdin if stdin is not None else sys.stdin.buffer,
        stdout if stdout is not None else sys.stdout.buffer,
        None if declared is None else check_profiles(declared),
    )
