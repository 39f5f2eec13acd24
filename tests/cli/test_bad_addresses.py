"""A wrong address, database or password is one line and a non-zero exit, at once (issue 37).

Every command that takes a URL (``status``, ``snapshot``, ``watch``, ``serve --fleet``,
``serve --redis``) checks it before anything connects: a URL the standard library cannot even
split (an unclosed bracket, an address between brackets that is not one) is a usage mistake,
exit status 2, never "internal error … report it". A Redis that refuses what the URL says (no
password, a wrong one, a database it does not have) is a configuration error: one line on
stderr and exit status 1 at the start (``status``: its line says unknown, exit status 3), not a
command that runs silently until ``--duration`` and exits 0. A Redis that is merely down at the
start is an outage, not a mistake: ``watch`` and ``serve --fleet`` keep running and retrying.

The Redis cases run the real console script against a real redis-server with ``requirepass``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import owned_process
from tests.support.redis_server import RedisServer, free_port
from workflow_hub._cli import _urls, main

PASSWORD = "right-one"

_SCRIPT = Path(sys.executable).with_name("workflow-hub")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "workflow_hub._cli"]
"""The console script a user runs (``python -m`` where it is not installed beside python)."""

SAFETY_NET = 60.0
"""Seconds a refused command may take on a loaded machine; it ends on its own, at once."""


# --- URLs that do not parse: usage mistakes, before anything connects --------------------------

COMMANDS = {
    "status": ["status"],
    "snapshot": ["snapshot"],
    "watch": ["watch"],
    "serve --fleet": ["serve", "--fleet"],
    "serve --redis": ["serve", "--source", "s1", "--redis"],
}
HTTP_ONLY = {"status", "snapshot", "watch"}

BAD_URLS = {
    # url -> the words the one line must hold
    "http://[::1": "bracket is missing",
    "http://[zz::1]:80": "'zz::1' does not appear to be an IPv4 or IPv6 address",
    "http://127.0.0.1:99999": "the port must be a number from 0 to 65535",
    "redis://[::1:6379/0": "bracket is missing",
    "redis://[zz::1]:6379/0": "'zz::1' does not appear to be an IPv4 or IPv6 address",
    "redis://127.0.0.1:port/0": "the port must be a number from 0 to 65535",
}


def _cases() -> Iterator[object]:
    for command in COMMANDS:
        for url, words in BAD_URLS.items():
            if url.startswith("http") and command not in HTTP_ONLY:
                continue  # serve's --fleet/--redis take redis:// only (refused as such)
            if url.startswith("redis") and command == "snapshot":
                continue  # snapshot reads a served hub: refused as a fleet URL
            yield pytest.param(command, url, words, id=f"{command}-{url}")


@pytest.mark.parametrize(("command", "url", "words"), list(_cases()))
def test_a_url_that_does_not_parse_is_one_line_and_exit_status_2(
    command: str, url: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bracket left open or an address that is none is the person's mistake, said as such:
    exit status 2, one line naming the URL, nothing on stdout (status' unknown is for what
    cannot be known, not for what was mistyped)."""
    assert main([*COMMANDS[command], url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert "internal error" not in err
    assert words in err
    assert url in err  # names the URL as typed


# --- a Redis that refuses the URL's settings -----------------------------------------------------


@pytest.fixture(scope="module")
def locked_redis(redis_server: RedisServer) -> str:
    """The module's redis-server, with a password from here on: ``HOST:PORT`` of it."""
    with socket.create_connection(("127.0.0.1", redis_server.port), timeout=10) as sock:
        sock.sendall(f"CONFIG SET requirepass {PASSWORD}\r\n".encode())
        assert sock.recv(64).startswith(b"+OK")
    return f"127.0.0.1:{redis_server.port}"


REFUSALS = {
    # the URL (with HOST:PORT) -> what the line says
    "no password": ("redis://{}/0", "Redis wants a password: put it in the URL"),
    "wrong password": ("redis://:wrong@{}/0", "Redis refused the password"),
    "no such database": (f"redis://:{PASSWORD}@{{}}/99999", "Redis has no database 99999"),
}
REDIS_COMMANDS = {
    "status": ["status"],
    "watch": ["watch", "--duration", "600"],
    "serve --fleet": ["serve", "--port", "0", "--fleet"],
    "serve --redis": ["serve", "--port", "0", "--source", "s1", "--redis"],
}


def _run(args: list[str]) -> tuple[int, str, str]:
    """The console script's exit status, stdout and stderr; it must end by itself."""
    with owned_process(
        [*CLI, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        out, err = process.communicate(timeout=SAFETY_NET)
        return process.returncode, out, err


def _check_refusal(command: str, words: str, status: int, out: str, err: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "internal error" not in err
    assert words in lines[0]
    assert "cannot connect to redis://" in lines[0]
    assert PASSWORD not in err + out
    assert ":wrong@" not in err + out
    if command == "status":
        # status' own exit status for what cannot be known, and its line says why.
        assert status == 3
        assert out.startswith(f"activity unknown: {words.partition(':')[0]}")
    else:
        assert status == 1
        assert out == ""  # serve printed no URL: it never started serving


@pytest.mark.parametrize("refusal", list(REFUSALS))
@pytest.mark.parametrize("command", list(REDIS_COMMANDS))
def test_a_redis_that_refuses_the_url_ends_the_command_at_once_in_one_line(
    command: str, refusal: str, locked_redis: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Redis refusing the password or the database will refuse it again on every retry: the
    command says so in one line and exits non-zero at its start (``watch`` was given ten
    minutes and ``serve`` no end at all: they return by themselves). The password is never
    printed. (In process, for speed; the console script's run is the test below.)"""
    template, words = REFUSALS[refusal]
    status = main([*REDIS_COMMANDS[command], template.format(locked_redis)])
    out, err = capsys.readouterr()
    _check_refusal(command, words, status, out, err)


@pytest.mark.parametrize("refusal", list(REFUSALS))
def test_the_console_script_watch_of_a_redis_that_refuses_exits_at_once(
    refusal: str, locked_redis: str
) -> None:
    """Issue 37's case as a person meets it: ``workflow-hub watch redis://…`` with a wrong
    password or database, run by the console script, ends by itself (the safety net would fail
    it) with one line and exit status 1, where it used to run silently until ``--duration``."""
    template, words = REFUSALS[refusal]
    status, out, err = _run([*REDIS_COMMANDS["watch"], template.format(locked_redis)])
    _check_refusal("watch", words, status, out, err)


def test_a_redis_that_is_down_at_the_start_is_an_outage_watch_keeps_running() -> None:
    """Nothing listening is not a refusal: Redis may be restarting. ``watch`` runs until its
    ``--duration`` and exits 0 (its followers retry; the fleet shows unknown meanwhile), where
    a refusal ends it at once."""
    status, _, err = _run(["watch", "--duration", "1", f"redis://127.0.0.1:{free_port()}/0"])
    assert status == 0, err
    assert "cannot connect" not in err
    assert "internal error" not in err


def test_status_of_a_redis_that_is_down_is_unknown_with_the_reason() -> None:
    """``status`` answers once: a Redis that does not answer is ``activity unknown`` and exit
    status 3, as before (the refusals above are the same shape, with their own reason)."""
    status, out, err = _run(["status", "--timeout", "5", f"redis://127.0.0.1:{free_port()}/0"])
    assert status == 3
    assert out.startswith("activity unknown: ")
    assert len(err.splitlines()) == 1
    assert "cannot connect to redis://" in err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:secret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("redis://user:secret@[::1]:6379/2", "redis://user:***@[::1]:6379/2"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://user@127.0.0.1:6379/0", "redis://user@127.0.0.1:6379/0"),
        ("http://[::1", "http://[::1"),
    ],
)
def test_a_password_in_a_url_is_never_shown(url: str, shown: str) -> None:
    """What the commands print of a URL (serve --fleet's "serving the fleet … from …", every
    refusal above) hides its password; a URL without one, or one that does not parse, is shown
    as typed."""
    assert _urls.shown_url(url) == shown
