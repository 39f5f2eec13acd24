"""Issue 24: every mistake a user can make is one line on stderr and an exit status, never a
traceback.

Each case runs the real ``workflow-hub`` command (``python -m workflow_hub._cli``) as a process
against real servers on loopback: a served demo hub with a token, a fleet server over a real
redis-server, an HTTP server that is not a hub (404 pages), one that answers every path with an
HTML page (200), and a port where nothing listens. A case passes when the command exits with the
expected status, prints no traceback, and says what went wrong (and what to do) in one line.
"""

from __future__ import annotations

import http.server
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import attrs
import pytest

from tests.support.processes import stop_group
from tests.support.redis_server import RedisServer

CLI = [sys.executable, "-m", "workflow_hub._cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "WORKFLOW_HUB_DEBUG": ""}
TOKEN = "s3cret"
TIMEOUT = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def started(*args: str) -> tuple[subprocess.Popen[str], str]:
    """A long-running command that prints its URL first."""
    process = subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
    except BaseException:
        stop(process)
        raise
    return process, url


def stop(process: subprocess.Popen[str]) -> None:
    stop_group(process)
    if process.stdout is not None:
        process.stdout.close()


class _Pages(http.server.BaseHTTPRequestHandler):
    """Answers every GET with an HTML page: 200 for ``/html200``-servers, else 404."""

    status = 200

    def do_GET(self) -> None:
        body = b"<!doctype html><html><body>Welcome to nginx!</body></html>"
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def html_servers() -> Iterator[dict[int, str]]:
    """Two web servers that are not hubs: one answers 200 with HTML, one 404 with HTML."""
    servers: dict[int, str] = {}
    running = []
    for status in (200, 404):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
        server.status = status  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers[status] = f"http://127.0.0.1:{server.server_address[1]}"
        running.append(server)
    yield servers
    for server in running:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def hub_url() -> Iterator[str]:
    process, url = started("serve", "--port", "0", "--token", TOKEN, "--seed", "1")
    yield url
    stop(process)


@pytest.fixture(scope="module")
def fleet_url(redis_server: RedisServer) -> Iterator[str]:
    process, url = started("serve", "--fleet", redis_server.url, "--port", "0")
    yield url
    stop(process)


@pytest.fixture(scope="module")
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


@attrs.frozen
class Mistake:
    args: tuple[str, ...]
    status: int
    says: str
    """A regular expression the one line on stderr must match (what went wrong, what to do)."""
    shell: str | None = None
    """Run through the shell with this pipeline tail (``| head -c 1``) instead."""


def mistakes(hub: str, fleet: str, html: dict[int, str], busy: int, redis: str) -> list[Mistake]:
    hostport = hub.removeprefix("http://")
    nothing = f"http://127.0.0.1:{free_port()}"
    return [
        # the command line itself
        Mistake((), 2, r"the following arguments are required: COMMAND"),
        Mistake(("bogus",), 2, r"invalid choice: 'bogus'"),
        Mistake(("watch",), 2, r"required: url"),
        Mistake(("watch", hub, "--duration", "abc"), 2, r"--duration: expected a number"),
        Mistake(("watch", hub, "--duration", "-1"), 2, r"--duration: expected a number"),
        Mistake(("demo", "--serve", "abc"), 2, r"--serve: expected \[HOST:\]PORT"),
        Mistake(("demo", "--duration", "0"), 2, r"--duration"),
        Mistake(("demo", "--metrics-port", "70000"), 2, r"--metrics-port: expected a port"),
        Mistake(("serve", "--port", "99999"), 2, r"--port: expected a port from 0 to 65535"),
        Mistake(("serve", "--port", "http"), 2, r"--port: expected a port"),
        Mistake(("serve", "--host", "0.0.0.0", "--port", "0"), 2, r"token"),
        Mistake(("serve", "--redis", redis), 2, r"--source"),
        Mistake(("status", hub, "--format", "{nope}"), 2, r"unknown field \{nope\}"),
        Mistake(("status", hub, "--format", "{"), 2, r"--format"),
        Mistake(("status", hub, "--json", "--format", "x"), 2, r"not allowed with"),
        Mistake(("conformance",), 2, r"--adapter"),
        Mistake(("snapshot", "ftp://example.org"), 2, r"expected an http:// or https:// URL"),
        Mistake(("snapshot", "http://127.0.0.1:99999"), 2, r"port must be a number"),
        Mistake(("snapshot", redis), 2, r"snapshot reads a hub served over HTTP.*status redis://"),
        Mistake(("watch", "redis://:x"), 2, r"the port must be a number"),
        Mistake(("status", "redis://host/abc"), 2, r"the database is a number"),
        Mistake(("serve", "--fleet", "redis://host:99999/0"), 2, r"--fleet .*port must be"),
        Mistake(
            ("serve", "--redis", "redis://", "--source", "a"), 2, r"--redis .*expected redis://"
        ),
        Mistake(("status", redis, "--token", "x"), 2, r"--token is for http://"),
        # the token
        Mistake(("watch", hub), 1, r"the hub wants a token \(401\): pass it with --token"),
        Mistake(
            ("watch", hub, "--token", "wrong"), 1, r"refused this token \(401\): check --token"
        ),
        Mistake(("snapshot", hub), 1, r"wants a token"),
        Mistake(("snapshot", hub, "--token", "wrong"), 1, r"refused this token"),
        # the URL
        Mistake(("watch", f"{hub}/v1/nope", "--token", TOKEN), 1, r"no hub here \(404"),
        Mistake(("watch", fleet), 1, r"serves a fleet, not one hub: add /sources/"),
        Mistake(("snapshot", fleet), 1, r"serves a fleet"),
        # otel and alert follow one hub's streams: a fleet's root is said at once, not a 404
        Mistake(("otel", fleet), 1, r"serves a fleet, not one hub: .*redis:// URL for every"),
        Mistake(
            ("alert", fleet, "--webhook", "http://127.0.0.1:1/hook"), 1, r"serves a fleet, not one"
        ),
        Mistake(("watch", html[404]), 1, r"no hub here"),
        Mistake(
            ("snapshot", html[200]), 1, r"not a workflow-hub server \(its /v1/snapshot is text/html"
        ),
        Mistake(("watch", html[200]), 1, r"not a workflow-hub server"),
        Mistake(
            ("watch", nothing), 1, r"cannot connect to .*: connection refused \(is the hub running"
        ),
        Mistake(("snapshot", nothing), 1, r"connection refused"),
        Mistake(("watch", "http://no-such-host.invalid:1"), 1, r"cannot connect to .*"),
        # the run
        Mistake(
            ("watch", hostport, "--token", TOKEN, "--duration", "0.01"),
            1,
            r"nothing to show: no frame arrived .*--duration ended the watch first",
        ),
        Mistake(("demo", "--serve", str(busy), "--duration", "1"), 1, r"cannot serve at .*in use"),
        Mistake(("serve", "--port", str(busy), "--duration", "1"), 1, r"cannot serve at .*in use"),
        Mistake(("demo", "--metrics-port", str(busy), "--duration", "1"), 1, r"in use"),
        *[Mistake(args, 1, IN_USE) for args in busy_port_commands(busy, redis)],
        Mistake(("status", nothing), 3, r"cannot connect to .*connection refused"),
        Mistake(("status", hub, "--token", "wrong"), 3, r"refused this token"),
        Mistake(("status", "redis://127.0.0.1:1/0"), 3, r"cannot connect to redis://127.0.0.1:1/0"),
        Mistake(
            ("conformance", "--adapter", "/no/such/adapter"), 2, r"cannot use the adapter .*No such"
        ),
    ]


IN_USE = (
    r"cannot serve (the fleet )?at 127\.0\.0\.1:\d+: Address already in use: .*pick another port"
)
"""The one line of every command that cannot listen where it was told to (issue 36)."""


def busy_port_commands(busy: int, redis: str) -> list[tuple[str, ...]]:
    """Every command that listens, told to listen on a port another program holds."""
    port = ("--port", str(busy))
    return [
        ("serve", *port, "--duration", "5"),
        ("serve", "--redis", redis, "--source", "busy", *port, "--duration", "5"),
        ("serve", "--fleet", redis, *port, "--duration", "5"),
        ("demo", "--serve", f"127.0.0.1:{busy}", "--duration", "5"),
        ("celery", "--broker", redis, *port, "--inspect-timeout", "0.1"),
    ]


def run(mistake: Mistake) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *mistake.args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=ENV,
        check=False,
    )


def test_every_mistake_is_one_line_and_an_exit_status(
    hub_url: str,
    fleet_url: str,
    html_servers: dict[int, str],
    busy_port: int,
    redis_server: RedisServer,
) -> None:
    cases = mistakes(hub_url, fleet_url, html_servers, busy_port, redis_server.url)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, cases))
    wrong = []
    for mistake, result in zip(cases, results, strict=True):
        lines = result.stderr.strip().splitlines()
        problems = []
        if "Traceback" in result.stderr or "ExceptionGroup" in result.stderr:
            problems.append("a traceback")
        if result.returncode != mistake.status:
            problems.append(f"exit {result.returncode}, not {mistake.status}")
        if len(lines) != 1:
            problems.append(f"{len(lines)} lines on stderr")
        if not re.search(mistake.says, result.stderr):
            problems.append(f"does not say /{mistake.says}/")
        if problems:
            wrong.append(f"{' '.join(mistake.args)}: {', '.join(problems)}\n{result.stderr}")
    assert not wrong, "\n".join(wrong)


def test_a_reader_that_goes_away_ends_snapshot_quietly(hub_url: str) -> None:
    """``snapshot URL | head -c 1``: no BrokenPipeError, status 0; ``watch URL | head`` ends."""
    command = " ".join([*CLI, "snapshot", hub_url, "--token", TOKEN])
    script = f"set -o pipefail; {command} | head -c 1 >/dev/null"
    # A pipe that closes before the first write: stdout is a pipe nobody reads.
    result = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=TIMEOUT, env=ENV
    )
    assert "Traceback" not in result.stderr
    assert "BrokenPipe" not in result.stderr
    assert result.stderr == ""
    closed = subprocess.run(
        ["bash", "-c", f"{command} | true"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert closed.stderr == ""
    # watch runs until Ctrl-C, or until its reader goes away.
    watch = " ".join([*CLI, "watch", hub_url, "--token", TOKEN])
    watched = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {watch} | head -2"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=ENV,
    )
    assert (watched.returncode, watched.stderr) == (0, "")
    assert len(watched.stdout.splitlines()) == 2


def test_debug_shows_the_traceback_and_the_line() -> None:
    """``--debug`` and ``WORKFLOW_HUB_DEBUG=1`` print the traceback, then the same one line."""
    nothing = f"http://127.0.0.1:{free_port()}"
    plain = subprocess.run(
        [*CLI, "snapshot", nothing], capture_output=True, text=True, timeout=TIMEOUT, env=ENV
    )
    for command, env in (
        ([*CLI, "--debug", "snapshot", nothing], ENV),
        ([*CLI, "snapshot", nothing, "--debug"], ENV),
        ([*CLI, "snapshot", nothing], {**ENV, "WORKFLOW_HUB_DEBUG": "1"}),
    ):
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        assert result.returncode == 1
        assert "Traceback (most recent call last)" in result.stderr
        assert result.stderr.strip().splitlines()[-1] == plain.stderr.strip()


def test_debug_shows_the_traceback_of_every_command_that_cannot_listen(
    busy_port: int, redis_server: RedisServer
) -> None:
    """Issue 36: a port in use is one line whatever the command (never "Exceptions from Trio
    nursery"), and ``--debug`` prints the traceback before that same line, every time."""
    commands = busy_port_commands(busy_port, redis_server.url)

    def both(args: tuple[str, ...]) -> tuple[str, str]:
        plain, debug = (
            subprocess.run(
                [*CLI, *extra, *args],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                env=ENV,
                check=False,
            ).stderr
            for extra in ((), ("--debug",))
        )
        return plain, debug

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(both, commands))
    for args, (plain, debug) in zip(commands, results, strict=True):
        assert re.search(IN_USE, plain), (args, plain)
        assert "Exceptions from Trio nursery" not in plain, (args, plain)
        assert "Traceback (most recent call last)" in debug, (args, debug)
        assert debug.strip().splitlines()[-1] == plain.strip(), (args, debug)


def test_version_is_the_packages() -> None:
    import workflow_hub

    result = subprocess.run(
        [*CLI, "--version"], capture_output=True, text=True, timeout=TIMEOUT, env=ENV
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"workflow-hub {workflow_hub.__version__}"
